"""A device that stays wedged (`wedge:N`, `firmware-dead:N`): what each tree does and prints,
what a reload does, and how the harness reads the runs after it (harness.model.wedge).

Facts pinned, each read at the commit named: the in-tree and staging drivers restart a
context in aie2_sched_job_timedout through aie2_hwctx_restart ("Create hwctx failed, ret
%d"), and a context left without a firmware channel gets no fence from aie2_sched_job_run,
its command left NEW (amd/xdna-driver 234824b1 and 856409ca drivers/accel/amdxdna/
aie2_ctx.c); staging says "NPU context restart rejected ... not power-cycling" without a
fatal report, and power-cycles a firmware that answers no health query (aie2_hw_reset);
the legacy tree reconnects a context with its next job, marks it CTX_STATE_DEAD when that
fails ("connect failed"), and fails every submit -EIO ("fatal error", 856409ca
src/driver/amdxdna/aie2_ctx_runqueue.c); a new context on a wedged firmware is refused with
the ioctl's "Init hwctx failed" (amd/xdna-driver PR #1585, 7.0.0-29); a reload on it goes
through and leaves it wedged ("only reloads firmware and does not reset the stuck AIE
cores", and an FLR left it "not ready after FLR": 1bit-MONSTER/1bit-MONSTER#1920; a PCI
remove and rescan cleared one: amd/xdna-driver#1645, `wedge:N:reloads`); the SMU lines of
a failed probe (#1257, #1193) are a cold boot's, not a reload's on a wedged device.
"""

from __future__ import annotations

import pytest
from simkit import Rig, outcome

import harness.sim.pyxrt as pyxrt
from harness.execution.recovery import check_recovery, device_state, recovery_fix
from harness.model.results import WEDGED_STATE, TrialResult, TrialStatus
from harness.model.wedge import EXEC_EIO
from harness.report.answer import CUT_AVOIDS, CUT_WEDGED, cut_outcome
from harness.report.model import PlanRecord
from harness.search.boundary import SKIP, classify
from harness.sim import control

DRM = "amdxdna 0000:00:00.9: [drm] *ERROR* "
WARN = "amdxdna 0000:00:00.9: [drm] "
PLAIN = "amdxdna 0000:00:00.9: "
NEW_AT_ONCE = "runlist failed execution (ERT_CMD_STATE_NEW)"


def hung_then(rig: Rig):
    """A runlist that hangs (hang-at:30), then the lines printed from there on."""
    assert "TIMEOUT" in outcome(rig.runlist(42)[0])
    return rig.kernel_lines()


@pytest.mark.parametrize("profile, restart", [
    ("mainline,wedge:1,hang-at:30",
     [f"{DRM}aie2_send_mgmt_msg_wait: command opcode 0x2 failed, status 0x2000003",
      f"{DRM}aie2_hwctx_restart: Create hwctx failed, ret -22"]),
    ("staging,wedge:1,hang-at:30",
     [f"{DRM}aie_send_mgmt_msg_wait: command opcode 0x2 failed, status 0x2000003",
      f"{DRM}aie2_hwctx_restart: Create hwctx failed, ret -22",
      f"{WARN}aie2_sched_job_timedout: NPU context restart rejected (ret -22) without fatal "
      "report - not power-cycling"]),
])
def test_the_in_tree_and_staging_restart_fails_and_the_context_runs_nothing_after(
        tmp_path, profile, restart):
    rig = Rig(tmp_path, profile)
    lines = hung_then(rig)
    assert lines[-len(restart):] == restart
    # the context has no firmware channel: its next chain ends at once, never sent
    before = rig.stack.now
    assert outcome(rig.runlist(10)[0]).startswith(NEW_AT_ONCE)
    assert rig.stack.now == before
    # and a new context is refused, ending with the ioctl's own line
    with pytest.raises(RuntimeError) as refused:
        rig.context("another")
    assert str(refused.value) == ("DRM_IOCTL_AMDXDNA_CREATE_HWCTX IOCTL failed (err=-22): "
                                  "Invalid argument")
    assert rig.kernel_lines()[-1] == \
        f"{DRM}amdxdna_drm_create_hwctx_ioctl: Init hwctx failed, ret -22"


