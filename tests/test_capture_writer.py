"""The simulated pyxrt writes XRT's capture as XRT does (STACK.md 9), and XRT's settings are
read as XRT reads them. Each rule is read from Xilinx/XRT at 49612fa3 (2.26, the commit
amd/xdna-driver 856409ca pins; master the same): `core/common/runner/capture.cpp`,
`capture.h`, `detail/capture_artifacts.h`, `core/common/config_reader.cpp` and the capture
calls in `api/xrt_kernel.cpp`. Whatever is about how a process ends runs as a real process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from machines import engine_pack

from harness.formats.capture_origin import ORIGIN_FILE
from harness.probe.xrt_config import ini_path, read_ini, xrt_config
from harness.sim.host_script import simulated_pyxrt_environment
from harness.sim.profiles import parse_profile
from harness.sources.capture import load_capture

SCRIPTS = Path(__file__).resolve().parent / "scripts"
ENGINE = Path(__file__).resolve().parent / "standin_engine.py"


def capture_env(folder: Path, frames: int, **more: str) -> dict[str, str]:
    return {**os.environ, "Runtime.capture_frames": str(frames),
            "Runtime.capture_output_dir": str(folder), **more}


def sim_exec(args: list[str], env: dict[str, str], stdin: str = "",
             cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", "sim", "exec", *args], env=env,
                          input=stdin, capture_output=True, text=True, timeout=120, cwd=cwd)


def host_script(folder: Path, xclbin: Path, body: str) -> Path:
    """A pyxrt program: its xclbin's context and kernel `k` on device `d`, then `body`."""
    script = folder / "host.py"
    script.write_text(
        "import os, signal, sys, time\nimport numpy as np\nimport pyxrt\n"
        "TO = pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE\n"
        f"x = pyxrt.xclbin({str(xclbin)!r})\nd = pyxrt.device(0)\n"
        "ctx = pyxrt.hw_context(d, d.register_xclbin(x))\nk = pyxrt.kernel(ctx, 'MLIR_AIE')\n"
        + body)
    return script


@pytest.fixture
def pack(tmp_path) -> Path:
    return engine_pack(tmp_path / "pack", "capture-writer")


def test_the_stand_in_engine_s_session_is_written_as_xrt_writes_it(pack, tmp_path):
    folder = tmp_path / "cap"
    done = sim_exec([str(ENGINE), str(pack), "--max-tokens", "2"], capture_env(folder, 100),
                    stdin="Hi\n/bye\n")
    assert done.returncode == 0, done.stderr
    text = (folder / "replay.json").read_text()
    document = json.loads(text)
    # nlohmann::json keeps keys sorted, `std::setw(2)`, no final newline; no xrt.ini was
    # read, so `ini` is empty and insert_json_object leaves it out
    assert text == json.dumps(document, indent=2, sort_keys=True)
    assert list(document) == ["execution", "resources", "version"]
    assert document["version"] == "1.0"
    frames = document["execution"]["frames"]
    # prefill (attn), then per token: the 42-run runlist, mm, dequant
    assert [len(f["runs"]) for f in frames] == [1, 42, 1, 1, 42, 1, 1]
    assert [f["name"] for f in frames] == [f"frame_{i}" for i in range(7)]
    assert all(f["waits"] == [f["name"]] for f in frames)
    assert document["execution"]["threads"] == [frames[0]["tid"]]
    # records are named on first use: the prefill's context, kernel and run come first
    resources = document["resources"]
    assert [h["name"] for h in resources["hwctxs"]] == ["hwctx_0", "hwctx_1", "hwctx_2",
                                                       "hwctx_3"]
    assert all(h["cfg"] == {} and "xclbin" in h for h in resources["hwctxs"])
    assert all(k["instance"] == "MLIR_AIE" and k["ctrlcode"] for k in resources["kernels"])
    run = resources["runs"][0]
    assert [c["value"] for c in run["constants"]] == [3, 0, 0]
    assert [a["argidx"] for a in run["arguments"]] == [3, 4, 5, 6, 7]
    # a buffer is dumped for each run it was not synced to; artefacts are one per content
    first = frames[1]["runs"]
    assert all(len(member["arguments"]) == 5 for member in first)
    names = {a["fnm"] for member in first for a in member["arguments"]}
    assert len(names) == 2     # the layer weights, and zeros (token 0's activations too)
    # beside XRT's files, only the mark that the SIMULATED stack wrote them (which XRT's
    # replay never opens: it reads replay.json and the artefacts replay.json names)
    files = sorted(p.name for p in folder.iterdir()
                   if p.name not in ("replay.json", ORIGIN_FILE))
    assert files == sorted(f"capture_{i}.bin" for i in range(len(files)))
    assert json.loads((folder / ORIGIN_FILE).read_text())["written_by"] == "SIMULATED"
    # a buffer is named when it is first synced or set (capture_sync makes its record):
    # the four weights were synced first, then the activations (bo_4); rewritten and synced
    # for the second token, only they are new content in its runlist's dumps
    second = {a["bo"]: a["fnm"] for a in frames[4]["runs"][0]["arguments"]}
    assert second["bo_4"] not in names
    assert {fnm for bo, fnm in second.items() if bo != "bo_4"} <= names
    # the importer reads what the writer wrote
    capture = load_capture(folder)
    assert capture.frame(None).name == "frame_1" and capture.frame(None).depth == 42
    assert capture.origin.stack == "SIMULATED"


