"""`investigate`: the loop a careful engineer runs by hand, within a budget of device time.

It is an orchestrator over the existing runner, not a new way to run trials: the
three-way first (the case's one runlist, its cut, the depth-only control of NOOPs on
XRT's validate.xclbin), then, one after another, the experiment the current diagnosis
(harness.report.diagnosis) asks for: the engine's work where only NOOPs ran (a capture's
frame; on the simulated stack, the simulator's stand-in work stream), a shallower depth
where no runlist of the failing commands has completed (a bisection by halves), more
trials where a rate is unclear, cheapest first; and once, the server (harness.serve.
reproduce's probe), to see whether it fails where the NPU path completes: a running `flm
serve` the user named, or on the simulated stack, while the answer is open and the
engine's commands do not fail every trial, the stand-in (harness.sim.stand_in_server).
Every trial lands in one report, with the
experiments in its `investigate` section and the diagnosis they end with; a stop (Ctrl-C,
the budget) keeps what ran, and `--resume` goes on, deciding the next step again from
what the report holds.

Device time is what the trials cost the device: the simulated clock on the simulated
stack, wall time on hardware and under emulation (harness.report.timing).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from harness.execution.backend import HardwareBackend
from harness.execution.runner import Runner
from harness.execution.xrt_smi_control import SECTION as XRT_SMI_SECTION
from harness.model.errors import EnvironmentNotReady
from harness.model.results import BriefTrial, TrialResult
from harness.probe.readers import Sources
from harness.report.answer import could_not_start_line
from harness.report.diagnosis import (
    NOTHING_FAILS,
    UNDETERMINED,
    Diagnosis,
    diagnose_observed,
    observe_document,
)
from harness.report.diagnosis.observed import observe
from harness.report.header import read_timers
from harness.report.model import PlanRecord
from harness.report.timing import DEVICE
from harness.report.verdict import Verdict, by_construction, with_xrt_smi
from harness.search.accounting import Clock, Spent, spent

# the commands take InvestigateSettings from here, beside Investigation
from harness.search.choosing import CONFIRM_TRIALS, Chooser, InvestigateSettings, Step
from harness.search.machine_change import Ask

SECTION = "investigate"
SERVER_SECTION = "server"     # where serve-probe keeps a server's answers: diagnose reads it
SERVER_STEP = "the server"
SERVER_TIMEOUT_S = 180.0      # a request that meets the in-tree driver's 60 s timer, twice
Say = Callable[[str], None]


class BudgetSpent(Exception):
    """The budget of device time is spent; everything so far is kept."""


class Investigation(Chooser):
    """One investigation, on a runner whose report holds the case's plans and control."""

    def __init__(self, runner: Runner, settings: InvestigateSettings, say: Say,
                 ask: Ask | None = None) -> None:
        self.runner = runner
        self.settings = settings
        self.say = say
        # a question to the user before a step that changes the machine; none: "no"
        self.ask: Ask = ask or (lambda question: False)
        report = runner.report
        self.section: dict[str, Any] = report.sections.setdefault(
            SECTION, {"settings": settings.to_dict(), "steps": []})
        timers = read_timers(report.sections.get("timers"))
        self.clock = Clock.of(timers.clock if timers else DEVICE, report.backend)

    @property
    def report(self) -> Any:
        return self.runner.report

    @property
    def spent(self) -> Spent:
        return spent([t for p in self.report.plans for t in p.trials], self.clock)

    @property
    def spent_s(self) -> float:
        """Device time so far: what the budget is spent in."""
        return self.spent.device_s

    def diagnosis(self) -> Diagnosis:
        """The diagnosis of what ran so far: from memory while it holds every trial whole,
        else (a continued report holds its earlier trials in brief) from the file, whose
        journal has each trial as soon as it ended."""
        path = self.runner.handle.path
        if any(isinstance(t, BriefTrial) for p in self.report.plans for t in p.trials):
            observed = observe(path)
        else:
            observed = observe_document(self.report.to_dict(), str(path))
        # the run is this one, going on: not a report that stopped
        observed.finished, observed.resume = True, None
        return diagnose_observed([observed])

    def run(self) -> Diagnosis:
        """Experiments until the diagnosis settles, nothing is left to try or the budget
        is spent; then the report is finished with the diagnosis as its verdict."""
        stopped = None
        try:
            while (step := self.next_step(self.diagnosis())) is not None:
                self.take(step)
        except BudgetSpent:
            stopped = (f"the budget of {self.settings.budget_s / 60:g} min of device time is "
                       "spent")
            self.say(f"stopped: {stopped}")
        diagnosis = self.diagnosis()
        used = self.spent
        self.section["answer"] = {"top": diagnosis.top.id, "determined": diagnosis.determined,
                                  "device_s": round(used.device_s, 3),
                                  "wall_s": round(used.wall_s, 3),
                                  "ranking": [e.id for e in diagnosis.entries],
                                  **({"stopped": stopped, "go_on": self._go_on()}
                                     if stopped else {})}
        self.runner.conclude(lambda: self.verdict(diagnosis, stopped))
        return diagnosis

    def verdict(self, diagnosis: Diagnosis, stopped: str | None) -> Verdict:
        top = diagnosis.top
        said = top.why if top.id in (NOTHING_FAILS, UNDETERMINED) else top.title
        # the sentence an injected hypothesis gives stands alone, before what was found
        reasons = [sentence for sentence in (by_construction(self.report.backend),) if sentence]
        reasons.append(f"investigated: {top.id}: {said} "
                       f"({len(self.section['steps'])} experiments, "
                       f"{self.spent.text(self.clock)})")
        reasons += [f"for: {f.text}" for f in top.supports]
        reasons += self._machine_lines()
        if stopped:
            reasons.append(f"stopped early: {stopped}; {self._go_on()}")
        # an open answer the budget ended: more of the same investigation decides it first
        reasons.append(f"next: {self._resume_with_more()}" if stopped and not
                       diagnosis.determined else f"next: {top.experiment}")
        control = self.report.sections.get(XRT_SMI_SECTION)
        refused = self._could_not_start()
        # a run that could not start says so first: no runlist of the case's ran
        answer = could_not_start_line(refused, self.report.backend) if refused else \
            f"{top.id}: {said}"[:99]
        return with_xrt_smi(Verdict(None, answer, reasons),
                            control if isinstance(control, dict) else None)

    def _machine_lines(self) -> list[str]:
        """What each change of the machine showed, or why it was not made."""
        lines = []
        by_name = {p.name: p for p in self.report.plans}
        for entry in self.section.get("machine") or []:
            label = entry.get("label") or entry.get("kind")
            if entry.get("not_possible"):
                lines.append(f"not tried: {entry['not_possible']}")
            elif not entry.get("taken"):
                lines.append(f"not tried: {label}: {entry.get('why_not')}")
            else:
                for plan in self.report.plans:
                    if (plan.changed or {}).get("label") != label:
                        continue
                    of = by_name.get(str((plan.changed or {}).get("of")))
                    before = f" (before the change: {of.counts_text()})" if of else ""
                    lines.append(f"with {label}: {plan.label}: {plan.counts_text()}{before}; "
                                 f"{entry.get('read')}")
        return lines

    def _resume_with_more(self) -> str:
        """The command that goes on with this investigation with a budget that pays for
        five more of its dearest trials (a hang at the driver's timer, as a rule), or twice
        the budget, whichever is more."""
        dearest = max((self.clock.device_s(t) for p in self.report.plans
                       for t in p.finished()), default=0.0)
        more = max(2 * self.settings.budget_s, self.spent_s + 5 * dearest)
        return (f"runlist-harness investigate --resume {self.runner.handle.path} --budget "
                f"{math.ceil(more / 60):d}")

    def _go_on(self) -> str:
        dearest = max((self.clock.device_s(t) for p in self.report.plans
                       for t in p.finished()), default=0.0)
        return (f"its dearest trial cost {dearest:.1f} s of device time; to go on: "
                f"{self._resume_with_more()}")

    def _server(self, diagnosis: Diagnosis) -> Step | None:
        """Once, the server: a running flm serve the user named (whatever the diagnosis so
        far), or on the simulated stack, while the answer is open (nothing failed, or
        undetermined) and no plan of the engine's commands has failed in every trial, its
        stand-in: is it the NPU path at all? Where one does, the NPU path evidently fails,
        and the server's answer would carry the state the trials show."""
        settings = self.settings
        if SERVER_SECTION in self.report.sections or not settings.serve_model:
            return None
        if settings.serve_url:
            return Step(SERVER_STEP, f"flm serve at {settings.serve_url}, asked for "
                        f"{settings.serve_model}: does it fail where pyxrt completes?", [],
                        server=True)
        if not settings.stand_in or diagnosis.determined:
            return None
        engine = self._engine_plan()
        if any(p.finished() and all(t.state != "COMPLETED" for t in p.finished())
               for p in self.report.plans if p.work == engine.work and not p.control):
            return None
        said = ("nothing failed through pyxrt" if diagnosis.top.id == NOTHING_FAILS
                else "the engine's runlists complete through pyxrt, or fail only at times, "
                "and the answer is open")
        return Step(SERVER_STEP, f"{said}: does flm serve (the simulated stack's stand-in) "
                    "fail where the NPU path completes?", [], server=True)

    # -- running one ------------------------------------------------------------------------

    def take(self, step: Step) -> None:
        before = self.spent_s
        if step.change is not None and not self._changed(step):
            return
        for record in step.add:
            self.runner.handle.add_plan(record)
            step.plans.append((record, step.add_trials or self.settings.first_trials))
        steps = self.section["steps"]
        if not steps or steps[-1]["experiment"] != step.name or step.add:
            self.say(f"{step.name}: {step.why}")
        if step.server:
            decoded = self._ask_server()
            if decoded is not None:               # its trial is the step's
                step.plans.append((decoded, len(decoded.finished())))
        ran: list[str] = []
        try:
            for plan, wanted in step.plans:
                while len(plan.finished()) < wanted:
                    self._within_budget(plan)
                    count = sum(len(p.finished()) for p in self.report.plans) + 1
                    self.runner.trial(plan, count, 0)
                    ran.append(plan.name)
        except BudgetSpent:
            if ran:            # what it ran is kept, said to be cut short
                self._record(step, ran, before, stopped=True)
            raise
        diagnosis = self._record(step, [plan.name for plan, _ in step.plans], before)
        self.runner.handle.rewrite()
        self.say(f"  -> {diagnosis.top.id}" + ("" if diagnosis.determined else
                                               f" ({diagnosis.top.why})"))

    def _changed(self, step: Step) -> bool:
        """Ask before a step that changes the machine, and see that the change is made;
        whether the step goes on. Every answer is kept in the report."""
        change = step.change
        assert change is not None
        self.say(f"{step.name}: {step.why}")
        entry: dict[str, Any] = change.to_dict()
        self.machine_log.append(entry)
        if not self.ask(change.question()):
            entry["taken"] = False
            entry["why_not"] = "the user did not agree (or no one could be asked)"
            self.say(f"  skipped: {entry['why_not']}")
            self._record(step, [], self.spent_s, skipped=entry["why_not"])
            return False
        made, read = change.verified(Sources.live())
        entry.update(taken=made is not False, verified=made, read=read)
        if made is False:
            entry["why_not"] = f"the machine does not show the change ({read})"
            self.say(f"  skipped: {entry['why_not']}")
            self._record(step, [], self.spent_s, skipped=entry["why_not"])
            return False
        for record in step.add:
            assert record.changed is not None
            record.changed["verified"] = made
        if change.timer_s is not None and isinstance(self.runner.backend, HardwareBackend):
            # the deadlines of the trials after it allow for the longer timer
            self.runner.backend.hardware_timeout_s = change.timer_s
        self.say(f"  {read}; to undo it afterwards: " + " && ".join(change.restore))
        step.add_trials = CONFIRM_TRIALS
        return True

    def _record(self, step: Step, names: list[str], before: float, *,
                stopped: bool = False, skipped: str | None = None) -> Diagnosis:
        """The step in the report's investigate section: one entry for a run of steps of one
        name (one trial more of a plan, again), with the device time it took and the answer
        after it; `stopped`: the budget cut it short."""
        diagnosis = self.diagnosis()
        steps = self.section["steps"]
        last = steps[-1] if steps else None
        names = list(dict.fromkeys(names))
        if last is not None and last["experiment"] == step.name and not step.add:
            last["plans"] += [name for name in names if name not in last["plans"]]
            last["trials"] = last.get("trials", 1) + 1
            last["device_s"] = round(last["device_s"] + self.spent_s - before, 3)
            last["after"] = diagnosis.top.id
            last.pop("stopped", None)
            entry = last
        else:
            entry = {"experiment": step.name, "why": step.why, "plans": names,
                     "trials": len(names), "device_s": round(self.spent_s - before, 3),
                     "after": diagnosis.top.id}
            steps.append(entry)
        if stopped:
            entry["stopped"] = "the budget"
        if skipped:
            entry["skipped"] = skipped
        return diagnosis

    def _within_budget(self, plan: PlanRecord) -> None:
        """Every trial starts here: none once the budget is spent, nor one its plan's
        trials so far say would take the spend past it. So the most the budget is
        overspent by is the one trial started inside it (a plan's first, or one dearer
        than its plan's before it)."""
        if self.spent_s >= self.settings.budget_s or \
                self.spent_s + self._cost(plan) > self.settings.budget_s:
            raise BudgetSpent

    # -- the server ---------------------------------------------------------------------------

    def _ask_server(self) -> PlanRecord | None:
        """One chat request for the case's model, as serve-probe makes it, into the report's
        server section (diagnose reads it as it reads serve-probe's). Returns the plan the
        stand-in decoded by a trial of, if it did."""
        # the web stack loads only for this step, not for every run that imports this module
        from harness.serve.reproduce import Probe, ServeOptions
        settings = self.settings
        tag = str(settings.serve_model)
        with self._served(tag) as (url, stand_in, decoded):
            options = ServeOptions(url, tag, requests=1, made_up_tag=False,
                                   timeout_s=SERVER_TIMEOUT_S)
            environment = self.report.environment
            try:
                served = Probe(options, environment if isinstance(environment, dict)
                               else {}).run().sections[SERVER_SECTION]
            except EnvironmentNotReady as err:
                served = {"url": url, "unreachable": str(err), "requests": []}
        served["model"] = tag
        if stand_in is not None:
            served["stand_in"] = stand_in
        self.report.sections[SERVER_SECTION] = served
        answers = served.get("requests") or []
        self.say("  " + ("; ".join(_answer_text(a) for a in answers) if answers else
                         f"no answer: {served.get('unreachable')}"))
        return decoded

    @contextmanager
    def _served(self, tag: str
                ) -> Iterator[tuple[str, dict[str, Any] | None, PlanRecord | None]]:
        """The server to ask (its URL, what stood in for it, the plan it decoded by): the
        user's, or the stand-in with the profile's serve-fault, whose decode is one trial
        of the engine's runlist, run here first (never when the fault fails the request
        before any NPU call)."""
        if self.settings.serve_url:
            yield self.settings.serve_url, None, None
            return
        profile = self.runner.backend.profile
        fault = profile.serve_fault if profile is not None else None
        said: str | None = None
        decoded_by = None
        plan = None
        if fault is None:
            plan = self._engine_plan()
            self._within_budget(plan)      # its decode is a trial like any other
            count = sum(len(p.finished()) for p in self.report.plans) + 1
            trial = self.runner.trial(plan, count, 0)
            decoded_by = {"plan": plan.name, "trial": trial.index, "state": trial.state}
            said = None if trial.state == "COMPLETED" else _failure_text(trial)
        stand_in = {"what": "the simulated stack's stand-in for flm serve", "fault": fault,
                    "decoded_by": decoded_by}
        from harness.sim.stand_in_server import StandInServer
        with StandInServer(tag, lambda: said, fault) as server:
            yield server.url, stand_in, plan

    def _engine_plan(self) -> PlanRecord:
        """The runlist a decode submits: the case's first plan with work in it where the
        work was stood in, else the case's first plan."""
        originals = [p for p in self.report.plans if not p.control]
        first = originals[0]
        worked = [p for p in originals if p.work and p.chunks == first.chunks]
        return worked[0] if worked else first


def _failure_text(trial: TrialResult) -> str:
    """What an engine surfaces of a failed decode: XRT's message for the failing runlist,
    else the trial's error."""
    for outcome in trial.runlists:
        if outcome.state not in (None, "COMPLETED") and outcome.message:
            return outcome.message
    return trial.error or f"the decode failed ({trial.state})"


def _answer_text(answer: dict[str, Any]) -> str:
    said = answer.get("state") or answer.get("error") or ""
    return f"flm serve: {answer.get('outcome')}" + (f" ({str(said).splitlines()[0][:120]})"
                                                     if said else "")


def begin(runner: Runner, settings: InvestigateSettings) -> str | None:
    """Ready a new investigation on a runner opened on the case's plans: the depth-only
    control beside them and the settings in the report, written before any trial. Returns
    why the control could not be added, if it could not."""
    why_not = runner.add_control()
    if why_not:
        runner.warnings.append(why_not)
        runner.handle.note(f"warning: {why_not}")
    runner.report.sections[SECTION] = {"settings": settings.to_dict(), "steps": []}
    runner.handle.rewrite()
    return why_not