def test_the_legacy_tree_kills_the_context_at_its_next_connect_and_every_submit_fails_eio(
        tmp_path):
    rig = Rig(tmp_path, "oot,wedge:1,hang-at:30")
    seen = len(hung_then(rig))
    for _ in range(2):
        rl = rig.runlist(10)[0]
        with pytest.raises(RuntimeError) as refused:
            rl.execute()
        assert str(refused.value) == EXEC_EIO
    name = rig.stack.contexts[0].name
    # the first submit connects, fails and waits in the slow path; later ones fail at once
    assert rig.kernel_lines()[seen:] == [
        f"{PLAIN}aie2_send_mgmt_msg_wait: command opcode 0x2 failed, status 0x2000003",
        f"{PLAIN}aie2_load_hwctx: create context failed, ret -22",
        f"{PLAIN}aie2_hwctx_start: Alloc hw resource failed, ret -22",
        f"{PLAIN}part_ctx_start: {name} connect failed, err -22",
        f"{PLAIN}rq_submit_enter_slow: {name} fatal error"]


def test_a_firmware_that_takes_contexts_and_completes_nothing_times_out_every_runlist(tmp_path):
    rig = Rig(tmp_path, "staging,wedge:1:hang,hang-at:30")
    hung_then(rig)
    assert "TIMEOUT" in outcome(rig.runlist(1)[0])       # one run: a hang, not its depth
    rig.context("another")                                # contexts are still made


def _reloaded(tmp_path) -> Rig:
    """The same device after `control.reload_module()`, with a context of its own."""
    rig = Rig.__new__(Rig)
    rig.folder, rig.stack, rig.dev = tmp_path, control.current(), pyxrt.device(0)
    return rig


@pytest.mark.parametrize("profile", ["mainline,wedge:1,hang-at:30",
                                     "staging,wedge:1,hang-at:30", "oot,wedge:1,hang-at:30"])
def test_a_reload_on_the_wedged_device_goes_through_and_leaves_it_wedged(tmp_path, profile):
    rig = Rig(tmp_path, profile)
    hung_then(rig)
    seen = len(rig.kernel_lines())
    del rig
    control.reload_module()
    stack = control.current()
    assert stack.life.wedged and not stack.refused        # a device, still wedged
    assert not any("smu cmd 4" in r.text for r in stack.kernel_log.records[seen:])
    rig = _reloaded(tmp_path)
    if profile.startswith("oot"):                          # a new context connects at work
        rig.ctx, rig.kernel = rig.context("layer")
        rig.instr = rig.instructions(8)
        rig.bufs = [pyxrt.bo(rig.dev, 4096, pyxrt.bo.host_only, rig.kernel.group_id(3 + i))
                    for i in range(5)]
        with pytest.raises(RuntimeError, match=r"EXEC_CMD IOCTL failed \(err=-5\)"):
            rig.runlist(10)[0].execute()
    else:                                                  # the firmware still refuses one
        with pytest.raises(RuntimeError, match=r"CREATE_HWCTX IOCTL failed \(err=-22\)"):
            rig.context("layer")


def test_a_wedge_that_a_reload_clears_works_again_after_it(tmp_path):
    rig = Rig(tmp_path, "mainline,wedge:1:reloads,hang-at:30")
    hung_then(rig)
    del rig
    control.reload_module()
    assert not control.current().life.wedged
    rig = _reloaded(tmp_path)
    rig.ctx, rig.kernel = rig.context("layer")
    rig.instr = rig.instructions(8)
    rig.bufs = [pyxrt.bo(rig.dev, 4096, pyxrt.bo.host_only, rig.kernel.group_id(3 + i))
                for i in range(5)]
    assert outcome(rig.runlist(10)[0]) == "COMPLETED"


