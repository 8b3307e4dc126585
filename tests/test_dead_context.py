"""A submit refused -EIO, as the diagnosis reads it: the legacy tree's context that could not
connect to the firmware. amd/xdna-driver 856409ca src/driver/amdxdna/aie2_ctx_runqueue.c:
`part_ctx_start` marks a context CTX_STATE_DEAD on any failed `aie2_ctx_connect` ("%s connect
failed, err %d"), its first connect (new contexts start disconnected and connect with their
first job) as much as the reconnect after a hang, and `aie2_rq_submit_enter` then refuses
every submit on it -EIO, which XRT's shim raises as "DRM_IOCTL_AMDXDNA_EXEC_CMD IOCTL failed
(err=-5): Input/output error". So the -EIO alone is no wedge: only a timeout before it in the
same file makes it one, and a check after the run that found the device answering outweighs
what the text implied. Xilinx/mlir-aie#2294 posted the lone form (err=5, an older shim)."""

from __future__ import annotations

import sys

from click.testing import CliRunner
from test_stack_causes import TIMEOUT_JSON, diagnosis_of

from harness.app.cli import main
from harness.report.diagnosis import diagnose

EIO = "DRM_IOCTL_AMDXDNA_EXEC_CMD IOCTL failed (err={}): Input/output error"
TERMINATE = "terminate called after throwing an instance of 'xrt_core::system_error'\n"
STAGING_TDR = "amdxdna 0000:c5:00.1: [drm] *ERROR* aie2_tdr_detect: TDR timeout detected\n"


def _lone(errno: str) -> str:
    return TERMINATE + f"  what():  {EIO.format(errno)}\n"


def test_a_lone_submit_refused_eio_is_no_wedge(tmp_path):
    for errno in ("5", "-5"):               # older shims printed the errno positive
        diagnosis = diagnosis_of(tmp_path, _lone(errno))
        assert not diagnosis.wedged, errno
        experiment = diagnosis.top.experiment
        assert diagnosis.top.id == "undetermined"
        assert not experiment.startswith("first reboot") and "reboot" not in experiment
        # what tells which step of the connect failed is the driver's own lines of it
        assert experiment.startswith("the driver's kernel log of the failing run")
        assert "connect failed, err N" in experiment and "xclbin inspect" in experiment
        assert [s.kind for s in diagnosis.reports[0].signs] == ["ioctl-failed",
                                                                "context-dead"]


def test_after_the_runlist_s_timeout_in_the_same_file_it_is_the_wedge(tmp_path):
    """XRT's TIMEOUT (a chain the driver timed out, xrt_kernel.cpp) before the -EIO: the
    reconnect after the hang failed."""
    diagnosis = diagnosis_of(tmp_path, TIMEOUT_JSON + _lone("-5"))
    (finding,) = diagnosis.wedged
    assert "after the timeout a submit on the context is refused -EIO" in finding.text
    assert "could not connect the context again" in finding.text
    assert diagnosis.top.experiment.startswith("first reboot")


def test_a_timeout_in_another_file_cannot_be_placed_before_it(tmp_path):
    diagnosis = diagnosis_of(tmp_path, STAGING_TDR, _lone("-5"))
    assert not diagnosis.wedged


def test_the_wedge_s_text_names_the_legacy_tree_only_where_the_file_does_not_show_another(
        tmp_path):
    """A staging log (its own TDR line) that then shows the -EIO: the text says only the
    legacy tree refuses a submit so, and which driver the file shows."""
    paste = STAGING_TDR + TERMINATE + f"  what():  {EIO.format('-5')}\n"
    (finding,) = diagnosis_of(tmp_path, paste).wedged
    assert "(only the legacy tree refuses a submit so; this file shows the staging driver)" \
        in finding.text


def test_a_recorded_run_whose_device_answered_afterwards_is_no_wedge(tmp_path):
    """`capture record` of a program that prints XRT's TIMEOUT, then the -EIO, and aborts;
    the check afterwards finds the (simulated) device answering a NOOP run: that outweighs
    what the text implied (harness.execution.device_after)."""
    program = tmp_path / "aborts.py"
    program.write_text(
        "import os, signal, sys\n"
        f"print({TIMEOUT_JSON.strip()!r}, flush=True)\n"
        f"print({TERMINATE.strip()!r}, file=sys.stderr)\n"
        f"print('  what():  ' + {EIO.format('-5')!r}, file=sys.stderr, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGABRT)\n")
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["capture", "record", "--after", "0", "--no-capture",
                                       "--out", str(out), "--", sys.executable, str(program)])
    assert (out / "report.yaml").is_file(), result.output
    diagnosis = diagnose([out / "report.yaml"])
    assert not diagnosis.wedged
    assert not diagnosis.top.experiment.startswith("first reboot")
    text = CliRunner().invoke(main, ["diagnose", str(out / "report.yaml")]).stdout
    assert "stayed wedged" not in text
