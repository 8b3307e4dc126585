"""The probe against fabricated machine trees (STACK.md 4 and 5 say where each fact lives)."""

from __future__ import annotations

import json
import struct

import pytest
from click.testing import CliRunner
from machines import RELEASE, Tree

from harness.app.cli import main
from harness.probe.drm import DrmVersion
from harness.probe.fingerprint import probe, ready, render
from harness.probe.readers import Identity
from harness.probe.xrt_loader import mapped_libraries

ME = Identity(uid=54321, gids=(54321,), user="porter", emulate=True)
ROOT = Identity(uid=0, gids=(0,), user="root", emulate=True)


class CannedDrm:
    def __init__(self, version=(0, 7, 0), firmware=(1, 1, 2, 65), columns=8, power=0):
        self.answers = {8: struct.pack("<IIII", *firmware),
                        1: struct.pack("<IHH", 0x200000, columns, 6) + bytes(32),
                        9: bytes([power]) + bytes(7)}
        self.drm_version = DrmVersion("amdxdna", *version)

    def version(self, node):
        return self.drm_version

    def get_info(self, node, param, size):
        return self.answers.get(param)


def statuses(facts) -> dict[str, str]:
    return {c["name"]: c["status"] for c in facts["checks"]}


@pytest.fixture
def tree(tmp_path) -> Tree:
    return Tree(tmp_path)


def test_strix_halo_with_the_in_tree_driver(tree):
    tree.npu()
    tree.module({"aie2_max_col": "8"},
                module_file="kernel/drivers/accel/amdxdna/amdxdna.ko.zst")
    tree.xrt()
    facts = probe(tree.sources(ROOT, CannedDrm()))
    assert facts["npu"]["generation"] == "NPU5 Strix Halo"
    assert facts["driver"]["flavour"] == "mainline"
    assert facts["driver"]["version"] is None
    assert RELEASE in facts["driver"]["version_note"]          # the kernel release instead
    assert "60 s" in facts["driver"]["timeout_rule"]
    ioctl = facts["npu"]["ioctl"]
    assert ioctl["driver_version"] == "0.7.0" and ioctl["firmware"] == "1.1.2.65"
    assert ioctl["columns"] == 8 and ioctl["power_mode"] == "default"
    assert facts["system"]["boot_flags"] == {"iommu": "pt"}
    assert facts["system"]["cpus"] == 32
    assert statuses(facts)["driver version"] == "PASS"
    assert statuses(facts)["firmware"] == "PASS"
    assert "NPU5 Strix Halo" in render(facts)


def test_dkms_staging_box(tree):
    tree.npu(revision="0x10")
    tree.module({"tdr_timeout_ms": "2000", "force_cmdlist": "1"}, version="2.21.0_20260101",
                module_file="updates/dkms/amdxdna.ko")
    facts = probe(tree.sources(ROOT, CannedDrm()))
    driver = facts["driver"]
    assert facts["npu"]["generation"] == "NPU4 Strix"
    assert driver["flavour"] == "staging" and driver["version"] == "2.21.0_20260101"
    assert driver["timeout_setting"] == "2000"
    assert driver["parameters"] == {"force_cmdlist": "1", "tdr_timeout_ms": "2000"}
    assert "on the context for tdr_timeout_ms" in driver["timeout_rule"]


def test_the_module_version_and_the_drm_version_are_each_named(tree):
    # a DKMS build's MODULE_VERSION (0.1) and the DRM version its ioctl answers (0.16.0):
    # two facts from two sources, each named where shown (the probe once printed
    # `driver: amdxdna 0.1` above `PASS driver version: 0.16.0`)
    tree.npu(revision="0x10")
    tree.module({"tdr_timeout_ms": "2000"}, version="0.1", module_file="updates/dkms/amdxdna.ko")
    facts = probe(tree.sources(ROOT, CannedDrm(version=(0, 16, 0))))
    text = render(facts)
    assert "driver: amdxdna (module version 0.1, DRM version 0.16.0); flavour staging" in text
    assert "PASS driver version: DRM version 0.16.0 (>= 0.6)" in text
    assert "amdxdna 0.1;" not in text


def test_out_of_tree_legacy_box(tree):
    tree.npu(revision="0x20")
    tree.module({"timeout_in_sec": "2"}, version="1.5.0")
    facts = probe(tree.sources(ROOT, CannedDrm()))
    assert facts["npu"]["generation"] == "NPU6 Krackan"
    assert facts["driver"]["flavour"] == "oot"
    assert facts["driver"]["timeout_setting"] == "2"
    assert "two whole periods" in facts["driver"]["timeout_rule"]