def test_staging_power_cycles_a_firmware_that_answers_nothing_and_runs_again(tmp_path):
    rig = Rig(tmp_path, "staging,firmware-dead:1,hang-at:30")
    lines = hung_then(rig)
    assert lines[-5:] == [
        f"{DRM}xdna_send_msg_wait: Wait for completion timeout",     # the health query
        f"{DRM}aie2_query_app_health: Get app health failed, ret -62 status 0xffffffff",
        f"{DRM}aie2_hwctx_restart: Create hwctx failed, ret -19",     # its channel gone
        f"{WARN}aie2_sched_job_timedout: NPU firmware unhealthy (ctx restart ret -19, health "
        "unresponsive) - power-cycling NPU",
        f"{WARN}aie2_hw_reset: NPU firmware unhealthy: power-cycling NPU"]
    assert "Firmware timeout state capture:" not in "\n".join(lines)   # no report came
    assert outcome(rig.runlist(10)[0]) == "COMPLETED"
    assert rig.stack.life.power_cycles == 1


def test_staging_does_not_power_cycle_a_firmware_it_could_not_ask_for_health(tmp_path):
    """Without AIE2_APP_HEALTH (protocol 6.17) the query is not sent (-EOPNOTSUPP), so
    fw_dead stays false: the stop's DESTROY_CONTEXT is the message that times out, and the
    refused restart is only logged (856409ca aie2_ctx.c aie2_sched_job_timedout)."""
    rig = Rig(tmp_path, "staging,firmware:protocol:6.17,firmware-dead:1,hang-at:30")
    assert hung_then(rig)[-4:] == [
        f"{DRM}xdna_send_msg_wait: Wait for completion timeout",
        f"{WARN}aie2_destroy_context_req: Destroy context failed, ret -62",
        f"{DRM}aie2_hwctx_restart: Create hwctx failed, ret -19",
        f"{WARN}aie2_sched_job_timedout: NPU context restart rejected (ret -19) without fatal "
        "report - not power-cycling"]
    assert rig.stack.life.power_cycles == 0


@pytest.mark.parametrize("profile, first", [
    # 7.0 asks no health: the stop's DESTROY_CONTEXT is the first message (234824b1
    # aie2_hwctx_stop -> aie2_destroy_context_req, XDNA_WARN)
    ("mainline,firmware-dead:1,hang-at:30",
     f"{WARN}aie2_destroy_context_req: Destroy context failed, ret -62"),
    # 7.1 asks first (f13c7f41 aie2_query_app_health, status MAX_AIE2_STATUS_CODE); the
    # destroy then finds no channel, -ENODEV, a debug line only
    ("mainline,kernel:7.1,firmware-dead:1,hang-at:30",
     f"{DRM}aie2_query_app_health: Get app health failed, ret -62 status 0x4000009")])
def test_the_in_tree_driver_has_no_firmware_dead_path(tmp_path, profile, first):
    rig = Rig(tmp_path, profile)
    assert hung_then(rig)[-3:] == [f"{DRM}xdna_send_msg_wait: Wait for completion timeout",
                                   first,
                                   f"{DRM}aie2_hwctx_restart: Create hwctx failed, ret -19"]
    with pytest.raises(RuntimeError, match=r"\(err=-19\): No such device"):
        rig.context("another")


def test_the_legacy_tree_asks_a_silent_firmware_for_health_after_its_dump_line(tmp_path):
    """aie2_dump_ctx prints "Dumping ctx" and then asks aie2_get_app_health, which prints the
    status it started with (MAX_AIE2_STATUS_CODE, 0x400000d in src/driver/amdxdna); the stop
    that follows prints every failed DESTROY_CONTEXT (856409ca src/driver/amdxdna)."""
    rig = Rig(tmp_path, "oot,firmware-dead:1,hang-at:30")
    lines = hung_then(rig)
    dump = next(i for i, line in enumerate(lines) if "Dumping ctx" in line)
    name = rig.stack.contexts[0].name
    assert lines[dump + 1:dump + 3] == [
        f"{PLAIN}xdna_send_msg_wait: Wait for completion timeout",
        f"{PLAIN}aie2_get_app_health: Get app health got status 0x400000d"]
    assert lines[-2:] == [f"{PLAIN}aie2_destroy_context: {name} destroy context failed, ret -19",
                          f"{PLAIN}aie2_unload_hwctx: destroy context failed, ret -19"]


