"""How `investigate` chooses its next experiment: the three-way first; then, while the
answer is open, the cheapest of what could move it (the work stood in, more trials of a
plan whose rate is unclear, a shallower depth, XRT's chain size as the cut, a change of
the machine the user allowed); once it is determined, the trials each plan's rate needs.
What each costs is what its plan's trials so far cost (harness.search.accounting)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.model.plan import plan_for_depth
from harness.report.diagnosis import NOTHING_FAILS, Diagnosis
from harness.report.diagnosis.findings import CONSISTENT_COMPLETIONS, CONSISTENT_FAILURES
from harness.report.model import STAND_IN, PlanRecord
from harness.report.verdict import could_not_start
from harness.search.accounting import Clock

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

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InvestigateSettings:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


@dataclass
class Step:
    """One experiment: why, the plans it brings to a number of trials, and the plans it
    adds to the report (each to the first trials) when it is taken."""

    name: str
    why: str
    plans: list[tuple[PlanRecord, int]]
    add: list[PlanRecord] = field(default_factory=list)
    server: bool = False           # ask the server (no plans of its own)


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
        if diagnosis.determined:
            return self._cheapest(self._top_ups(
                "confirm", f"the answer ({diagnosis.top.id}) rests on the trials each plan's "
                "rate needs", lambda plan: self._wanted(plan, False)))
        nothing = diagnosis.top.id == NOTHING_FAILS
        options = self._top_ups(
            "more trials", "nothing has failed: a failure rarer than that needs more trials"
            if nothing else "rates unclear: each plan's rate over more trials",
            lambda plan: self._wanted(plan, nothing))
        shallower = self._shallower()
        if shallower is not None:
            options.append(shallower)
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
        return [(self._cost(plan), Step(name, why, [(plan, len(plan.finished()) + 1)]))
                for plan in self.report.plans if len(plan.finished()) < wanted(plan)]

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
            if plan.control or all(t.state == "COMPLETED" for t in plan.finished()):
                continue
            group = [p for p in self.report.plans if p.work == plan.work and not p.control]
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



def _mixed(plan: PlanRecord) -> bool:
    states = {t.state for t in plan.finished()}
    return "COMPLETED" in states and len(states) > 1
