"""Programs the harness runs (journalctl, xrt-smi, flm) are read as a stream with a cap,
and ended with everything they started on a deadline: nothing they print grows the
harness's memory past the cap, and nothing they leave keeps running."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.formats.capped_run import run_capped
from harness.logs.kernel_log import JournalReader
from harness.probe import xrt_smi as xrt_smi_module
from harness.probe.readers import Sources


def running(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its parent to reap it does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def gone_soon(pid: int) -> bool:
    for _ in range(100):
        if not running(pid):
            return True
        time.sleep(0.02)
    return False


def script(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_output_past_the_cap_is_cut_in_flat_memory(tmp_path):
    """300 MB on stdout: what is kept is the cap, and the reading process stays small
    (reading it whole first, as capture_output does, costs several times the output)."""
    code = ("import sys; from harness.formats.capped_run import run_capped\n"
            "done = run_capped(['sh', '-c', 'yes 0123456789abcdef | head -c 300000000'], "
            "60, 8 << 20)\n"
            "peak = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]\n"
            "print(len(done.stdout), done.truncated, int(peak.split()[1]) // 1024)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    kept, truncated, peak_mib = int(out[0]), out[1], int(out[2])
    assert kept == 8 << 20 and truncated == "True"
    assert peak_mib < 120, peak_mib


def test_a_deadline_ends_the_program_and_what_it_started(tmp_path):
    pids = tmp_path / "pids"
    program = script(tmp_path, "hang", f"sleep 60 & echo $! > {pids}\nexec sleep 60\n")
    started = time.monotonic()
    done = run_capped([str(program)], 0.5)
    assert done is not None and done.returncode is None
    assert time.monotonic() - started < 5
    assert gone_soon(int(pids.read_text()))


def test_a_program_that_exits_leaves_nothing_running(tmp_path):
    pids = tmp_path / "pids"
    program = script(tmp_path, "leaves", f"sleep 60 & echo $! > {pids}\necho done\nexit 3\n")
    started = time.monotonic()
    done = run_capped([str(program)], 30)
    assert done is not None and done.returncode == 3 and done.stdout == "done\n"
    assert time.monotonic() - started < 5              # not held by the child's pipe
    assert gone_soon(int(pids.read_text()))


def test_a_program_that_cannot_start_is_none(tmp_path):
    assert run_capped([str(tmp_path / "absent")], 1) is None


def test_journalctl_is_read_up_to_the_cap_and_ended(tmp_path, monkeypatch):
    monkeypatch.setattr("harness.logs.kernel_log.MAX_READ_BYTES", 1 << 20)
    pids = tmp_path / "pids"
    line = ('{"MESSAGE": "amdxdna 0000:c7:00.1: [drm] x", "__REALTIME_TIMESTAMP": '
            '"99999999999999999", "PRIORITY": "3"}')
    journal = script(tmp_path, "journalctl",
                     f"sleep 60 & echo $! > {pids}\nexec yes '{line}'\n")
    reading = JournalReader(str(journal)).read()
    assert reading.truncated
    assert gone_soon(int(pids.read_text()))


def test_xrt_smi_is_ended_on_its_deadline_with_what_it_started(tmp_path, monkeypatch):
    pids = tmp_path / "pids"
    tree = tmp_path / "tree"
    (tree / "usr" / "bin").mkdir(parents=True)
    script(tree / "usr" / "bin", "xrt-smi", f"sleep 60 & echo $! > {pids}\n"
                                            "echo started\nexec sleep 60\n")
    monkeypatch.setattr(xrt_smi_module, "EXAMINE_TIMEOUT_S", 0.5)
    monkeypatch.setenv("HARNESS_ROOT", str(tree))
    src = Sources.live()
    src.env = {"PATH": "/usr/bin"}
    out = xrt_smi_module.xrt_smi(src)
    assert out["examine"]["exit_status"] is None and "stopped after" in out["examine"]["note"]
    assert out["examine"]["output"] == "started"
    assert gone_soon(int(pids.read_text()))


@pytest.mark.parametrize("flood", ["stdout", "stderr"])
def test_flm_version_is_capped(tmp_path, flood):
    target = "" if flood == "stdout" else " >&2"
    program = script(tmp_path, "flm", f"yes 'flm v0.9.20'{target}\n")
    from harness.probe.readers import _run
    answer = _run([str(program), "version"])
    assert answer is not None and len(answer) <= 64 << 10
    assert answer.startswith("flm v0.9.20")


def test_no_harness_module_runs_a_program_any_other_way():
    """Every place the harness runs a program and reads what it prints goes through
    run_capped. Four run programs whose output is not the harness's to read: the workers
    (the harness itself, run and ended by harness.execution.isolation), the emulator's
    model process (its own, ended with the emulation: harness.emulator.launch), the
    user's own command under `emulate` (in the foreground, printing to the user's
    terminal: harness.app.cli.emulate_cmd) and the program `capture record` runs (its
    output passed on a line at a time, a line cut at 64 KiB, the last lines kept; ended
    with its process group: harness.execution.capture_record)."""
    package = Path(__file__).resolve().parents[1] / "harness"
    users = sorted(str(p.relative_to(package)) for p in package.rglob("*.py")
                   if "subprocess" in p.read_text() and p.name != "capped_run.py")
    assert users == ["app/cli/emulate_cmd.py", "emulator/launch.py",
                     "execution/capture_record.py", "execution/isolation.py"], users
    assert not any("os.system(" in p.read_text() or "os.popen(" in p.read_text()
                   for p in package.rglob("*.py"))
    assert os.path.basename(run_capped.__code__.co_filename) == "capped_run.py"
