"""The simulated stack, one behaviour of STACK.md per test, each naming its fact."""

from __future__ import annotations

import pytest
from simkit import NOT_MODELLED_LINES, Rig, full_elf_runlist, nop_elf, outcome, states

import harness.sim.pyxrt as pyxrt
from harness.formats.elf_writer import full_elf
from harness.formats.txn import nop_stream
from harness.sim import control
from harness.sim.stack import MAINLINE_TIMEOUT_US, STAGING_TDR_US

TIMEOUT_MSG = "runlist failed execution (ERT_CMD_STATE_TIMEOUT)"
ABORT_MSG = "runlist failed execution (ERT_CMD_STATE_ABORT)"
NEW_MSG = "runlist failed execution (ERT_CMD_STATE_NEW)"
# A staging timeout on an NPU4-class device, as XRT master tells it: the firmware's
# version-1 health in the failing run's packet, a blank line where the kernel instance and
# ELF would be named (an xclbin kernel has neither), then the six health lines.
STAGING_TIMEOUT = TIMEOUT_MSG + "\n\n" + NOT_MODELLED_LINES


def chain_sizes(rig: Rig) -> list[int]:
    return [job.count for job in rig.stack.jobs]


# -- STACK.md 2: XRT runlists -------------------------------------------------------

@pytest.mark.parametrize("depth, chains", [(42, [24, 18]), (36, [24, 12]), (21, [21]),
                                           (28, [24, 4]), (24, [24]), (49, [24, 24, 1])])
def test_stack2_runlist_is_submitted_as_chains_of_24(tmp_path, depth, chains):
    rig = Rig(tmp_path)
    rl, runs = rig.runlist(depth)
    assert outcome(rl) == "COMPLETED"
    assert chain_sizes(rig) == chains
    # STACK.md 2 / runlist_impl: the driver writes only the chain packets; execute() set
    # every member's packet to NEW and nothing sets it again on success.
    assert set(states(runs)) == {"NEW"}


def test_stack2_empty_runlist_execute_is_a_no_op(tmp_path):
    rig = Rig(tmp_path)
    rl = pyxrt.runlist(rig.ctx)
    rl.execute()
    rl.wait()
    assert chain_sizes(rig) == []


def test_stack2_error_walk_offsets_error_index_by_24_per_chain(tmp_path):
    # A firmware error reports its true index (io_test.cpp: "the index returned from FW
    # is accurate"): run 30 is chain 1, error_index 6.
    rig = Rig(tmp_path)
    rl, runs = rig.runlist(42, unsynced_at=30)
    assert outcome(rl) == "runlist failed execution (ERT_CMD_STATE_ERROR)"
    # runs before the failing one are never marked: they still read NEW
    assert states(runs) == ["NEW"] * 30 + ["ERROR"] + ["ABORT"] * 11
    assert [job.error_index for job in rig.stack.jobs] == [0, 6]


def test_stack2_good_hang_good_is_timeout_then_abort_under_staging(tmp_path):
    # a timeout's index is the firmware's read index, 0 (io_test.cpp [good, bad, good])
    rig = Rig(tmp_path, "device:npu1,hang-at:1", columns=4)
    rl, runs = rig.runlist(3)
    assert outcome(rl) == TIMEOUT_MSG
    assert states(runs) == ["TIMEOUT", "ABORT", "ABORT"]


