"""Kernel.org mainline before 7.0 refuses the devices' protocol-7 firmware at probe.

Firmware 1.1.2.64/65 speaks mailbox protocol 7.2. Linux before f1eac46fe5f7 (merged for
7.0; no stable backport found) takes one protocol per device, major 6 from minor 12 on
npu4/5/6 (`aie2_check_protocol`; the legacy tree's copy of the check at ae559d3e^), and
refuses anything else at probe, leaving no /dev/accel node. Public logs on 6.18.9,
6.18.13, 6.19.3 and 6.19.6 show it; the lines are a Debian 6.19.6 log's (dri-devel
2026-03). With protocol-6 firmware (1.0.0.63) the 6.17/6.18 backport rules are reached.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from machines import Tree
from simkit import Rig, failure

import harness.sim.pyxrt as pyxrt
from harness.app.cli import main
from harness.model.drivers import driver_build
from harness.model.firmware import Protocol
from harness.probe.fingerprint import probe, render
from harness.probe.readers import Identity
from harness.sim import control
from harness.sim.profiles import parse_profile

P72, P6X, P617, P610 = Protocol(7, 2), Protocol(6, None), Protocol(6, 17), Protocol(6, 10)
REFUSED = "Incompatible firmware protocol major 7 minor 2"
ROOT = Identity(uid=0, gids=(0,), user="root", emulate=True)


@pytest.mark.parametrize("kernel, refused", [
    ("6.16", True), ("6.17.13", True), ("6.18", True), ("6.18.13", True), ("6.19", True),
    ("6.19.7", True), ("7.0", False), ("7.1", False)])
def test_mainline_before_f1eac46fe5f7_refuses_protocol_7(kernel, refused):
    lines = driver_build("mainline", kernel).refuses_firmware(True, P72)
    assert bool(lines) == refused
    if refused:
        assert [(x.function, x.text) for x in lines[:2]] == [
            ("aie2_check_protocol", REFUSED), ("aie2_hw_start", "firmware is not alive")]
        assert lines[-1].text == "probe with driver amdxdna failed with error -22"
    # protocol 6 from 6.12 is what every such kernel speaks on npu4/5/6
    assert not driver_build("mainline", kernel).refuses_firmware(True, P6X)
    assert not driver_build("mainline", kernel).refuses_firmware(True, P617)


def test_the_dkms_trees_and_an_unknown_protocol_are_never_refused():
    # staging and legacy at 856409ca accept major 7 (feature tables, min_fw_version)
    for flavour in ("staging", "oot"):
        assert not driver_build(flavour, "6.18").refuses_firmware(True, P72)
    assert not driver_build("mainline", "6.18").refuses_firmware(True, None)
    # a minor below the device's: the check's second refusal (aie2_pci.c, ae559d3e^)
    (first, *_) = driver_build("mainline", "6.18").refuses_firmware(True, P610)
    assert first.text == "Firmware minor version smaller than supported"


def test_the_simulated_machine_has_no_device_and_the_log_says_why():
    stack = control.configure("mainline,kernel:6.18")
    with pytest.raises(RuntimeError) as raised:
        pyxrt.device(0)
    # XRT's system_linux.cpp get_pcidev when no device is bound, at every tag
    assert str(raised.value) == " No such device with index '0'"
    texts = [r.text for r in stack.kernel_log.records]
    assert texts[0] == ("amdxdna 0000:00:00.9: [drm] *ERROR* aie2_check_protocol: "
                        f"{REFUSED}")
    assert texts[-1] == "amdxdna 0000:00:00.9: probe with driver amdxdna failed with error -22"


def test_reproduce_does_not_pretend_a_runlist_ran(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["reproduce", "--no-isolate", "--profile",
                                       "mainline,kernel:6.18,hang-at:3"])
    assert result.exit_code == 3                     # as a machine without an NPU node
    said = " ".join(result.output.split())
    assert "refuses firmware 1.1.2.65 (mailbox protocol 7.2) at probe" in said
    assert f"SIMULATED amdxdna 0000:00:00.9: [drm] *ERROR* aie2_check_protocol: {REFUSED}" \
        in said
    assert "boot a kernel with f1eac46fe5f7 (Linux 7.0 or later" in said
    assert "--profile mainline,kernel:6.18,firmware:1.0.0.63,hang-at:3" in said
    assert "verdict" not in said and not list(tmp_path.rglob("*.yaml"))


@pytest.mark.parametrize("kernel, state", [("6.18", "ABORT"), ("6.18.2", "TIMEOUT")])
def test_protocol_6_firmware_reaches_the_backport_rules(tmp_path, kernel, state):
    # 6fb7f2988832 reached 6.18 as a backport in 6.18.2 ("[PATCH 6.18 167/614]")
    for firmware in ("1.0.0.63", "protocol:6.x"):
        rig = Rig(tmp_path, f"mainline,kernel:{kernel},firmware:{firmware},hang-at:3")
        rl, _ = rig.runlist(24)
        assert failure(rl).startswith(f"runlist failed execution (ERT_CMD_STATE_{state})")
    assert parse_profile(f"mainline,kernel:{kernel},firmware:1.0.0.63").probe_refusal == ()


def test_probe_names_the_fix_from_the_kernel_log(tmp_path):
    tree = Tree(tmp_path)
    tree.write("/dev/kmsg", "3,12,5200000,-;amdxdna 0000:c4:00.1: [drm] *ERROR* "
                            f"aie2_check_protocol: {REFUSED}\n")
    facts = probe(tree.sources(ROOT))
    (node,) = [c for c in facts["checks"] if c["name"] == "device node"]
    assert node["status"] == "FAIL" and "refused the NPU firmware at probe" in node["detail"]
    assert "protocol 7.2" in node["detail"]
    shown = render(facts)
    for fix in ("f1eac46fe5f7 (Linux 7.0 or later, or a distribution kernel that carries it)",
                "the DKMS driver (amd/xdna-driver)", "protocol 6 (firmware 1.0.0.63"):
        assert fix in shown