# -- the runs after a wedge, as the harness reads them ----------------------------------------

def _trial(index: int, state: str, *, wedged: bool = False, chunks: int = 1) -> TrialResult:
    from harness.model.results import RunlistOutcome
    status = TrialStatus.COMPLETED if state == "COMPLETED" else TrialStatus.FAILED
    trial = TrialResult(index, status, runlists=[RunlistOutcome(i, 21, [21], state=state)
                                                 for i in range(chunks)])
    trial.wedged_device = {"state": "wedged"} if wedged else None
    return trial


def test_a_trial_begun_on_a_wedged_device_counts_for_no_plan():
    wedged = _trial(0, "NEW", wedged=True)
    assert wedged.state == WEDGED_STATE
    assert classify({WEDGED_STATE: 3}) is SKIP                 # a bisect takes no side
    cut = PlanRecord("halves", "21+21", [21, 21], trials=[_trial(0, "NEW", wedged=True,
                                                                  chunks=2)])
    assert cut_outcome([cut]) == CUT_WEDGED
    cut.trials.append(_trial(1, "COMPLETED", chunks=2))
    assert cut_outcome([cut]) == CUT_AVOIDS                    # the one real answer


def _cli(tmp_path, *args):
    from click.testing import CliRunner

    from harness.app.cli import main
    return CliRunner().invoke(main, ["reproduce", "--trials", "2", "--out",
                                     str(tmp_path / "r.yaml"), *args])


@pytest.mark.parametrize("flavour", ["mainline", "staging", "oot"])
def test_the_answer_line_counts_the_wedged_trials_of_every_plan(tmp_path, flavour):
    """After a wedge the runs' real counts are a timeout and wedged trials: the answer says
    both, for the depth and for the cut, rather than "failed 1/3; +1 more"."""
    from harness.report.answer import ANSWER_WIDTH
    done = _cli(tmp_path, "--trials", "3", "--profile", f"{flavour},wedge:1,hang-at:30")
    answer = next(line for line in done.output.splitlines() if line.startswith("verdict:"))
    assert answer == ("verdict: 42: TIMEOUT 1/3, wedged 2; 21+21: wedged 3/3 -> "
                      f"{CUT_WEDGED} [SIMULATED]")
    assert len(answer.removeprefix("verdict: ")) <= ANSWER_WIDTH
    assert "more" not in answer and "failed 1/3" not in answer


def test_an_answer_too_long_for_its_states_still_says_the_wedged_trials():
    """One plan's counts too long a list of states: the answer says how many failed and
    how many ran on a wedged device, never only the failures."""
    from harness.report.answer import ANSWER_WIDTH, answer_line
    states = ["TIMEOUT", "ERROR", "ABORT", "NORESPONSE", "SKCRASHED"]
    plan = PlanRecord("monolithic", "42", [42], trials=[
        *(_trial(i, state) for i, state in enumerate(states)),
        _trial(5, "NEW", wedged=True), _trial(6, "NEW", wedged=True)])
    line = answer_line([plan], "failures", {"kind": "sim", "simulated": True})
    assert line == "42 in one runlist: failed 5/7, wedged 2 -> failures [SIMULATED]"
    assert len(line) <= ANSWER_WIDTH


