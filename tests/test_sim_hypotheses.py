"""The simulated hypotheses a diagnosis names, each as the observations it must produce:
`work-hang:N` (runs that carry work hang at their Nth in one runlist; NOOPs never),
`reject-at:N` (the firmware fails run N at once, naming it), `held-contexts:N` (other
processes hold N of the device's contexts), `slow:KERNEL:US` outlasting
the driver's timer on every flavour (the timers: harness.model.drivers, each flavour's
row and its source), and `inflight-cap:N` counted in the device's own time whatever the
host does between its submits (the realtime clock; the emulator: tests/test_emulator.py).
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from simkit import Rig, outcome, states

from harness.app.cli import main
from harness.formats.txn import carries_work, check_stream, nop_stream, work_stream
from harness.model.drivers import driver_build
from harness.sim.profiles import parse_profile
from harness.sim.stack import CTX_LIMIT_FAILED, HWCTX_CREATE_FAILED


def timed(rig: Rig, rl) -> tuple[str, float]:
    """The outcome's first line and how long it took on the device clock (seconds)."""
    before = rig.stack.now
    said = outcome(rl)
    return said.splitlines()[0], (rig.stack.now - before) / 1e6


def test_the_work_stream_is_well_formed_and_is_not_the_noop_stream():
    stream = work_stream(8)
    assert check_stream(stream, columns=8, dev_gen=4).num_ops == 3
    assert carries_work(stream) and not carries_work(nop_stream(8))


# -- work-hang:N --------------------------------------------------------------------------

def test_work_hang_hangs_the_nth_run_of_work_and_never_a_noop(tmp_path):
    """work-hang:8 (the 6-bit lock counter of the issue: 7 runs fine, the 8th hung): 7
    runs of work complete; 8 hang until staging's 2 s timer; 42 NOOPs complete, and NOOPs
    are not counted (7 of work among 35 NOOPs complete)."""
    rig = Rig(tmp_path, "staging,work-hang:8")
    assert timed(rig, rig.mixed_runlist("w" * 7)[0])[0] == "COMPLETED"
    rl, runs = rig.mixed_runlist("w" * 8)
    said, seconds = timed(rig, rl)
    assert said == "runlist failed execution (ERT_CMD_STATE_TIMEOUT)"
    assert seconds == pytest.approx(driver_build("staging").period_s)
    assert timed(rig, rig.mixed_runlist("n" * 42)[0])[0] == "COMPLETED"
    assert timed(rig, rig.mixed_runlist("n" * 20 + "w" * 7 + "n" * 15)[0])[0] == "COMPLETED"


def test_work_hang_counts_work_across_chains_and_a_cut_completes(tmp_path):
    """work-hang:30 on 42 runs of work: the 30th (run 29, in chain 1) hangs; cut 21+21,
    each runlist holds 21 and completes."""
    rig = Rig(tmp_path, "staging,work-hang:30")
    rl, runs = rig.mixed_runlist("w" * 42)
    assert timed(rig, rl)[0].endswith("(ERT_CMD_STATE_TIMEOUT)")
    chains = [job for job in rig.stack.jobs if job.count in (24, 18)][-2:]
    assert [job.state for job in chains] == [4, 8]          # COMPLETED, then TIMEOUT
    for _ in range(2):
        assert timed(rig, rig.mixed_runlist("w" * 21)[0])[0] == "COMPLETED"


def test_work_hang_is_listed_labelled_and_named_back():
    profile = parse_profile("work-hang:8,reject-at:30")
    assert profile.deviations == ["work-hang:8", "reject-at:30"]
    assert parse_profile(profile.name) == profile
    assert any("8th of them never completes" in text for text in profile.by_construction)
    listed = " ".join(CliRunner().invoke(main, ["sim", "profiles"]).output.split())
    assert "work-hang:N deviation" in listed and "reject-at:N deviation" in listed
    assert "6-bit lock counter" in listed


# -- reject-at:N --------------------------------------------------------------------------

def test_reject_at_fails_its_run_at_once_and_names_it(tmp_path):
    """reject-at:30: ERROR long before any timer, error_index 6 in chain 1, so XRT gives
    run 30 the state and the runs after it ABORT; 30 runs complete; NOOPs and work alike."""
    rig = Rig(tmp_path, "mainline,reject-at:30")
    for kinds in ("n" * 42, "w" * 42):
        rl, runs = rig.mixed_runlist(kinds)
        said, seconds = timed(rig, rl)
        assert said == "runlist failed execution (ERT_CMD_STATE_ERROR)"
        assert seconds < 0.01 < driver_build("mainline").period_s
        job = [j for j in rig.stack.jobs if j.count == 18][-1]
        assert (job.state, job.error_index) == (5, 6)
        assert states(runs)[29:32] == ["NEW", "ERROR", "ABORT"]
    assert timed(rig, rig.mixed_runlist("n" * 30)[0])[0] == "COMPLETED"


