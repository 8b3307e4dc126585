"""`capture record -- CMD`: a program run with XRT's capture on, given a prompt and the line
that ends it, until XRT has written replay.json; on the simulated stack the stand-in engine
(tests/standin_engine.py) plays FastFlowLM's `flm run`."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from machines import engine_pack

from harness.app.cli import main
from harness.app.cli.capture_conclusion import why_no_replay as _why_no_replay
from harness.execution.capture_record import Recorded, Recording, record
from harness.sources.capture import load_capture

ENGINE = str(Path(__file__).resolve().parent / "standin_engine.py")


def invoke(*args: str):
    """The command line; `capture record` reads the kernel log no longer than the program
    runs (--after 0): these tests are about the program and its capture."""
    if args[:2] == ("capture", "record"):
        args = (*args[:2], "--after", "0", *args[2:])
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def pack(tmp_path) -> Path:
    return engine_pack(tmp_path / "pack", "record")


def test_record_gives_the_prompt_and_bye_and_prints_the_engine_s_runlists(pack, tmp_path):
    result = invoke("capture", "record", "--frames", "8", "--out", "cap", "--profile",
                    "staging,hang-at:30", "--", sys.executable, ENGINE, str(pack))
    assert result.exit_code == 0, result.output
    out = result.output
    assert "input: 'Hi', then '/bye', then the end of input" in out
    assert "a Python program's `import pyxrt` is bound to the simulator" in out
    assert "ended: it exited with status 0" in out
    assert 'the program reported: {"error":"runlist failed execution (ERT_CMD_STATE_TIMEOUT)"}' \
        in out
    assert "frame_1: 42 runs in hwctx_1, chains 24+18" in out
    assert "written by: the SIMULATED stack (profile staging,hang-at:30; marked by " \
        "harness-origin.json)" in out
    assert "next: reproduce_ert_timeout --capture cap" in out
    # the hang ended the answer after the first decode runlist: prefill and that runlist
    assert [f.depth for f in load_capture(tmp_path / "cap").frames] == [1, 42]


def test_frames_reach_every_token_on_the_documented_stack(pack, tmp_path):
    result = invoke("capture", "record", "--frames", "8", "--out", "cap", "--",
                    sys.executable, ENGINE, str(pack))
    assert result.exit_code == 0, result.output
    assert "XRT wrote cap/replay.json: 8 frames, 3 of them runlists" in result.output
    assert "frame_1..frame_7 (3 frames): 42 runs in hwctx_1, chains 24+18" in result.output


def test_an_existing_folder_is_refused_without_force(pack, tmp_path):
    (tmp_path / "cap").mkdir()
    (tmp_path / "cap" / "kept").write_text("mine")
    command = ["capture", "record", "--frames", "2", "--out", "cap", "--", sys.executable,
               ENGINE, str(pack)]
    refused = invoke(*command)
    assert refused.exit_code == 2
    assert "cap exists; choose another --out or pass --force" in refused.output
    assert (tmp_path / "cap" / "kept").read_text() == "mine"
    # --force replaces a capture only: a folder of the user's files is none, and stays
    refused = invoke(*command[:2], "--force", *command[2:])
    assert refused.exit_code == 2
    assert "--out cap holds no replay.json: it is not a capture, and --force replaces only a " \
        "capture folder" in refused.output
    assert (tmp_path / "cap" / "kept").read_text() == "mine"
    (tmp_path / "cap" / "kept").unlink()
    assert invoke(*command).exit_code == 0
    replaced = invoke(*command[:2], "--force", *command[2:])
    assert replaced.exit_code == 0, replaced.output
    assert (tmp_path / "cap" / "replay.json").is_file()


def test_a_program_that_is_not_there_is_one_line(tmp_path):
    result = invoke("capture", "record", "--", "no-such-engine", "run", "x")
    assert result.exit_code == 3
    assert result.output == ("error: no-such-engine: no such program (not on PATH); capture "
                             "record runs it as given\n")


def test_a_disk_without_room_for_the_pack_is_refused_before_it_starts(tmp_path):
    huge = tmp_path / "weights.bin"
    with huge.open("wb") as file:              # sparse: as large as the disk's free space
        file.truncate(shutil.disk_usage(tmp_path).free)
    result = invoke("capture", "record", "--out", "cap", "--pack", str(huge), "--",
                    sys.executable, "-c", "pass")
    assert result.exit_code == 3
    assert "its disk has" in result.output and "free some space or choose another --out" \
        in result.output
    assert not (tmp_path / "cap").exists()


def test_a_release_without_capture_is_named_with_the_one_that_has_it(pack):
    result = invoke("capture", "record", "--profile", "xrt:2.23", "--", sys.executable,
                    ENGINE, str(pack))
    assert result.exit_code == 3
    assert "the simulated XRT 2.23 has no capture" in result.output
    assert "Xilinx/XRT master since 2026-06-04 (PR #9828" in result.output


def test_a_program_that_never_exits_is_stopped_gently_and_its_files_are_kept(tmp_path):
    # it ignores its input and SIGINT: stopped at the deadline by SIGINT, then SIGTERM
    script = tmp_path / "stubborn.py"
    script.write_text("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                      "open('cap/capture_0.bin', 'wb').write(b'x')\n"
                      "print('started', flush=True)\ntime.sleep(60)\n")
    (tmp_path / "cap").mkdir()
    job = Recording((sys.executable, str(script)), tmp_path / "cap", ("Hi", "/bye"),
                    {}, deadline_s=2.0, floor_bytes=0, grace_s=0.3, poll_s=0.05)
    lines: list[str] = []
    ended = record(job, lambda snap: None, lines.append)
    assert lines == ["started"]
    assert ended.at_deadline and ended.signal == "SIGTERM" and not ended.replay_written
    assert ended.ended_by == ("stopped at the deadline (2 s): sent SIGINT, then SIGTERM; it "
                              "ended by SIGTERM")
    assert (tmp_path / "cap" / "capture_0.bin").read_bytes() == b"x"


def test_a_disk_running_low_stops_the_program_and_keeps_what_it_wrote(tmp_path):
    # what the program wrote before the disk ran low (here, before it started) is kept
    (tmp_path / "cap").mkdir()
    (tmp_path / "cap" / "capture_0.bin").write_bytes(b"data")
    job = Recording(("sleep", "60"), tmp_path / "cap", (), {}, deadline_s=60,
                    floor_bytes=1 << 62, grace_s=0.3, poll_s=0.05)
    ended = record(job, lambda snap: None, lambda line: None)
    assert ended.disk_low and ended.signal == "SIGINT", ended
    assert ended.ended_by.startswith("stopped at the disk running low (")
    assert ended.files == 1 and ended.written == 4
    assert (tmp_path / "cap" / "capture_0.bin").read_bytes() == b"data"


def test_no_replay_after_a_stop_says_why_and_what_is_kept(tmp_path):
    result = invoke("capture", "record", "--out", "cap", "--deadline", "1", "--", "sleep",
                    "60")
    assert result.exit_code == 3
    assert "no replay.json: the program did not exit normally (stopped at the deadline " \
        "(1 s): sent SIGINT; it ended by SIGINT)" in result.output
    assert "XRT writes replay.json only at a normal exit" in result.output


def test_behind_xrt_capture_the_program_s_own_status_is_read_from_what_it_prints(tmp_path):
    # xrt-capture.cpp exits 0 whatever the program did, after "Application exited with
    # code N": a stand-in for it, starting the program as it does
    tool = tmp_path / "xrt-capture"
    tool.write_text('#!/bin/sh\nwhile [ "$1" != "--" ]; do shift; done; shift\n'
                    '"$@"\necho "\nApplication exited with code $?"\nexit 0\n')
    tool.chmod(0o755)
    (tmp_path / "cap").mkdir()
    job = Recording(("sh", "-c", "exit 3"), tmp_path / "cap", (), {}, deadline_s=30,
                    floor_bytes=0, wrapper=(str(tool), "--frames", "8", "--output-dir",
                                            str(tmp_path / "cap"), "--"), poll_s=0.05)
    ended = record(job, lambda snap: None, lambda line: None)
    assert ended.exit_code == 3 and ended.ended_by == "it exited with status 3"


def test_behind_xrt_capture_the_deadline_s_ctrl_c_reaches_the_program_not_xrt_capture(
        tmp_path):
    """xrt-capture has no handler for SIGINT (xrt-capture.cpp, process_linux.h: fork,
    execvp, waitpid; XRT 2.26), so a SIGINT to the whole process group ended it at once,
    and the harness then killed what it had started: a program that handles Ctrl-C and
    takes a moment to exit normally (as XRT needs, to write replay.json) was killed first.
    The stand-in below is started by a script, as an install's bin/xrt-capture is, starts
    the program as xrt-capture does and dies of SIGINT as it does; the program writes its
    replay.json a second after its Ctrl-C."""
    (tmp_path / "bin" / "unwrapped").mkdir(parents=True)
    tool = tmp_path / "bin" / "xrt-capture"        # an install's: a script starting the tool
    tool.write_text('#!/bin/sh\n"$(dirname "$0")/unwrapped/xrt-capture" "$@"\nexit $?\n')
    tool.chmod(0o755)
    tool = tmp_path / "bin" / "unwrapped" / "xrt-capture"
    tool.write_text(
        f"#!{sys.executable}\nimport os, sys\nargs = sys.argv[sys.argv.index('--') + 1:]\n"
        "import signal\nsignal.signal(signal.SIGINT, signal.SIG_DFL)\n"
        "pid = os.fork()\nif pid == 0:\n    os.execvp(args[0], args)\n"
        "code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])\n"
        "print(f'\\nApplication exited with code {128 - code if code < 0 else code}',"
        " flush=True)\n")
    tool.chmod(0o755)
    program = tmp_path / "graceful.py"
    program.write_text(
        "import signal, sys, time\nasked = []\n"
        "signal.signal(signal.SIGINT, lambda *a: asked.append(1))\n"
        "print('started', flush=True)\nwhile not asked:\n    time.sleep(0.05)\n"
        "time.sleep(1)\nopen(sys.argv[1], 'w').write('{}')\n")
    (tmp_path / "cap").mkdir()
    job = Recording((sys.executable, str(program), str(tmp_path / "cap" / "replay.json")),
                    tmp_path / "cap", (), {**os.environ}, deadline_s=1.0, floor_bytes=0,
                    wrapper=(str(tmp_path / "bin" / "xrt-capture"), "--frames", "8",
                             "--output-dir",
                             str(tmp_path / "cap"), "--"), grace_s=5.0, poll_s=0.05)
    lines: list[str] = []
    ended = record(job, lambda snap: None, lines.append)
    assert ended.replay_written, (ended, lines)
    assert ended.exit_code == 0
    assert ended.ended_by == ("stopped at the deadline (1 s): sent SIGINT; it exited with "
                              "status 0")


def test_no_replay_after_a_normal_exit_says_how_the_program_ended_in_its_own_words(tmp_path):
    """The sentence is made from how the program ended and how the harness stopped it,
    kept apart, not by cutting "it " off the words that join them."""
    ended = Recorded(0, None, "exited with status 0", None, False, 3, 4096, 1 << 30)
    assert ended.ended_by == "it exited with status 0"
    assert _why_no_replay(ended, tmp_path).startswith(
        f"no replay.json although the program exited with status 0; the 3 files it wrote "
        f"are kept in {tmp_path}: XRT writes it when the program exits")
    stopped = Recorded(0, None, "exited with status 0", "stopped at the deadline (2 s): "
                       "sent SIGINT", False, 3, 4096, 1 << 30)
    assert stopped.ended_by == ("stopped at the deadline (2 s): sent SIGINT; it exited "
                                "with status 0")
    assert _why_no_replay(stopped, tmp_path).startswith(
        "no replay.json although the program stopped at the deadline (2 s): sent SIGINT; "
        "it exited with status 0; the 3 files")


# -- the user's own Ctrl-C -------------------------------------------------------------------

def _recording_until_ready(tmp_path: Path, *more: str):
    """`capture record` of tests/scripts/ctrl_c_host.py as a real process, once the program
    has run its command and waits."""
    import subprocess

    from harness.formats.xclbin_writer import flm_spec, synthesize
    xclbin = tmp_path / "layer.xclbin"
    xclbin.write_bytes(synthesize(flm_spec("Host/layer")))
    script = Path(__file__).resolve().parent / "scripts" / "ctrl_c_host.py"
    proc = subprocess.Popen([sys.executable, "-m", "harness", "capture", "record", "--profile",
                             "staging", "--out", str(tmp_path / "cap"), "--", sys.executable,
                             str(script), str(xclbin), *more],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.strip() == "| ready":
            return proc, seen
    proc.kill()
    raise AssertionError("".join(seen))


def test_ctrl_c_stops_the_program_gently_so_xrt_writes_the_capture(tmp_path):
    import signal
    proc, _ = _recording_until_ready(tmp_path)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert "ended: stopped at your Ctrl-C: sent SIGINT; it exited with status 0" in out
    assert "interrupted: leaving normally" in err
    # the program left normally, so the capture was written, and is kept
    assert load_capture(tmp_path / "cap").frames
    assert "XRT wrote" in out and "stopped by your Ctrl-C" in err


def test_a_second_ctrl_c_sends_the_next_signal_at_once(tmp_path):
    import signal
    import time
    proc, _ = _recording_until_ready(tmp_path, "ignore")
    proc.send_signal(signal.SIGINT)
    time.sleep(1.0)                       # within the 5 s grace after the first SIGINT
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert "sent SIGINT, then SIGTERM at once (another Ctrl-C); it ended by SIGTERM" in out
    # a program ended by a signal leaves no replay.json: said, and what it wrote is kept
    assert not (tmp_path / "cap" / "replay.json").exists()
    assert "stopped by your Ctrl-C: no replay.json" in err