@pytest.mark.parametrize("isolate", [[], ["--no-isolate"]])
def test_a_wedge_outlives_its_trial_and_the_cut_is_never_read_as_failing(tmp_path, isolate):
    from harness.report.diagnosis.observed import observe
    from harness.report.fileformat import load_report
    done = _cli(tmp_path, "--profile", "staging,wedge:1,hang-at:30", *isolate)
    verdict = next(line for line in done.output.splitlines() if line.startswith("verdict:"))
    assert CUT_WEDGED in verdict and "does not avoid" not in done.output
    report = load_report(tmp_path / "r.yaml")
    assert [[t.state for t in p.trials] for p in report.plans] == [
        ["TIMEOUT", WEDGED_STATE], [WEDGED_STATE] * 2, [WEDGED_STATE] * 2]
    first = report.plans[0].trials[1]
    assert first.wedged_device["simulated"] and "refuses every context" in \
        first.wedged_device["state"]
    assert "ran on a wedged device" in report.verdict["text"]
    # the diagnosis reads the first trial's timeout, and leaves the rest out as evidence
    observed = observe(tmp_path / "r.yaml")
    assert [(a.label, a.failed, a.setup_failed) for a in observed.arms] == [
        ("monolithic 42", 1, 0)]
    assert observed.wedged == {"monolithic 42": 1, "halves 21+21": 2, "depth-only 42": 2}
    assert "refuses every context" in observed.wedged_state


# -- the recovery check names the state, and advises no reload for a wedge ---------------------

@pytest.mark.parametrize("error, wedged", [
    (EXEC_EIO, True),
    ("set-up failed: DRM_IOCTL_AMDXDNA_CREATE_HWCTX IOCTL failed (err=-22): Invalid argument",
     True),
    ("set-up failed: DRM_IOCTL_AMDXDNA_CREATE_HWCTX IOCTL failed (err=-19): No such device",
     True),
    (NEW_AT_ONCE, True), ("qds_device::wait() unexpected command state", True),
    (" No such device with index '0'", True),
    ("TIMEOUT", False)])
def test_the_recovery_check_names_the_state_from_its_own_error(error, wedged):
    state, is_wedged = device_state(error)
    assert is_wedged == wedged
    result = check_recovery(lambda: error, "one NOP run", recovery_fix("amdxdna", None),
                            sleep=lambda s: None, delays=(0.0,))
    assert result.state == state and not result.recovered
    # offered: the commands; a wedge's advice says why they do not help, and offers neither
    offers_reload = "modprobe" in result.fix or "/sys/bus/pci/rescan" in result.fix
    assert offers_reload != wedged
    assert "reboot" in result.fix


def test_the_hardware_path_stops_on_a_wedged_device_naming_it(tmp_path, monkeypatch):
    """On the hardware path (the simulator standing in), the check after the first failed
    trial meets the wedge: the run stops with the state and a reboot, not a reload."""
    import functools

    from click.testing import CliRunner
    from machines import stand_in_pack, strix_halo

    from harness.app.cli import main
    from harness.execution import recovery
    from harness.report.fileformat import load_report
    tree = strix_halo(tmp_path)
    pack = stand_in_pack(tmp_path / "pack", "Path")
    monkeypatch.setenv("HARNESS_PYXRT", "harness.sim.pyxrt")
    monkeypatch.setenv("HARNESS_ROOT", str(tree.root))
    monkeypatch.setenv("HARNESS_SIM_PROFILE", "staging,wedge:1,hang-at:30")
    monkeypatch.setattr(control, "_current", None)
    monkeypatch.setattr(recovery, "check_recovery",
                        functools.partial(recovery.check_recovery, delays=(0.0,)))
    out = tmp_path / "r.yaml"
    result = CliRunner().invoke(main, ["run", "minicpm5-2b-decode", "--plan", "42", "--plan",
                                       "21+21", "--backend", "xrt", "--xclbins", str(pack),
                                       "--trials", "1", "--no-isolate", "--out", str(out)])
    assert result.exit_code == 3, result.output
    assert "the firmware refuses new contexts" in result.output
    assert "modprobe" not in result.output and "reboot" in result.output
    check = load_report(out).plans[0].trials[0].recovery
    assert check["state"].startswith("wedged") and "/sys/bus/pci/rescan" not in check["fix"]
