"""A trial under way is never silent on a terminal: its line names the trial and the timer
it waits on, and is redrawn with the time it has taken until it ends (a realtime trial, a
hardware trial, `run --resume` of either). Off a terminal, only finished trials are
written, as before."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import struct
import subprocess
import sys
import termios
import time

from click.testing import CliRunner

from harness.app.cli import main
from harness.app.cli.progress import LiveLine, elapsed_text


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_line_is_redrawn_with_the_time_taken_until_the_trial_ends():
    clock, out = Clock(), io.StringIO()
    live = LiveLine(clock)
    live.show("[1/3] 42: trial 1 running, waiting on the driver's 60 s timer", out)
    assert out.getvalue() == "\r\033[K[1/3] 42: trial 1 running, waiting on the driver's 60 s " \
                             "timer"
    live.tick()                          # less than a period: nothing drawn again
    assert out.getvalue().count("\r") == 1
    clock.now += 12.4
    live.tick()
    assert out.getvalue().endswith("\r\033[K[1/3] 42: trial 1 running, waiting on the "
                                   "driver's 60 s timer; 12 s so far")
    clock.now += 60
    live.tick()
    assert out.getvalue().endswith("; 1 min 12 s so far")
    live.end("[1/3] 42: trial 1 TIMEOUT after 60.0 s", out)
    assert out.getvalue().endswith("\r\033[K[1/3] 42: trial 1 TIMEOUT after 60.0 s\n")
    drawn = out.getvalue()
    clock.now += 5
    live.tick()                          # ended: never drawn again
    assert out.getvalue() == drawn


def test_a_line_said_meanwhile_goes_above_and_an_error_below():
    clock, out = Clock(), io.StringIO()
    live = LiveLine(clock)
    live.show("sweep [#....] 1/~5 trials: trial 2 running", out)
    clock.now += 3
    live.say("note: depth 24 completed", out)
    assert out.getvalue().endswith("\r\033[Knote: depth 24 completed\n\r\033[Ksweep [#....] "
                                   "1/~5 trials: trial 2 running; 3 s so far")
    live.leave()                         # before an error line: the next line starts below
    assert out.getvalue().endswith("3 s so far\n")
    live.tick()
    assert out.getvalue().endswith("3 s so far\n")


def test_a_line_too_wide_for_the_terminal_keeps_the_time_taken(monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    clock, out = Clock(), io.StringIO()
    live = LiveLine(clock)
    live.show("[7/9] monolithic 42: trial 1 running, waiting on the driver's 60 s timer "
              "(mainline on Linux 7.0), then the harness's 150 s deadline", out)
    clock.now += 30
    live.tick()
    last = out.getvalue().rsplit("\r\033[K", 1)[1]
    assert len(last) == 59 and last.endswith("...; 30 s so far")
    assert last.startswith("[7/9] monolithic 42: trial 1 running")


def test_its_own_thread_redraws_it():
    out = io.StringIO()
    live = LiveLine()
    live.PERIOD_S = 0.01
    live.show("trial 1 running", out)
    for _ in range(500):                 # until the thread has drawn it again
        if "so far" in out.getvalue():
            break
        time.sleep(0.01)
    live.end()
    assert "\r\033[Ktrial 1 running; 0 s so far" in out.getvalue()


def test_elapsed_time_reads_as_a_person_reads_it():
    assert [elapsed_text(s) for s in (0.4, 59.9, 60, 125)] == ["0 s", "59 s", "1 min 00 s",
                                                               "2 min 05 s"]


def test_off_a_terminal_only_finished_trials_are_written(tmp_path):
    result = CliRunner().invoke(main, ["run", "nop-depth", "--no-isolate", "--trials", "1",
                                       "--plan", "42", "--out", str(tmp_path / "r.yaml")])
    assert result.exit_code == 0, result.output
    assert "running" not in result.stderr and "so far" not in result.stderr
    assert "[1/1] 42: trial 1 COMPLETED" in result.stderr


def test_on_a_terminal_the_trial_names_the_timer_it_waits_on(tmp_path):
    """The harness as a user runs it, its stderr a terminal (a pseudo-terminal here, 200
    columns wide)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 200, 0, 0))
    done = subprocess.run([sys.executable, "-m", "harness", "run", "nop-depth", "--trials",
                           "1", "--plan", "42", "--out", str(tmp_path / "r.yaml")],
                          stdout=subprocess.PIPE, stderr=follower, cwd=tmp_path, timeout=120)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:                  # the terminal's other end closed
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    text = seen.decode()
    assert done.returncode == 0, text
    # isolated: the driver's timer, then the harness's deadline on the trial's worker
    assert "\r\x1b[K[1/1] 42: trial 1 running, waiting on the driver's 60 s timer (mainline " \
           "on Linux 7.0), then the harness's " in text
    assert "\r\x1b[K[1/1] 42: trial 1 COMPLETED" in text


def test_an_error_line_starts_below_the_live_line(capsys):
    from harness.app import exits
    from harness.app.cli import progress
    from harness.model.errors import BadInput

    def fails() -> None:
        raise BadInput("--out x: no such folder")

    out = io.StringIO()
    progress.LIVE.show("[2/9] 42: trial 1 running", out)
    assert exits.run(fails, []) == 2
    assert out.getvalue().endswith("[2/9] 42: trial 1 running\n")     # left, then a new line
    assert capsys.readouterr().err == "error: --out x: no such folder\n"
    progress.LIVE.tick()
    assert out.getvalue().endswith("running\n")                       # never drawn again
