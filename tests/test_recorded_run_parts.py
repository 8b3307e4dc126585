"""The parts `capture record`'s evidence is made of, each on its own: the program's output
read for its error lines in bounded memory, the times and the time to failure from the
kernel's stamps, the evidence window's readers, and the simulated device a program leaves
behind (harness.sim.machine_folder)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.execution.engine_timeline import time_to_failure, timeline
from harness.execution.evidence_window import EvidenceWindow
from harness.execution.program_output import HEAD_LINES, TAIL_LINES, WINDOW, ProgramOutput
from harness.logs.kernel_log import SIMULATED_BOOT_US, KmsgReader, LogRecord
from harness.logs.trace_events import TraceLine, parse_trace
from harness.report.header import DriverTimer, Timers
from harness.sim.machine_folder import KMSG, LIFE, TRACE, saved_life

STAGING = Timers(driver=DriverTimer("staging", "7.0", 2.0, 2.0, "test"))
TRACEBACK = ["Traceback (most recent call last):", '  File "host.py", line 9, in <module>',
             "    runlist.wait()",
             "RuntimeError: runlist failed execution (ERT_CMD_STATE_TIMEOUT)"]


@settings(max_examples=40, deadline=None)
@given(before=st.integers(0, 3 * WINDOW), after=st.integers(0, 50))
def test_an_error_is_found_once_at_its_line_wherever_the_windows_fall(before, after):
    """A traceback (harness.logs.error_lines) that straddles two of the reader's windows is
    read whole, once, at its own line number."""
    output = ProgramOutput()
    lines = [f"token {i}" for i in range(before)] + TRACEBACK + \
        [f"after {i}" for i in range(after)]
    for number, line in enumerate(lines):
        output.add(line, number / 1000)
    output.finish()
    assert [(s.error.line, s.error.end, s.error.carrier, s.error.state)
            for s in output.errors] == [(before + 1, before + 4, "python-exception",
                                         "TIMEOUT")]
    assert output.errors[0].at_s == before / 1000
    assert output.lines == len(lines)


def test_the_output_kept_is_its_first_and_last_lines_with_the_count_between():
    output = ProgramOutput()
    total = HEAD_LINES + TAIL_LINES + 17
    for number in range(total):
        output.add(f"line {number + 1}", 0.0)
    output.finish()
    kept = output.to_json()
    assert kept["total"] == total and kept["omitted"] == 17
    assert kept["lines"][0] == "line 1" and kept["lines"][HEAD_LINES] == \
        f"line {HEAD_LINES + 18}" and kept["lines"][-1] == f"line {total}"


def _job(ts: float, what: str, seqno: int = 7, context: int = 12) -> TraceLine:
    line = (f"   flm-99 [003] ..... {ts:.6f}: xdna_job: fence=(context:{context}, "
            f"seqno:{seqno}), hwctx.99.1 seq#:{seqno - 1} {what}, op=0")
    return parse_trace(line)[0]


def _tdr(usec: int) -> LogRecord:
    return LogRecord(3, usec, "amdxdna 0000:c7:00.1: [drm] *ERROR* aie2_tdr_detect: TDR "
                              "timeout detected")


def test_the_time_to_failure_runs_from_the_hung_job_s_submit_to_the_timeout():
    """The job sent before the timeout and not ended by it (staging traces "job run" and
    "job free": amd/xdna-driver 856409ca aie2_ctx.c); a job done before does not count."""
    lines = [_job(100.0, "job run", 6), _job(100.5, "job free", 6),
             _job(100.6, "job run", 7), _job(102.6, "job free", 7)]
    ttf = time_to_failure([_tdr(102_600_000)], lines, STAGING)
    assert ttf == {"ms": 2000.0, "clock": "kernel", "class": "driver-timer",
                   "from": "trace: job sent (fence context 12, seqno 7)",
                   "to": "kernel log: tdr_timeout"}


def test_job_timedout_names_its_job():
    """The in-tree driver traces "job timedout" with the fence (aie2_sched_job_timedout):
    that job, not the oldest one in flight."""
    lines = [_job(10.0, "sent to device", 1, 20), _job(11.0, "sent to device", 2, 22),
             _job(13.0, "job timedout", 2, 22)]
    ttf = time_to_failure([], lines, STAGING)
    assert ttf["ms"] == 2000.0 and ttf["to"] == "trace: job timedout"
    assert ttf["from"] == "trace: job sent (fence context 22, seqno 2)"


def test_another_trace_clock_is_not_held_against_the_kernel_log():
    lines = [_job(100.6, "job run")]
    ttf = time_to_failure([_tdr(102_600_000)], lines, STAGING, trace_clock="global")
    assert "ms" not in ttf
    assert ttf["not_measured"] == ("the trace buffer runs on the global clock, not the kernel "
                                   "log's (local)")


def test_no_timeout_named_means_no_time_to_failure():
    assert time_to_failure([], [_job(1.0, "job run")], STAGING) is None


def test_times_place_a_machine_s_stamps_from_the_start_and_the_simulated_device_s_apart():
    started = 1000.0
    machine = timeline([_tdr(1_002_500_000)], None, started, ended_at_s=3.0, closed_at_s=3.5,
                       errors=[{"at_s": 2.7, "line": 4, "message": "boom", "carrier": "x"}])
    assert machine["timeout"] == {"at_s": 2.5, "clock": "machine",
                                  "what": "kernel log: tdr_timeout"}
    assert machine["error"]["at_s"] == 2.7 and machine["end"]["at_s"] == 3.0
    assert "simulated_clock" not in machine
    simulated = timeline([_tdr(int(SIMULATED_BOOT_US) + 2_000_000)], None, started,
                         ended_at_s=0.4, closed_at_s=0.4, errors=[])
    assert simulated["timeout"]["clock"] == "simulated device"
    assert simulated["timeout"]["at_s"] == 2.0 and "simulated_clock" in simulated


def test_the_window_takes_kmsg_as_it_goes_and_keeps_only_what_came_after_it_opened(tmp_path):
    kmsg = tmp_path / "kmsg"
    kmsg.write_text("6,1,1000,-;amdxdna 0000:c7:00.1: [drm] before the window\n")
    window = EvidenceWindow.of_machine(KmsgReader(kmsg), None, {"recording": False,
                                                                "why": "off"})
    window.open()
    with kmsg.open("a") as log:
        log.write("3,2,2000,-;amdxdna 0000:c7:00.1: [drm] *ERROR* aie2_tdr_detect: TDR "
                  "timeout detected\n")
    window.poll()
    with kmsg.open("a") as log:
        log.write("3,3,3000,-;amdxdna 0000:c7:00.1: [drm] after\n")
    logs = window.close()
    assert [r.usec for r in logs.kernel.records] == [2000, 3000]
    assert logs.trace is None and logs.trace_facts["why"] == "off"


def _program(folder: Path, args: list[str], profile: str) -> subprocess.CompletedProcess[str]:
    """A pyxrt program on the simulated binding, given the machine folder."""
    from harness.sim.host_script import simulated_pyxrt_environment
    from harness.sim.machine_folder import MACHINE_ENV
    from harness.sim.profiles import parse_profile
    env = simulated_pyxrt_environment(dict(os.environ), parse_profile(profile),
                                      folder / "pyxrt")
    env[MACHINE_ENV] = str(folder / "machine")
    return subprocess.run([sys.executable, *args], env=env, capture_output=True,
                          text=True, timeout=120)


IRON = Path(__file__).resolve().parent / "scripts" / "iron_host.py"
# tests/scripts/iron_host.py, its runlist failed, then killed where it would have exited
KILLED_AFTER = ("import os, runpy, signal, sys\nsys.argv = sys.argv[1:]\ntry:\n"
                "    runpy.run_path(sys.argv[0], run_name='__main__')\nexcept SystemExit:\n"
                "    pass\nos.kill(os.getpid(), signal.SIGKILL)\n")


def test_a_killed_program_leaves_the_simulated_driver_s_log_trace_and_wedged_device(
        tmp_path):
    """What a machine keeps past a program it killed (the kernel log, the trace buffer, the
    device as the driver's timer left it), the simulated machine folder keeps too: written
    as the driver prints (harness.sim.machine_folder), so a SIGKILL loses nothing of the
    timeout; a second program on the folder finds the device wedged (wedge:1)."""
    from harness.formats.xclbin_writer import flm_spec, synthesize
    xclbin = tmp_path / "layer.xclbin"
    xclbin.write_bytes(synthesize(flm_spec("machine/layer")))
    run = [str(IRON), str(xclbin), "42"]
    done = _program(tmp_path, ["-c", KILLED_AFTER, *run], "staging,hang-at:30,wedge:1")
    assert done.returncode == -signal.SIGKILL, done.stderr
    machine = tmp_path / "machine"
    assert "TDR timeout detected" in (machine / KMSG).read_text()
    assert "job run" in (machine / TRACE).read_text()
    life = saved_life(machine)
    assert life is not None and life.timeouts == 1 and life.wedged
    again = _program(tmp_path, run, "staging,wedge:1")
    assert again.returncode != 0 and "CREATE_HWCTX" in again.stderr + again.stdout
    assert json.loads((machine / LIFE).read_text())["firmware"] == "refuses"
