"""Firmware features, kernels as released and the out-of-tree driver's own rules, as the
simulated stack plays them (harness.sim.rules names each source):

- the capture block and version-1 health exist only with a firmware that has app health
  (amd/xdna-driver npu4_regs.c: AIE2_APP_HEALTH from mailbox protocol 6.18, npu1 never),
  written as that firmware writes them (Version 2.0, Report size 0x230: xdna-driver#906)
  and "not modelled" where the model cannot know a value;
- kernels as released: 6fb7f2988832 reached 6.17.13 and 6.18.2 as stable backports,
  89ff45359abb 6.19.7 (the stable review mails);
- the out-of-tree driver counts a submit as progress (reset_tdr_timer, 1471fd97) and
  refuses its 33rd virtual context (aie2_rq_add); mainline refuses a context in
  aie2_send_mgmt_msg_wait (Linux aie2_message.c, as xdna-driver f13c7f41 imports it);
- a 5th job in flight blocks in the submit ioctl (down_interruptible(&hwctx->priv->job_sem),
  staging aie2_ctx.c aie2_cmd_submit).
"""

from __future__ import annotations

import pytest
from simkit import Rig, failure

import harness.sim.pyxrt as pyxrt
from harness.logs.driver_lines import firmware_account, trial_entry
from harness.logs.kernel_log import reading_of
from harness.model.drivers import driver_build
from harness.model.errors import BadInput
from harness.sim.driver_log import DEVICE
from harness.sim.profiles import parse_profile
from harness.sim.stack import CTX_LIMIT_FAILED, HWCTX_CREATE_FAILED, STAGING_TDR_US

DEV = DEVICE       # the simulated NPU's own prefix


def timed_out(rig: Rig, depth: int = 1) -> str:
    return failure(rig.runlist(depth)[0])


# -- firmware features -----------------------------------------------------------------------

@pytest.mark.parametrize("profile, func", [
    ("staging", "[drm] *ERROR* aie2_set_cmd_timeout"),
    ("mainline,kernel:7.1", "[drm] *ERROR* aie2_set_cmd_timeout"),
    ("oot", "aie2_dump_ctx"),
])
def test_a_firmware_with_app_health_writes_its_capture_block(tmp_path, profile, func):
    rig = Rig(tmp_path, f"{profile},hang-at:0")
    timed_out(rig)
    printed = rig.kernel_lines()
    head = printed.index(f"{DEV}{func}: Firmware timeout state capture:")
    block = [line[len(DEV) + len(func) + 2:] for line in printed[head + 1:head + 13]]
    # the version and size that firmware writes; what the model cannot know, not invented
    assert block == ["\tVersion: 2.0", "\tReport size: 0x230", "\tContext ID: 1",
                     "\tDPU PC: not modelled", "\tTXN OP ID: not modelled",
                     "\tContext PC: not modelled", "\tFatal error type: not modelled",
                     "\tFatal error exception type: not modelled",
                     "\tFatal error exception PC: not modelled",
                     "\tFatal error app module: not modelled",
                     "\tFatal error task ID: not modelled", "\tTimed out sub command ID: 0"]
    # the harness's own reader reads what the simulator prints, "not modelled" kept as such
    entry = trial_entry(reading_of(rig.stack.kernel_log.kmsg(), "simulated"), None, True)
    account = firmware_account(entry["events"])
    assert account["version"] == "2.0" and account["report_size"] == 0x230
    assert account["txn_op_id"] == "not modelled" != 0
    assert account["context_pc"] == "not modelled"
    assert account["timed_out_sub_command_id"] == 0


@pytest.mark.parametrize("profile", [
    "staging,firmware:protocol:6.17", "mainline,kernel:7.1,firmware:protocol:6.17",
    "oot,firmware:protocol:6.17", "staging,device:npu1", "oot,device:npu1",
])
def test_a_firmware_without_app_health_leaves_no_capture_and_no_health(tmp_path, profile):
    rig = Rig(tmp_path, f"{profile},hang-at:0", columns=4)
    message = timed_out(rig)
    assert not any("Firmware timeout state capture" in line for line in rig.kernel_lines())
    assert "not modelled" not in message
    assert rig.stack.jobs[-1].health is None


def test_app_health_starts_at_protocol_6_18_on_npu4_class_devices():
    assert parse_profile("firmware:protocol:6.18").app_health
    assert parse_profile("firmware:protocol:7.0").app_health
    assert not parse_profile("firmware:protocol:6.17").app_health
    assert not parse_profile("device:npu1,firmware:protocol:7.2").app_health
    # the #712 machine's firmware: 1.1.2.65 speaks protocol 7.2
    assert parse_profile("").protocol.text == "7.2" and parse_profile("").app_health


