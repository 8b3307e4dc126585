"""A machine with an NPU where pyxrt does not import: the user forgot `source setup.sh`, and a
simulated run is not what they asked for (exit 3, naming the fix); `--backend sim` there
plays the machine's probed driver flavour, kernel and NPU rather than the default."""

from __future__ import annotations

from click.testing import CliRunner
from machines import Tree

from harness.app.cli import main
from harness.report.fileformat import load_report


def mainline_6_18(tmp_path) -> Tree:
    """A Strix Point on kernel 6.18.9 with the in-tree driver."""
    tree = Tree(tmp_path)
    tree.npu(revision="0x10")
    release = "6.18.9-200.fc43.x86_64"
    tree.write("/proc/sys/kernel/osrelease", release)
    tree.module({})
    tree.write(f"/lib/modules/{release}/modules.dep",
               "kernel/drivers/accel/amdxdna/amdxdna.ko.xz: \n")
    return tree


def test_an_npu_without_pyxrt_exits_3_naming_setup_sh(tmp_path, monkeypatch):
    tree = mainline_6_18(tmp_path)
    monkeypatch.setenv("HARNESS_ROOT", str(tree.root))
    result = CliRunner().invoke(main, ["reproduce", "--trials", "1", "--no-isolate"])
    assert result.exit_code == 3
    assert result.output.startswith("error: this machine has an NPU (")
    assert "run `source /opt/xilinx/xrt/setup.sh` first, or ask for the simulator with " \
           "--backend sim" in result.output
    assert not (tmp_path / "reports").exists()              # nothing ran on the simulator


def test_backend_sim_there_plays_the_probed_flavour_kernel_and_npu(tmp_path, monkeypatch):
    tree = mainline_6_18(tmp_path)
    monkeypatch.setenv("HARNESS_ROOT", str(tree.root))
    out = tmp_path / "r.yaml"
    result = CliRunner().invoke(main, ["reproduce", "--backend", "sim", "--trials", "1",
                                       "--no-isolate", "--no-control", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert ("playing this machine's stack as probed: mainline,kernel:6.18.9,device:npu4"
            in result.output.splitlines()[0])
    backend = load_report(out).backend
    assert backend["driver"]["flavour"] == "mainline"
    assert backend["driver"]["kernel"] == "6.18.9"
    assert backend["device"]["name"] == "NPU4 Strix"
    # what the profile names is kept; the rest is this machine's
    named = CliRunner().invoke(main, ["reproduce", "--backend", "sim", "--profile",
                                      "staging,hang-at:30", "--trials", "1", "--no-isolate",
                                      "--no-control", "--out", str(tmp_path / "s.yaml")])
    assert named.exit_code == 1, named.output
    played = load_report(tmp_path / "s.yaml").backend
    assert played["driver"]["flavour"] == "staging" and played["driver"]["kernel"] == "6.18.9"


def test_without_an_npu_auto_still_takes_the_simulator(tmp_path):
    result = CliRunner().invoke(main, ["reproduce", "--trials", "1", "--no-isolate",
                                       "--no-control", "--out", str(tmp_path / "r.yaml")])
    assert result.exit_code == 0, result.output
    assert "pyxrt does not import here, so the simulated stack ran instead" in result.output
