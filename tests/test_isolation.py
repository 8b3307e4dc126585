"""The isolation path as real subprocesses: workers, deadlines, crashes, kill -9, Ctrl-C."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from harness.isolation import run_isolated
from harness.report import load_report
from harness.results import CommandSpec, TrialSpec

HARNESS = [sys.executable, "-m", "harness"]


def harness(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*HARNESS, *args], capture_output=True, text=True, timeout=timeout)


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([*HARNESS, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def wait_for_in_flight(path: Path, proc: subprocess.Popen) -> None:
    for _ in range(300):
        if path.exists() and "status: in-flight" in path.read_text():
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("no trial went in-flight")


def workers_left(wait_s: float = 5.0) -> list[psutil.Process]:
    """Worker processes still alive after up to `wait_s` (a worker may still be starting)."""
    deadline = time.monotonic() + wait_s
    while True:
        found = [p for p in psutil.process_iter(["cmdline"])
                 if "_worker" in (p.info["cmdline"] or []) and p.pid != os.getpid()]
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def test_new_user_reproduce_prints_a_verdict():
    script = shutil.which("reproduce_ert_timeout")
    command = [script] if script else [*HARNESS, "reproduce"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0].startswith("backend: SIMULATED stack")
    assert out[1].startswith("verdict: not reproduced")
    report = load_report(out[-1].split("report: ", 1)[1])
    assert report.backend["isolation"] is True
    assert all(t.status == "completed" for p in report.plans for t in p.trials)


def test_deadline_kills_the_worker_and_the_next_trial_still_runs(tmp_path):
    out = tmp_path / "deadline.yaml"
    done = harness("run", "minicpm5-2b-decode", "--plan", "monolithic", "--trials", "2",
                   "--profile", "mainline,hang-at:3", "--realtime", "--deadline", "1.5",
                   "--out", str(out))
    assert done.returncode == 4, done.stderr
    trials = load_report(out).plans[0].trials
    assert [t.status for t in trials] == ["deadline", "deadline"]
    assert "1.5 s deadline" in trials[0].error
    assert not workers_left()


def test_a_worker_that_dies_is_recorded_as_crashed(tmp_path):
    from harness.xclbin_writer import flm_spec, synthesize
    xclbin = tmp_path / "layer.xclbin"
    xclbin.write_bytes(synthesize(flm_spec("Crash/layer")))
    spec = TrialSpec(plan="p", chunks=[2], trial=0, seed=1, xclbins={"layer": str(xclbin)},
                     runlist_context="layer",
                     per_layer=[CommandSpec("MLIR_AIE", str(tmp_path / "gone.bin"), [64])])
    result = run_isolated(spec, {"kind": "sim", "profile": "staging"}, 30.0, {})
    assert result.status == "crashed"
    assert "exited with status 1" in result.error and "FileNotFoundError" in result.error


def test_kill_9_leaves_a_loadable_report_and_resume_finishes_it(tmp_path):
    out = tmp_path / "killed.yaml"
    proc = start("run", "minicpm5-2b-decode", "--plan", "monolithic", "--trials", "1",
                 "--profile", "hang-at:3", "--realtime", "--out", str(out))
    wait_for_in_flight(out, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    report = load_report(out)
    assert [t.status for t in report.plans[0].trials] == ["in-flight"]
    assert report.finished is None
    assert not workers_left()             # the worker died with its parent
    done = harness("run", "--resume", str(out))
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith(f"resuming {out}")
    report = load_report(out)
    assert [t.status for t in report.plans[0].trials] == ["interrupted", "failed"]
    assert report.finished is not None and report.verdict["reproduced"] is True


def test_ctrl_c_stops_cleanly_and_keeps_the_report(tmp_path):
    out = tmp_path / "interrupted.yaml"
    proc = start("run", "minicpm5-2b-decode", "--trials", "2", "--profile",
                 "mainline,hang-at:3", "--realtime", "--out", str(out))
    wait_for_in_flight(out, proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "--resume" in err
    trials = load_report(out).plans[0].trials
    assert [t.status for t in trials] == ["interrupted"]
    assert not workers_left()