def test_firmware_tokens_name_a_release_or_its_protocol():
    assert parse_profile("firmware:1.1.2.65").name == "mainline"      # npu5's own
    assert parse_profile("firmware:1.1.2.64").name == "mainline,firmware:1.1.2.64"
    assert parse_profile("firmware:protocol:6.17").firmware_facts() == {
        "version": None, "protocol": "6.17", "app_health": False,
        "note": "this firmware does not report health (AIE2_APP_HEALTH, the firmware's app "
                "health report, needs mailbox protocol 6.18 or later on npu4-class devices, "
                "npu4/5/6; npu1 has none)"}
    # 1.0.0.63 speaks protocol 6.x: whether it reports health is not settled, which
    # matters only to a driver that asks (staging, oot, mainline from 7.1)
    for asks in ("staging", "oot", "mainline,kernel:7.1"):
        with pytest.raises(BadInput, match=r"1\.0\.0\.63 \(protocol 6\.x\) does not "
                                           r"settle.*protocol:6\.18"):
            parse_profile(f"{asks},firmware:1.0.0.63")
    assert parse_profile("mainline,kernel:6.18,firmware:1.0.0.63").firmware_facts() == {
        "version": "1.0.0.63", "protocol": "6.x", "app_health": None,
        "note": "whether this firmware reports health is not settled by its protocol; the "
                "driver played never asks for it"}
    assert parse_profile("mainline,firmware:protocol:6.x").protocol.text == "6.x"
    with pytest.raises(BadInput, match=r"firmware 9\.9\.9\.9 is not one"):
        parse_profile("firmware:9.9.9.9")
    with pytest.raises(BadInput, match=r"is no protocol"):
        parse_profile("firmware:protocol:seven")


# -- kernels as released -----------------------------------------------------------------------

@pytest.mark.parametrize("kernel, hung", [
    ("6.16.12", "ABORT"), ("6.17", "ABORT"), ("6.17.12", "ABORT"), ("6.17.13", "TIMEOUT"),
    ("6.18", "ABORT"), ("6.18.1", "ABORT"), ("6.18.2", "TIMEOUT"), ("6.18.3", "TIMEOUT"),
    ("6.19", "TIMEOUT"), ("7.0", "TIMEOUT"), ("7.1", "TIMEOUT"),
])
def test_6fb7f2988832_reaches_each_series_as_released(kernel, hung):
    assert driver_build("mainline", kernel).hung_state == hung


@pytest.mark.parametrize("kernel, payload, health", [
    ("6.19.6", "kept", False), ("6.19.7", "0xFF over sub-command 0", False),
    ("7.0", "0xFF over sub-command 0", False),
    ("7.1", "V1 health then 0xFF over sub-command 0", True),
])
def test_89ff45359abb_and_25854131c04a_as_released(kernel, payload, health):
    build = driver_build("mainline", kernel)
    assert (build.payload, build.asks_health) == (payload, health)
    assert build.timeout_index == ("run_list_id" if health else "0")


def test_a_kernel_release_is_a_profile_token():
    assert parse_profile("mainline,kernel:6.18.3").kernel == "6.18.3"
    assert parse_profile("mainline,kernel:6.18.3").name == "mainline,kernel:6.18.3"
    assert parse_profile("kernel:7.0.0").name == "mainline"               # 7.0 is 7.0.0
    for bad in ("kernel:6.15", "kernel:6.18.x", "kernel:7"):
        with pytest.raises(BadInput, match="kernel does not take .* give kernel:RELEASE"):
            parse_profile(bad)


# -- the drivers' own context rules ----------------------------------------------------------

SOLVER = [f"{DEV}[drm] *ERROR* aie2_xrs_load: create context failed, ret -22",
          f"{DEV}[drm] *ERROR* aie2_alloc_resource: Allocate AIE resource failed, ret -22"]


@pytest.mark.parametrize("profile, first, solver", [
    # Linux 7.0/7.1 (xdna-driver 234824b1 and f13c7f41 drivers/accel/amdxdna): the mailbox
    # line of aie2_message.c aie2_send_mgmt_msg_wait, and, with AIE2_TEMPORAL_ONLY firmware
    # (npu4-class from protocol 6.12), aie2_alloc_resource calls aie2_create_context itself:
    # no solver, so no aie2_xrs_load or aie2_alloc_resource line
    ("mainline", "aie2_send_mgmt_msg_wait", []),
    ("mainline,kernel:7.1", "aie2_send_mgmt_msg_wait", []),
    # 7818618a09a0 reached 6.19.4 ('[PATCH 6.19 299/781] accel/amdxdna: Enable temporal
    # sharing only mode', 6.19.4-rc1 review; pushed to linux-6.19.y 2026-02-26): with
    # protocol-6 firmware (6.12 on) 6.19.4 skips the solver, 6.19.3 has no such mode yet
    ("mainline,kernel:6.19.4,firmware:protocol:6.12", "aie2_send_mgmt_msg_wait", []),
    ("mainline,kernel:6.19.3,firmware:protocol:6.12", "aie2_send_mgmt_msg_wait", SOLVER),
    ("mainline,kernel:6.18.13,firmware:protocol:6.12", "aie2_send_mgmt_msg_wait", SOLVER),
    # npu1 has no AIE2_TEMPORAL_ONLY (npu1_regs.c): the solver's lines
    ("mainline,device:npu1", "aie2_send_mgmt_msg_wait", SOLVER),
    # staging (856409ca) always goes through xrs_allocate_resource, its mailbox in aie.c
    ("staging", "aie_send_mgmt_msg_wait", SOLVER)])
