"""The simulated driver builds (flavour x kernel) and what XRT makes of what they leave:
one source fact per test, as `harness.sim.rules` lists them."""

from __future__ import annotations

import pytest
from simkit import (
    NOT_MODELLED_LINES,
    ZERO_LINES,
    Rig,
    failure,
    full_elf_runlist,
    nop_elf,
    outcome,
    states,
)

import harness.sim.pyxrt as pyxrt
from harness.formats.elf_writer import full_elf
from harness.formats.txn import nop_stream
from harness.model.drivers import (
    DEVICE_TWO_CHECKS,
    JOB_TIMER_DEVICE_STAMP,
    KERNELS,
    driver_build,
)
from harness.sim import control
from harness.sim.driver_log import BDF
from harness.sim.stack import FF, HWCTX_CREATE_FAILED

TIMEOUT_MSG = "runlist failed execution (ERT_CMD_STATE_TIMEOUT)"
ABORT_MSG = "runlist failed execution (ERT_CMD_STATE_ABORT)"
ERROR_MSG = "runlist failed execution (ERT_CMD_STATE_ERROR)"


# -- what each build leaves: states, error_index, payload, message --------------------------

# Kernel.org mainline before 7.0 (f1eac46fe5f7) refuses the devices' protocol-7 firmware at
# probe: its rules are reached with firmware that speaks protocol 6 (1.0.0.63)
P6 = "firmware:1.0.0.63"


@pytest.mark.parametrize("profile, message", [
    # Linux 6.16, before 6fb7f2988832: the cmdlist handler sees the cancelled chain
    # (data NULL) and sets ABORT; error_index stays XRT's 0
    ("mainline,kernel:6.16," + P6, ABORT_MSG),
    # 6fb7f2988832 reached 6.17 and 6.18 as stable backports (6.17.13, 6.18.2): the series'
    # first releases still ABORT ("[PATCH 6.17 143/507]", "[PATCH 6.18 167/614]")
    ("mainline,kernel:6.17," + P6, ABORT_MSG),
    ("mainline,kernel:6.17.12," + P6, ABORT_MSG),
    ("mainline,kernel:6.18," + P6, ABORT_MSG),
    # with it, job_timeout -> TIMEOUT; the payload untouched, its first word the CU mask
    # 1, which XRT reads as version-1 health of no known generation
    ("mainline,kernel:6.17.13," + P6, TIMEOUT_MSG + "\n"),
    ("mainline,kernel:6.18.2," + P6, TIMEOUT_MSG + "\n"),
    ("mainline,kernel:6.19," + P6, TIMEOUT_MSG + "\n"),
    # 89ff45359abb (7.0; 6.19.7 by backport, "[PATCH 6.19 208/311]"):
    # amdxdna_cmd_set_error(cmd_abo, job, 0, TIMEOUT): 0xFF over sub-command 0 -> neither
    # version: the bare message
    ("mainline,kernel:6.19.7," + P6, TIMEOUT_MSG),
    ("mainline,kernel:7.0", TIMEOUT_MSG),
    # 25854131c04a (7.1): the app health report's version-1 data over sub-command 0, the
    # failing index its run_list_id (0 on a timeout); fields unknown to the model read
    # "not modelled" in XRT's lines
    ("mainline,kernel:7.1", TIMEOUT_MSG + "\n\n" + NOT_MODELLED_LINES),
    ("staging", TIMEOUT_MSG + "\n\n" + NOT_MODELLED_LINES),
    ("oot", TIMEOUT_MSG + "\n\n" + NOT_MODELLED_LINES),
    # firmware without AIE2_APP_HEALTH: no report, so 0xFF only (staging, 7.1) ...
    ("mainline,kernel:7.1,firmware:protocol:6.17", TIMEOUT_MSG),
    ("staging,firmware:protocol:6.17", TIMEOUT_MSG),
    # ... and the legacy tree copies its context's zeroed health data (version 0)
    ("oot,firmware:protocol:6.17", TIMEOUT_MSG + "\n" + ZERO_LINES),
])
def test_each_build_leaves_its_own_states_and_message(tmp_path, profile, message):
    # the firmware leaves run_list_id at 0 on a timeout (io_test.cpp), so run 24, the
    # hung chain's first, is blamed: hang-at:30 is its sub-command 6
    rig = Rig(tmp_path, f"{profile},hang-at:30")
    rl, runs = rig.runlist(42)
    assert failure(rl) == message
    state = message.split("(")[1].split(")")[0].replace("ERT_CMD_STATE_", "")
    assert states(runs) == ["NEW"] * 24 + [state] + ["ABORT"] * 17
    assert rig.stack.jobs[-1].error_index == 0


