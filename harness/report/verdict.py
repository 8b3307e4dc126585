"""The one-line verdict of a run: was the failure reproduced, and does chunking avoid it.

What a verdict may claim depends on what ran (the report's `case`): a case whose runs carry
only the one-NOOP stream tests submission depth, so NOOP runlists that complete on hardware
say that depth alone does not fail there, never that the machine does not fail (the engine
may still fail in its own commands: capture them); a capture's frame is the engine's own
commands; and a depth-only control that could not run is said as such."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from harness.model.results import TrialStatus
from harness.report.model import (
    PlanRecord,
    Report,
    is_simulated,
    played_profile,
    source_tag,
)


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
# CASE_ONLY as said when both arms ran NOOPs, or the case is a captured engine
CASE_ONLY_NOOPS = "depth fails only with the case's xclbin and buffers (both ran NOOPs)"
CASE_ONLY_ENGINE = "depth fails only with the engine's own commands"
ENGINE_DEFAULT = "flm run MODEL"


def _case_facts(case: dict[str, Any] | None) -> tuple[bool, bool, str]:
    """(every run carried only NOOPs, it is a captured engine, the engine's command line)."""
    case = case or {}
    found = case.get("workload")
    workload: dict[str, Any] = found if isinstance(found, dict) else {}
    return (bool(workload.get("nop_only")), case.get("kind") == "capture",
            str(case.get("engine") or ENGINE_DEFAULT))


def capture_how(engine: str) -> str:
    """The commands that put an engine's own commands in a runlist."""
    return (f"runlist-harness capture record --frames 200 --out DIR -- {engine}, then "
            "reproduce_ert_timeout --capture DIR")


def _failures(plan: PlanRecord) -> list[str]:
    return [t.state for t in plan.trials if t.status is TrialStatus.FAILED]


def _completions(plan: PlanRecord) -> int:
    return sum(t.status is TrialStatus.COMPLETED for t in plan.trials)


def judge(plans: list[PlanRecord], backend: dict[str, Any],
          case: dict[str, Any] | None = None, control_missing: str | None = None) -> Verdict:
    """The case's verdict (`case`: the report's, which says what ran); with a depth-only
    control plan beside it, also which of "depth alone fails", "depth fails only with the
    case's commands" and "nothing fails" the two together show; without the control that
    was asked for (`control_missing`: why), that nothing separates the two."""
    controls = [p for p in plans if p.control]
    case_plans = [p for p in plans if not p.control]
    verdict = _judge_case(case_plans, backend, case)
    if not controls:
        if control_missing is None:
            return verdict
        body, tag = _untagged(verdict.text)
        return Verdict(verdict.reproduced, f"{body}; {_no_control(control_missing)}{tag}")
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
    return Verdict(verdict.reproduced,
                   f"{body}; control {control} -> {_said(kind, case)}{tag}", kind)


def _said(kind: str, case: dict[str, Any] | None) -> str:
    """The three-way's answer in the words what ran allows."""
    nop_only, captured, _ = _case_facts(case)
    if kind == CASE_ONLY and captured:
        return CASE_ONLY_ENGINE
    if kind == CASE_ONLY and nop_only:
        return CASE_ONLY_NOOPS
    return kind


def _no_control(why: str) -> str:
    reason = why.removeprefix("the depth-only control was not run: ").split(";")[0]
    return (f"the depth-only control did not run ({reason}), so nothing here separates "
            "depth alone from the case's commands")


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


def _judge_case(plans: list[PlanRecord], backend: dict[str, Any],
                case: dict[str, Any] | None) -> Verdict:
    verdict = _judge_counts(plans, backend, case)
    return Verdict(verdict.reproduced, by_construction(backend) + verdict.text)


def _judge_counts(plans: list[PlanRecord], backend: dict[str, Any],
                  case: dict[str, Any] | None) -> Verdict:
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
    if _case_facts(case)[1]:
        return _judge_capture(plans, counts, tag, backend, case or {})
    if expected_fail:
        return _judge_expected_failure(plans, expected_fail, counts, tag, backend, case)
    failing = [p for p in plans if _failures(p)]
    if not failing:
        return Verdict(None, f"all plans completed: {counts}{tag}")
    unexpected = [p.label for p in failing if p.expect == "COMPLETED"]
    note = f" (expected to complete: {', '.join(unexpected)})" if unexpected else ""
    return Verdict(None, f"failures: {counts}{note}{tag}")


def _cut_conclusion(plans: list[PlanRecord]) -> str:
    chunked = [p for p in plans if len(p.chunks) > 1 and p.finished()]
    if not chunked:
        return "no chunked plan was run"
    if any(_failures(p) for p in chunked):
        return "chunking does not avoid the failure"
    if all(_completions(p) == len(p.finished()) for p in chunked):
        return "chunking avoids the failure"
    return "chunked plans did not finish every trial"


def _not_produced(backend: dict[str, Any]) -> str | None:
    """Why a simulated run that completes says nothing of a machine; None on hardware."""
    if not is_simulated(backend):
        return None
    if backend.get("documented", True):
        return "the documented limits do not produce the failure; a hardware run is the test"
    return f"profile {played_profile(backend)} does not produce it"


def _judge_capture(plans: list[PlanRecord], counts: str, tag: str, backend: dict[str, Any],
                   case: dict[str, Any]) -> Verdict:
    """A captured frame replayed, and its cuts: the engine's own commands."""
    what = (f"the engine's own commands ({case.get('frame')} of the capture, "
            f"{case.get('layers')} runs)")
    whole = [p for p in plans if len(p.chunks) == 1]
    if any(_failures(p) for p in whole):
        return Verdict(True, f"reproduced with {what}: {counts} -> {_cut_conclusion(plans)}"
                             f"{tag}")
    reason = _not_produced(backend) or (
        "replayed alone with the data it started with, the captured frame does not fail on "
        "this machine: what failed in the engine needs more than this frame (the frames "
        "before it, its timing, another thread); replay the whole capture with `xrt-runner "
        "--replay replay.json`, or capture again up to the failure")
    return Verdict(False, f"not reproduced with {what}: {counts} -> {reason}{tag}")


def _judge_expected_failure(plans: list[PlanRecord], expected_fail: list[PlanRecord],
                            counts: str, tag: str, backend: dict[str, Any],
                            case: dict[str, Any] | None) -> Verdict:
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
        conclusion = _cut_conclusion(plans)
        note = f" ({'; '.join(notes)})" if notes else ""
        return Verdict(True, f"reproduced: {counts} -> {conclusion}{note}{tag}")
    if not any(_completions(p) for p in expected_fail):
        return Verdict(None, f"inconclusive: {counts} -> no trial of the plans expected to "
                             "fail got an answer from the stack (each hit its deadline, "
                             f"crashed or was interrupted){tag}")
    return Verdict(False, f"not reproduced: {counts} -> "
                          f"{_not_produced(backend) or _on_this_machine(case)}{tag}")


def _on_this_machine(case: dict[str, Any] | None) -> str:
    """What runlists that complete on hardware show: for NOOPs, that submission depth alone
    does not fail here, so what fails must be in the engine's own commands."""
    nop_only, _, engine = _case_facts(case)
    if nop_only:
        return ("the NOOP runlists complete: submission depth alone does not fail on this "
                "machine, so what fails in the engine must be in its own commands (the work "
                f"its runs carry, not their number); run those: {capture_how(engine)}")
    return ("the case's runlists complete on this machine with the commands it ran; the "
            f"engine's own may still fail: {capture_how(engine)}")


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


def report_verdict(report: Report) -> Verdict:
    """A report's verdict from its plans, what ran, the control that could not run, and
    XRT's own control: what a run writes and what `report check` recomputes."""
    control = report.artifacts.get("control")
    missing = control.get("not_run") if isinstance(control, dict) else None
    xrt_smi = report.sections.get("xrt_smi_control")
    return with_xrt_smi(judge(report.plans, report.backend, report.case, missing),
                        xrt_smi if isinstance(xrt_smi, dict) else None)
