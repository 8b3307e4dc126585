"""The verdict of a run: its answer first, in one short line (was the failure reproduced,
and does the cut avoid it; `harness.report.answer`), then how that follows and its caveats,
a line each: the hypothesis that made it, the plans' counts with the full source label, the
depth-only control, XRT's own control.

What a verdict may claim depends on what ran (the report's `case`): a case whose runs carry
only the one-NOOP stream tests submission depth, so NOOP runlists that complete on hardware
say that depth alone does not fail there, never that the machine does not fail (the engine
may still fail in its own commands: capture them); a capture's frame is the engine's own
commands; and a depth-only control that could not run is said as such."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.model.results import WEDGED_STATE, TrialResult, TrialStatus
from harness.report.answer import (
    CUT_AVOIDS,
    CUT_DOES_NOT_AVOID,
    CUT_NOT_STARTED,
    CUT_UNFINISHED,
    CUT_WEDGED,
    NO_CUT,
    answer_line,
    could_not_start_line,
    cut_outcome,
    runlist_failed,
    short_tag,
)
from harness.report.header import section
from harness.report.model import (
    PlanRecord,
    Report,
    is_simulated,
    played_profile,
    source_label,
    source_tag,
)


@dataclass
class Verdict:
    """Whether the failure reproduced: the answer in one line, the reasons below it, and
    what a depth-only control says."""

    reproduced: bool | None      # None: the case expects no failure, or nothing finished
    answer: str                  # the first line, under 100 characters
    reasons: list[str] = field(default_factory=list)   # the lines below it
    control: str | None = None   # with a depth-only control: which of the three it is

    @property
    def text(self) -> str:
        """The reasons, a line each (the report's `verdict.text`)."""
        return "\n".join(self.reasons)

    def lines(self) -> list[str]:
        return [self.answer, *self.reasons]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reproduced": self.reproduced, "answer": self.answer,
                               "text": self.text}
        if self.control is not None:
            out["control"] = self.control
        return out


def verdict_lines(verdict: dict[str, Any] | None) -> list[str]:
    """A report's verdict as it is shown: the answer, then the reasons; a report written
    before verdicts had an answer shows its one line."""
    if not verdict:
        return ["no verdict (the run did not finish)"]
    lines = [str(verdict["answer"])] if verdict.get("answer") else []
    return lines + [line for line in str(verdict.get("text") or "").split("\n") if line]


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
    """The states of the trials a runlist of which failed (a refused set-up is not one, nor a
    trial on a wedged device: what it answered says nothing of its plan)."""
    return [t.state for t in plan.trials if runlist_failed(t)]


def _on_wedged(plans: list[PlanRecord]) -> list[TrialResult]:
    return [t for p in plans for t in p.trials if t.state == WEDGED_STATE]


def _wedged_line(plans: list[PlanRecord]) -> str | None:
    """What the trials a wedge left without evidence are, and why none of them counts."""
    wedged = _on_wedged(plans)
    if not wedged:
        return None
    first = wedged[0].wedged_device or {}
    since = f", since {first['since']}" if first.get("since") else ""
    where = "; ".join(f"{p.label} {n}" for p in plans
                      if (n := sum(t.state == WEDGED_STATE for t in p.trials)))
    return (f"{len(wedged)} trials ran on a wedged device ({where}): the device was "
            f"{first.get('state', 'wedged')}{since}, so what they answered is not evidence "
            "of the depth, the cut or the control, and none is counted for them")


def _setup_errors(plans: list[PlanRecord]) -> list[tuple[PlanRecord, str]]:
    """Each trial that failed before any runlist answered: its plan and what refused it."""
    return [(p, str(t.error or "set-up failed")) for p in plans for t in p.trials
            if t.setup_failed and t.state != WEDGED_STATE]


