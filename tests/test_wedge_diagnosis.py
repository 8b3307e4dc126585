"""The wedged device as the diagnosis reads it (harness.report.diagnosis.wedged): where a
report's trials began on a wedged device, its recovery check found one, or a kernel log
shows the driver's restart failing after a hang ("Create hwctx failed", the legacy tree's
"connect failed": amd/xdna-driver 234824b1 and 856409ca aie2_ctx.c aie2_hwctx_restart,
src/driver/amdxdna aie2_ctx_runqueue.c part_ctx_start) or the SMU refusing after a timeout
("smu cmd 4 failed, 0xff": a reload on the wedged NPU, amd/xdna-driver#1257), the answer
says so with where it read it, counts nothing the wedged device answered afterwards as
evidence of a cause (the contexts it then refuses are not resources, the SMU's refusals not
power management), and its next experiment begins with a reboot, which public reports saw
clear a wedge where a reload and a PCI rescan did not (1bit-MONSTER/1bit-MONSTER#1920)."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from diagkit import failed_trial, hardware_report, plan
from test_stack_causes import TIMEOUT_JSON, diagnosis_of

from harness.app.cli import main
from harness.execution import recovery
from harness.report.diagnosis import diagnose
from harness.report.diagnosis.observed import WEDGED_STATES

BDF = "0000:c5:00.1"
DRM = f"amdxdna {BDF}: [drm] *ERROR* "
LEGACY = f"amdxdna {BDF}: "
NOAVAIL = "aie_send_mgmt_msg_wait: command opcode 0x2 failed, status 0x2000003"


def _log(*lines: str) -> str:
    return "".join(f"[{100 + i:5d}.000000] {line}\n" for i, line in enumerate(lines))


def _no_reload_offered(experiment: str) -> None:
    assert experiment.startswith("first reboot the machine")
    assert "modprobe -r" not in experiment and "/sys/bus/pci/rescan" not in experiment


def test_a_simulated_wedge_is_said_and_what_ran_after_it_is_no_evidence(tmp_path):
    out = tmp_path / "r.yaml"
    CliRunner().invoke(main, ["reproduce", "--trials", "2", "--no-isolate", "--backend", "sim",
                              "--profile", "staging,wedge:1,hang-at:30", "--out", str(out)])
    diagnosis = diagnose([out])
    assert diagnosis.wedged, "the wedge is a finding"
    cites = [str(c) for f in diagnosis.wedged for c in f.cites]
    assert any("wedged_device" in c for c in cites) and any("restart_failed" in c
                                                           for c in cites)
    # the contexts the wedged firmware refused (its restart's included) say nothing of
    # resources or other clients
    for cause in ("resources", "contention"):
        assert not diagnosis.entry(cause).supports, cause
    _no_reload_offered(diagnosis.top.experiment)
    text = CliRunner().invoke(main, ["diagnose", str(out)]).stdout
    assert re.search(r"^  wedged: the device stayed wedged: 5 trials began on it", text, re.M)
    first = json.loads(CliRunner().invoke(main, ["diagnose", str(out), "--json"]).stdout)[0]
    assert first["wedged"][0]["cites"] and first["experiment"].startswith("first reboot")


def test_a_kernel_log_s_failed_restart_leaves_what_follows_out(tmp_path):
    """In the order the driver prints it: the timeout, the restart's context refused by the
    firmware, the restart failing; later every context refused."""
    log = _log(f"{DRM}aie2_tdr_detect: TDR timeout detected", f"{DRM}{NOAVAIL}",
               f"{DRM}aie2_hwctx_restart: Create hwctx failed, ret -22",
               f"{DRM}{NOAVAIL}", f"{DRM}aie2_hwctx_init: Alloc hw resource failed, ret -22",
               f"{DRM}amdxdna_drm_create_hwctx_ioctl: Init hwctx failed, ret -22")
    diagnosis = diagnosis_of(tmp_path, log, TIMEOUT_JSON)
    (finding,) = diagnosis.wedged
    assert "restart failed" in finding.text and "4 later lines" in finding.text
    assert str(finding.cites[0]).endswith("aie2_hwctx_restart: Create hwctx failed, ret -22")
    for cause in ("resources", "contention"):
        assert not diagnosis.entry(cause).supports, cause
    _no_reload_offered(diagnosis.top.experiment)
    # without the failed restart the same refusals are evidence of their own
    plain = diagnosis_of(tmp_path, _log(f"{DRM}{NOAVAIL}", f"{DRM}aie2_hwctx_init: Alloc "
                                        "hw resource failed, ret -22"), TIMEOUT_JSON)
    assert not plain.wedged and plain.entry("resources").supports
    assert not plain.top.experiment.startswith("first reboot")


def test_the_smu_refusing_after_a_timeout_is_the_wedge_not_power_management(tmp_path):
    """A probe after the timeout: the SMU's power-off refused, then the probe fails (as
    amd/xdna-driver#1257 and #1193 print such a probe)."""
    log = _log(f"{LEGACY}aie2_tdr_work: Device isn't making progress... Count 1",
               f"{DRM}aie2_smu_exec: smu cmd 4 failed, 0xff",
               f"{DRM}aie2_smu_init: Access power failed, ret -22",
               f"{DRM}aie2_hw_start: failed to init smu, ret -22",
               f"{DRM}aie2_init: start npu failed, ret -22",
               f"{DRM}amdxdna_probe: Hardware init failed, ret -22",
               f"amdxdna {BDF}: probe with driver amdxdna failed with error -22")
    diagnosis = diagnosis_of(tmp_path, log)
    (finding,) = diagnosis.wedged
    assert "SMU refused the power-off after the timeout" in finding.text
    assert not diagnosis.entry("power-management").supports
    assert not diagnosis.entry("device-access").supports
    _no_reload_offered(diagnosis.top.experiment)
    # the same SMU lines with no timeout before them are power management's
    alone = diagnosis_of(tmp_path, _log(f"{DRM}aie2_smu_exec: smu cmd 4 failed, 0xff"))
    assert not alone.wedged and alone.entry("power-management").supports