def test_the_in_tree_drivers_log_a_refused_context_on_its_way_out(tmp_path, profile, first,
                                                                  solver):
    rig = Rig(tmp_path, profile, columns=4)
    limit = rig.stack.device.hwctx_limit
    keep = [rig.context(f"c{i}", columns=4) for i in range(limit - 1)]
    with pytest.raises(RuntimeError) as info:
        rig.context("one-too-many", columns=4)
    assert str(info.value) == HWCTX_CREATE_FAILED
    # ... and the ioctl's own line on its way out: amdxdna_ctx.c
    # amdxdna_drm_create_hwctx_ioctl "Init hwctx failed, ret %d" (234824b1, f13c7f41,
    # 856409ca; amd/xdna-driver PR #1585 and #1066 show it on machines)
    assert rig.kernel_lines() == [
        f"{DEV}[drm] *ERROR* {first}: command opcode 0x2 failed, status 0x2000003", *solver,
        f"{DEV}[drm] *ERROR* aie2_hwctx_init: Alloc hw resource failed, ret -22",
        f"{DEV}[drm] *ERROR* amdxdna_drm_create_hwctx_ioctl: Init hwctx failed, ret -22"]
    del keep


@pytest.mark.parametrize("device, limit", [("npu5", 32), ("npu1", 6)])
def test_the_out_of_tree_driver_refuses_its_33rd_virtual_context(tmp_path, device, limit):
    # aie2_ctx_runqueue.c aie2_rq_add: ctx_limit (npu4_family.h 32, npu1_regs.c 6), -ENOENT;
    # then aie2_ctx.c aie2_ctx_init and amdxdna_ctx.c amdxdna_drm_create_hwctx_ioctl pass it
    # on, naming the context ctx.<pid>.<id> it had been given (856409ca)
    rig = Rig(tmp_path, f"oot,device:{device}", columns=4)
    uuid = pyxrt.xclbin(str(tmp_path / "layer.xclbin")).get_uuid()
    keep = [pyxrt.hw_context(rig.dev, uuid) for _ in range(limit - 1)]
    with pytest.raises(RuntimeError) as info:
        pyxrt.hw_context(rig.dev, uuid)
    assert str(info.value) == CTX_LIMIT_FAILED
    assert rig.kernel_lines() == [
        f"{DEV}aie2_rq_add: Not allow more than {limit} context(s)",
        f"{DEV}aie2_ctx_init: Add ctx ctx.{rig.stack.pid}.{limit + 1} failed, ret -2",
        f"{DEV}amdxdna_drm_create_hwctx_ioctl: Init ctx failed, ret -2"]
    del keep


@pytest.mark.parametrize("idle_s", [0.0, 3.3, 10.0, 61.9])
def test_the_out_of_tree_driver_counts_a_submit_as_progress(tmp_path, idle_s):
    # reset_tdr_timer on submit (aie2_cmd_submit, 1471fd97): the first job after an idle
    # spell is caught by the third check after it, 4 to 6 s later, not the first
    rig = Rig(tmp_path, "oot,hang-at:0")
    rig.stack.run_until(lambda: False, idle_s * 1e6)
    submitted = rig.stack.now
    timed_out(rig)
    assert 4_000_000 < rig.stack.now - submitted <= 6_000_000


# -- the 5th job in flight -----------------------------------------------------------------------

def test_the_fifth_submit_blocks_in_the_ioctl_until_the_driver_frees_a_slot(tmp_path):
    # chain 0 hangs: chains 1-3 wait behind it on the firmware, and chain 4's submit waits
    # in the ioctl until staging's 2 s timer resets the context; execute() returns then
    rig = Rig(tmp_path, "staging,hang-at:0")
    rl, runs = rig.runlist(24 * 5)
    rl.execute()
    jobs = list(rig.stack.jobs)
    assert rig.stack.now == pytest.approx(STAGING_TDR_US)
    assert [j.blocked_us for j in jobs] == [0.0] * 4 + [pytest.approx(STAGING_TDR_US)]
    assert [j.state for j in jobs[:4]] == [8, 6, 6, 6] and not jobs[4].done
    with pytest.raises(RuntimeError, match="TIMEOUT"):
        rl.wait()
    assert jobs[4].state == 4                               # the 5th ran after the reset