def test_staging_writes_health_into_sub_command_0_not_the_failing_run(tmp_path):
    # aie2_set_cmd_timeout -> amdxdna_cmd_set_error: the V1 health and the 0xFF fill go to
    # cc->data[0] of the hung chain (run 24 of a 42-run list), whatever run hung
    rig = Rig(tmp_path, "staging,hang-at:30")
    rl, runs = rig.runlist(42)
    failure(rl)
    assert [runs[24]._word(i) for i in range(2)] == [1, 0]        # V1, AIE2
    assert runs[24]._word(2) is None                               # txn_op_idx: unknown
    assert runs[24]._word(8) == FF                                  # then 0xFF
    assert runs[30]._word(0) == 1 and runs[30]._word(1) == 3        # CU mask, opcode 3


UNEXPECTED = "qds_device::wait() unexpected command state"


def test_mainline_before_the_fix_leaves_a_cancelled_single_run_new(tmp_path):
    # aie2_sched_resp_handler on 6.16: data NULL -> goto out, the state never set; XRT's
    # hw_queue.cpp qds_device::wait (202520.2.20.197, 2.21.75, 202610.2.23.244, 963c58ee)
    # then finds the packet below COMPLETED and throws, from run.wait() and wait2()
    for kernel, expected in [("6.16", None), ("6.17", None), ("6.17.13", "TIMEOUT"),
                             ("7.0", "TIMEOUT")]:
        for release in ("2.20", "2.21", "2.23", "master"):
            rig = Rig(tmp_path, f"mainline,kernel:{kernel},{P6},slow:layer:61000000,"
                                f"xrt:{release}")
            r = rig.run()
            r.start()
            if expected is None:
                with pytest.raises(RuntimeError) as raised:
                    r.wait()
                assert str(raised.value) == UNEXPECTED, (kernel, release)
                assert r.state().name == "ERT_CMD_STATE_NEW"      # never notified
                with pytest.raises(RuntimeError, match=r"^qds_device::wait\(\) unexpected "):
                    r.wait2()
                with pytest.raises(RuntimeError, match=r"^qds_device::wait\(\) unexpected "):
                    r.wait(70_000)        # the device answered before the host gave up
            else:
                assert r.wait().name == f"ERT_CMD_STATE_{expected}", kernel


def test_a_context_reset_cancels_chains_abort_and_a_single_run_new_on_mainline_6_16(tmp_path):
    """The other jobs in flight on a context drm_sched resets: before 6fb7f2988832 (6.16)
    aie2_sched_cmdlist_resp_handler sets a cancelled chain ABORT, while
    aie2_sched_resp_handler leaves a cancelled single run's packet NEW (data NULL -> goto
    out), and XRT's qds_device::wait throws on it; from 6.19 the single run ends ABORT too.
    Mutations it guards against (harness/sim/stack.py `_cancelled_state`): answering
    `others_state` for every job (the single run reads ABORT on 6.16), or
    `single_cancelled` for every job (the second runlist's chain reads NEW on 6.16)."""
    for kernel, single_state in [("6.16", "NEW"), ("6.19", "ABORT")]:
        rig = Rig(tmp_path, f"mainline,kernel:{kernel},{P6},hang-at:30")
        hung, _ = rig.runlist(42)
        hung.execute()
        single = rig.run()                   # queued behind the hung chain, not chained
        single.start()
        behind, behind_runs = rig.runlist(3)
        behind.execute()
        with pytest.raises(RuntimeError):
            hung.wait()
        if single_state == "NEW":
            with pytest.raises(RuntimeError) as raised:
                single.wait()
            assert str(raised.value) == UNEXPECTED, kernel
        else:
            assert single.wait().name == "ERT_CMD_STATE_ABORT", kernel
        assert states([single]) == [single_state], kernel
        assert outcome_of(behind) == ABORT_MSG, kernel
        assert states(behind_runs) == ["ABORT"] * 3, kernel


