"""Reports a maintainer can act on without asking back (issue: kernel log, firmware
health capture, device identity, recovery), end to end on the hardware path.

The machine is fabricated (`machines.Tree.identity`): a Strix Halo at 0000:c7:00.1 in a
DMA-FQ IOMMU group, a boot log in /dev/kmsg naming the firmware file, xrt-smi, and a
ROCm process holding /dev/kfd. pyxrt is the simulated stand-in (`noisy_pyxrt`), whose
staging driver appends its lines to that /dev/kmsg as it prints them, and which adds
what a real machine may log around a failure. The harness reads it all through the
same reader as on an NPU; the results stay labelled SIMULATED.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from machines import stand_in_pack, strix_halo

from harness.report.fileformat import load_report

TESTS = Path(__file__).parent


@pytest.fixture
def machine(tmp_path: Path) -> dict[str, str]:
    tree = strix_halo(tmp_path)
    pack = stand_in_pack(tmp_path / "pack", "Path")
    return {"pack": str(pack), "root": str(tree.root),
            "env": dict(os.environ, HARNESS_PYXRT="noisy_pyxrt", HARNESS_ROOT=str(tree.root),
                        HARNESS_SIM_PROFILE="staging,hang-at:30",
                        PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH",
                                                                                "")]))}


def harness(machine: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], env=machine["env"],
                          capture_output=True, text=True, timeout=120)


def test_the_hardware_path_records_parses_renders_and_bundles_every_item(machine, tmp_path):
    out = tmp_path / "r.yaml"
    (Path(machine["root"]) / "proc/sys/kernel/hostname").write_text("npu-box-7")
    done = harness(machine, "run", "minicpm5-2b-decode", "--plan", "42", "--backend", "xrt",
                   "--xclbins", machine["pack"], "--trials", "1", "--out", str(out))
    assert done.returncode == 1, done.stderr
    assert "SIMULATED stand-in" in done.stdout.splitlines()[0]
    report = load_report(out)
    env = report.environment
    # identity and context
    assert env["npu"]["bdf"] == "0000:c7:00.1" and env["npu"]["generation"] == "NPU5 Strix Halo"
    assert env["npu"]["iommu_group_type"] == "DMA-FQ"
    assert env["npu"]["runtime_pm"] == {"status": "active", "control": "auto"}
    assert env["system"]["dmi"]["bios_version"] == "03.04"
    assert "product_serial" not in env["system"]["dmi"]           # one unit's serial: never
    assert env["system"]["boot_flags"] == {"iommu": "pt"}
    firmware = env["npu_firmware"]
    fw_hash = "07f7ab476bc3a83fad639d34a012cb4a5f859441f0d24c11627ca96696839012"  # of "fw"
    assert (firmware["loaded"], firmware["files"]) == ("amdnpu/17f0_11/npu_7.sbin",
                                                       ["npu.sbin", "npu_7.sbin"])
    assert firmware["sha256"] == {"npu.sbin": fw_hash, "npu_7.sbin": fw_hash}
    assert (firmware["protocol"], firmware["app_health"]) == ("7.2", True)   # 1.1.2.65
    assert env["kernel_log"] == {"source": "/dev/kmsg"}
    assert env["xrt_smi"]["examine"]["exit_status"] == 0
    assert "xrt-smi examine: Device(s) Present" in env["xrt_smi"]["examine"]["output"]
    assert "not run" in env["xrt_smi"]["validate"]["note"]       # it runs work: only if asked
    assert env["device_users"]["users"] == [{"pid": 4242, "command": "ollama-rocm",
                                             "devices": ["/dev/kfd"]}]
    # the trial: its kernel log, parsed; who held the device; recovery
    trial = report.plans[0].trials[0]
    assert trial.state == "TIMEOUT"
    log = trial.kernel_log
    assert log["source"] == "/dev/kmsg" and log["tree"] == "drm"
    assert "as the staging driver prints" in log["tree_note"]
    assert not any("usb 1-1" in line for line in log["lines"])   # not the driver's: dropped
    assert log["dropped"] >= 1
    kinds = [e["event"] for e in log["events"]]
    for kind in ("tdr_timeout", "timeout_capture", "iommu_page_fault", "mailbox_failure",
                 "map_host_buffer_failed", "firmware_unhealthy", "aie_error",
                 "callbacks_suppressed"):
        assert kind in kinds, kind
    mailbox = next(e for e in log["events"] if e["event"] == "mailbox_failure")
    assert (mailbox["opcode_name"], mailbox["status_name"]) == ("CREATE_CONTEXT",
                                                                "MGMT_ERT_NOAVAIL")
    aie = next(e for e in log["events"] if e["event"] == "aie_error")
    assert aie["tile"] == "(2, 1)" and aie["aie_event"] == "DM_ECC_ERROR_2BIT (64)"
    assert trial.device_users["users"][0]["pid"] == 4242
    assert trial.recovery["status"] == "recovered" and trial.recovery["attempts"] == 1
    # the render names every item and fits an issue
    rendered = harness(machine, "report", "render", str(out))
    assert rendered.returncode == 0, rendered.stderr
    body = rendered.stdout
    assert len(body) <= 65_536
    for item in ("| PCI | 0x1022:0x17f0 rev 0x11 (NPU5 Strix Halo) at 0000:c7:00.1 |",
                 "BIOS 03.04 (10/01/2025)", "group type DMA-FQ; boot flags iommu=pt",
                 "| runtime PM | active (control auto) |",
                 "amdnpu/17f0_11/npu_7.sbin", "| kernel log | read from /dev/kmsg |",
                 "examine: exit 0", "4242 ollama-rocm", "Recovery: recovered",
                 "Firmware's account of the timeout", "| timed_out_sub_command_id |",
                 "mailbox_failure: opcode 0x2 (CREATE_CONTEXT) status 0x2000003 "
                 "(MGMT_ERT_NOAVAIL)", "iommu_page_fault", "TDR timeout detected",
                 "<summary>xrt-smi examine (exit 0)</summary>"):
        assert item in body, item
    # no bundle yet: the render says how to make one, and names none
    assert "Attached: " not in body
    assert f"`runlist-harness report bundle {out.name}` writes `r.bundle.tar.gz`" in body
    # the bundle opens with tar and holds what the render names once it exists
    bundled = harness(machine, "report", "bundle", str(out))
    assert bundled.returncode == 0, bundled.stderr
    archive = tmp_path / "r.bundle.tar.gz"
    listing = subprocess.run(["tar", "tzf", str(archive)], capture_output=True, text=True,
                             check=True).stdout.split()
    body = harness(machine, "report", "render", str(out)).stdout
    footer = body[body.rindex("Attached: "):]
    assert "`r.bundle.tar.gz`" in footer
    for name in ("README.md", "report.md", "r.yaml", "kernel-log.txt", "xrt-smi.txt",
                 "recipes/"):
        assert f"`{name}`" in footer, name
        assert any(entry == f"r.bundle/{name}" or entry.startswith(f"r.bundle/{name}")
                   for entry in listing), name
    with tarfile.open(archive) as tar:
        kernel_log = tar.extractfile("r.bundle/kernel-log.txt").read().decode()
        shipped = tar.extractfile("r.bundle/r.yaml").read().decode()
        assert tar.extractfile("r.bundle/report.md").read().decode() == body
    assert "TDR timeout detected" in kernel_log and "IO_PAGE_FAULT" in kernel_log
    # redacted by default: the report on disk (users attach it too), the bundle, the render
    assert report.environment["system"]["hostname"] == "<hostname>"
    assert "npu-box-7" not in out.read_text()
    assert "npu-box-7" not in shipped and "npu-box-7" not in body
    assert not any(entry.endswith(".xclbin") for entry in listing)      # named, not shipped


def test_validate_runs_only_when_asked(machine, tmp_path):
    out = tmp_path / "r.yaml"
    done = harness(machine, "run", "minicpm5-2b-decode", "--plan", "21+21", "--backend", "xrt",
                   "--xclbins", machine["pack"], "--trials", "1", "--out", str(out),
                   "--xrt-smi-validate")
    assert done.returncode == 0, done.stderr
    smi = load_report(out).environment["xrt_smi"]
    assert "xrt-smi validate: Device(s) Present" in smi["validate"]["output"]
    trial = load_report(out).plans[0].trials[0]
    assert trial.kernel_log is None and trial.recovery is None     # passed: nothing to say


def test_a_device_that_does_not_recover_stops_the_run_with_the_fix(machine, tmp_path,
                                                                    monkeypatch):
    """After a failed hardware trial the runner checks the device answers before the next
    trial; when it never does, the trial keeps the answer, and the run stops (exit 3)
    naming the fix and how to continue."""
    from click.testing import CliRunner

    from harness.app.cli import main
    from harness.execution import recovery
    from harness.execution.recovery import Recovery
    from harness.sim import control

    for key in ("HARNESS_PYXRT", "HARNESS_ROOT", "HARNESS_SIM_PROFILE"):
        monkeypatch.setenv(key, machine["env"][key].replace("noisy_pyxrt", "harness.sim.pyxrt"))
    monkeypatch.setattr(control, "_current", None)
    attempts = []

    def never(attempt, what, fix, **kwargs):
        attempts.append(attempt())                 # the real attempt runs once
        return Recovery("not recovered", 5, 30.0, what, "no answer", fix)
    monkeypatch.setattr(recovery, "check_recovery", never)
    out = tmp_path / "r.yaml"
    result = CliRunner().invoke(main, ["run", "minicpm5-2b-decode", "--plan", "42", "--plan",
                                       "21+21", "--backend", "xrt", "--xclbins",
                                       machine["pack"], "--trials", "1", "--no-isolate",
                                       "--out", str(out)])
    assert result.exit_code == 3, result.output
    assert "the NPU did not answer after 42 trial 1" in result.output
    assert "sudo modprobe -r amdxdna && sudo modprobe amdxdna" in result.output
    assert f"runlist-harness run --resume {out}" in result.output
    report = load_report(out)
    trial = report.plans[0].trials[0]
    assert trial.recovery["status"] == "not recovered" and "rescan" in trial.recovery["fix"]
    assert report.plans[1].trials == []               # nothing ran beside a dead device
    assert attempts == [None]                         # the one-run check itself answered
