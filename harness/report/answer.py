"""The first line of a verdict: the answer, from the plans' outcomes, in under 100
characters, e.g. ``42 in one runlist: TIMEOUT 3/3; cut 21+21: COMPLETED 3/3 -> the cut
avoids it [SIMULATED]``. How it follows, and its caveats, go on the lines below it
(`harness.report.verdict`), so a reader has the answer before the reasons."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.model.plan import cut_text
from harness.model.results import WEDGED_STATE, TrialResult, TrialStatus
from harness.report.model import PlanRecord, is_simulated, source_tag

# "verdict: " goes before it on the console: the whole line stays under 100 characters
ANSWER_WIDTH = 90

# what the cut did, in the one word the prose uses for it
CUT_AVOIDS = "the cut avoids it"
CUT_DOES_NOT_AVOID = "the cut does not avoid it"
NO_CUT = "no cut was run"
CUT_UNFINISHED = "the cut did not finish"
CUT_WEDGED = "the cut ran on a wedged device"
CUT_NOT_STARTED = "the cut could not start"
COULD_NOT_START = "could not start"


def runlist_failed(trial: TrialResult) -> bool:
    """A trial a runlist of which the stack failed (not one whose set-up it refused, nor one
    that began on a device a wedge left unusable: that says nothing of the plan)."""
    return trial.status is TrialStatus.FAILED and not trial.setup_failed \
        and trial.state != WEDGED_STATE


def plan_phrase(plan: PlanRecord) -> str:
    """``42 in one runlist`` or ``cut 21+21``."""
    if len(plan.chunks) == 1:
        return f"{plan.chunks[0]} in one runlist"
    return f"cut {cut_text(plan.chunks)}"


def short_tag(backend: dict[str, Any]) -> str:
    """`` [SIMULATED]`` or `` [EMULATED]`` (the profile is on the lines below); nothing on
    hardware."""
    return f" [{source_tag(backend)}]" if is_simulated(backend) else ""


def cut_outcome(plans: Sequence[PlanRecord]) -> str:
    """What the cut plans did beside one runlist that failed."""
    cuts = [p for p in plans if len(p.chunks) > 1 and p.finished()]
    if not cuts:
        return NO_CUT
    # a trial on a device a wedge left unusable says nothing of the cut
    answered = [t for p in cuts for t in p.finished() if t.state != WEDGED_STATE]
    if not answered:
        return CUT_WEDGED
    if any(runlist_failed(t) for t in answered):
        return CUT_DOES_NOT_AVOID
    if all(t.setup_failed for t in answered):
        return CUT_NOT_STARTED
    if all(t.status is TrialStatus.COMPLETED for t in answered):
        return CUT_AVOIDS
    return CUT_UNFINISHED


def answer_line(plans: Sequence[PlanRecord], outcome: str, backend: dict[str, Any]) -> str:
    """Each plan's outcome and what follows, as many plans as fit; the rest are counted
    (the lines below the answer name them all)."""
    tail = f" -> {outcome}{short_tag(backend)}"
    if not plans:
        return "no plan" + tail
    phrases = [plan_phrase(p) for p in plans]
    if len(set(phrases)) < len(phrases):    # two plans of one shape: their names tell apart
        phrases = [p.label for p in plans]
    items = [f"{phrase}: {plan.counts_text()}"
             for phrase, plan in zip(phrases, plans, strict=True)]
    whole = "; ".join(items) + tail
    if len(whole) <= ANSWER_WIDTH:
        return whole
    if any(_wedged(p) for p in plans):
        # trials on a wedged device are what the outcome turns on: every plan's counts,
        # said shorter, before any plan is left to "+N more"
        short = [f"{_short_phrase(p, phrase)}: {_compact_counts(p)}"
                 for phrase, p in zip(phrases, plans, strict=True)]
        line = "; ".join(short) + tail
        if len(line) <= ANSWER_WIDTH:
            return line
    for shown in range(len(items) - 1, 0, -1):
        left = len(items) - shown
        line = "; ".join(items[:shown]) + f"; +{left} more" + tail
        if len(line) <= ANSWER_WIDTH:
            return line
    # one plan's counts are too long a list of states, or its cut too long a list of
    # runlists: say how many trials failed (and how many ran on a wedged device), and how
    # deep in how many runlists
    plan = plans[0]
    finished = len(plan.finished())
    failed = sum(runlist_failed(t) for t in plan.trials)
    wedged = _wedged(plan)
    counts = f"failed {failed}/{finished}" + (f", wedged {wedged}" if wedged else "")
    more = f"; +{len(plans) - 1} more" if len(plans) > 1 else ""
    for phrase in (phrases[0], _depth_phrase(plan), _short_phrase(plan, phrases[0])):
        line = f"{phrase}: {counts}{more}{tail}"
        if len(line) <= ANSWER_WIDTH:
            break
    return line


def _wedged(plan: PlanRecord) -> int:
    return sum(t.state == WEDGED_STATE for t in plan.finished())


def _short_phrase(plan: PlanRecord, phrase: str) -> str:
    """``42`` or ``21+21``; a plan named by its label keeps it."""
    return cut_text(plan.chunks) if phrase == plan_phrase(plan) else phrase


def _compact_counts(plan: PlanRecord) -> str:
    """``TIMEOUT 1/3, wedged 2``: the plan's counts with its trials' number said once, the
    trials on a wedged device last."""
    by_state = plan.summary()["by_state"]
    if not by_state:
        return plan.counts_text()
    total = sum(by_state.values())
    parts = sorted(by_state.items(), key=lambda kv: (kv[0] == WEDGED_STATE, -kv[1], kv[0]))
    return ", ".join(f"{state} {n}/{total}" if i == 0 else f"{state} {n}"
                     for i, (state, n) in enumerate(parts))


def could_not_start_line(error: str, backend: dict[str, Any]) -> str:
    """``could not start: unsupported buffer type: none flag (err=95) [SIMULATED]``: the
    refusal in as many of its clauses as fit."""
    tail = short_tag(backend)
    said = error.removeprefix("set-up failed: ").splitlines()[0] if error else "set-up failed"
    clauses = said.split(": ")
    for shown in range(len(clauses), 0, -1):
        line = f"{COULD_NOT_START}: " + ": ".join(clauses[:shown]) + tail
        if len(line) <= ANSWER_WIDTH:
            return line
    room = ANSWER_WIDTH - len(f"{COULD_NOT_START}: ...{tail}")
    return f"{COULD_NOT_START}: {clauses[0][:room]}...{tail}"


def _depth_phrase(plan: PlanRecord) -> str:
    depth = sum(plan.chunks)
    return (f"{depth} in one runlist" if len(plan.chunks) == 1
            else f"{depth} in {len(plan.chunks)} runlists")