def outcome_of(rl) -> str:
    """Wait on a runlist already executed: 'COMPLETED' or XRT's message."""
    try:
        rl.wait()
    except RuntimeError as err:
        return str(err)
    return "COMPLETED"


def test_a_single_command_run_job_refuses_throws_unexpected_command_state(tmp_path):
    # staging (force_cmdlist true) and mainline from c68a6af400ca send a single command as
    # a one-slot command list: aie2_cmdlist_fill_slot refuses ERT_START_NPU_PREEMPT_ELF
    # (a full ELF's kernel with a .pdi) without AIE2_PREEMPT (npu1), run_job fails before
    # the firmware sees it, the packet stays NEW, and qds_device::wait throws
    path = tmp_path / "full.elf"
    path.write_bytes(full_elf(nop_stream(4, 3), 4))
    for profile in ("staging,device:npu1", "mainline,device:npu1"):
        control.configure(profile)
        device = pyxrt.device(0)
        ctx = pyxrt.hw_context(device, pyxrt.elf(str(path)))
        r = pyxrt.run(pyxrt.ext.kernel(ctx, "main:sequence"))
        for index in range(3):
            r.set_arg(index, pyxrt.bo(device, 4096, pyxrt.bo.host_only, 0))
        r.start()
        with pytest.raises(RuntimeError) as raised:
            r.wait()
        assert str(raised.value) == UNEXPECTED
        assert "rejected in run_job: ERT_START_NPU_PREEMPT_ELF needs" in \
            control.current().log[-1]


def test_a_runlist_chain_left_new_is_waited_without_the_check(tmp_path):
    # runlist_impl::wait waits on the chain's buffer handle (hw_queue::wait(buffer_handle*),
    # no state check), then walks the chains: XRT's own message with the chain's NEW
    rig = Rig(tmp_path, "oot")
    rl, runs = rig.runlist(65)            # the legacy tree caps a chain at 64: 24+24+17 fit
    rig2 = Rig(tmp_path, "oot,xrt-chain:65")
    rl2, _ = rig2.runlist(65)
    assert outcome(rl) == "COMPLETED"
    assert outcome(rl2) == "runlist failed execution (ERT_CMD_STATE_NEW)"


def test_oot_ends_every_chain_in_flight_timeout_with_health_once(tmp_path):
    # aie2_sched_cmdlist_resp_handler: every chain TIMEOUT at the context's run_list_id (0
    # on a timeout); aie2_ctx_cmd_health_data copies the report into the first only
    rig = Rig(tmp_path, "oot,hang-at:3")
    rl, runs = rig.runlist(24 * 3)          # three chains in flight when the check fires
    assert failure(rl) == TIMEOUT_MSG + "\n\n" + NOT_MODELLED_LINES
    jobs = list(rig.stack.jobs)[-3:]
    assert [j.state for j in jobs] == [8, 8, 8]
    assert [j.error_index for j in jobs] == [0, 0, 0]
    assert runs[0]._word(0) == 1 and runs[24]._over is None and runs[48]._over is None


