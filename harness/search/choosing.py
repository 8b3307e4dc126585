"""How `investigate` chooses its next experiment: the three-way first; then, while the
answer is open, the cheapest of what could move it (the work stood in, more trials of a
plan whose rate is unclear, a shallower depth, XRT's chain size as the cut, a change of
the machine the user allowed); once it is determined, the trials each plan's rate needs.
What each costs is what its plan's trials so far cost (harness.search.accounting)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.model.errors import ReportError
from harness.model.plan import cut_text, plan_for_depth
from harness.model.results import TrialStatus
from harness.report.diagnosis import NOTHING_FAILS, Diagnosis
from harness.report.diagnosis.findings import CONSISTENT_COMPLETIONS, CONSISTENT_FAILURES
from harness.report.diagnosis.observed import SUBMIT_SIZE
from harness.report.model import STAND_IN, PlanRecord
from harness.report.timing import AT_TIMER, PAST_TIMER
from harness.report.verdict import could_not_start
from harness.search.accounting import Clock
from harness.search.machine_change import (
    FIRMWARE,
    TIMER,
    MachineChange,
    longer_timeout,
    other_firmware,
)

CONFIRM_TRIALS = 2     # a determined answer rests on at least this many trials of each plan
EXPENSIVE_S = 10.0     # a completing trial past this much device time is not repeated lightly


@dataclass
class InvestigateSettings:
    """How an investigation spends its budget."""

    budget_s: float                # device time the trials may take, in all
    first_trials: int = 1          # trials of each plan when an experiment adds it
    rate_trials: int = 4           # each plan, once something failed and the cause is open
    mixed_trials: int = 12         # a plan that failed in some trials and not others
    quiet_trials: int = 30         # each plan, while nothing has failed: a rare failure
    rare_trials: int = 100         # a plan that failed rarely, while the answer is open
    stand_in: bool = False         # the simulated stack: the stand-in work and server may run
    serve_url: str | None = None   # a running flm serve to ask (any stack)
    serve_model: str | None = None  # the tag it serves the case's model by
    # what the user allows that changes the machine (asked again before the step): a
    # longer driver timeout, in seconds of its parameter's period; a second firmware; and
    # a second kernel, which a reboot brings, so it is named for after this run
    longer_timeout_s: float | None = None
    firmware: str | None = None
    kernel: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InvestigateSettings:
        """The settings a report recorded, each refused unless of its kind and within its
        bounds: a report is text anyone can edit (a count of a million trials, a budget
        that is a word)."""
        values = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        for name, value in values.items():
            if not _recorded_fits(name, value):
                raise ReportError(f"the report's investigate.settings.{name} is {value!r}, "
                                  "not one an investigation records; start a new one")
        return cls(**values)


MAX_RECORDED_TRIALS = 1000      # the most trials of a plan --trials takes
MAX_LONGER_TIMEOUT_S = 3600     # --longer-timeout's bound


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _recorded_fits(name: str, value: Any) -> bool:
    if name == "budget_s":
        return _number(value) and 0 < value <= 10_080 * 60
    if name == "longer_timeout_s":
        return value is None or (_number(value) and 0 < value <= MAX_LONGER_TIMEOUT_S)
    if name == "stand_in":
        return isinstance(value, bool)
    if name in ("serve_url", "serve_model", "firmware", "kernel"):
        return value is None or isinstance(value, str)
    return isinstance(value, int) and not isinstance(value, bool) and \
        1 <= value <= MAX_RECORDED_TRIALS


@dataclass
class Step:
    """One experiment: why, the plans it brings to a number of trials, and the plans it
    adds to the report (each to the first trials) when it is taken."""

    name: str
    why: str
    plans: list[tuple[PlanRecord, int]]
    add: list[PlanRecord] = field(default_factory=list)
    server: bool = False           # ask the server (no plans of its own)
    change: MachineChange | None = None   # the machine change it needs, asked first
    add_trials: int | None = None  # the trials each added plan gets (None: the first trials)


class Chooser:
    """The choice of the next experiment, over an investigation's report and settings."""

    settings: InvestigateSettings
    section: dict[str, Any]
    clock: Clock

    @property
    def report(self) -> Any:
        raise AttributeError("an investigation holds the report")

    def _server(self, diagnosis: Diagnosis) -> Step | None:
        """The server step, where the investigation asks one (harness.search.investigate)."""
        return None

    def _could_not_start(self) -> str | None:
        return could_not_start([p for p in self.report.plans if not p.control])

    def next_step(self, diagnosis: Diagnosis) -> Step | None:
        """The experiment to run next: the three-way first; once the answer is determined,
        each plan to CONFIRM_TRIALS trials; else the cheapest of what could move it (more
        trials of a plan whose rate is unclear, the work stood in, a shallower depth)."""
        plans = self.report.plans
        steps = self.section["steps"]
        if not steps or (len(steps) == 1 and steps[0].get("stopped")):
            return Step("three-way", "the case's one runlist, its cut and the depth-only "
                        "control of NOOPs at the same depth", [
                            (plan, self.settings.first_trials) for plan in plans])
        if self._could_not_start() is not None:
            # nothing this loop runs changes a refused set-up: is it refused every time?
            return self._cheapest(self._top_ups(
                "confirm", "the case's plans could not start: is the set-up refused every "
                "time?", lambda plan: 0 if plan.control else CONFIRM_TRIALS))
        work = self._stand_in_work(diagnosis)
        if work is not None:
            return work            # only NOOPs ran: the work is where a decode fails first
        server = self._server(diagnosis)
        if server is not None:
            return server
        machine = self._machine_step()
        if machine is not None:
            return machine
        if diagnosis.determined:
            return self._cheapest(self._top_ups(
                "confirm", f"the answer ({diagnosis.top.id}) rests on the trials each plan's "
                "rate needs", lambda plan: self._wanted(plan, False)))
        nothing = diagnosis.top.id == NOTHING_FAILS
        options = self._top_ups(
            "more trials", "nothing has failed: a failure rarer than that needs more trials"
            if nothing else "rates unclear: each plan's rate over more trials",
            lambda plan: self._wanted(plan, nothing))
        for option in (self._shallower(), self._chain_size()):
            if option is not None:
                options.append(option)
        if options or nothing:
            return self._cheapest(options)
        # still open, and every plan has the trials its rate was to rest on: the failure is
        # rarer than they show (the same runlists failing in some trials and completing in
        # most), and what separates an intermittent failure from a one-off is its rate
        return self._cheapest(self._top_ups(
            "a rate", "the answer is open and a plan fails only at times: more trials of it, "
            "until its failure recurs", lambda plan: self.settings.rare_trials
            if _mixed(plan) else 0))

    def _wanted(self, plan: PlanRecord, nothing: bool) -> int:
        """How many trials a plan's rate needs: many while nothing failed (a rare failure),
        more for one that failed in some trials and not others, three to say a plan
        completes, two to say it fails."""
        if nothing:
            # a rare failure needs many trials; where each costs a minute (slow work that
            # just fits the timer), enough to say the plan completes
            return self.settings.quiet_trials if self._cost(plan) < EXPENSIVE_S else \
                CONSISTENT_COMPLETIONS
        if _mixed(plan):
            return self.settings.mixed_trials
        # three trials say "completes" or "fails"; where a trial costs a minute of device
        # time (a 60 s timer, slow work), two, and the rates rest on the cheaper plans,
        # unless a plan fails at times: then two failures in a row may be chance
        if self._cost(plan) >= EXPENSIVE_S and not any(_mixed(p) for p in self.report.plans):
            return CONFIRM_TRIALS
        if all(t.state == "COMPLETED" for t in plan.finished()):
            return max(self.settings.rate_trials, CONSISTENT_COMPLETIONS)
        return max(self.settings.rate_trials, CONSISTENT_FAILURES)

    def _top_ups(self, name: str, why: str, wanted: Callable[[PlanRecord], int]
                 ) -> list[tuple[float, Step]]:
        """For each plan short of the trials it wants: one trial more, and its cost."""
        # a plan run under a change of the machine has its trials from its step alone
        return [(self._cost(plan), Step(name, why, [(plan, len(plan.finished()) + 1)]))
                for plan in self.report.plans
                if not plan.changed and len(plan.finished()) < wanted(plan)]

    @staticmethod
    def _cheapest(options: list[tuple[float, Step]]) -> Step | None:
        return min(options, key=lambda option: option[0])[1] if options else None

    def _cost(self, plan: PlanRecord) -> float:
        """What a trial of `plan` costs the device, as its trials so far did."""
        done = plan.finished()
        return sum(self.clock.device_s(t) for t in done) / len(done) if done else 0.0

    def _stand_in_work(self, diagnosis: Diagnosis) -> Step | None:
        """Where only NOOPs ran and the work is untested: on the simulated stack, the case's
        plans again with the stand-in work stream, once (never on hardware: a capture is
        the engine's own, and `capture record` makes one)."""
        if not self.settings.stand_in or any(p.work == STAND_IN for p in self.report.plans):
            return None
        if diagnosis.entry("work-hang").status != "not tested":
            return None
        originals = [p for p in self.report.plans if not p.control and not p.work]
        if not originals:
            return None
        return Step("the work, stood in", "only NOOPs ran: the case's plans again with the "
                    "simulator's stand-in work stream (not the engine's commands: a capture "
                    "gives those), to tell a hang in the work from depth", [],
                    [PlanRecord(f"work {plan.name}", plan.spec, list(plan.chunks),
                                work=STAND_IN) for plan in originals])

    def _shallower(self) -> tuple[float, Step] | None:
        """A failing plan none of whose commands' runlists completed: the same commands
        at half its depth, so the threshold and their per-run time show; its cost, half
        the failing plan's."""
        for plan in self.report.plans:
            if plan.control or plan.changed or \
                    all(t.state == "COMPLETED" for t in plan.finished()):
                continue
            group = [p for p in self.report.plans if p.work == plan.work and not p.control
                     and not p.changed]
            if any(t.state == "COMPLETED" for p in group for t in p.finished()):
                continue
            depth = max(plan.chunks) // 2
            made = plan_for_depth(max(depth, 1))
            name = made.name if not plan.work else f"work {made.name}"
            if depth < 1 or any(p.name == name for p in self.report.plans):
                continue
            step = Step("a shallower depth", f"no runlist of {plan.label}'s commands has "
                        f"completed: the same at {depth}, by halves", [])
            step.add = [PlanRecord(name, made.spec, list(made.chunks), work=plan.work)]
            return self._cost(plan) / 2, step
        return None


    def _chain_size(self) -> tuple[float, Step] | None:
        """Where one runlist deeper than XRT's chain fails every trial and no runlist of
        its commands cut at the chain's size has run: the same commands as runlists of 24
        (max:24), the same chains with fewer commands queued. Work that outlasts the timer
        fails in them as before; a limit on what one runlist queues does not."""
        for plan in self.report.plans:
            if plan.control or plan.changed or len(plan.chunks) != 1 or \
                    plan.chunks[0] <= SUBMIT_SIZE or not _fails_every_time(plan):
                continue
            made = plan_for_depth(plan.chunks[0], SUBMIT_SIZE)
            name = made.name if not plan.work else f"work {made.name}"
            if any(p.name == name or (p.work == plan.work and list(p.chunks) ==
                                      list(made.chunks)) for p in self.report.plans):
                continue
            step = Step("chunk sizes", f"{plan.label} fails every trial: the same commands "
                        f"as runlists of XRT's chain size ({cut_text(made.chunks)}), the "
                        "same chains with fewer queued", [])
            step.add = [PlanRecord(name, made.spec, list(made.chunks), work=plan.work,
                                   frame=plan.frame)]
            return self._cost(plan), step
        return None

    def _machine_step(self) -> Step | None:
        """A change of the machine the user allowed, once each, where it separates: a
        longer driver timer where a plan of the case fails at the timer every trial (work
        that ran long then completes; a hang or a wedge does not), another firmware where
        one fails every trial. The plans that failed run again after it, named for it."""
        settings, taken = self.settings, {e.get("kind") for e in self.machine_log}
        failing = [p for p in self.report.plans if not p.control and not p.changed
                   and _fails_every_time(p)]
        if not failing or self.settings.stand_in:
            return None
        change: MachineChange | str | None = None
        if settings.longer_timeout_s and TIMER not in taken and \
                any(self._at_the_timer(p) for p in failing):
            change = longer_timeout(self.driver_facts, settings.longer_timeout_s)
            if isinstance(change, str):
                self.machine_log.append({"kind": TIMER, "not_possible": change})
                return None
            failing = [p for p in failing if self._at_the_timer(p)]
        elif settings.firmware and FIRMWARE not in taken:
            change = other_firmware(settings.firmware, self.firmware_now, self.driver_facts)
        if not isinstance(change, MachineChange):
            return None
        step = Step(f"{change.kind} changed", f"{change.what}: "
                    + ", ".join(p.label for p in failing) + " again", [], change=change)
        step.add = [PlanRecord(f"{p.name} @ {change.label}", p.spec, list(p.chunks),
                               work=p.work, frame=p.frame, changed={
                                   "kind": change.kind, "label": change.label, "of": p.name,
                                   **({"timer_s": change.timer_s} if change.timer_s
                                      else {})}) for p in failing]
        return step

    @property
    def machine_log(self) -> list[dict[str, Any]]:
        """The machine changes asked for so far, in the report's investigate section."""
        log: list[dict[str, Any]] = self.section.setdefault("machine", [])
        return log

    @property
    def driver_facts(self) -> dict[str, Any]:
        environment = self.report.environment if isinstance(self.report.environment,
                                                             dict) else {}
        driver = environment.get("driver")
        return driver if isinstance(driver, dict) else {}

    @property
    def firmware_now(self) -> str | None:
        environment = self.report.environment if isinstance(self.report.environment,
                                                             dict) else {}
        npu = environment.get("npu")
        sysfs = npu.get("sysfs") if isinstance(npu, dict) else None
        found = sysfs.get("fw_version") if isinstance(sysfs, dict) else None
        return str(found) if found else None

    def _at_the_timer(self, plan: PlanRecord) -> bool:
        """Every failed trial of `plan` ended at the driver's timer (or past it)."""
        kinds = [(t.time_to_failure or {}).get("class") for t in plan.finished()
                 if t.status is TrialStatus.FAILED]
        return bool(kinds) and all(kind in (AT_TIMER, PAST_TIMER) for kind in kinds)


def _fails_every_time(plan: PlanRecord) -> bool:
    done = plan.finished()
    return len(done) >= CONSISTENT_FAILURES and all(
        t.status is TrialStatus.FAILED and not t.setup_failed for t in done)


def _mixed(plan: PlanRecord) -> bool:
    states = {t.state for t in plan.finished()}
    return "COMPLETED" in states and len(states) > 1