# -- slow:KERNEL:US outlasting the driver's timer -------------------------------------------

@pytest.mark.parametrize("profile, us, depth, cut, timer_s", [
    # mainline 7.0: drm_sched's 60 s per job (a chain is one job): 24 x 2.6 s > 60 > 21 x 2.6
    ("mainline", 2_600_000, 42, 21, 60.0),
    # staging on 7.0: tdr_timeout_ms 2000 and nothing else started or completed meanwhile
    ("staging", 90_000, 42, 21, 2.0),
    # the out-of-tree check: two silent 2 s periods (4-6 s); chains of 8 x 0.25 s complete
    ("oot", 250_000, 42, 8, 6.0),
])
def test_slow_work_outlasts_the_driver_s_timer_and_a_cut_completes(tmp_path, profile, us,
                                                                   depth, cut, timer_s):
    rig = Rig(tmp_path, f"{profile},slow:layer:{us}")
    said, seconds = timed(rig, rig.runlist(depth)[0])
    assert said.endswith("(ERT_CMD_STATE_TIMEOUT)")
    build = driver_build(profile)
    assert build.period_s <= seconds <= build.worst_seconds + 24 * us / 1e6
    assert seconds <= timer_s + 24 * us / 1e6
    for _ in range(-(-depth // cut)):
        assert timed(rig, rig.runlist(cut)[0])[0] == "COMPLETED"


# -- inflight-cap:N in device time ----------------------------------------------------------

class FakeTime:
    """A clock that moves only when slept on: what the host sleeps is seen, wall time is
    never measured."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_realtime_counts_what_is_queued_in_device_time_whatever_the_host_does(tmp_path,
                                                                              monkeypatch):
    """inflight-cap:40 with the realtime clock and a host that takes 20 ms between its two
    chain submits (16 times the 1.2 ms the first chain takes): the device's time stands
    while the host works, so 42 are queued as on the virtual clock and the runlist ends
    TIMEOUT, not COMPLETED (a replayed sweep once recorded COMPLETED so)."""
    fake = FakeTime()
    monkeypatch.setattr("harness.sim.clock.time", fake)
    rig = Rig(tmp_path, "staging,inflight-cap:40,realtime")
    submit = rig.stack.submit

    def slow_host(*args, **kwargs):
        fake.sleep(0.020)
        return submit(*args, **kwargs)
    monkeypatch.setattr(rig.stack, "submit", slow_host)
    rl, runs = rig.runlist(42)
    said, seconds = timed(rig, rl)
    assert said == "runlist failed execution (ERT_CMD_STATE_TIMEOUT)"
    assert seconds == pytest.approx(2.0)                      # staging's timer, no more
    assert fake.now == pytest.approx(0.040 + 2.0)             # the host's 40 ms are its own
    rl, runs = rig.runlist(40)
    assert timed(rig, rl)[0] == "COMPLETED"


# -- held-contexts:N ---------------------------------------------------------------------

@pytest.mark.parametrize("profile, made, message, first_line", [
    # the firmware's hwctx_limit (16 on npu5) counts every process's contexts: 14 held,
    # the Rig's and one more fit, the 17th is refused (MGMT_ERT_NOAVAIL, -EINVAL)
    ("mainline,held-contexts:14", 2, HWCTX_CREATE_FAILED,
     "command opcode 0x2 failed, status 0x2000003"),
    # the out-of-tree run queue counts rq->ctx_cnt over the device (aie2_rq_add, 856409ca):
    # 30 held, two fit in 32, the 33rd is refused -ENOENT
    ("oot,held-contexts:30", 2, CTX_LIMIT_FAILED, "aie2_rq_add: Not allow more than 32 "
                                                  "context(s)"),
])
def test_held_contexts_leave_the_run_the_rest_of_the_device_s_limit(tmp_path, profile, made,
                                                                    message, first_line):
    rig = Rig(tmp_path, profile)
    keep = [rig.context(f"c{i}") for i in range(made - 1)]
    with pytest.raises(RuntimeError) as info:
        rig.context("one-too-many")
    assert str(info.value) == message
    assert first_line in rig.kernel_lines()[0]
    assert "held by other processes (held-contexts:" in "\n".join(rig.stack.log)
    del keep


def test_held_contexts_is_listed_labelled_and_named_back():
    profile = parse_profile("held-contexts:13")
    assert profile.deviations == ["held-contexts:13"] and not profile.documented
    assert parse_profile(profile.name) == profile
    assert any("13 fewer contexts" in text for text in profile.by_construction)
    listed = " ".join(CliRunner().invoke(main, ["sim", "profiles"]).output.split())
    assert "held-contexts:N deviation" in listed and "aie2_rq_add" in listed