def test_a_longer_timer_after_a_wedge_is_set_for_the_next_boot(tmp_path):
    """The legacy tree's dead context ("connect failed" after its timeout): the timer the
    deciding experiment lengthens is set for the boot that clears the wedge, not by a
    reload on the wedged device."""
    log = _log(f"{LEGACY}aie2_tdr_work: Device isn't making progress... Count 1",
               f"{LEGACY}part_ctx_start: ctx.4242.1 connect failed, err -22",
               f"{LEGACY}rq_submit_enter_slow: ctx.4242.1 fatal error")
    diagnosis = diagnosis_of(tmp_path, log, TIMEOUT_JSON)
    assert diagnosis.top.id == "undetermined" and diagnosis.wedged
    experiment = diagnosis.top.experiment
    _no_reload_offered(experiment)
    # the lines' prefix names the module "amdxdna" (the legacy tree's name up to the
    # package's 2.21), so the option is set for that name
    assert "options amdxdna timeout_in_sec=20" in experiment and "/etc/modprobe.d" in \
        experiment


def test_a_recovery_check_that_found_the_device_wedged(tmp_path):
    """On hardware the recovery check after a failed trial names the state and the run
    stops; the diagnosis reads that state as the wedge's finding."""
    trial = failed_trial(0, 42, [24, 18], "TIMEOUT", wall_ms=60100.0)
    state, wedged = recovery.device_state("set-up failed: DRM_IOCTL_AMDXDNA_CREATE_HWCTX "
                                          "IOCTL failed (err=-22): Invalid argument")
    assert wedged
    trial["recovery"] = {"status": "not recovered", "attempts": 5, "waited_s": 30.0,
                         "what": "one NOP run", "state": state,
                         "fix": recovery.wedged_fix(state)}
    report = hardware_report(tmp_path, "hw", [plan("monolithic", "42", [42], [trial])])
    diagnosis = diagnose([report])
    (finding,) = diagnosis.wedged
    assert "recovery check" in finding.text
    assert "plans[0] (monolithic 42).trials[0].recovery.state = wedged" in \
        str(finding.cites[0])
    _no_reload_offered(diagnosis.top.experiment)


@pytest.mark.parametrize("pattern, state, wedged", recovery._STATES)
def test_every_wedged_state_the_recovery_check_names_is_read_as_one(pattern, state, wedged):
    assert state.startswith(WEDGED_STATES) == wedged


def test_every_submit_refused_eio_after_a_timeout_is_the_legacy_dead_context(tmp_path):
    """What an application prints on the legacy tree once the context died (harness.model
    .wedge EXEC_EIO): a wedge, whose later refusals are no evidence of their own."""
    console = (TIMEOUT_JSON + "".join("RuntimeError: DRM_IOCTL_AMDXDNA_EXEC_CMD IOCTL failed "
                                      "(err=-5): Input/output error\n" for _ in range(3)))
    diagnosis = diagnosis_of(tmp_path, console)
    (finding,) = diagnosis.wedged
    assert "refused -EIO" in finding.text
    _no_reload_offered(diagnosis.top.experiment)


@pytest.mark.parametrize("module", ["amdxdna", "amdxdna_legacy"])
def test_the_longer_timer_names_the_module_the_log_s_prefix_shows(tmp_path, module):
    """The legacy tree prints through dev_err, so each line opens with its module's name:
    amdxdna up to the package's 2.21, amdxdna_legacy from 2.25 (amd/xdna-driver e9a3bef5);
    amd/xdna-driver#906's prefix is "amdxdna". A reload names the module that is loaded."""
    log = _log(f"{module} {BDF}: aie2_tdr_work: Device isn't making progress... Count 17",
               f"{module} {BDF}: aie2_dump_ctx: Dumping ctx ctx.903608.1, hwctx 15, sub=2, "
               "comp=1")
    experiment = diagnosis_of(tmp_path, log, TIMEOUT_JSON).top.experiment
    assert f"sudo modprobe -r {module} && sudo modprobe {module} timeout_in_sec=20" in \
        experiment