@pytest.mark.parametrize("release, between, tail", [
    # amend_aie_error_message at each tag: version-1 health data (the staging driver's,
    # in the failing run's packet: error_index 0 on PCI 17f0 blames sub-command 0) gets
    # the six lines from 202610.2.21.21 on; 2.25 and master first name the kernel and ELF
    # (none here: an xclbin kernel), which leaves a blank line; 2.20 reads version 1 as
    # "not version 0" and appends only a newline
    ("master", [""], True), ("2.25", [""], True), ("2.23", [], True), ("2.21", [], True),
    ("2.21.21", [], True), ("2.20", None, False),
])
def test_stack2_failure_message_carries_health_lines(tmp_path, release, between, tail):
    rig = Rig(tmp_path, f"staging,inflight-cap:40,xrt:{release}")
    rl, _ = rig.runlist(42)
    rl.execute()
    with pytest.raises(RuntimeError) as info:
        rl.wait()
    text = str(info.value)
    lines = text.splitlines()
    head = TIMEOUT_MSG if release not in ("2.20", "2.21.21") else "runlist failed execution"
    assert lines[0] == head and text.endswith("\n")
    if not tail:
        assert lines == [head]
        return
    # the simulated firmware's report: values the model cannot know are not invented
    assert lines[1:] == between + [
        f"{name} = not modelled" for name in (
            "txn_op_idx", "ctx_pc", "fatal_error_type", "fatal_error_exception_type",
            "fatal_error_exception_pc", "fatal_error_app_module")]


def test_stack2_run_wait_ms_returns_timeout_when_the_host_wait_expires(tmp_path):
    rig = Rig(tmp_path, "slow:layer:500000")          # one command takes 0.5 s
    r = rig.run()
    r.start()
    assert r.wait(100) == pyxrt.ert_cmd_state.ERT_CMD_STATE_TIMEOUT   # host gave up
    assert r.state().value == 3                         # still RUNNING on the device
    assert r.wait() == pyxrt.ert_cmd_state.ERT_CMD_STATE_COMPLETED


def test_stack2_a_host_wait_expires_after_exactly_its_milliseconds(tmp_path):
    rig = Rig(tmp_path, "slow:layer:500000")          # one command takes 500,000 us
    r = rig.run()
    r.start()
    started = control.current().clock.now()
    assert r.wait(100) == pyxrt.ert_cmd_state.ERT_CMD_STATE_TIMEOUT
    assert control.current().clock.now() - started == pytest.approx(100_000)
    assert r.wait(399) == pyxrt.ert_cmd_state.ERT_CMD_STATE_TIMEOUT      # 499 ms in all
    assert r.wait(2) == pyxrt.ert_cmd_state.ERT_CMD_STATE_COMPLETED      # done at 500 ms


@pytest.mark.parametrize("release, shared", [("2.20", False), ("2.21", False),
                                             ("2.23", True), ("master", True)])
def test_stack2_add_rules(tmp_path, release, shared):
    rig = Rig(tmp_path, f"xrt:{release}")
    other_ctx, other_kernel = rig.context("attn")
    rl = pyxrt.runlist(rig.ctx)
    # runlist_impl::add compares no hardware contexts at any tag (the header says it throws)
    rl.add(rig.run(other_kernel))
    member = rig.run()
    rl.add(member)
    # one runlist per run up to 2.21 (run_impl::set_runlist); several from 2.23 (PR #9750)
    if shared:
        pyxrt.runlist(rig.ctx).add(member)
    else:
        with pytest.raises(RuntimeError, match="already associated with a runlist"):
            pyxrt.runlist(rig.ctx).add(member)
    with pytest.raises(RuntimeError, match="cannot be explicitly started"):
        member.start()
    rl.execute()
    with pytest.raises(RuntimeError, match="must be idle before adding"):
        rl.add(rig.run())
    with pytest.raises(RuntimeError, match="must be idle before submitting"):
        rl.execute()
    rl.wait()
    with pytest.raises(RuntimeError, match="uninitialized runlist"):
        pyxrt.runlist().add(rig.run())