@pytest.mark.parametrize("release, head", [("master", TIMEOUT_MSG),
                                           ("2.20", "runlist failed execution")])
def test_oot_without_app_health_copies_zeros_once_then_nothing(tmp_path, release, head):
    # aie2_dump_ctx gets no report (aie2_get_app_health: -EOPNOTSUPP): no capture block, and
    # the context's kzalloc'd health data (a version-0 report of zeros) is what the first
    # timed-out command carries; once carried (health_reported), later ones only ABORT.
    # XRT tells version 0 in the same six lines at every tag, 2.20 included.
    rig = Rig(tmp_path, f"oot,firmware:protocol:6.17,hang-at:0,xrt:{release}")
    rl, runs = rig.runlist(1)
    assert outcome(rl) == head + "\n" + ZERO_LINES
    assert not any("Firmware timeout state capture" in line for line in rig.kernel_lines())
    again, fresh = rig.runlist(1)
    assert outcome(again) == head + "\n"              # the CU mask: no known layout
    assert fresh[0]._over is None and runs[0]._over is not None


@pytest.mark.parametrize("kernel, times_ms", [
    # >= 6.17: a timer per context (from its push), and aie2_tdr_detect's device stamp: the
    # second context's push at 1 s keeps the first alive until 4 s; its own fires at 3 s
    ("7.0", {1: 4000.0, 2: 3000.0}),
    # 6.16: aie2_tdr.c checks the device every 2 s and resets every context at once, after
    # the 4 s and 6 s checks saw no push or completion
    ("6.16", {1: 6000.0, 2: 6000.0}),
])
def test_staging_resets_per_context_from_6_17_and_every_context_before(tmp_path, kernel,
                                                                       times_ms):
    rig = Rig(tmp_path, f"staging,kernel:{kernel},hang-at:0", columns=4)
    other_ctx, other_kernel = rig.context("attn", columns=4, start=4)
    first, _ = rig.runlist(1)
    second, _ = rig.runlist(1, ctx=other_ctx, kernel=other_kernel)
    first.execute()
    rig.stack.run_until(lambda: False, 1_000_000.0)
    second.execute()
    for rl in (first, second):
        with pytest.raises(RuntimeError, match="TIMEOUT"):
            rl.wait()
    ended = {job.ctx.id: job.end_us / 1000 for job in rig.stack.jobs}
    assert ended == pytest.approx(times_ms)
    # the build's rule the simulator plays: a timer per context, or one check of the device
    assert driver_build("staging", kernel).detection == (
        JOB_TIMER_DEVICE_STAMP if kernel == "7.0" else DEVICE_TWO_CHECKS)


# -- XRT never re-encodes a payload ---------------------------------------------------------

@pytest.mark.parametrize("profile, first, again", [
    # 0xFF + health over sub-command 0
    ("staging", TIMEOUT_MSG + "\n\n" + NOT_MODELLED_LINES, ERROR_MSG),
    ("mainline,kernel:7.0", TIMEOUT_MSG, ERROR_MSG),             # 0xFF over sub-command 0
    # untouched: the same failure again
    ("mainline,kernel:6.17.13," + P6, TIMEOUT_MSG + "\n", TIMEOUT_MSG + "\n"),
])
def test_re_executing_runs_after_a_failure_submits_the_corrupted_payload(tmp_path, profile,
                                                                        first, again):
    rig = Rig(tmp_path, f"{profile},hang-at:30")
    rl, runs = rig.runlist(42)
    assert outcome(rl) == first                        # run 24 (chain 1, index 0) blamed
    assert outcome(rl) == again                        # the same run objects, again
    if again == ERROR_MSG:
        assert states(runs)[24] == "ERROR"
        assert "never re-encodes" in rig.stack.jobs[-1].note
    fresh, _ = rig.runlist(42)                         # new run objects: the hang again
    assert outcome(fresh) == first


