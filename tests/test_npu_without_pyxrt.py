"""A machine with an NPU where pyxrt does not import: the user forgot `source setup.sh`, and a
simulated run is not what they asked for (exit 3, naming the fix); `--backend sim` there
plays the machine's probed driver flavour, kernel and NPU rather than the default."""

from __future__ import annotations

from click.testing import CliRunner
from machines import Tree

from harness.app.cli import main
from harness.report.fileformat import load_report


def strix_point(tmp_path) -> Tree:
    """A Strix Point with the DKMS (staging) driver on 7.0: not the simulator's default stack
    (the ROCm/FastFlowLM#712 machine's: a Strix Halo, the in-tree driver)."""
    tree = Tree(tmp_path)
    tree.npu(revision="0x10", fw="1.1.2.64")
    tree.module({"tdr_timeout_ms": "2000"}, version="2.21.0_20260101")
    return tree


def test_an_npu_without_pyxrt_exits_3_naming_setup_sh(tmp_path, monkeypatch):
    tree = strix_point(tmp_path)
    monkeypatch.setenv("HARNESS_ROOT", str(tree.root))
    result = CliRunner().invoke(main, ["reproduce", "--trials", "1", "--no-isolate"])
    assert result.exit_code == 3
    assert result.output.startswith("error: this machine has an NPU (")
    assert "run `source /opt/xilinx/xrt/setup.sh` first, or ask for the simulator with " \
           "--backend sim" in result.output
    assert not (tmp_path / "reports").exists()              # nothing ran on the simulator


def test_backend_sim_there_plays_the_probed_flavour_kernel_and_npu(tmp_path, monkeypatch):
    tree = strix_point(tmp_path)
    monkeypatch.setenv("HARNESS_ROOT", str(tree.root))
    out = tmp_path / "r.yaml"
    result = CliRunner().invoke(main, ["reproduce", "--backend", "sim", "--trials", "1",
                                       "--no-isolate", "--no-control", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert ("playing this machine's stack as probed: staging,kernel:7.0.0,device:npu4,"
            "firmware:1.1.2.64" in result.output.splitlines()[0])
    backend = load_report(out).backend
    assert backend["driver"]["flavour"] == "staging"
    assert backend["driver"]["kernel"] == "7.0"
    assert backend["device"]["name"] == "NPU4 Strix"
    assert backend["firmware"]["version"] == "1.1.2.64"
    # what the profile names is kept; the rest is this machine's
    named = CliRunner().invoke(main, ["reproduce", "--backend", "sim", "--profile",
                                      "mainline,hang-at:30", "--trials", "1", "--no-isolate",
                                      "--no-control", "--out", str(tmp_path / "s.yaml")])
    assert named.exit_code == 1, named.output
    played = load_report(tmp_path / "s.yaml").backend
    assert played["driver"]["flavour"] == "mainline"
    assert played["device"]["name"] == "NPU4 Strix"


def test_without_an_npu_auto_still_takes_the_simulator(tmp_path):
    result = CliRunner().invoke(main, ["reproduce", "--trials", "1", "--no-isolate",
                                       "--no-control", "--out", str(tmp_path / "r.yaml")])
    assert result.exit_code == 0, result.output
    assert "pyxrt does not import here, so the simulated stack ran instead" in result.output