@pytest.mark.parametrize("built_before_the_failure", [True, False])
def test_stack2_every_execute_resets_member_packets_to_new(tmp_path, built_before_the_failure):
    """runlist_impl::execute preps every member (NEW) each time, whichever runlist last
    marked it and whether the runlist was built before or after that: the simulator writes
    packets lazily, so this pins the reset."""
    rig = Rig(tmp_path, "xrt:2.23")
    unsynced = rig.instructions(8, sync=False)
    bad, shared = rig.run(instr=unsynced), rig.run()
    failing = pyxrt.runlist(rig.ctx)
    for r in (bad, shared):
        failing.add(r)
    other = pyxrt.runlist(rig.ctx)            # 2.23: a run may sit in two runlists
    if built_before_the_failure:
        other.add(shared)                     # still NEW when it joins
    assert outcome(failing) == "runlist failed execution (ERT_CMD_STATE_ERROR)"
    assert states([bad, shared]) == ["ERROR", "ABORT"]
    if not built_before_the_failure:
        other.add(shared)                     # ABORT when it joins
    assert outcome(other) == "COMPLETED"
    assert states([bad, shared]) == ["ERROR", "NEW"]
    started = rig.run()
    started.start()
    started.wait()
    assert states([started]) == ["COMPLETED"]
    later = pyxrt.runlist(rig.ctx)
    later.add(started)
    assert outcome(later) == "COMPLETED" and states([started]) == ["NEW"]


def test_stack2_a_deleted_runlist_lets_its_runs_go(tmp_path):
    rig = Rig(tmp_path, "xrt:2.21")
    rl, runs = rig.runlist(3)
    with pytest.raises(RuntimeError, match="cannot be explicitly started"):
        runs[0].start()
    del rl
    runs[0].start()
    assert runs[0].wait() == pyxrt.ert_cmd_state.ERT_CMD_STATE_COMPLETED
    again = pyxrt.runlist(rig.ctx)
    again.add(runs[1])                        # no longer associated with a runlist


def test_stack2_a_chain_of_mixed_kernels_keeps_each_kernels_latency(tmp_path):
    rig = Rig(tmp_path, "slow:attn:400")
    _, attn = rig.context("attn")
    rl = pyxrt.runlist(rig.ctx)
    for i in range(30):
        rl.add(rig.run(attn if i % 3 == 0 else None))
    assert outcome(rl) == "COMPLETED"
    first, second = rig.stack.jobs[-2], rig.stack.jobs[-1]
    assert first.latencies == [400.0 if i % 3 == 0 else 50.0 for i in range(24)]
    assert second.latencies == [400.0 if i % 3 == 0 else 50.0 for i in range(24, 30)]


# -- STACK.md 3: the binding's quirks ---------------------------------------------------

def test_stack3_runlist_wait_timeout_raises_typeerror(tmp_path):
    rig = Rig(tmp_path)
    rl, _ = rig.runlist(2)
    rl.execute()
    with pytest.raises(TypeError, match="incompatible function arguments"):
        rl.wait(1000)
    rl.wait()


def test_stack3_enum_has_no_running_member():
    assert "ERT_CMD_STATE_RUNNING" not in pyxrt.ert_cmd_state.__members__
    assert not hasattr(pyxrt.ert_cmd_state, "ERT_CMD_STATE_RUNNING")
    running = pyxrt.ert_cmd_state(3)
    assert running.value == 3 and running.name == "???"
    assert pyxrt.ert_cmd_state.ERT_CMD_STATE_COMPLETED != 4      # not equal to plain ints


def test_stack3_argument_index_past_the_kernel(tmp_path):
    rig = Rig(tmp_path)
    # pyxrt.cpp kernel.__call__ swallows each failing set_arg: the ninth is dropped
    r = rig.kernel(3, rig.instr, rig.words, *rig.bufs, rig.bufs[0])
    assert r.wait() == pyxrt.ert_cmd_state.ERT_CMD_STATE_COMPLETED
    # run.set_arg: kernel_impl::get_arg uses args.at(), std::out_of_range -> IndexError
    with pytest.raises(IndexError, match="which is 8"):
        pyxrt.run(rig.kernel).set_arg(8, rig.bufs[0])
    with pytest.raises(IndexError):
        pyxrt.run(rig.kernel).set_arg(-1, 3)


