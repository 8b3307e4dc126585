"""Faults that must lose nothing: two writers on one report, kills in the middle of a write,
full disks and file-size limits, SIGTERM and Ctrl-C at any moment. Real processes, real
signals and real files; every subprocess bounded by the test."""

from __future__ import annotations

import errno
import os
import random
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.app.cli import main
from harness.model.results import TrialStatus
from harness.report.check import check_report_file
from harness.report.fileformat import load_report

HARNESS = [sys.executable, "-m", "harness"]
SLOW = ["--profile", "staging,hang-at:3,realtime"]  # each trial: staging's 2 s, in real time


def run(*args: str, bound_s: float = 60, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([*HARNESS, *args], capture_output=True, text=True, timeout=bound_s,
                          **kwargs)


def started(out: Path, *args: str) -> subprocess.Popen:
    proc = subprocess.Popen([*HARNESS, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    for _ in range(400):
        if out.exists() and '"status": "in-flight"' in out.read_text():
            return proc
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.025)
    proc.kill()
    raise AssertionError("no trial went in flight")


# -- one writer per report -------------------------------------------------------------------

def test_a_second_writer_is_refused_naming_the_first_and_nothing_is_lost(tmp_path):
    out = tmp_path / "r.yaml"
    first = started(out, "run", "minicpm5-2b-decode", "--plan", "42", "--trials", "2",
                    "--out", str(out), *SLOW)
    try:
        second = run("run", "--resume", str(out), bound_s=30)
        assert second.returncode == 2
        assert f"another harness (pid {first.pid}) is writing" in second.stderr
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=30)
    again = run("run", "--resume", str(out), *[], bound_s=60)
    assert again.returncode == 1, again.stderr
    trials = load_report(out).plans[0].trials
    # the interrupted trial runs again in its place: two trials, as --trials 2 asked
    assert [t.status for t in trials] == [TrialStatus.FAILED, TrialStatus.FAILED]


def test_a_lock_left_by_a_dead_writer_is_taken_over_and_noted(tmp_path):
    out = tmp_path / "r.yaml"
    proc = started(out, "run", "minicpm5-2b-decode", "--plan", "42", "--trials", "1",
                   "--out", str(out), *SLOW)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    lock = tmp_path / ".r.yaml.lock"
    assert lock.read_text() == str(proc.pid)             # left behind by the kill
    done = run("run", "--resume", str(out))
    assert done.returncode == 1, done.stderr
    report = load_report(out)
    assert any(f"took over the lock of pid {proc.pid}" in n["note"] for n in report.notes)
    assert not lock.exists()


# -- kills in the middle of a write ---------------------------------------------------------

def test_a_torn_last_entry_is_ignored_then_removed_by_the_next_writer(tmp_path):
    out = tmp_path / "r.yaml"
    proc = started(out, "run", "minicpm5-2b-decode", "--plan", "42", "--trials", "2",
                   "--out", str(out), *SLOW)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    with out.open("a") as file:                         # what a kill mid-write leaves
        file.write('- {"trial": {"plan": "42", "index": 0, "sta')
    report = load_report(out)
    assert report.torn_line is not None and report.plans[0].trials[0].status is \
        TrialStatus.IN_FLIGHT
    validation = check_report_file(str(out))
    assert validation.valid and "cut short" in validation.notes[0]
    (tmp_path / ".r.yaml.a1b2c3.tmp").write_text("a complete copy a kill left before rename\n")
    done = run("run", "--resume", str(out))
    assert done.returncode == 1, done.stderr
    assert not list(tmp_path.glob(".r.yaml.*.tmp"))
    report = load_report(out)
    assert report.torn_line is None and check_report_file(str(out)).notes == []
    assert [t.status for t in report.plans[0].trials] == [TrialStatus.FAILED,
                                                          TrialStatus.FAILED]
    assert any("removed temp files" in n["note"] for n in report.notes)


# -- disk faults ------------------------------------------------------------------------------

@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EPERM])
def test_a_disk_fault_mid_run_is_one_line_exit_4_and_the_last_good_report(monkeypatch, code):
    real_write = os.write
    calls = {"n": 0}

    def failing_write(fd, data):
        calls["n"] += 1
        if calls["n"] == 3:           # the header, the first in-flight entry, then this
            raise OSError(code, os.strerror(code))
        return real_write(fd, data)
    monkeypatch.setattr("harness.report.journal.os.write", failing_write)
    result = CliRunner().invoke(main, ["run", "minicpm5-2b-decode", "--plan", "42",
                                       "--no-isolate", "--trials", "2", "--out", "r.yaml"])
    assert result.exit_code == 4
    line = result.stderr.strip()
    assert "\n" not in line and line.startswith("error: cannot write report r.yaml: ")
    assert errno.errorcode[code] in line and "run --resume r.yaml" in line
    report = load_report("r.yaml")                      # intact: the last good version
    assert [t.status for t in report.plans[0].trials] == [TrialStatus.IN_FLIGHT]


