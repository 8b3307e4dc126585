"""A trial whose set-up the stack refused (a buffer the XDNA shim will not make, a context
the driver will not create) ran no runlist: it is never counted as the runlist failing, and
where no runlist of the case's plans ran, the verdict's first line says the run could not
start and why (issue 49.6)."""

from __future__ import annotations

from pathlib import Path

from captures import FLM_CONTEXTS, CaptureWriter
from diagkit import invoke, of

from harness.model.results import RunlistOutcome, TrialResult, TrialStatus
from harness.report.check import check_report_file
from harness.report.fileformat import load_report
from harness.report.model import PlanRecord
from harness.report.verdict import judge

NONE_FLAG = "unsupported buffer type: none flag (err=95)"


def flagless_capture(folder: Path) -> Path:
    """A decode captured with buffers whose flags are 0: the XDNA shim makes host-only and
    cacheable buffers only, and refuses these (amd/xdna-driver 856409ca src/shim
    device.cpp alloc_bo, buffer.cpp bo_flags_to_type; harness.sim.rules)."""
    writer = CaptureWriter(folder)
    kernels = {label: writer.kernel(writer.hwctx(label)) for label in FLM_CONTEXTS}
    buffers = [writer.buffer(memgrp=1, flags=0) for _ in range(5)]
    writer.frame([writer.run(kernels["attn"], buffers)])
    writer.frame([writer.run(kernels["layer"], buffers) for _ in range(42)])
    return writer.save()


def test_a_capture_whose_buffers_the_shim_refuses_could_not_start(tmp_path):
    capture = flagless_capture(tmp_path / "cap")
    out = tmp_path / "r.yaml"
    result = invoke("reproduce", "--capture", str(capture), "--no-isolate", "--backend",
                    "sim", "--out", str(out))
    first = result.stdout.splitlines()[1]
    assert first == f"verdict: could not start: {NONE_FLAG} [SIMULATED]"
    assert "the run could not start: every trial of captured 42 and cut 21+21 failed at " \
        "set-up, before any runlist ran" in result.stdout
    assert "the cut does not avoid" not in result.stdout
    assert " failed 3/3" not in result.stdout.replace("set-up failed 3/3", "")
    report = load_report(out)
    assert report.verdict["answer"] == f"could not start: {NONE_FLAG} [SIMULATED]"
    assert report.plans[0].counts_text() == "set-up failed 3/3"
    assert check_report_file(str(out)).problems == []
    # the diagnosis says so before why its answer is open
    diagnosis = of(out)
    top = diagnosis.top
    assert top.id == "undetermined"
    assert top.why.startswith("the run could not start (6 trials refused at set-up: ")
    # the shim refused the buffer's kind (its flags), not memory: host-memory has no support
    assert not diagnosis.entry("host-memory").supports


def test_a_refused_context_could_not_start_and_is_still_contention(tmp_path):
    out = tmp_path / "r.yaml"
    result = invoke("reproduce", "--no-isolate", "--profile", "held-contexts:13", "--out",
                    str(out))
    assert result.stdout.splitlines()[1] == ("verdict: could not start: "
                                             "DRM_IOCTL_AMDXDNA_CREATE_HWCTX IOCTL failed "
                                             "(err=-22) [SIMULATED]")
    # four contexts of its own cannot use up 16: other holders took them (contention)
    assert of(out).top.id == "contention"


def test_investigate_of_a_run_that_cannot_start_confirms_it_and_stops(tmp_path):
    capture = flagless_capture(tmp_path / "cap")
    out = tmp_path / "inv.yaml"
    invoke("investigate", str(capture), "--no-isolate", "--backend", "sim", "--out",
           str(out))
    report = load_report(out)
    steps = [s["experiment"] for s in report.sections["investigate"]["steps"]]
    assert steps == ["three-way", "confirm"]          # no shallower depth of a set-up
    assert all(len(p.finished()) == 2 for p in report.plans if not p.control)
    assert report.verdict["answer"].startswith(f"could not start: {NONE_FLAG}")


def _trial(index: int, state: str | None, error: str | None = None) -> TrialResult:
    if state is None:
        return TrialResult(index, TrialStatus.FAILED, error=f"set-up failed: {error}")
    status = TrialStatus.COMPLETED if state == "COMPLETED" else TrialStatus.FAILED
    return TrialResult(index, status, runlists=[RunlistOutcome(0, 42, [24, 18],
                                                               state=state)])


def test_a_cut_whose_set_up_failed_is_not_a_cut_that_fails():
    """The one runlist timed out; its cut's set-up was refused: the cut says nothing, and
    the verdict says which trials ran no runlist."""
    whole = PlanRecord("monolithic", "42", [42], trials=[_trial(i, "TIMEOUT")
                                                         for i in range(3)])
    cut = PlanRecord("halves", "21+21", [21, 21], trials=[_trial(i, None, "Bad BO type.")
                                                          for i in range(3)])
    verdict = judge([whole, cut], {"kind": "xrt", "simulated": False})
    assert verdict.answer == ("42 in one runlist: TIMEOUT 3/3; cut 21+21: set-up failed 3/3 "
                              "-> the cut could not start")
    assert "the cut does not avoid" not in verdict.text
    assert "set-up failed in 3 trials (halves 21+21: set-up failed: Bad BO type.): those " \
        "ran no runlist and are not counted as the runlist failing" in verdict.text