def test_stack3_corrupt_xclbin_raises_runtimeerror(tmp_path):
    bad = tmp_path / "bad.xclbin"
    bad.write_bytes(b"xclbin2\0" + b"\0" * 100)
    # xrt_xclbin.cpp init_axlf
    with pytest.raises(RuntimeError, match="xclbin: buffer too small to contain header"):
        pyxrt.xclbin(str(bad))
    bad.write_bytes(b"xclbin1\0" + b"\0" * 600)
    with pytest.raises(RuntimeError, match="^Invalid xclbin$"):
        pyxrt.xclbin(str(bad))
    with pytest.raises(RuntimeError, match="^Failed to open file '/nonexistent.xclbin' for "
                                           "reading$"):
        pyxrt.xclbin("/nonexistent.xclbin")


def test_stack3_group_ids_come_from_connectivity(tmp_path):
    # xrt_kernel.cpp kernel_impl::group_id: the argument's bank (connectivity) in the low
    # 16 bits, the context's slot (the driver's context handle) above them
    rig = Rig(tmp_path)
    slot = rig.ctx._live().id << 16
    assert rig.kernel.group_id(1) == slot | 1 and rig.kernel.group_id(3) == slot | 0
    assert rig.kernel.group_id(0) == slot | 0xFFFF          # connected to no bank


def test_stack3_flm_elf_path_calls_3_0_0_bos(tmp_path):
    rig = Rig(tmp_path)
    mod = pyxrt.module(pyxrt.elf(nop_elf(tmp_path, 8)))
    k = pyxrt.ext.kernel(rig.ctx, mod, "MLIR_AIE")
    r = k(3, 0, 0, *rig.bufs)
    assert r.wait() == pyxrt.ert_cmd_state.ERT_CMD_STATE_COMPLETED
    with pytest.raises(RuntimeError, match="not a valid ELF"):
        pyxrt.elf(str(rig.folder / "layer.xclbin"))


# -- STACK.md 4: the driver --------------------------------------------------------------

def test_stack4_staging_times_out_a_chain_2s_after_its_push(tmp_path):
    # staging on kernels >= 6.17: the context's drm_sched timer fires tdr_timeout_ms after
    # the job's push (aie2_sched_job_run signals), and aie2_tdr_detect finds no job
    # started or completed on the device since
    rig = Rig(tmp_path, "staging,hang-at:5")
    rl, runs = rig.runlist(10)
    assert outcome(rl) == STAGING_TIMEOUT
    assert rig.stack.now == pytest.approx(STAGING_TDR_US)


@pytest.mark.parametrize("kernel, release, message, expected", [
    ("6.16", "master", ABORT_MSG, ["ABORT", "ABORT", "ABORT"]),       # before 6fb7f2988832
    ("6.17", "master", ABORT_MSG, ["ABORT", "ABORT", "ABORT"]),       # 6.17.0: not backported
    # 6fb7f2988832's backport: the payload untouched, its first word the CU mask 1, read as
    # version-1 health of no known generation (a newline, no lines)
    ("6.17.13", "master", TIMEOUT_MSG + "\n", ["TIMEOUT", "ABORT", "ABORT"]),
    # 89ff45359abb: 0xFF over sub-command 0, neither version: the bare message
    ("7.0", "master", TIMEOUT_MSG, ["TIMEOUT", "ABORT", "ABORT"]),
    # XRT 2.20's amend_aie_error_message: no state in the message; a newline after every
    # TIMEOUT whatever the payload's first word (0xFF too), nothing after an ABORT
    ("6.16", "2.20", "runlist failed execution", ["ABORT", "ABORT", "ABORT"]),
    ("6.17.13", "2.20", "runlist failed execution\n", ["TIMEOUT", "ABORT", "ABORT"]),
    ("7.0", "2.20", "runlist failed execution\n", ["TIMEOUT", "ABORT", "ABORT"]),
])
def test_stack4_mainline_times_out_after_60s(tmp_path, monkeypatch, kernel, release, message,
                                             expected):
    # the virtual clock never sleeps: 60 s of driver timeout cost no wall time
    monkeypatch.setattr("harness.sim.clock.time.sleep", lambda s: pytest.fail("slept"))
    rig = Rig(tmp_path, f"mainline,kernel:{kernel},device:npu1,hang-at:1,xrt:{release}",
              columns=4)
    rl, runs = rig.runlist(3)
    assert outcome(rl) == message
    # the timed-out chain's error_index is 0 (never written, or set 0 by
    # amdxdna_cmd_set_error): XRT blames its first run whichever run hung
    assert states(runs) == expected
    assert rig.stack.now >= MAINLINE_TIMEOUT_US