def test_a_write_that_fails_half_way_is_cut_back_to_the_last_whole_entry(monkeypatch):
    """A short write (half the entry on disk) then a failure: the file is cut back to where
    the entry began, so it ends with a whole line and holds no torn entry. Mutation it
    guards against: dropping the `os.ftruncate` in `ReportFile.append_line` (the torn-line
    recovery of readers and of the next writer hides its absence, so only the file itself
    as the failed run left it shows it)."""
    real_write = os.write
    calls = {"n": 0}

    def half_then_full(fd, data):
        calls["n"] += 1
        if calls["n"] == 3:           # the header, the first in-flight entry, then this
            return real_write(fd, data[:len(data) // 2])
        if calls["n"] == 4:           # the rest of it: the disk is full now
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)
    monkeypatch.setattr("harness.report.journal.os.write", half_then_full)
    result = CliRunner().invoke(main, ["run", "minicpm5-2b-decode", "--plan", "42",
                                       "--no-isolate", "--trials", "2", "--out", "r.yaml"])
    assert result.exit_code == 4 and calls["n"] == 4, result.output
    text = Path("r.yaml").read_bytes()
    assert text.endswith(b"\n") and text.splitlines()[-1].endswith(b"}")
    assert load_report("r.yaml").torn_line is None
    assert check_report_file("r.yaml").notes == []


def test_resume_writes_a_trial_found_in_flight_back_as_interrupted(monkeypatch):
    """Reopening a report whose trial was in flight when the harness stopped writes that
    trial back as interrupted at once, so a resume that stops again before running it
    (here: its own first write fails) leaves the report saying so, not "in flight".
    Mutation it guards against: dropping `handle.record_trial` in
    `execution.resume._reopened` (the status changes in memory only; a resume that goes
    on to rerun the trial hides it, as the rerun's entries replace it)."""
    real_write = os.write
    calls = {"n": 0}

    def failing_at_the_first_result(fd, data):
        calls["n"] += 1
        if calls["n"] == 3:           # the header, the first in-flight entry, then this
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)
    args = ["run", "minicpm5-2b-decode", "--plan", "42", "--no-isolate", "--trials", "2",
            "--out", "r.yaml"]
    with monkeypatch.context() as patched:
        patched.setattr("harness.report.journal.os.write", failing_at_the_first_result)
        assert CliRunner().invoke(main, args).exit_code == 4
    assert [t.status for t in load_report("r.yaml").plans[0].trials] == [
        TrialStatus.IN_FLIGHT]

    def failing_in_flight(fd, data):  # the rerun's own in-flight entry cannot be written
        if b'"status": "in-flight"' in data:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)
    monkeypatch.setattr("harness.report.journal.os.write", failing_in_flight)
    resumed = CliRunner().invoke(main, ["run", "--resume", "r.yaml"])
    assert resumed.exit_code == 4, resumed.output
    trial, = load_report("r.yaml").plans[0].trials
    assert trial.status is TrialStatus.INTERRUPTED
    assert trial.error == ("the harness stopped while this trial ran (found when the "
                           "report was reopened)")
    assert check_report_file("r.yaml").valid
def test_a_file_size_limit_in_a_real_process_keeps_the_report(tmp_path):
    out = tmp_path / "r.yaml"

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (24_000, 24_000))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)    # EFBIG instead of a kill
    # no bytecode from this process: under the limit importlib's write of a .pyc is cut
    # short and still installed, and the session's shared cache (conftest) would hand the
    # cut file to every later process
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([*HARNESS, "run", "minicpm5-2b-decode", "--plan", "max:1",
                           "--no-isolate", "--trials", "200", "--out", str(out)],
                          capture_output=True, text=True, timeout=120, preexec_fn=small_files,
                          env=env)
    assert done.returncode == 4, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: cannot write report {out}: File too large (EFBIG)")
    assert "Traceback" not in done.stderr
    report = load_report(out)
    assert check_report_file(str(out)).valid and len(report.plans[0].trials) >= 2
    # the write that met the limit got part of its entry onto the disk: it was cut back
    assert report.torn_line is None and check_report_file(str(out)).notes == []


def test_out_under_a_file_or_on_a_special_file_is_refused_before_anything_runs(tmp_path):
    (tmp_path / "afile").write_text("x")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for out, words in [(tmp_path / "afile" / "r.yaml", "is a file, not a folder"),
                       (fifo, "is a FIFO; refusing to replace it, even with --force"),
                       (Path("/dev/null"), "is a device; refusing")]:
        result = CliRunner().invoke(main, ["run", "minicpm5-2b-decode", "--no-isolate",
                                           "--out", str(out), "--force"])
        assert result.exit_code == 2 and words in result.output, result.output
    assert fifo.exists() and Path("/dev/null").is_char_device()


# -- signals ---------------------------------------------------------------------------------

def test_sigterm_is_a_clean_stop_exit_143(tmp_path):
    out = tmp_path / "r.yaml"
    proc = started(out, "run", "minicpm5-2b-decode", "--plan", "42", "--trials", "2",
                   "--out", str(out), *SLOW)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143
    assert err.strip().splitlines()[-1].startswith("interrupted: stopped by SIGTERM;")
    trial = load_report(out).plans[0].trials[0]
    assert trial.status is TrialStatus.INTERRUPTED and trial.error == "interrupted by SIGTERM"


def held_signals() -> None:
    """In the child before it execs Python: SIGINT and SIGTERM at their defaults (not as
    this test run may have inherited them, ignored) and blocked, so one sent during
    Python's own start-up waits for the harness, which unblocks them once it handles
    them: the test is of the harness, whatever the machine's start-up speed."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


def test_ctrl_c_at_any_moment_of_start_up_is_130_and_one_line(tmp_path):
    rng = random.Random(7)
    for attempt in range(12):
        proc = subprocess.Popen([*HARNESS, "run", "minicpm5-2b-decode", "--plan", "42",
                                 "--no-isolate", "--out", str(tmp_path / f"r{attempt}.yaml"),
                                 *SLOW], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, preexec_fn=held_signals)
        time.sleep(rng.uniform(0.03, 0.6))
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, (attempt, err)
        assert "Traceback" not in err and "Aborted" not in err, err
        assert err.strip().splitlines()[-1].startswith("interrupted: stopped by Ctrl-C"), err