def test_non_root_user_facing_0600_parameters(tree):
    tree.npu(mode=0o600)
    tree.module({"tdr_timeout_ms": "2000", "force_cmdlist": "0"}, param_mode=0o600)
    facts = probe(tree.sources(ME, CannedDrm()))
    assert facts["driver"]["parameters"] == {"force_cmdlist": "unreadable",
                                             "tdr_timeout_ms": "unreadable"}
    assert facts["driver"]["flavour"] == "staging"       # the names alone say staging
    assert facts["npu"]["nodes"][0]["openable"] is False
    assert statuses(facts)["device access"] == "FAIL"
    assert not ready(facts)


def test_machine_without_npu(tree):
    facts = probe(tree.sources())
    assert facts["npu"] == {"present": False, "nodes": []}
    assert facts["driver"]["loaded"] is False
    text = render(facts)
    assert text.splitlines()[0].startswith("no NPU:")
    assert statuses(facts)["device node"] == "FAIL"


MAPS = """\
7f0000000000-7f0000100000 r-xp 00000000 103:02 123 /opt/fastflowlm/lib/libxrt_coreutil.so.2.21.75
7f0000100000-7f0000200000 r--p 00100000 103:02 123 /opt/fastflowlm/lib/libxrt_coreutil.so.2.21.75
7f0000300000-7f0000400000 r-xp 00000000 103:02 124 /opt/fastflowlm/lib/libxrt_driver_xdna.so.2.21.75
7f0000500000-7f0000600000 r-xp 00000000 103:02 125 /usr/lib/x86_64-linux-gnu/libc.so.6
"""


def test_mapped_libxrt_differs_from_the_imported_pyxrt(tree):
    tree.npu()
    tree.module({"tdr_timeout_ms": "2000"})
    tree.xrt(version="2.26.0")
    tree.maps = MAPS
    facts = probe(tree.sources(ROOT, CannedDrm()))
    mapped = facts["xrt"]["mapped"]
    assert [m["name"] for m in mapped] == ["libxrt_coreutil", "libxrt_driver_xdna"]
    assert mapped[0]["version"] == "2.21.75"
    check = [c for c in facts["checks"] if c["name"] == "mapped XRT"][0]
    assert check["status"] == "WARN"
    assert "XRT 2.26.0" in check["detail"] and "2.21.75" in check["detail"]
    assert "LD_LIBRARY_PATH" in check["fix"]


def test_two_xrt_builds_mapped_fail(tree):
    tree.xrt(version="2.26.0")
    tree.maps = MAPS + "7f1-7f2 r-xp 0 0:0 9 /opt/xilinx/xrt/lib/libxrt_coreutil.so.2.26.0\n"
    assert len([m for m in mapped_libraries(tree.maps)
                if m["name"] == "libxrt_coreutil"]) == 2
    assert statuses(probe(tree.sources()))["mapped XRT"] == "FAIL"


def test_pyxrt_without_runlist_fails(tree):
    tree.xrt(runlist=False)
    assert statuses(probe(tree.sources()))["pyxrt"] == "FAIL"


def test_old_firmware_and_driver_fail_with_fixes(tree):
    tree.npu(fw="1.0.0.166")
    tree.module({})
    facts = probe(tree.sources(ROOT, CannedDrm(version=(0, 1, 0), firmware=(1, 0, 0, 166))))
    checks = {c["name"]: c for c in facts["checks"]}
    assert checks["driver version"]["status"] == "FAIL" and "0.6" in checks["driver version"]["fix"]
    assert checks["firmware"]["status"] == "FAIL"


def test_memlock_and_flm(tree):
    tree.write("/usr/bin/flm", "#!/bin/sh\n", 0o755)
    tree.write("/usr/bin/model_list.json", json.dumps(
        {"model_path": "~/.config/flm/models",
         "models": {"qwen3": {"1.7b": {"name": "Qwen3-1.7B-NPU2"}, "4b": {"name": "x"}}}}))
    (tree.root / "usr" / "bin" / "xclbins" / "Qwen3-1.7B-NPU2").mkdir(parents=True)
    facts = probe(tree.sources(memlock=(64 * 1024, 64 * 1024)))
    assert facts["memlock"]["enough"] is False
    assert statuses(facts)["memlock"] == "WARN"
    flm = facts["flm"]
    assert flm["binary"] == "/usr/bin/flm" and flm["model_list"]["models"] == 2
    assert flm["xclbin_folders"][0]["packs"] == ["Qwen3-1.7B-NPU2"]


def test_probe_cli_on_a_tree(tree):
    tree.npu()
    result = CliRunner().invoke(main, ["probe", "--root", str(tree.root), "--json"])
    assert result.exit_code == 0
    facts = json.loads(result.stdout)
    assert facts["npu"]["generation"] == "NPU5 Strix Halo"
    assert facts["npu"]["ioctl"]["queried"] is False
    again = CliRunner().invoke(main, ["probe", "--root", str(tree.root), "--require-npu"])
    assert again.exit_code == 3