def test_set_arg_rewrites_an_instr_bo_run_but_not_an_elf_runs_address(tmp_path):
    rig = Rig(tmp_path, "mainline,hang-at:0")
    rl, runs = rig.runlist(1)
    assert outcome(rl) == TIMEOUT_MSG
    r = runs[0]
    for i, value in enumerate([3, rig.instr, rig.words, *rig.bufs]):   # every argument again
        r.set_arg(i, value)
    fresh = pyxrt.runlist(rig.ctx)
    del rl
    fresh.add(r)
    assert r._over is None and type(r) is pyxrt.run
    # an ERT_START_NPU payload's instruction address is never rewritten
    kernel = pyxrt.ext.kernel(rig.ctx, pyxrt.module(pyxrt.elf(nop_elf(tmp_path, 8))),
                              "MLIR_AIE")
    elf_run = pyxrt.run(kernel)
    elf_run._overwritten(rig.stack.jobs[-1].overwrites.get(0) or _ff())
    for i, value in enumerate([3, 0, 0, *rig.bufs]):
        elf_run.set_arg(i, value)
    elf_run.start()
    assert elf_run.wait() == pyxrt.ert_cmd_state.ERT_CMD_STATE_ERROR


def _ff():
    from harness.sim.stack import Overwrite
    return Overwrite((), FF)


# -- hardware contexts, instruction buffers --------------------------------------------------

@pytest.mark.parametrize("device, limit", [("npu1", 6), ("npu5", 16)])
def test_the_driver_caps_hardware_contexts(tmp_path, device, limit):
    rig = Rig(tmp_path, f"device:{device}", columns=4)
    keep = [rig.context(f"c{i}", columns=4) for i in range(limit - 1)]
    with pytest.raises(RuntimeError) as info:
        rig.context("one-too-many", columns=4)
    assert str(info.value) == HWCTX_CREATE_FAILED
    assert "command opcode 0x2 failed, status 0x2000003" in "\n".join(rig.kernel_lines())
    del keep


def test_a_run_without_instruction_buffer_completes(tmp_path):
    # XRT's aie-reconfig-overhead NOP recipe: kernel DPU, constant 3 at arg 0, buffers at
    # 3, 5 and 6, arguments 1 and 2 never set
    rig = Rig(tmp_path)
    r = pyxrt.run(rig.kernel)
    r.set_arg(0, 3)
    r.set_arg(3, rig.bufs[0])
    r.start()
    assert r.wait() == pyxrt.ert_cmd_state.ERT_CMD_STATE_COMPLETED
    half = rig.run(ninstr=0, instr=None)
    half.set_arg(1, 0)
    half.set_arg(2, 5)                  # a size with no buffer: refused
    half.start()
    assert half.wait() == pyxrt.ert_cmd_state.ERT_CMD_STATE_ERROR


# -- the kernel log ------------------------------------------------------------------------

@pytest.mark.parametrize("profile, first, count", [
    ("staging", "[drm] *ERROR* aie2_tdr_detect: TDR timeout detected", 14),
    # staging aie2_tdr.c aie2_tdr_work_func: after aie2_legacy_tdr_detect's line,
    # XDNA_WARN "Device isn't making progress", then every context is recovered
    ("staging,kernel:6.16", "[drm] *ERROR* aie2_legacy_tdr_detect: TDR timeout detected", 15),
    ("mainline,kernel:7.0", None, 0),               # the trace event "job timedout" only
    ("mainline,kernel:7.1", "[drm] *ERROR* aie2_set_cmd_timeout: Firmware timeout state "
                            "capture:", 13),
    ("oot", "aie2_tdr_work: Device isn't making progress... Count 1 timeout 2 dump_only 0",
     21),
])
def test_each_flavour_prints_its_own_kernel_log(tmp_path, profile, first, count):
    rig = Rig(tmp_path, f"{profile},hang-at:0")
    failure(rig.runlist(1)[0])
    lines = rig.kernel_lines()
    assert len(lines) == count
    if first:
        assert lines[0] == f"amdxdna {BDF}: {first}"
        assert any(line.endswith("\tTimed out sub command ID: 0") for line in lines)