def test_frames_past_the_count_and_the_last_frame_s_own_wait_are_not_recorded(pack,
                                                                               tmp_path):
    # capture.h is_enabled: calls are recorded only while fewer frames than asked were
    # captured, so the wait after the last frame's start is not
    folder = tmp_path / "cap"
    done = sim_exec([str(ENGINE), str(pack), "--max-tokens", "1"], capture_env(folder, 2),
                    stdin="Hi\n")
    assert done.returncode == 0, done.stderr
    frames = json.loads((folder / "replay.json").read_text())["execution"]["frames"]
    assert [f["waits"] for f in frames] == [["frame_0"], []]


@pytest.mark.parametrize("ending, written", [
    ("sys.exit(3)", True), ("raise ValueError('boom')", True), ("os._exit(0)", False),
    ("os.kill(os.getpid(), signal.SIGKILL)", False), ("raise KeyboardInterrupt", False)])
def test_replay_json_is_written_only_at_a_normal_exit(tmp_path, synth_xclbin, ending,
                                                      written):
    # capture.cpp: the frames singleton writes at static destruction (the C library's
    # exit); os._exit, a kill or a crash skip it, and so does an unhandled Ctrl-C, after
    # which Python kills itself with SIGINT (STACK.md 9: what was seen with XRT 2.26)
    xclbin = synth_xclbin()
    script = host_script(tmp_path, xclbin,
                         "b = pyxrt.bo(d, 4096, pyxrt.bo.host_only, k.group_id(3))\n"
                         "r = k(3, 0, 0, b, b, b, b, b)\nr.wait()\n" + ending + "\n")
    folder = tmp_path / "cap"
    # as `python SCRIPT` with `import pyxrt` bound to the simulator (what capture record
    # gives a Python program on the simulated stack)
    env = simulated_pyxrt_environment(capture_env(folder, 10), parse_profile(None),
                                      tmp_path / "shim")
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert (folder / "replay.json").is_file() is written, done.stderr
    assert any(folder.glob("capture_*.bin"))        # the artefacts are there either way


def test_a_release_without_capture_writes_nothing(pack, tmp_path):
    folder = tmp_path / "cap"
    done = sim_exec(["--profile", "xrt:2.23", str(ENGINE), str(pack)],
                    capture_env(folder, 10), stdin="Hi\n")
    assert done.returncode == 0, done.stderr
    assert not folder.exists()


def test_the_ini_the_process_read_is_kept_without_the_capture_switches(tmp_path):
    ini = tmp_path / "settings.ini"
    ini.write_text("[Runtime]\ncapture_frames = 3\ncapture_output_dir = x\nverbosity = 5\n"
                   "; a comment\n[Debug]\nnative_xrt_trace = true\n")
    config = xrt_config({"XRT_INI_PATH": str(ini)}, euid=1000, exe_dir=tmp_path / "bin",
                        cwd=tmp_path)
    from harness.sim.capture_writer import Recorder
    recorder = Recorder(config)
    # capture.cpp replay_ini: every key but Runtime.capture*, values as text
    assert recorder.ini == {"Runtime.verbosity": "5", "Debug.native_xrt_trace": "true"}
    assert config.capture_frames == 3