def test_probe_here_reports_no_npu_cleanly():
    result = CliRunner().invoke(main, ["probe"])
    assert result.exit_code == 0
    if "no NPU" not in result.stdout:
        pytest.skip("this machine has an NPU")
    assert result.stdout.startswith("no NPU:")
    assert CliRunner().invoke(main, ["probe", "--require-npu"]).exit_code == 3


def test_run_embeds_the_fingerprint():
    from harness.report.fileformat import load_report
    result = CliRunner().invoke(main, ["run", "nop-depth", "--no-isolate", "--trials", "1",
                                       "--backend", "sim"])
    path = [x for x in result.stdout.splitlines() if x.startswith("report: ")][0][8:]
    environment = load_report(path).environment
    assert {"system", "npu", "driver", "xrt", "memlock", "flm", "checks"} <= set(environment)
    assert environment["system"]["kernel"]


def test_memlock_against_a_model(tree, tmp_path):
    mib = 1024 * 1024
    roomy = probe(tree.sources(memlock=(200 * mib, 200 * mib)), need_bytes=150 * mib)
    assert roomy["memlock"]["enough"] is True and statuses(roomy)["memlock"] == "PASS"
    tight = probe(tree.sources(memlock=(200 * mib, 200 * mib)), need_bytes=2020 * mib)
    assert tight["memlock"]["needed"] == 2020 * mib and statuses(tight)["memlock"] == "WARN"
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.q4nx").write_bytes(bytes(1024))
    result = CliRunner().invoke(main, ["probe", "--json", "--model-dir", str(model)])
    assert json.loads(result.stdout)["memlock"]["needed"] == 100 * mib   # the floor wins
    bad = CliRunner().invoke(main, ["probe", "--model-dir", str(tmp_path)])
    assert bad.exit_code == 2 and "no model.q4nx" in bad.output


@pytest.mark.parametrize("facts, seconds", [
    ({"flavour": "staging", "timeout_setting": "5000"}, 5.0),
    ({"flavour": "staging", "timeout_setting": "unreadable"}, 2.0),
    # aie2_tdr.c: a hang shows at the second silent check after the one that saw the last
    # completion, three periods, and a check later for each other connected context an
    # idle swap-out makes it skip (aie2_rq_handle_idle_ctx): 15 more at the device's 16
    ({"flavour": "oot", "timeout_setting": "3"}, 3.0 * 18),
    ({"flavour": "mainline"}, 60.0),
    ({"loaded": False, "flavour": None}, None),
])
def test_driver_timeout_for_deadlines(facts, seconds):
    from harness.model.drivers import timeout_seconds
    assert timeout_seconds(facts) == seconds


# -- the firmware's mailbox protocol and app health (harness.model.firmware) ---------------

@pytest.mark.parametrize("firmware, log_line, protocol, health, source", [
    # a release public logs tie to a protocol, read from the device (GET_INFO param 8)
    ((1, 1, 2, 65), None, "7.2", True, "firmware 1.1.2.65"),
    # a protocol-6 release whose minor is not established: not settled
    ((1, 0, 0, 63), None, "6.x", None, "firmware 1.0.0.63"),
    # an unknown release: the major in the loaded file's name (npu_7.sbin)
    ((1, 1, 9, 1), None, "7.x", True, "file name"),
    # the driver's own refusal says it exactly (Linux aie2_pci.c aie2_check_protocol)
    ((1, 1, 9, 1), "Incompatible firmware protocol major 6 minor 17", "6.17", False,
     "refusal"),
])
def test_the_probe_reads_the_firmware_s_protocol_and_app_health(tree, firmware, log_line,
                                                               protocol, health, source):
    tree.npu()
    tree.identity()
    if log_line:
        with open(tree.root / "dev" / "kmsg", "a") as kmsg:
            kmsg.write(f"3,12,5200000,-;amdxdna 0000:c7:00.1: [drm] *ERROR* "
                       f"aie2_check_protocol: {log_line}\n")
    facts = probe(tree.sources(ROOT, CannedDrm(firmware=firmware)))
    found = facts["npu_firmware"]
    assert (found["protocol"], found["app_health"]) == (protocol, health)
    assert source in found["protocol_from"]
    assert ("does not report health" in found.get("note", "")) == (health is False)
    assert f"mailbox protocol {protocol}" in render(facts)


def test_npu1_firmware_never_reports_health(tree):
    tree.npu(device="1502", revision="0x00", fw="1.5.5.391")
    facts = probe(tree.sources(ROOT, CannedDrm(firmware=(1, 5, 5, 391))))
    assert facts["npu_firmware"]["app_health"] is False
    assert "does not report health" in render(facts)