def test_the_legacy_tree_rate_limits_its_errors_per_call_site(tmp_path):
    rig = Rig(tmp_path, "oot")
    log = rig.stack.kernel_log
    for i in range(12):
        log.err("aie2_dump_ctx", f"Dumping ctx ctx.1.{i}, hwctx {i}, sub=1, comp=0")
    assert len(log.records) == 10
    rig.stack.clock.advance_to(6_000_000)
    log.err("aie2_dump_ctx", "Dumping ctx ctx.1.99, hwctx 99, sub=1, comp=0")
    assert log.records[-2].text == "aie2_dump_ctx: 2 callbacks suppressed"
    assert log.records[-1].kmsg().startswith("3,11,")


def test_every_kernel_is_a_profile_token():
    from harness.sim.profiles import parse_profile
    for kernel in KERNELS:
        assert parse_profile(f"mainline,kernel:{kernel}").kernel == kernel
    assert parse_profile("mainline,kernel:6.16").name == "mainline,kernel:6.16"
    assert parse_profile("mainline,kernel:7.0").name == "mainline"


@pytest.mark.parametrize("kernel, firmware, state, message", [
    # aie2_tdr.c aie2_tdr_stop_hwctx (staging before 6.17, 856409ca): the first pending job
    # is marked timed out only when aie2_query_app_health answered; without a report the
    # stop cancels it and aie2_sched_cmdlist_resp_handler ends it ABORT with 0xFF
    ("6.16", "protocol:6.17", "ABORT", ABORT_MSG),
    ("6.16", "1.1.2.65", "TIMEOUT", TIMEOUT_MSG + "\n\n" + NOT_MODELLED_LINES),
    # from 6.17 aie2_sched_job_timedout sets job_timeout whatever the report: 0xFF alone
    ("6.17", "protocol:6.17", "TIMEOUT", TIMEOUT_MSG),
])
def test_staging_before_6_17_times_out_only_with_a_report(tmp_path, kernel, firmware, state,
                                                          message):
    rig = Rig(tmp_path, f"staging,kernel:{kernel},firmware:{firmware},hang-at:5")
    rl, runs = rig.runlist(8)
    assert failure(rl) == message
    assert states(runs) == [state] + ["ABORT"] * 7
    assert runs[0]._word(8) == FF                           # sub-command 0 filled with 0xFF
    captured = any("Firmware timeout state capture" in x for x in rig.kernel_lines())
    assert captured == (firmware == "1.1.2.65")


def test_the_legacy_driver_dumps_and_stops_only_connected_contexts(tmp_path):
    # src/driver/amdxdna (856409ca): aie2_rq_add puts a new context on disconn_list; it
    # connects when it has work; aie2_rq_dump_all and aie2_rq_stop_all walk the partitions'
    # conn_list only. FastFlowLM's four contexts, one of which submitted: one dump.
    rig = Rig(tmp_path, "oot,hang-at:3")
    idle = [rig.context(stem) for stem in ("attn", "mm", "dequant")]
    rl, _ = rig.runlist(24 * 6)           # six chains: four in flight, two waiting
    rl.execute()
    with pytest.raises(RuntimeError):
        rl.wait()
    lines = rig.kernel_lines()
    dumps = [x for x in lines if "Dumping ctx" in x]
    assert dumps == [f"amdxdna {BDF}: aie2_dump_ctx: Dumping ctx ctx.4242.1, hwctx 1, sub=4, "
                     "comp=0"]
    assert sum("Firmware timeout state capture:" in x for x in lines) == 1
    # pending[get_job_idx(seq)]: JOB[i] is the job whose per-context seq is i mod 4; msg is
    # the mailbox message id, MAGIC_VAL 0x1D000000 | the channel's cyclic id, whose first
    # id (0) went to aie2_config_cu: aie2_ctx_connect sends it on the new channel of a
    # context whose CUs XRT configured (an xclbin's; src/shim/kmq/hwctx.cpp hwctx_kmq)
    jobs = [x.split("aie2_dump_ctx: ", 1)[1] for x in lines
            if "JOB[" in x or "\tseq:" in x or "\tmsg:" in x]
    assert jobs == [part for i in range(4) for part in
                    (f"JOB[{i}]:", f"\tseq: {i}", f"\tmsg: 0x{0x1D000001 + i:x}")]
    del idle