def test_root_reads_only_the_environment_and_the_ini_beside_the_executable(tmp_path):
    # config_reader.cpp get_ini_path (SWSPLAT-39875, XRT 5264d12908, in 2.26): as root
    # XRT_INI_PATH and the current folder are not read
    named, here, beside = tmp_path / "named.ini", tmp_path / "cwd", tmp_path / "bin"
    for folder in (here, beside):
        folder.mkdir()
    named.write_text("[Runtime]\ncapture_frames = 1\n")
    (here / "xrt.ini").write_text("[Runtime]\ncapture_frames = 2\n")
    env = {"XRT_INI_PATH": str(named)}
    assert ini_path(env, euid=1000, exe_dir=beside, cwd=here) == named
    assert ini_path({}, euid=1000, exe_dir=beside, cwd=here) == here / "xrt.ini"
    assert ini_path(env, euid=0, exe_dir=beside, cwd=here) is None
    (beside / "xrt.ini").write_text("[Runtime]\ncapture_frames = 4\n")
    assert ini_path(env, euid=0, exe_dir=beside, cwd=here) == beside / "xrt.ini"
    root = xrt_config(env, euid=0, exe_dir=beside, cwd=here)
    assert root.capture_frames == 4
    # the environment comes before any file, as any user
    assert xrt_config({**env, "Runtime.capture_frames": "9"}, euid=0, exe_dir=beside,
                      cwd=here).capture_frames == 9


def test_an_ini_boost_cannot_read_counts_as_empty(tmp_path):
    bad = tmp_path / "xrt.ini"
    bad.write_text("[Runtime]\ncapture_frames = 1\ncapture_frames = 2\n")
    with pytest.raises(ValueError, match="duplicate key"):
        read_ini(bad)
    config = xrt_config({}, euid=1000, exe_dir=tmp_path / "none", cwd=tmp_path)
    assert config.ini_error and config.capture_frames == 0


def test_the_stand_in_engine_ends_on_bye_or_end_of_input_and_says_what_failed(pack,
                                                                              tmp_path):
    env = dict(os.environ)
    hang = sim_exec(["--profile", "staging,hang-at:30", str(ENGINE), str(pack)], env,
                    stdin="Hi\n/bye\nnever read\n")
    assert hang.returncode == 0, hang.stderr
    # FastFlowLM's error line (ROCm/FastFlowLM#712), once: /bye ended it before more input
    assert hang.stdout.splitlines() == [
        '{"error":"runlist failed execution (ERT_CMD_STATE_TIMEOUT)"}']
    fine = sim_exec([str(ENGINE), str(pack), "--max-tokens", "2"], env, stdin="Hi")
    assert fine.returncode == 0 and fine.stdout.splitlines() == ["token 1", "token 2", "done"]


