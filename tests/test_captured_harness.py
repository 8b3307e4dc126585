"""The harness can itself be captured: a run ends through the interpreter's normal exit, in
process or in its workers, so XRT's capture (which writes replay.json only then: STACK.md 9,
capture.cpp `~frames`) records it, as `xrt-capture -- reproduce_ert_timeout --backend xrt`
would. Played by the simulated pyxrt, whose capture writer writes only at a normal exit
(tests/test_capture_writer.py); every case runs as a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from machines import stand_in_pack, strix_halo

from harness.report.fileformat import load_report
from harness.sources.capture import load_capture


def reproduce(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "Runtime.capture_frames": "50",
               "Runtime.capture_output_dir": str(tmp_path / "cap"), **env}
    return subprocess.run([sys.executable, "-m", "harness", "reproduce", "--trials", "1",
                           "--out", str(tmp_path / "r.yaml"), *args], env=environ,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("how, env", [
    (["--no-isolate"], {}),
    ([], {"HARNESS_WORKER_START": "fork-server"}),
    ([], {"HARNESS_WORKER_START": "spawn"})])
def test_a_run_on_the_simulated_stack_is_captured(tmp_path, how, env):
    done = reproduce(tmp_path, "--profile", "staging,hang-at:30", *how, **env)
    assert done.returncode == 1, done.stderr
    capture = load_capture(tmp_path / "cap")
    depths = [frame.depth for frame in capture.frames]
    if how:       # in process: every runlist the run executed, in order
        assert depths == [42, 21, 21, 42]
    else:         # each worker's XRT writes its own at its exit: the last (the control) stays
        assert depths == [42]
        assert "each isolated trial" in done.stderr


def test_reproduce_on_the_hardware_path_is_captured_in_its_workers(tmp_path):
    tree = strix_halo(tmp_path, identity=False)
    pack = stand_in_pack(tmp_path / "pack", "Captured")
    done = reproduce(tmp_path, "--backend", "xrt", "--xclbins", str(pack), "--no-control",
                     HARNESS_PYXRT="harness.sim.pyxrt", HARNESS_ROOT=str(tree.root),
                     HARNESS_SIM_PROFILE="staging,hang-at:30")
    assert done.returncode == 1, done.stderr
    assert load_report(tmp_path / "r.yaml").backend["stand_in"] is True
    # the worker of the last trial (halves 21+21) held XRT's objects and exited normally
    assert [f.depth for f in load_capture(tmp_path / "cap").frames] == [21, 21]