def test_a_context_without_cus_gives_its_first_job_the_channels_first_message(tmp_path):
    # aie2_config_cu returns at once without ctx->cus (src/driver/amdxdna aie2_message.c,
    # 856409ca): a context made of a full ELF (hwctx_kmq(device, partition_size), no CU
    # config) sends its first job as message 0 of the channel
    control.configure("oot,hang-at:0")
    path = tmp_path / "full.elf"
    path.write_bytes(full_elf(nop_stream(4), 4))
    rl = full_elf_runlist(path, 2)
    rl.execute()
    with pytest.raises(RuntimeError):
        rl.wait()
    msgs = [x.text.rsplit(": ", 1)[1] for x in control.current().kernel_log.records
            if "\tmsg:" in x.text]
    assert msgs == ["0x1d000000"]


def test_after_a_reset_the_legacy_numbers_count_on_per_context(tmp_path):
    # seq keeps counting per context (job->seq = ctx->submitted++); the stop disconnects the
    # context and its next channel starts its message ids again; JOB[i] follows seq % 4
    rig = Rig(tmp_path, "oot,hang-at:1")
    for _ in range(2):
        rl, _ = rig.runlist(5 * 24)
        rl.execute()
        with pytest.raises(RuntimeError):
            rl.wait()
    lines = [x.split(": ", 2)[2] for x in rig.kernel_lines()
             if "JOB[" in x or "\tseq:" in x or "\tmsg:" in x]
    second = lines[len(lines) // 2:]
    # the first reset ended jobs 0-3 and the channel; on the next, aie2_config_cu took
    # message 0 and job 4 message 1; 5-8 are the second runlist's four in flight, 8 its
    # sixth message
    assert second[:3] == ["JOB[0]:", "\tseq: 8", "\tmsg: 0x1d000005"]
    assert [x for x in second if x.startswith("JOB[")] == [f"JOB[{i}]:" for i in range(4)]


@pytest.mark.parametrize("kernel, blamed", [
    # before 89ff45359abb the timeout writes no error_index: XRT reads the 5 the firmware's
    # error left in the runlist's reused chain buffer (create_exec_buf zeroes it once;
    # submit() resets only the state), and blames run 5 with the TIMEOUT
    ("6.19", 5),
    # from it amdxdna_cmd_set_error writes 0 (and 0xFF over sub-command 0, which the next
    # execute of run 0 carries: the firmware refuses it)
    ("6.19.7", 0)])
def test_a_timeout_leaves_the_chain_s_old_error_index_before_89ff45359abb(tmp_path, kernel,
                                                                          blamed):
    rig = Rig(tmp_path, f"mainline,kernel:{kernel},{P6},hang-at:10")
    rl, runs = rig.runlist(24, unsynced_at=5)
    assert failure(rl) == ERROR_MSG                    # the firmware refuses run 5's zeros
    assert states(runs)[5] == "ERROR"
    runs[5]._args[1].sync(pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE)
    again = failure(rl)                                 # the same runlist, run 10 hangs
    if blamed == 5:
        assert again == TIMEOUT_MSG + "\n"
        assert states(runs) == ["NEW"] * 5 + ["TIMEOUT"] + ["ABORT"] * 18
    else:
        assert again == ERROR_MSG and states(runs)[0] == "ERROR"