def and_listed(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def could_not_start(plans: list[PlanRecord]) -> str | None:
    """What refused the set-up, where no runlist of `plans` answered and some trial's
    set-up failed (the run could not start); None where one answered or none was refused."""
    refused = _setup_errors(plans)
    if not refused or any(_failures(p) or _completions(p) for p in plans):
        return None
    return refused[0][1]


def _setup_note(plans: list[PlanRecord], backend: dict[str, Any]) -> tuple[str, str] | None:
    """Where set-up failed: the answer line (when no runlist of the case's plans answered
    at all, the run could not start) or "" (it did in some), and the line that says so."""
    refused = _setup_errors(plans)
    if not refused:
        return None
    first = refused[0][1]
    where = and_listed(sorted({p.label for p, _ in refused}, key=[p.label for p in plans].index))
    trials = f"{len(refused)} trial" + ("s" if len(refused) != 1 else "")
    if could_not_start(plans) is None:
        return "", (f"set-up failed in {trials} ({where}: {first}): those ran no "
                    "runlist and are not counted as the runlist failing")
    return could_not_start_line(first, backend), (
        f"the run could not start: every trial of {where} failed at set-up, "
        f"before any runlist ran ({first}); nothing was submitted, so nothing here says "
        "whether the runlist fails: fix what refused the set-up and run again")


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
    wedged = _wedged_line(plans)
    if wedged:
        verdict.reasons.append(wedged)
    if not controls:
        if control_missing is not None:
            verdict.reasons.append(_no_control(control_missing))
        return verdict
    whole = [p for p in case_plans if len(p.chunks) == 1] or case_plans   # full depth
    answered = [p for p in whole + controls if _failures(p) or _completions(p)]
    refused = [p for p in controls if _failures(p) and _refused_at_first_run(p)]
    if refused:
        # a failure any runlist meets at its first run is no depth result
        verdict.reasons.append(_control_refused(refused, backend))
        verdict.control = INCONCLUSIVE
        return verdict
    if any(_failures(p) for p in controls):
        kind = DEPTH_ALONE
    elif len(answered) < len(whole) + len(controls):
        kind = INCONCLUSIVE             # a plan without a single answer from the stack
    elif any(_failures(p) for p in whole):
        kind = CASE_ONLY
    else:
        kind = NOTHING
    control = "; ".join(f"{p.label}: {p.counts_text()}" for p in controls)
    verdict.reasons.append(f"control {control} -> {_said(kind, case)}")
    verdict.control = kind
    return verdict


def _refused_at_first_run(plan: PlanRecord) -> bool:
    """Every failure of `plan` the firmware's error at its first run (ERROR, the run named
    by the device as run 0): a runlist of one run would meet it as well, so it says nothing
    of depth (ert.h: ERROR is a command the firmware failed, error_index its run)."""
    firsts = [next((r for r in t.runlists if r.state not in (None, "COMPLETED")), None)
              for t in plan.trials if runlist_failed(t)]
    return bool(firsts) and all(r is not None and r.state == "ERROR" and r.failing_run == 0
                                for r in firsts)


# XRT picks its validate archive by device family (Xilinx/XRT 963c58ee
# src/runtime_src/core/common/smi/smi.cpp get_validate_archive_path): Phoenix (npu1) has
# xrt_smi_phx.a, Strix (npu4/5/6) xrt_smi_strx.a, whose nop.elf the control runs
VALIDATE_ARCHIVES = ("XRT's validate artefacts are per device family, xrt_smi_phx.a for "
                     "npu1 Phoenix and xrt_smi_strx.a for Strix (smi.cpp "
                     "get_validate_archive_path), and the control ran Strix's nop.elf, an "
                     "AIE2P stream, not npu1's own")


def _control_refused(plans: list[PlanRecord], backend: dict[str, Any]) -> str:
    """The control line for a control the stack refused at its first run."""
    counts = "; ".join(f"{p.label}: {p.counts_text()}" for p in plans)
    name = str(section(backend.get("device")).get("name") or "")
    why = f"; {VALIDATE_ARCHIVES}" if name.upper().startswith("NPU1") else ""
    return (f"control {counts} -> {INCONCLUSIVE}: its first run failed (ERROR at run 0), "
            "as it would in a runlist of any depth: the stack refused the control's "
            f"commands, so the control separates nothing{why}")


def _said(kind: str, case: dict[str, Any] | None) -> str:
    """The three-way's answer in the words what ran allows."""
    nop_only, captured, _ = _case_facts(case)
    if kind == CASE_ONLY and captured:
        return CASE_ONLY_ENGINE
    if kind == CASE_ONLY and nop_only:
        return CASE_ONLY_NOOPS
    return kind


def _why_not(control: dict[str, Any]) -> str:
    """Why the control did not run, in short: as the runner recorded it (`why`); a report
    written before it did has the whole message only, whose first clause (up to the
    search's "; searched: ...") its verdict quoted, and still does, so it checks as
    written."""
    why = control.get("why")
    return str(why) if why else str(control.get("not_run")).split(";")[0]


def _no_control(why: str) -> str:
    return (f"the depth-only control did not run ({why}), so nothing here separates "
            "depth alone from the case's commands")


def by_construction(backend: dict[str, Any]) -> str:
    """The sentence a verdict gives when its results follow from an injected hypothesis:
    "" for hardware and for the documented simulated stack."""
    sentences = backend.get("by_construction") or []
    if not is_simulated(backend) or not sentences:
        return ""
    return (f"{source_tag(backend)}: the outcome follows from the injected hypothesis by "
            "construction: " + "; ".join(map(str, sentences)) + ".")


def search_verdict(answer: str, backend: dict[str, Any], reasons: list[str]
                   ) -> dict[str, Any]:
    """A bisect's or sweep's verdict for its report: its answer first, labelled, then the
    hypothesis that made it and the reasons."""
    made = by_construction(backend)
    label = source_label(backend)
    below = ([made] if made else []) + reasons + ([f"[{label}]"] if label else [])
    return {"reproduced": None, "answer": answer + short_tag(backend), "text": "\n".join(below)}


def _judge_case(plans: list[PlanRecord], backend: dict[str, Any],
                case: dict[str, Any] | None) -> Verdict:
    made = by_construction(backend)
    setup = _setup_note(plans, backend)
    if setup is not None and setup[0]:         # no runlist ran: that, before anything
        return Verdict(None, setup[0], ([made] if made else []) + [setup[1]])
    reproduced, outcome, judgement = _judge_counts(plans, backend, case)
    return Verdict(reproduced, answer_line(plans, outcome, backend),
                   ([made] if made else []) + [judgement] + ([setup[1]] if setup else []))


def _judge_counts(plans: list[PlanRecord], backend: dict[str, Any],
                  case: dict[str, Any] | None) -> tuple[bool | None, str, str]:
    """Whether it reproduced, the answer's outcome in a few words, and the line that says
    how, with the full source label."""
    counts = "; ".join(f"{p.label}: {p.counts_text()}" for p in plans)
    label = source_label(backend)
    tag = f" [{label}]" if label else ""
    expected_fail = [p for p in plans if p.expect and p.expect != "COMPLETED"]
    if not any(p.finished() for p in plans):
        return None, "inconclusive", f"inconclusive: no trial finished ({counts}){tag}"
    if not any(_failures(p) or _completions(p) for p in plans):
        how = ", crashed or ran on a wedged device" if _on_wedged(plans) else " or crashed"
        return (None, "inconclusive", "inconclusive: no trial got an answer from the stack "
                f"(each hit its deadline{how}): {counts}{tag}")
    if _case_facts(case)[1]:
        return _judge_capture(plans, counts, tag, backend, case or {})
    if expected_fail:
        return _judge_expected_failure(plans, expected_fail, counts, tag, backend, case)
    failing = [p for p in plans if _failures(p)]
    if not failing:
        return None, "all completed", f"all plans completed: {counts}{tag}"
    unexpected = [p.label for p in failing if p.expect == "COMPLETED"]
    note = f" (expected to complete: {', '.join(unexpected)})" if unexpected else ""
    whole_fails = any(_failures(p) for p in plans if len(p.chunks) == 1)
    outcome = cut_outcome(plans) if whole_fails else "failures"
    return None, outcome, f"failures: {counts}{note}{tag}"


CONCLUSIONS = {CUT_AVOIDS: "the cut avoids the failure",
               CUT_DOES_NOT_AVOID: "the cut does not avoid the failure",
               NO_CUT: "no cut was run", CUT_UNFINISHED: "the cut did not finish every trial",
               CUT_WEDGED: "the cut ran only on a wedged device, so nothing follows about it",
               CUT_NOT_STARTED: "the cut's set-up failed, so it says nothing"}


def _not_produced(backend: dict[str, Any]) -> str | None:
    """Why a simulated run that completes says nothing of a machine; None on hardware."""
    if not is_simulated(backend):
        return None
    if backend.get("documented", True):
        return "the documented limits do not produce the failure; a hardware run is the test"
    return f"profile {played_profile(backend)} does not produce it"


def _judge_capture(plans: list[PlanRecord], counts: str, tag: str, backend: dict[str, Any],
                   case: dict[str, Any]) -> tuple[bool | None, str, str]:
    """A captured frame replayed, and its cuts: the engine's own commands."""
    what = (f"the engine's own commands ({case.get('frame')} of the capture, "
            f"{case.get('layers')} runs)")
    if any(_failures(p) for p in plans if len(p.chunks) == 1):
        outcome = cut_outcome(plans)
        return True, outcome, (f"reproduced with {what}: {counts} -> {CONCLUSIONS[outcome]}"
                               f"{tag}")
    reason = _not_produced(backend) or (
        "replayed alone with the data it started with, the captured frame does not fail on "
        "this machine: what failed in the engine needs more than this frame (the frames "
        "before it, its timing, another thread); replay the whole capture with `xrt-runner "
        "--replay replay.json`, or capture again up to the failure")
    return False, "not reproduced", f"not reproduced with {what}: {counts} -> {reason}{tag}"


def _judge_expected_failure(plans: list[PlanRecord], expected_fail: list[PlanRecord],
                            counts: str, tag: str, backend: dict[str, Any],
                            case: dict[str, Any] | None) -> tuple[bool | None, str, str]:
    if any(_failures(p) for p in expected_fail) and \
            not any(p.expect in _failures(p) for p in expected_fail):
        seen = "; ".join(f"{p.label} expected {p.expect}, saw "
                         + ", ".join(sorted(set(_failures(p)))) for p in expected_fail
                         if _failures(p))
        return False, "a different failure", f"a different failure ({seen}): {counts}{tag}"
    if any(_failures(p) for p in expected_fail):
        notes = []
        for plan in expected_fail:
            others = sorted(set(_failures(plan)) - {plan.expect})
            if others:
                notes.append(f"{plan.label} expected {plan.expect}, saw {', '.join(others)}")
        outcome = cut_outcome(plans)
        note = f" ({'; '.join(notes)})" if notes else ""
        return True, outcome, f"reproduced: {counts} -> {CONCLUSIONS[outcome]}{note}{tag}"
    if not any(_completions(p) for p in expected_fail):
        return (None, "inconclusive", f"inconclusive: {counts} -> no trial of the plans "
                "expected to fail got an answer from the stack (each hit its deadline, "
                f"crashed or was interrupted){tag}")
    reason = _not_produced(backend) or _on_this_machine(case)
    return False, "not reproduced", f"not reproduced: {counts} -> {reason}{tag}"


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
    said = f"XRT's own control `{control.get('command')}` (one runlist of 1000 NOP runs): "
    if result in XRT_SMI_MEANS:
        said += f"{result} -> {XRT_SMI_MEANS[result]}"
    else:
        # it did not get to the test: nothing follows about XRT's deep runlist
        note = str(control.get("note") or "")
        said += (note if note.startswith(result) else f"{result}: {note}" if note
                 else result) + "; so it says nothing either way"
    return Verdict(verdict.reproduced, verdict.answer, [*verdict.reasons, said],
                   verdict.control)


def report_verdict(report: Report) -> Verdict:
    """A report's verdict from its plans, what ran, the control that could not run, and
    XRT's own control: what a run writes and what `report check` recomputes."""
    control = report.artifacts.get("control")
    missing = _why_not(control) if isinstance(control, dict) and "not_run" in control \
        else None
    xrt_smi = report.sections.get("xrt_smi_control")
    return with_xrt_smi(judge(report.plans, report.backend, report.case, missing),
                        xrt_smi if isinstance(xrt_smi, dict) else None)