def test_a_fifth_start_blocks_until_a_run_completes(tmp_path):
    rig = Rig(tmp_path, "slow:layer:1000")                  # each run takes 1 ms
    runs = [rig.run() for _ in range(5)]
    for r in runs[:4]:
        r.start()
    assert rig.stack.now == 0
    runs[4].start()
    assert rig.stack.now == pytest.approx(1000.0)           # the first one's completion
    assert runs[0].state() == pyxrt.ert_cmd_state.ERT_CMD_STATE_COMPLETED


def test_a_deadline_allows_a_driver_timeout_per_group_of_jobs_in_flight():
    from harness.execution.backend import choose_backend
    from harness.execution.runner import derive_deadline
    from harness.model.plan import Plan
    from harness.sources.load import load_case
    case = load_case("nop-depth")
    backend = choose_backend("sim", "staging")
    one = derive_deadline(case, Plan("p", "96", (96,)), backend)      # 4 chains
    two = derive_deadline(case, Plan("p", "97", (97,)), backend)      # a 5th chain
    assert two - one == pytest.approx(backend.driver_timeout_s() * 1.5, abs=0.2)


# -- what a report makes of it ---------------------------------------------------------------

RUN = ["run", "minicpm5-2b-decode", "--plan", "42", "--trials", "1", "--no-isolate"]


def test_a_report_carries_not_modelled_as_such_and_says_when_there_is_no_health(tmp_path):
    from click.testing import CliRunner

    from harness.app.cli import main
    from harness.report.fileformat import load_report
    runner = CliRunner()
    with_health, without = tmp_path / "with.yaml", tmp_path / "without.yaml"
    for out, profile in ((with_health, "staging,hang-at:30"),
                         (without, "oot,firmware:protocol:6.17,hang-at:30")):
        result = runner.invoke(main, [*RUN, "--profile", profile, "--out", str(out)])
        assert result.exit_code == 1, result.output
        assert runner.invoke(main, ["report", "check", str(out)]).exit_code == 0
    report = load_report(with_health)
    trial = report.plans[0].trials[0]
    assert trial.runlists[0].health["txn_op_idx"] == "not modelled"
    capture = next(e for e in trial.kernel_log["events"] if e["event"] == "timeout_capture")
    assert (capture["txn_op_id"], capture["report_size"]) == ("not modelled", 0x230)
    md = runner.invoke(main, ["report", "render", str(with_health)]).output
    assert "| txn_op_id | not modelled | not modelled |" in md
    # the legacy driver copied its zeroed health data into the message: not the firmware's
    report = load_report(without)
    outcome = report.plans[0].trials[0].runlists[0]
    assert "txn_op_idx = 0x00000000" in outcome.message and outcome.health is None
    assert report.backend["firmware"]["app_health"] is False
    md = runner.invoke(main, ["report", "render", str(without)]).output
    assert "Firmware's account of the timeout: none, this firmware does not report health" \
        in md
    assert "| txn_op_id |" not in md


def test_a_hardware_report_takes_the_note_from_the_probe():
    from harness.report.evidence import health_note
    header = {"backend": {"kind": "xrt", "simulated": False},
              "environment": {"npu_firmware": {"app_health": False, "note": "no health"}}}
    assert health_note(header) == "no health"
    header["environment"]["npu_firmware"]["app_health"] = None
    assert health_note(header) is None


@pytest.mark.parametrize("kernel, version", [
    # AMDXDNA_DRIVER_MAJOR/MINOR as kernel.org's releases answer DRM_IOCTL_VERSION: none
    # (0.0) until 'accel/amdxdna: Add ioctl DRM_IOCTL_AMDXDNA_GET_ARRAY' (dri-devel
    # 2025-09-02) made it 0.1 for 6.18 (flm validate on 6.18.10, ROCm/FastFlowLM#536;
    # xrt-smi on 6.18.0, amd/IRON#43); 3a0ff7b98af4 (preemption, in 6.19) made it 0.6, as
    # 7.0 keeps it (xdna-driver 234824b1); 7.1 reads 0.8 (flm validate on 7.1.3,
    # noamsto/nix-amd-ai#79; de954711 in the xdna-driver tree)
    ("6.16", (0, 0)), ("6.17.13", (0, 0)), ("6.18.13", (0, 1)), ("6.19", (0, 6)),
    ("7.0", (0, 6)), ("7.1", (0, 8)),
])
def test_mainline_reports_the_drm_version_of_its_release(kernel, version):
    assert driver_build("mainline", kernel).drm_version == version
