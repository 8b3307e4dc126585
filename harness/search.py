"""Running bisections and sweeps: K trials per probed plan, a trial budget, the log.

Both commands write one report: every probed plan is a plan in it (so
`report render` and `compare` work on them), and the search itself is kept
in a `bisect` or `sweep` section. A bisect log holds its settings and every
probe in order, so `bisect --replay` can continue it or run it again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.bisect import Answer, Bisection, classify
from harness.errors import BadInput
from harness.plan import Plan, parse_plan, plan_for_depth
from harness.report import PlanRecord, utc_now
from harness.results import counts_text
from harness.runner import Runner

Say = Callable[[str], None]


class BudgetReached(Exception):
    """The --max-trials budget is spent; everything so far is kept."""


@dataclass
class BisectSettings:
    mode: str                  # "depth" or "chunk"
    lo: int
    hi: int
    trials: int
    chunk: str | None = None   # depth mode: chunking applied at every depth (None: one runlist)
    depth: int | None = None   # chunk mode: the fixed depth
    flaky_as: str = "good"

    def plan(self, x: int) -> Plan:
        if self.mode == "chunk":
            assert self.depth is not None
            chunks = parse_plan(f"max:{x}", self.depth)
            return Plan(f"{self.depth}@max{x}", f"max:{x}", chunks)
        return plan_for_depth(x, self.chunk)

    @property
    def noun(self) -> str:
        return "chunk size" if self.mode == "chunk" else "depth"

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class Prober:
    """Runs K trials of a plan through a Runner, within a budget of trials."""

    def __init__(self, runner: Runner, trials: int, budget: int | None) -> None:
        self.runner = runner
        self.trials = trials
        self.budget = budget
        self.used = 0

    def record_for(self, plan: Plan) -> PlanRecord:
        for record in self.runner.report.plans:
            if record.name == plan.name:
                return record
        record = PlanRecord(plan.name, plan.spec, list(plan.chunks))
        self.runner.report.plans.append(record)
        return record

    def measure(self, plan: Plan) -> dict[str, int]:
        """Run K new trials of `plan`; return the counts of those K trials."""
        record = self.record_for(plan)
        before = len(record.trials)
        for _ in range(self.trials):
            if self.budget is not None and self.used >= self.budget:
                raise BudgetReached
            self.used += 1
            self.runner.trial(record, self.used, self.budget or 0)
        counts: dict[str, int] = {}
        for trial in record.trials[before:]:
            counts[trial.state] = counts.get(trial.state, 0) + 1
        return counts


def run_bisect(runner: Runner, settings: BisectSettings, budget: int | None, say: Say,
               bisection: Bisection | None = None) -> Answer:
    report = runner.report
    bisection = bisection or Bisection(settings.lo, settings.hi, settings.flaky_as,
                                       settings.noun, seed=runner.options.seed)
    prober = Prober(runner, settings.trials, budget)
    section = report.sections.setdefault("bisect", {"settings": settings.to_dict(),
                                                    "log": []})
    complete = True
    try:
        while (x := bisection.next_x()) is not None:
            confirming = bisection.confirming
            left, steps = bisection.steps_left()
            plan = settings.plan(x)
            cut = "" if plan.label == str(x) else f" ({plan.label})"
            if confirming:
                say(f"Confirming: re-testing {settings.noun} {x}{cut}")
            else:
                say(f"Bisecting: {left} {settings.noun}s left to test after this (roughly "
                    f"{steps} steps); testing {x}{cut}")
            counts = prober.measure(plan)
            bisection.record(x, counts, confirmation=confirming)
            good, bad = bisection.bounds()
            section["log"].append({"x": x, "plan": plan.name, "chunks": list(plan.chunks),
                                   "confirmation": confirming, "counts": counts,
                                   "class": classify(counts), "good": good, "bad": bad})
            say(f"  {x}: {counts_text(counts)} -> {classify(counts)}")
            runner.handle.save()
    except BudgetReached:
        complete = False
        say(f"stopped: the budget of {budget} trials is spent")
    answer = bisection.answer(complete=complete)
    if settings.mode == "chunk":
        answer.text = _as_largest_chunk(answer, settings)
    section["answer"] = {"kind": answer.kind, "low": answer.low, "high": answer.high,
                         "first": answer.first, "text": answer.text, "notes": answer.notes,
                         "trials": sum(len(p.trials) for p in report.plans)}
    report.verdict = {"reproduced": None, "text": answer.text}
    report.finished = utc_now()
    runner.handle.save(force=True)
    return answer


def _as_largest_chunk(answer: Answer, settings: BisectSettings) -> str:
    """Chunk mode asks the other question: the largest chunk size that completes."""
    detail = answer.text[answer.text.find("("):] if "(" in answer.text else ""
    if answer.kind == "exact":
        return (f"largest chunk size that completes at depth {settings.depth}: "
                f"{answer.low - 1} {detail}")
    if answer.kind == "none":
        return f"every chunk size up to {settings.hi} completes at depth {settings.depth} " \
               f"{detail}"
    if answer.kind == "at-or-below":
        return (f"even chunk size {answer.high} fails at depth {settings.depth} {detail}; "
                "try a lower --lo")
    return f"{answer.text} [chunk sizes at depth {settings.depth}]"


def bisection_from_log(settings: BisectSettings, section: dict[str, Any],
                       plans: list[PlanRecord], seed: int = 0) -> Bisection:
    """Rebuild a bisection from a report: every recorded trial counts, none is re-run."""
    bisection = Bisection(settings.lo, settings.hi, settings.flaky_as, settings.noun, seed=seed)
    by_name = {p.name: p for p in plans}
    seen: set[int] = set()
    for entry in section.get("log", []):
        x = int(entry["x"])
        if entry.get("confirmation"):
            bisection.confirmed.add(x)
        if x in seen:
            continue
        seen.add(x)
        record = by_name.get(entry["plan"])
        if record is None:
            raise BadInput(f"the bisect log names plan {entry['plan']!r}, which the report "
                           "does not hold")
        counts: dict[str, int] = {}
        for trial in record.finished():
            counts[trial.state] = counts.get(trial.state, 0) + 1
        bisection.record(x, counts)
    return bisection