def test_an_unhandled_ctrl_c_in_the_engine_leaves_no_replay(pack, tmp_path):
    folder = tmp_path / "cap"
    proc = subprocess.Popen([sys.executable, "-m", "harness", "sim", "exec", str(ENGINE),
                             str(pack)], env=capture_env(folder, 100),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("Hi\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == "token 1\n"
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert not (folder / "replay.json").exists()


def test_a_ctrl_c_the_script_handles_lets_sim_exec_end_as_python_does(tmp_path,
                                                                       synth_xclbin):
    """A script that catches its KeyboardInterrupt ends normally under `python SCRIPT`:
    status 0 and, with XRT 2.26's capture on, replay.json (seen over the emulated driver).
    `sim exec` took the Ctrl-C for a stop of its own: status 130 through os._exit, and no
    replay.json."""
    xclbin = synth_xclbin()
    script = host_script(tmp_path, xclbin,
                         "b = pyxrt.bo(d, 4096, pyxrt.bo.host_only, k.group_id(3))\n"
                         "r = k(3, 0, 0, b, b, b, b, b)\nr.wait()\n"
                         "try:\n    os.kill(os.getpid(), signal.SIGINT)\n    time.sleep(5)\n"
                         "except KeyboardInterrupt:\n    print('caught')\n")
    folder = tmp_path / "cap"
    done = sim_exec([str(script)], capture_env(folder, 10))
    assert (done.returncode, done.stdout) == (0, "caught\n"), done.stderr
    assert (folder / "replay.json").is_file()


@pytest.mark.parametrize("text, ini", [
    ('[Runtime]\nverbosity = "5"\nruntime_log = console\n; a comment\n# a comment too\n'
     "[Debug]\nfoo = a = b\n  spaced key   =   spaced value  \n",
     {"Debug.foo": "a = b", "Debug.spaced key": "spaced value",
      "Runtime.runtime_log": "console", "Runtime.verbosity": '"5"'}),
    ("[Runtime] what follows the bracket\nverbosity = 5\n", {"Runtime.verbosity": "5"}),
    ("[Runtime]\r\nverbosity = 5\r\nx=\fy\n", {"Runtime.verbosity": "5", "Runtime.x": "y"}),
    ("top = 1\n[Runtime]\nverbosity = 5\n", {"Runtime.verbosity": "5"}),
    ("Runtime = 1\n[Runtime]\nverbosity = 5\n", {}),      # duplicate section name
    ("[A]\n[A]\nx = 1\n", {"A.x": "1"}),                     # an empty section is dropped
    ("[A]\nx=1\n[B]\n[A]\ny=2\n", {}),                       # duplicate section name
    ("[A]\n= 1\n", {}),                                      # key expected
])
def test_replay_json_s_ini_is_what_xrt_read_from_xrt_ini(tmp_path, text, ini):
    """What XRT 2.26 (49612fa3, built with Boost 1.74's ini_parser `read_ini`) wrote as
    replay.json's `ini` with each xrt.ini beside the executable, under `xrt-capture` over
    the emulated driver: `#` is a comment as `;` is, a header ends at its first `]`, lines
    end at a newline only and lose C white space, a key before any section is read but
    gives nothing, and a file read_ini refuses gives no `ini` at all. The simulated writer
    refused `#` comments, text after `]` and a form feed in a value, and kept a section
    that a bare key of the same name had taken."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "xrt.ini").write_text(text)
    config = xrt_config({}, euid=0, exe_dir=tmp_path / "bin", cwd=tmp_path)
    from harness.sim.capture_writer import Recorder
    assert Recorder(config).ini == ini


def test_a_sub_buffer_is_recorded_after_its_parent_with_the_parent_s_group(tmp_path,
                                                                          synth_xclbin):
    """xrt_bo.cpp `buffer_sub`: a sub-buffer has its parent's flags and memory group, and
    its sync goes through the parent's, which XRT's capture records first. What XRT 2.26
    wrote over the emulated driver for the program below: the instruction sub-buffer
    `bo_1` (the pool took `bo_0`) with the pool's cacheable flags and group 1, and the
    data sub-buffers `bo_3`..`bo_7` (their pool took `bo_2`). The simulated writer named
    them bo_0..bo_5 and gave the sub-buffer no memgrp or flags."""
    xclbin = synth_xclbin()
    script = host_script(
        tmp_path, xclbin,
        "pool = pyxrt.bo(d, 4096, pyxrt.bo.cacheable, k.group_id(1))\n"
        "instr = pyxrt.bo(pool, 32, 64)\n"
        "instr.write(np.array([0x06040100, 0x108, 1, 0x14, 5, 0, 0, 0], np.uint32), 0)\n"
        "instr.sync(TO)\ndpool = pyxrt.bo(d, 8192, pyxrt.bo.host_only, k.group_id(3))\n"
        "data = [pyxrt.bo(dpool, 1024, 1024 * i) for i in range(5)]\n"
        "for b in data:\n    b.sync(TO)\nr = pyxrt.run(k)\n"
        "for i, v in enumerate([3, instr, 5, *data]):\n    r.set_arg(i, v)\n"
        "r.start()\nr.wait()\n")
    folder = tmp_path / "cap"
    done = sim_exec([str(script)], capture_env(folder, 5))
    assert done.returncode == 0, done.stderr
    document = json.loads((folder / "replay.json").read_text())
    buffers = {b["name"]: b for b in document["resources"]["buffers"]}
    assert buffers["bo_1"] == {"flags": 1 << 24, "memgrp": 1, "name": "bo_1", "size": 32,
                               "type": "inout"}
    assert sorted(buffers) == ["bo_1", "bo_3", "bo_4", "bo_5", "bo_6", "bo_7"]
    assert [(a["bo"], a["argidx"]) for a in document["resources"]["runs"][0]["arguments"]] \
        == [("bo_1", 1), ("bo_3", 3), ("bo_4", 4), ("bo_5", 5), ("bo_6", 6), ("bo_7", 7)]
