"""An IRON-style host script written for the real pyxrt runs unchanged on the simulator
(STACK.md 3: the canonical NPU call and `pyxrt.runlist(ctx)` from `pyxrt.run(k)`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.app.cli import main
from harness.formats.xclbin_writer import flm_spec, synthesize

SCRIPTS = Path(__file__).parent / "scripts"
SCRIPT = SCRIPTS / "iron_host.py"


def exec_script(tmp_path: Path, *args: str, script: Path = SCRIPT,
                depth: str | None = "42", more: tuple[str, ...] = ()
                ) -> subprocess.CompletedProcess:
    xclbin = tmp_path / "layer.xclbin"
    xclbin.write_bytes(synthesize(flm_spec("Host/layer")))
    tail = ([depth] if depth else []) + list(more)
    return subprocess.run([sys.executable, "-m", "harness", "sim", "exec", *args,
                           str(script), str(xclbin), *tail],
                          capture_output=True, text=True, timeout=60)


def test_iron_script_runs_unchanged(tmp_path):
    done = exec_script(tmp_path)
    assert done.returncode == 0, done.stderr
    assert "kernel MLIR_AIE with 8 args" in done.stdout
    assert "single run completed" in done.stdout
    assert "runlist of 42 completed; read back 16 bytes" in done.stdout
    assert "simulated stack" in done.stderr


def test_iron_script_sees_the_hypothesis(tmp_path):
    done = exec_script(tmp_path, "--profile", "inflight-cap:40")
    assert done.returncode == 1
    assert "runlist of 42 failed: runlist failed execution (ERT_CMD_STATE_TIMEOUT)" \
        in done.stdout


def test_sim_profiles_lists_every_token():
    result = CliRunner().invoke(main, ["sim", "profiles"])
    assert result.exit_code == 0
    for token in ("staging", "mainline", "oot", "inflight-cap:N", "xrt-chain:N", "hang-at:K",
                  "slow:KERNEL:US", "flaky:P", "realtime", "xrt:RELEASE", "kernel:RELEASE",
                  "firmware:VERSION|firmware:protocol:M.N"):
        assert token in result.output
    assert "documented" in result.output and "deviation" in result.output
    # every rule is listed with the source it was read from
    flat = " ".join(result.output.split())
    from harness.sim.rules import rules
    for rule in rules():
        assert f"{rule.text} [source: {rule.source}]" in flat


def test_unknown_profile_token_is_bad_input():
    result = CliRunner().invoke(main, ["sim", "exec", "--profile", "wobbly", str(SCRIPT)])
    assert result.exit_code == 2
    assert "unknown profile token 'wobbly'" in result.output


@pytest.mark.parametrize("release", ["2.20", "2.23", "master"])
def test_xrt_test_style_script_runs_unchanged(tmp_path, release):
    # XRT's own tests idiom: uuid = device.register_xclbin(x); kernel(device, uuid, name, mode)
    done = exec_script(tmp_path, "--profile", f"xrt:{release}",
                       script=SCRIPTS / "xrt_style_host.py", depth=None)
    assert done.returncode == 0, done.stderr
    assert "run ERT_CMD_STATE_COMPLETED; mapped 1024 bytes" in done.stdout


def test_sub_buffer_script_runs_unchanged(tmp_path):
    done = exec_script(tmp_path, script=SCRIPTS / "subbuffer_host.py", depth="30")
    assert done.returncode == 0, done.stderr
    assert "runlist of 30 over sub-buffers completed" in done.stdout
    assert "first data buffer at +4096" in done.stdout


def test_a_buffer_in_a_bank_its_argument_is_not_connected_to_is_not_set(tmp_path):
    """xrt_kernel.cpp validate_bo_at_index: XRT copies such a buffer into a clone in the
    connected bank, which the NPU cannot fill (no device copy, no host side: xrt_bo.cpp
    copy_through_host). XRT 2.26 over the emulated driver, with the instruction buffer
    carved out of the data pool (bank 0; argument 1 is connected to bank 1): two
    warnings, then set_arg raises. The simulated binding set it, and the runlist ran."""
    done = exec_script(tmp_path, script=SCRIPTS / "subbuffer_host.py", depth="30",
                       more=("--one-pool",))
    assert done.returncode == 1
    assert ("[XRT] WARNING: Kernel MLIR_AIE has no compute units with connectivity required "
            "for global argument at index 1. The argument is allocated in bank 0, the "
            "compute unit is connected to bank 65537. Allocating local copy of argument "
            "buffer in connected bank.\n[XRT] WARNING: Reverting to host copy of buffers "
            "(exec_buf: Operation not supported)\n") in done.stderr
    assert done.stderr.endswith("RuntimeError: No host side buffer in destination buffer: "
                                "Invalid argument\n")


def test_the_xdna_shim_makes_host_only_and_cacheable_buffers_only(tmp_path):
    """amd/xdna-driver src/shim device.cpp alloc_bo and buffer.cpp bo_flags_to_type, as
    XRT 2.26 answered over the emulated driver; the simulated binding made them all."""
    script = tmp_path / "flags.py"
    script.write_text(
        "import sys\nimport pyxrt\nd = pyxrt.device(0)\n"
        "for name in ('normal', 'cacheable', 'device_only', 'host_only', 'p2p', 'svm'):\n"
        "    try:\n        pyxrt.bo(d, 64, getattr(pyxrt.bo, name), 0)\n"
        "        print(name, 'made')\n"
        "    except RuntimeError as err:\n        print(name, err)\n")
    done = exec_script(tmp_path, script=script, depth=None)
    assert done.stdout.splitlines() == [
        "normal unsupported buffer type: none flag (err=95): Operation not supported",
        "cacheable made", "device_only Bad BO type. (err=22): Invalid argument",
        "host_only made", "p2p Bad BO type. (err=22): Invalid argument",
        "svm Bad BO type. (err=22): Invalid argument"], done.stderr


@pytest.mark.parametrize("release, message", [
    ("2.20", "runlist failed execution"),               # no state before PR #9408
    ("2.21", "runlist failed execution (ERT_CMD_STATE_TIMEOUT)"),
    ("master", "runlist failed execution (ERT_CMD_STATE_TIMEOUT)"),
])
def test_member_states_after_a_failed_runlist_read_as_real_xrt_leaves_them(tmp_path, release,
                                                                          message):
    # hang at run 30 of 42 on NPU5: the firmware leaves error_index 0, so XRT blames run 24
    done = exec_script(tmp_path, "--profile", f"hang-at:30,xrt:{release}",
                       script=SCRIPTS / "member_states_host.py")
    assert done.returncode == 1, done.stderr
    assert "states: NEWx24 TIMEOUTx1 ABORTx17" in done.stdout
    assert f"message: {message}\n" in done.stdout
    assert "failing run 24 (TIMEOUT)" in done.stdout
    ok = exec_script(tmp_path, "--profile", f"xrt:{release}",
                     script=SCRIPTS / "member_states_host.py")
    assert ok.returncode == 0 and "states: NEWx42" in ok.stdout       # success leaves NEW


def test_a_full_elf_script_runs_unchanged(tmp_path):
    # IRON's FullELFCallable / mlir-aie's full-ELF tests: elf(capsule, size),
    # hw_context(device, elf), ext.kernel(ctx, "main:sequence"), arguments from 0
    from harness.formats.elf_writer import full_elf
    from harness.formats.txn import nop_stream
    elf = tmp_path / "aie.elf"
    elf.write_bytes(full_elf(nop_stream(4), 4))
    done = subprocess.run([sys.executable, "-m", "harness", "sim", "exec",
                           str(SCRIPTS / "full_elf_host.py"), str(elf), "42"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["== full ELF ==", "partition of 4 columns",
                                        "single run completed", "runlist of 42 completed"]
    hung = subprocess.run([sys.executable, "-m", "harness", "sim", "exec", "--profile",
                           "hang-at:30", str(SCRIPTS / "full_elf_host.py"), str(elf), "42"],
                          capture_output=True, text=True, timeout=60)
    assert hung.returncode == 1
    assert "runlist of 42 failed: runlist failed execution (ERT_CMD_STATE_TIMEOUT)" \
        in hung.stdout


def test_an_uncaught_exception_in_the_script_is_its_failure_as_in_python(tmp_path):
    done = subprocess.run([sys.executable, "-m", "harness", "sim", "exec",
                           str(SCRIPTS / "raising_host.py")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert "Traceback (most recent call last):" in lines
    trace = done.stderr[done.stderr.index("Traceback"):]
    # the script's frames only: not runpy's, and not the binding's (C++ in the real one)
    assert "raising_host.py\", line 11" in trace and "line 8, in open_missing_kernel" \
        in trace
    assert "runpy" not in trace and "harness" not in trace
    assert lines[-1] == ("RuntimeError: Failed to open file '/nonexistent/missing.xclbin' "
                         "for reading")
    assert "harness fault" not in done.stderr


def test_ninstr_is_read_as_the_32_bits_the_register_holds(tmp_path):
    """pyxrt passes set_arg's int as a C int; the command's register holds its 32 bits, so
    ninstr -1 is 0xFFFFFFFF words, which covers the stream: real XRT over the emulated
    driver completed the run (the emulated firmware reads the register), the simulated one
    read -1 as a short ninstr and ended it ERROR."""
    script = tmp_path / "negative.py"
    script.write_text(
        "import sys\nimport numpy as np\nimport pyxrt\n"
        "d = pyxrt.device(0)\nx = pyxrt.xclbin(sys.argv[1])\n"
        "k = pyxrt.kernel(pyxrt.hw_context(d, d.register_xclbin(x)), 'MLIR_AIE')\n"
        "i = pyxrt.bo(d, 20, pyxrt.bo.cacheable, k.group_id(1))\n"
        "i.write(np.array([0x06040100, 0x108, 1, 0x14, 5], np.uint32), 0)\n"
        "i.sync(pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE)\n"
        "b = pyxrt.bo(d, 64, pyxrt.bo.host_only, k.group_id(3))\n"
        "print(k(3, i, -1, b, b, b, b, b).wait())\n")
    done = exec_script(tmp_path, script=script, depth=None)
    assert done.stdout == "ert_cmd_state.ERT_CMD_STATE_COMPLETED\n", done.stderr
