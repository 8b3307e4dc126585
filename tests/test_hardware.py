"""On a machine with an NPU and XRT: the same commands, through the real pyxrt.

Skipped everywhere else (marker `npu`). Run them with `python3 -m pytest -m npu` after
`source /opt/xilinx/xrt/setup.sh`.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from harness.app.cli import main
from harness.report.fileformat import load_report

pytestmark = pytest.mark.npu


def test_probe_sees_a_ready_npu():
    result = CliRunner().invoke(main, ["probe", "--require-npu"])
    assert result.exit_code == 0, result.output


def test_a_shallow_validate_runlist_runs_on_hardware(tmp_path):
    out = tmp_path / "hw.yaml"
    result = CliRunner().invoke(main, ["run", "nop-depth", "--backend", "xrt", "--plan", "8",
                                       "--trials", "1", "--out", str(out)])
    report = load_report(out)
    assert report.backend["kind"] == "xrt" and report.backend["simulated"] is False
    trial = report.plans[0].trials[0]
    assert trial.status in ("completed", "failed"), trial.error
    assert trial.runlists and trial.runlists[0].state
    assert result.exit_code in (0, 1)