@pytest.mark.parametrize("offset_ms", [0, 300, 1000, 1999])
def test_stack4_oot_watchdog_fires_on_the_second_silent_check(tmp_path, offset_ms):
    # aie2_tdr.c: a check every timeout_in_sec (2 s, from driver load);
    # aie2_rq_is_all_context_stuck: stuck when the status it saw at the last check and
    # the status now are both WAIT, i.e. no completion (aie2_sched_notify) in the two
    # periods before: 4-6 s after the last completion
    rig = Rig(tmp_path, "oot,hang-at:0")
    other_ctx, other_kernel = rig.context("attn", columns=8)
    warm = rig.run()                               # move the clock to the offset
    rig.stack.run_until(lambda: False, offset_ms * 1000.0)
    warm.start()
    warm.wait()
    hung_at = rig.stack.now
    rl, _ = rig.runlist(3)
    queued, _ = rig.runlist(2, ctx=other_ctx, kernel=other_kernel)
    rl.execute()
    queued.execute()                               # pending on another context
    with pytest.raises(RuntimeError, match=r"ERT_CMD_STATE_TIMEOUT"):
        rl.wait()
    first_check = (hung_at // 2_000_000 + 1) * 2_000_000
    assert rig.stack.now == pytest.approx(first_check + 4_000_000)
    assert 4_000_000 <= rig.stack.now - hung_at < 6_000_000
    # aie2_rq_stop_all stops every context; aie2_sched_cmdlist_resp_handler ends every
    # chain in flight TIMEOUT (the health data goes to the first only)
    with pytest.raises(RuntimeError, match=r"ERT_CMD_STATE_TIMEOUT"):
        queued.wait()


def test_stack4_four_jobs_in_flight_per_context(tmp_path):
    # the 5th and 6th chains wait in the submit ioctl (the context's job_sem), so
    # execute() returns only once two chains have ended
    rig = Rig(tmp_path)
    rl, _ = rig.runlist(24 * 6)
    rl.execute()
    ctx = rig.ctx._ctx
    jobs = list(rig.stack.jobs)
    assert len(ctx.inflight) == 4 and [j.done for j in jobs] == [True, True] + [False] * 4
    assert [j.blocked_us > 0 for j in jobs] == [False] * 4 + [True, True]
    assert jobs[4].admitted_us == jobs[0].end_us and jobs[5].admitted_us == jobs[1].end_us
    rl.wait()
    assert chain_sizes(rig) == [24] * 6


def test_stack4_chain_over_4k_fails_after_submit_and_stays_new(tmp_path):
    rig = Rig(tmp_path, "xrt-chain:40")        # 40 x (52 + 60) bytes > 4096
    rl, runs = rig.runlist(42)
    assert outcome(rl) == NEW_MSG
    assert states(runs)[:2] == ["NEW", "ABORT"]
    fits = Rig(tmp_path, "xrt-chain:36")       # 36 x 112 = 4032 bytes
    assert outcome(fits.runlist(42)[0]) == "COMPLETED"


def test_stack4_out_of_tree_caps_a_chain_at_64(tmp_path):
    from dataclasses import replace

    from harness.formats.xclbin_writer import flm_spec, synthesize
    path = tmp_path / "tiny.xclbin"          # a kernel without arguments: 52-byte slots
    path.write_bytes(synthesize(replace(flm_spec("tiny"), args=())))
    for profile, expected in [("oot,xrt-chain:65", NEW_MSG), ("staging,xrt-chain:65",
                                                                 "COMPLETED")]:
        control.configure(profile)
        dev = pyxrt.device(0)
        x = pyxrt.xclbin(str(path))
        dev.register_xclbin(x)
        ctx = pyxrt.hw_context(dev, x.get_uuid())
        mod = pyxrt.module(pyxrt.elf(nop_elf(tmp_path, 8)))
        k = pyxrt.ext.kernel(ctx, mod, "MLIR_AIE")
        rl = pyxrt.runlist(ctx)
        for _ in range(65):
            rl.add(pyxrt.run(k))
        assert outcome(rl) == expected, profile


def test_stack4_mixed_opcodes_in_a_chain_stay_new(tmp_path):
    rig = Rig(tmp_path)
    elf_kernel = pyxrt.ext.kernel(rig.ctx, pyxrt.module(pyxrt.elf(nop_elf(tmp_path, 8))),
                                  "MLIR_AIE")
    rl = pyxrt.runlist(rig.ctx)
    rl.add(rig.run())
    elf_run = pyxrt.run(elf_kernel)
    rl.add(elf_run)
    assert outcome(rl) == NEW_MSG


@pytest.mark.parametrize("device", ["npu5", "npu1"])
def test_stack4_every_device_reports_error_index_0_on_timeouts(tmp_path, device):
    # io_test.cpp: "For a timeout firmware leaves the runlist read index at 0" (the is_npu4
    # test there only picks which command packet holds the health data); npu1's firmware
    # gives no report at all (npu1_regs.c), so its index is 0 as well
    rig = Rig(tmp_path, f"staging,device:{device},hang-at:30", columns=4)
    rl, runs = rig.runlist(42)
    # npu5 reports its health (version 1); npu1's firmware has none, so 0xFF: bare message
    assert outcome(rl) == (STAGING_TIMEOUT if device == "npu5" else TIMEOUT_MSG)
    # The hang was at run 30, but the firmware says index 0 of chain 1: XRT blames run 24.
    assert states(runs) == ["NEW"] * 24 + ["TIMEOUT"] + ["ABORT"] * 17


def test_stack4_firmware_error_ends_chain_error_at_the_failing_command(tmp_path):
    rig = Rig(tmp_path)
    rl, runs = rig.runlist(10, unsynced_at=5)
    assert outcome(rl) == "runlist failed execution (ERT_CMD_STATE_ERROR)"
    assert states(runs) == ["NEW"] * 5 + ["ERROR"] + ["ABORT"] * 4


def test_stack4_ninstr_counts_words(tmp_path):
    rig = Rig(tmp_path)
    ok = rig.run(ninstr=rig.words)
    ok.start()
    assert ok.wait() == pyxrt.ert_cmd_state.ERT_CMD_STATE_COMPLETED
    r = rig.run(ninstr=rig.words - 1)                 # one word short of the stream
    r.start()
    assert r.wait() == pyxrt.ert_cmd_state.ERT_CMD_STATE_ERROR


def test_stack4_context_is_reset_after_a_hang_and_new_work_runs(tmp_path):
    rig = Rig(tmp_path, "staging,inflight-cap:40")
    assert outcome(rig.runlist(42)[0]) == STAGING_TIMEOUT
    assert outcome(rig.runlist(21)[0]) == "COMPLETED"
    assert outcome(rig.runlist(42)[0]) == STAGING_TIMEOUT


def test_stack4_kernel_latency_from_case_or_default(tmp_path):
    rig = Rig(tmp_path, latencies={"layer/MLIR_AIE": 100.0})
    outcome(rig.runlist(42)[0])
    assert rig.stack.now == pytest.approx(4200.0)
    plain = Rig(tmp_path)
    outcome(plain.runlist(42)[0])
    assert plain.stack.now == pytest.approx(42 * 50.0)


def test_stack4_staging_progress_is_a_device_stamp_not_per_sub_command(tmp_path):
    # staging >= 6.17 (aie2_ctx.c aie2_tdr_detect): only job starts and completions count,
    # so one chain of three 1-second commands times out although each one progresses;
    # before 6.17 the legacy check (aie2_tdr.c) runs every 2 s and fires after two silent
    # periods
    assert outcome(Rig(tmp_path, "staging,slow:layer:1000000").runlist(3)[0]) == STAGING_TIMEOUT
    legacy = Rig(tmp_path, "staging,kernel:6.16,slow:layer:1000000")
    assert outcome(legacy.runlist(3)[0]) == "COMPLETED"    # its completion, at 3 s, counts
    hung = Rig(tmp_path, "staging,kernel:6.16,slow:layer:1000000")
    assert outcome(hung.runlist(7)[0]) == STAGING_TIMEOUT  # silent at the 4 s and 6 s checks
    assert hung.stack.now == pytest.approx(6_000_000)
    # three one-run chains complete: each completion and push is device activity
    rig = Rig(tmp_path, "staging,slow:layer:1000000")
    for _ in range(3):
        r = rig.run()
        r.start()
        assert r.wait() == pyxrt.ert_cmd_state.ERT_CMD_STATE_COMPLETED
    assert outcome(Rig(tmp_path, "staging,slow:layer:3000000").runlist(2)[0]) == STAGING_TIMEOUT
    # mainline counts whole jobs: 24 one-second commands fit in 60 s, 21 three-second
    # commands in one chain do not
    assert outcome(Rig(tmp_path, "mainline,slow:MLIR_AIE:1000000").runlist(24)[0]) \
        == "COMPLETED"
    assert outcome(Rig(tmp_path, "mainline,slow:MLIR_AIE:3000000,xrt-chain:30").runlist(21)[0]) \
        == TIMEOUT_MSG


@pytest.mark.parametrize("columns, second_start, commands_in_sequence", [
    (8, 0, 40),     # both contexts on columns 0-7: one runlist after the other
    (4, 4, 20),     # columns 0-3 and 4-7: side by side
])
def test_stack5_overlapping_partitions_time_share_the_array(tmp_path, columns, second_start,
                                                           commands_in_sequence):
    rig = Rig(tmp_path, columns=columns)
    other_ctx, other_kernel = rig.context("other", columns=columns, start=second_start)
    a, _ = rig.runlist(20)
    b, _ = rig.runlist(20, ctx=other_ctx, kernel=other_kernel)
    a.execute()
    b.execute()
    a.wait()
    b.wait()
    assert rig.stack.now == pytest.approx(commands_in_sequence * 50.0)


# -- the upstream observations under the inflight-cap hypothesis --------------------------

@pytest.mark.parametrize("chunks, expected", [
    ([28], ["COMPLETED"]), ([36], ["COMPLETED"]), ([42], [STAGING_TIMEOUT]),
    ([21, 21], ["COMPLETED", "COMPLETED"]),
])
def test_inflight_cap_40_reproduces_issue_712(tmp_path, chunks, expected):
    rig = Rig(tmp_path, "staging,inflight-cap:40")
    assert [outcome(rig.runlist(n)[0]) for n in chunks] == expected


def test_documented_profile_does_not_produce_the_failure(tmp_path):
    rig = Rig(tmp_path)
    assert outcome(rig.runlist(42)[0]) == "COMPLETED"


def test_flaky_is_reproducible_per_seed(tmp_path):
    def run_all(seed: int) -> list[str]:
        rig = Rig(tmp_path, f"staging,flaky:0.3,seed:{seed}")
        return [outcome(rig.runlist(10)[0]) for _ in range(20)]
    first = run_all(7)
    assert first == run_all(7)
    assert STAGING_TIMEOUT in first and "COMPLETED" in first
    assert first != run_all(8)


def test_realtime_mode_really_blocks(tmp_path, monkeypatch):
    # A stand-in clock that moves only when slept on: the test sees every sleep the
    # simulator asks for, without measuring wall time.
    class Time:
        now, naps = 0.0, []

        def monotonic(self):
            return self.now

        def sleep(self, seconds):
            self.naps.append(seconds)
            self.now += seconds
    fake = Time()
    monkeypatch.setattr("harness.sim.clock.time", fake)
    rig = Rig(tmp_path, "realtime,hang-at:0")
    r = rig.run()
    rl = pyxrt.runlist(rig.ctx)
    rl.add(r)
    rl.execute()
    assert rig.stack.run_until(lambda: False, 300_000.0) is False   # 0.3 s of sleeping
    assert sum(fake.naps) == pytest.approx(0.3, abs=1e-6)
    assert max(fake.naps) <= 0.05                  # in slices, so Ctrl-C lands promptly


def _preempt_elf(tmp_path, **sections) -> str:
    path = tmp_path / "preempt.elf"
    path.write_bytes(full_elf(nop_stream(8), 8, pdi=None, **sections))
    return str(path)


@pytest.mark.parametrize("profile, state", [("mainline", "COMPLETED"),
                                            ("staging,device:npu1", "NEW")])
def test_an_elf_with_save_and_restore_sections_is_sent_as_npu_preempt(tmp_path, profile,
                                                                      state):
    # get_ert_opcode (xrt_module.cpp module_elf_aie2p at 202520.2.20.197 and 2.21.75,
    # xrt_elf.cpp elf_aie_gen2 at 202610.2.23.244 and 963c58ee): PDIs -> ERT_START_NPU_
    # PREEMPT_ELF, a group with .preempt_save and .preempt_restore -> ERT_START_NPU_PREEMPT
    # (21), else ERT_START_NPU; the driver's aie2_cmdlist_fill_slot needs AIE2_PREEMPT for
    # it (npu1 has none: -EOPNOTSUPP in run_job, the chain left NEW)
    columns = 4 if "npu1" in profile else 8
    control.configure(profile)
    path = tmp_path / "preempt.elf"
    path.write_bytes(full_elf(nop_stream(columns, 3 if columns == 4 else 4), columns,
                              pdi=None, save=b"SAVE", restore=b"REST"))
    rl = full_elf_runlist(path, 3)
    said = outcome(rl)
    assert said == ("COMPLETED" if state == "COMPLETED"
                    else "runlist failed execution (ERT_CMD_STATE_NEW)")
    job = control.current().jobs[-1]
    assert job.opcodes == [21, 21, 21]


@pytest.mark.parametrize("in_group", [True, False])
def test_a_pdi_anywhere_in_the_elf_makes_every_kernel_preempt_elf(tmp_path, in_group):
    # elf_aie_gen2::initialize_pdi_buf_map (xrt_elf.cpp at 202610.2.23.244 and 963c58ee;
    # module_elf_aie2p::initialize_pdi_buf in xrt_module.cpp up to 2.21.75) searches every
    # section for ".pdi", and get_ert_opcode answers for the whole ELF: a PDI outside the
    # kernel's group still makes XRT send ERT_START_NPU_PREEMPT_ELF (22)
    control.configure("mainline")
    path = tmp_path / "pdi.elf"
    path.write_bytes(full_elf(nop_stream(8), 8, pdi_in_group=in_group))
    rl = full_elf_runlist(path, 2)
    assert outcome(rl) == "COMPLETED"
    assert control.current().jobs[-1].opcodes == [22, 22]


@pytest.mark.parametrize("release, where, text", [
    ("2.21", "module", "Invalid elf because preempt save and restore is not paired"),
    ("master", "elf", "Invalid ELF: preempt save and restore sections are not paired")])
def test_a_save_section_without_its_restore_is_refused(tmp_path, release, where, text):
    # initialize_save_restore_buf (xrt_module.cpp, 2.21.75) when the module is made;
    # initialize_save_restore_buf_map (xrt_elf.cpp, 2.23 on) when the elf is read
    control.configure(f"xrt:{release}")
    path = _preempt_elf(tmp_path, save=b"SAVE")
    with pytest.raises(RuntimeError) as raised:
        pyxrt.module(pyxrt.elf(path)) if where == "module" else pyxrt.elf(path)
    assert str(raised.value) == text
