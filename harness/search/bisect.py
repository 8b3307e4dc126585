"""Running a bisection: K trials per tested plan, a trial budget, the log.

The report holds every tested plan as a plan of its own (so `report render` and
`compare` work on them), and the bisection in its `bisect` section: its settings and
every step in order, so `bisect --replay` can continue it or run it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.execution.runner import Runner
from harness.model.errors import BadInput
from harness.model.plan import Plan, parse_plan, plan_for_depth
from harness.model.results import counts_text
from harness.report.model import PlanRecord
from harness.report.verdict import search_verdict
from harness.search.boundary import (
    GOOD,
    Answer,
    AnswerKind,
    Bisection,
    Classification,
    classify,
)
from harness.search.measure import BudgetReached, Measurer, Say, used_trials


@dataclass
class BisectSettings:
    mode: str                  # "depth" or "chunk"
    lo: int
    hi: int
    trials: int
    chunk: str | None = None   # depth mode: the cut applied at every depth (None: one runlist)
    depth: int | None = None   # chunk mode: the fixed depth
    flaky_as: str = GOOD

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


def run_bisect(runner: Runner, settings: BisectSettings, budget: int | None, say: Say,
               bisection: Bisection | None = None) -> Answer:
    report = runner.report
    bisection = bisection or Bisection(settings.lo, settings.hi,
                                       Classification(settings.flaky_as),
                                       settings.noun, seed=runner.options.seed)
    if "bisect" not in report.sections:
        report.sections["bisect"] = {"settings": settings.to_dict(), "log": []}
        runner.handle.rewrite()          # the settings are on disk before the first trial
    section = report.sections["bisect"]
    measurer = Measurer(runner, settings.trials, budget, used_trials(section["log"], report.plans))
    complete = True
    try:
        while (x := bisection.next_x()) is not None:
            confirming = bisection.confirming
            left, steps = bisection.steps_left()
            plan = settings.plan(x)
            cut = "" if plan.label == str(x) else f" ({plan.label})"
            if confirming and x not in bisection.counts:
                say(f"Confirming: testing {settings.noun} {x}{cut}, assumed "
                    f"{'failing' if x == settings.hi else 'completing'} and not yet tested")
            elif confirming:
                say(f"Confirming: re-testing {settings.noun} {x}{cut}")
            else:
                say(f"Bisecting: {left} {settings.noun}s left to test after this (roughly "
                    f"{steps} steps); testing {x}{cut}")
            counts, indices = measurer.measure(plan)
            bisection.record(x, counts, confirmation=confirming)
            good, bad = bisection.bounds()
            entry = {"x": x, "plan": plan.name, "chunks": list(plan.chunks),
                     "confirmation": confirming, "counts": counts, "trials": indices,
                     "class": classify(counts), "good": good, "bad": bad}
            section["log"].append(entry)
            runner.handle.append("step", entry)
            say(f"  {x}: {counts_text(counts)} -> {classify(counts)}")
    except BudgetReached:
        complete = False
        say(f"stopped: the budget of {budget} trials is spent")
    answer = bisection.answer(complete=complete)
    if settings.mode == "chunk":
        answer.text = _as_largest_chunk(answer, settings)
    section["answer"] = {"kind": answer.kind, "low": answer.low, "high": answer.high,
                         "first": answer.first, "text": answer.text, "notes": answer.notes,
                         "trials": sum(len(p.trials) for p in report.plans)}
    report.verdict = search_verdict(answer.text, report.backend, [])
    if complete:
        runner.handle.finish()
    else:                                # stopped by the budget: `bisect --replay` goes on
        runner.handle.rewrite()
    return answer


def _as_largest_chunk(answer: Answer, settings: BisectSettings) -> str:
    """Chunk mode asks the other question: the largest chunk size that completes."""
    detail = f"({answer.evidence})" if answer.evidence else ""
    if answer.kind is AnswerKind.EXACT:
        return (f"largest chunk size that completes at depth {settings.depth}: "
                f"{answer.low - 1} {detail}")
    if answer.kind is AnswerKind.NONE:
        return f"every chunk size up to {settings.hi} completes at depth {settings.depth} " \
               f"{detail}"
    if answer.kind is AnswerKind.AT_OR_BELOW:
        return (f"even chunk size {answer.high} fails at depth {settings.depth} {detail}; "
                "try a lower --lo")
    return f"{answer.text} [chunk sizes at depth {settings.depth}]"


def bisection_from_log(settings: BisectSettings, section: dict[str, Any],
                       plans: list[PlanRecord], seed: int = 0) -> Bisection:
    """Rebuild a bisection from a report: every step the log holds counts, none is re-run
    (the counts are the ones the log recorded for the trials each step used)."""
    bisection = Bisection(settings.lo, settings.hi, Classification(settings.flaky_as),
                          settings.noun, seed=seed)
    names = {p.name for p in plans}
    for entry in section.get("log", []):
        if entry.get("plan") not in names:
            raise BadInput(f"the bisect log names plan {entry.get('plan')!r}, which the report "
                           "does not hold")
        bisection.record(int(entry["x"]), {str(k): int(v) for k, v in entry["counts"].items()},
                         confirmation=bool(entry.get("confirmation")))
    return bisection
