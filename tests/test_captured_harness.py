"""The harness can itself be captured: a run ends through the interpreter's normal exit, in
process or in its workers, so XRT's capture (which writes replay.json only then: STACK.md 9,
capture.cpp `~frames`) records it, as `xrt-capture -- reproduce_ert_timeout --backend xrt`
would. Played by the simulated pyxrt, whose capture writer writes only at a normal exit
(tests/test_capture_writer.py); every case runs as a real process."""

from __future__ import annotations

import gc
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


def _live(kind: type) -> int:
    gc.collect()
    return sum(1 for obj in gc.get_objects() if type(obj) is kind)


def test_while_xrt_s_capture_records_the_run_frees_no_xrt_object(tmp_path, monkeypatch):
    """XRT 2.26's capture keys its records of buffers, contexts, kernels, runs and runlists
    by the object's address and keeps them, a buffer's with its host pointer, to the
    process's end (capture.cpp `frames`): `xrt-capture -- reproduce_ert_timeout
    --no-isolate` freed each trial's objects and died of a segfault in the next (XRT 2.26
    over the emulated driver; a script freeing its runlists ends with `could not save
    replay script: map::at`). While XRT records, the trials of one workload share their
    contexts (the driver gives 16) and every runlist is kept; once it has its frames, a
    trial makes and frees its own again."""
    from test_session import spec_for

    from harness.execution import session
    from harness.execution.backend import choose_backend
    from harness.sim import binding, runs
    shared: dict = {}
    monkeypatch.setattr(session, "_SHARED_WHILE_CAPTURED", shared, raising=False)
    monkeypatch.setattr(session, "_runlists_executed", 0, raising=False)
    monkeypatch.setenv("Runtime.capture_frames", "6")
    monkeypatch.setenv("Runtime.capture_output_dir", str(tmp_path / "cap"))
    backend = choose_backend("sim", "staging,hang-at:30")
    contexts, runlists = _live(binding.hw_context), _live(runs.runlist)
    states = []
    for chunks in ([42], [21, 21], [42], [21, 21]):
        states.append(session.run_trial(spec_for(tmp_path, chunks), backend).runlists[0].state)
        for bo, size, _ in (made for loaded in shared.values() for made in loaded.made):
            bo.write(b"\xff" * size, 0)       # a trial finds its buffers as made, not so
            bo.sync(binding.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE)
    assert states == ["TIMEOUT", "COMPLETED", "TIMEOUT", "COMPLETED"]   # as without capture
    assert _live(binding.hw_context) - contexts == 2          # attn and layer, once
    assert _live(runs.runlist) - runlists == 6                # the 6 frames XRT takes
    session.run_trial(spec_for(tmp_path, [42]), backend)      # past its frames: its own
    assert _live(binding.hw_context) - contexts == 2
    assert _live(runs.runlist) - runlists == 6
