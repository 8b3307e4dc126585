"""The one-line verdict of a run: was the failure reproduced, and does chunking avoid it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from harness.model.results import TrialStatus
from harness.report.model import PlanRecord, is_simulated, played_profile, source_tag


@dataclass
class Verdict:
    """Whether the failure reproduced, in words, and what a depth-only control says."""

    reproduced: bool | None      # None: the case expects no failure, or nothing finished
    text: str
    control: str | None = None   # with a depth-only control: which of the three it is

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.control is None:
            del out["control"]
        return out


DEPTH_ALONE = "depth alone fails"
CASE_ONLY = "depth fails only with the case's commands"
NOTHING = "nothing fails"
INCONCLUSIVE = "inconclusive"


def _failures(plan: PlanRecord) -> list[str]:
    return [t.state for t in plan.trials if t.status is TrialStatus.FAILED]


def _completions(plan: PlanRecord) -> int:
    return sum(t.status is TrialStatus.COMPLETED for t in plan.trials)


def judge(plans: list[PlanRecord], backend: dict[str, Any]) -> Verdict:
    """The case's verdict; with a depth-only control plan beside it, also which of
    "depth alone fails", "depth fails only with the case's commands" and "nothing
    fails" the two together show."""
    controls = [p for p in plans if p.control]
    case_plans = [p for p in plans if not p.control]
    verdict = _judge_case(case_plans, backend)
    if not controls:
        return verdict
    whole = [p for p in case_plans if len(p.chunks) == 1] or case_plans   # full depth
    answered = [p for p in whole + controls if _failures(p) or _completions(p)]
    if any(_failures(p) for p in controls):
        kind = DEPTH_ALONE
    elif len(answered) < len(whole) + len(controls):
        kind = INCONCLUSIVE             # a plan without a single answer from the stack
    elif any(_failures(p) for p in whole):
        kind = CASE_ONLY
    else:
        kind = NOTHING
    control = "; ".join(f"{p.label}: {p.counts_text()}" for p in controls)
    body, tag = _untagged(verdict.text)
    return Verdict(verdict.reproduced, f"{body}; control {control} -> {kind}{tag}", kind)


def _untagged(text: str) -> tuple[str, str]:
    """A verdict's text and its closing tag (`` [SIMULATED, ...]``, `` [EMULATED, ...]``),
    apart, so that what is added to it goes before the tag."""
    tag_at = max(text.rfind(" [SIMULATED"), text.rfind(" [EMULATED"))
    return (text[:tag_at], text[tag_at:]) if tag_at >= 0 else (text, "")


def by_construction(backend: dict[str, Any]) -> str:
    """The opening of a verdict whose results follow from an injected hypothesis: "" for
    hardware and for the documented simulated stack."""
    sentences = backend.get("by_construction") or []
    if not is_simulated(backend) or not sentences:
        return ""
    return (f"{source_tag(backend)}: the outcome follows from the injected hypothesis by "
            "construction: "
            + "; ".join(map(str, sentences)) + ". Outcome: ")


def _judge_case(plans: list[PlanRecord], backend: dict[str, Any]) -> Verdict:
    verdict = _judge_counts(plans, backend)
    return Verdict(verdict.reproduced, by_construction(backend) + verdict.text)


def _judge_counts(plans: list[PlanRecord], backend: dict[str, Any]) -> Verdict:
    counts = "; ".join(f"{p.label}: {p.counts_text()}" for p in plans)
    tag = ""
    if is_simulated(backend):
        tag = f" [{source_tag(backend)}, profile {played_profile(backend)}]"
    expected_fail = [p for p in plans if p.expect and p.expect != "COMPLETED"]
    if not any(p.finished() for p in plans):
        return Verdict(None, f"inconclusive: no trial finished ({counts}){tag}")
    if not any(_failures(p) or _completions(p) for p in plans):
        return Verdict(None, f"inconclusive: no trial got an answer from the stack (each hit "
                             f"its deadline or crashed): {counts}{tag}")
    if expected_fail:
        return _judge_expected_failure(plans, expected_fail, counts, tag, backend)
    failing = [p for p in plans if _failures(p)]
    if not failing:
        return Verdict(None, f"all plans completed: {counts}{tag}")
    unexpected = [p.label for p in failing if p.expect == "COMPLETED"]
    note = f" (expected to complete: {', '.join(unexpected)})" if unexpected else ""
    return Verdict(None, f"failures: {counts}{note}{tag}")


def _judge_expected_failure(plans: list[PlanRecord], expected_fail: list[PlanRecord],
                            counts: str, tag: str, backend: dict[str, Any]) -> Verdict:
    if any(_failures(p) for p in expected_fail) and \
            not any(p.expect in _failures(p) for p in expected_fail):
        seen = "; ".join(f"{p.label} expected {p.expect}, saw "
                         + ", ".join(sorted(set(_failures(p)))) for p in expected_fail
                         if _failures(p))
        return Verdict(False, f"a different failure ({seen}): {counts}{tag}")
    if any(_failures(p) for p in expected_fail):
        notes = []
        for plan in expected_fail:
            seen = sorted(set(_failures(plan)) - {plan.expect})
            if seen:
                notes.append(f"{plan.label} expected {plan.expect}, saw {', '.join(seen)}")
        chunked = [p for p in plans if len(p.chunks) > 1 and p.finished()]
        if not chunked:
            conclusion = "no chunked plan was run"
        elif any(_failures(p) for p in chunked):
            conclusion = "chunking does not avoid the failure"
        elif all(_completions(p) == len(p.finished()) for p in chunked):
            conclusion = "chunking avoids the failure"
        else:
            conclusion = "chunked plans did not finish every trial"
        note = f" ({'; '.join(notes)})" if notes else ""
        return Verdict(True, f"reproduced: {counts} -> {conclusion}{note}{tag}")
    if not any(_completions(p) for p in expected_fail):
        return Verdict(None, f"inconclusive: {counts} -> no trial of the plans expected to "
                             "fail got an answer from the stack (each hit its deadline, "
                             f"crashed or was interrupted){tag}")
    if is_simulated(backend):
        if backend.get("documented", True):
            reason = ("the documented limits do not produce the failure; a hardware run "
                      "is the test")
        else:
            reason = f"profile {played_profile(backend)} does not produce it"
    else:
        reason = "this machine does not show the failure"
    return Verdict(False, f"not reproduced: {counts} -> {reason}{tag}")


XRT_SMI_MEANS = {"PASSED": "XRT's own deep runlist completes on this machine",
                 "FAILED": "XRT's own deep runlist fails here too"}


def with_xrt_smi(verdict: Verdict, control: dict[str, Any] | None) -> Verdict:
    """The verdict naming what XRT's own runlist-latency test answered, when it ran."""
    if not control:
        return verdict
    result = str(control.get("result"))
    said = f"; XRT's own control `{control.get('command')}` (one runlist of 1000 NOP runs): "
    if result in XRT_SMI_MEANS:
        said += f"{result} -> {XRT_SMI_MEANS[result]}"
    else:
        # it did not get to the test: nothing follows about XRT's deep runlist
        note = str(control.get("note") or "")
        said += (note if note.startswith(result) else f"{result}: {note}" if note
                 else result) + "; so it says nothing either way"
    body, tag = _untagged(verdict.text)
    return Verdict(verdict.reproduced, body + said + tag, verdict.control)
