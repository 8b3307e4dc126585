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


def test_backend_sim_takes_the_firmware_a_working_node_shows_was_taken(tmp_path, monkeypatch):
    """A Strix Halo on kernel.org-numbered 6.18 with firmware 1.1.2.65 (protocol 7) and a
    working /dev/accel node: kernel.org's 6.18 would refuse that firmware at probe (before
    f1eac46fe5f7, 7.0), so this machine's kernel carries the fix (a distribution kernel), or
    the node would not be there. `--backend sim` plays what the machine shows: the check
    passed (firmware-taken), said in the backend line and recorded in the report's
    profile; not the refusal."""
    tree = Tree(tmp_path)
    tree.write("/proc/sys/kernel/osrelease", "6.18.0-9-generic")
    tree.npu(fw="1.1.2.65")
    tree.module({})
    tree.write("/lib/modules/6.18.0-9-generic/modules.dep",
               "kernel/drivers/accel/amdxdna/amdxdna.ko.zst: \n")     # in tree: mainline
    monkeypatch.setenv("HARNESS_ROOT", str(tree.root))
    out = tmp_path / "r.yaml"
    result = CliRunner().invoke(main, ["reproduce", "--backend", "sim", "--trials", "1",
                                       "--no-isolate", "--no-control", "--out", str(out)])
    assert result.exit_code == 0, result.output
    first = result.output.splitlines()[0]
    assert "profile mainline,kernel:6.18,firmware-taken (" in first
    assert "playing this machine's stack as probed: mainline,kernel:6.18.0,device:npu5," \
        "firmware:1.1.2.65; its /dev/accel node works, so its driver took firmware 1.1.2.65 " \
        "(protocol 7.2), which kernel.org's Linux 6.18 refuses: played as firmware-taken " \
        "(the protocol check passed, as on a kernel carrying f1eac46fe5f7)" in first
    backend = load_report(out).backend
    assert "firmware-taken" in backend["profile"]
    assert "which kernel.org's Linux 6.18 refuses: played as firmware-taken" in \
        backend["reason"]
    # the same profile without the machine's word is refused at probe, as kernel.org's is
    named = CliRunner().invoke(main, ["reproduce", "--backend", "sim", "--profile",
                                      "mainline,kernel:6.18,firmware:1.1.2.65", "--trials",
                                      "1", "--no-isolate", "--out", str(tmp_path / "s.yaml")])
    assert named.exit_code == 3, named.output
    assert "refuses firmware 1.1.2.65" in named.output
