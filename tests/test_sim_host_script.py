"""An IRON-style host script written for the real pyxrt runs unchanged on the simulator
(STACK.md 3: the canonical NPU call and `pyxrt.runlist(ctx)` from `pyxrt.run(k)`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from harness.cli import main
from harness.xclbin_writer import flm_spec, synthesize

SCRIPT = Path(__file__).parent / "scripts" / "iron_host.py"


def exec_script(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    xclbin = tmp_path / "layer.xclbin"
    xclbin.write_bytes(synthesize(flm_spec("Host/layer")))
    return subprocess.run([sys.executable, "-m", "harness", "sim", "exec", *args,
                           str(SCRIPT), str(xclbin), "42"],
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
                  "slow:KERNEL:US", "flaky:P", "realtime"):
        assert token in result.output
    assert "documented" in result.output and "deviation" in result.output


def test_unknown_profile_token_is_bad_input():
    result = CliRunner().invoke(main, ["sim", "exec", "--profile", "wobbly", str(SCRIPT)])
    assert result.exit_code == 2
    assert "unknown profile token 'wobbly'" in result.output
