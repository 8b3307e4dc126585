"""Profile strings: parsing, canonical names, and what counts as a deviation."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from simkit import Rig, failure

from harness.app.cli import main
from harness.model.drivers import FLAVOURS as FLAVOUR_ROWS
from harness.model.drivers import driver_build
from harness.model.errors import BadInput
from harness.sim.profiles import DEVICES, parse_profile

FLAVOURS = tuple(FLAVOUR_ROWS)


def test_default_is_the_712_machines_documented_stack(tmp_path):
    # ROCm/FastFlowLM#712 (STACK.md 1): Ryzen AI Max+ 395 (npu5, Strix Halo), firmware
    # 1.1.2.65, Linux 7.0 with the in-tree amdxdna, XRT 2.26.0 installed
    profile = parse_profile("")
    assert (profile.flavour, profile.kernel, profile.device) == ("mainline", "7.0", "npu5")
    assert (profile.firmware_version, profile.protocol.text) == ("1.1.2.65", "7.2")
    assert (profile.xrt, profile.release.tag) == ("2.26", "49612fa3 (2.26.0)")
    assert profile.documented and profile.name == "mainline"
    # Linux 7.0 aie2_ctx.c: drm_sched's 60 s timer, nothing printed on a timeout (the trace
    # event "job timedout" only; 25854131c04a, which prints the capture block, is 7.1)
    build = driver_build(profile.flavour, profile.kernel)
    assert build.period_s == 60.0 and build.timeout_lines == () and not build.asks_health
    rig = Rig(tmp_path, "hang-at:3")
    rl, _ = rig.runlist(42)
    assert failure(rl) == "runlist failed execution (ERT_CMD_STATE_TIMEOUT)"
    assert rig.stack.now >= 60e6 and rig.kernel_lines() == []
    shown = CliRunner().invoke(main, ["sim", "profiles"]).output
    assert shown.startswith("default profile: mainline, the ROCm/FastFlowLM#712 machine's "
                            "stack as documented")


def test_deviations_are_labelled():
    profile = parse_profile("mainline,inflight-cap:40,slow:layer:3000000")
    assert profile.deviations == ["inflight-cap:40", "slow:layer:3000000"]
    assert not profile.documented
    assert parse_profile("oot,device:npu1,seed:3,realtime").documented


@pytest.mark.parametrize("text, words", [
    ("staging,mainline", "two driver flavours"),
    # 0 is told as -5 and 1.5 are: one message for every number it does not take
    ("inflight-cap:0", "inflight-cap takes a whole number of 1 or more, e.g. inflight-cap:3"),
    ("inflight-cap:-5", "inflight-cap takes a whole number of 1 or more, e.g. inflight-cap:3"),
    # tokens are lowercase: a capitalised one is the token mistyped
    ("HANG-AT:3", "unknown profile token 'HANG-AT:3' in 'HANG-AT:3'; did you mean hang-at:K"),
    ("flaky:2", "probability"),
    ("slow:layer", "slow:KERNEL:US"),
    ("slow:layer:-5", "slow:KERNEL:US"),
    ("device:npu9", "device does not take .npu9.; give device:npu1"),
    ("turbo", "unknown profile token 'turbo'"),
    ("inflight-cap:40,inflight-cap:30", "inflight-cap twice"),
    # at most 4 jobs (CTX_MAX_CMDS) of 24 commands (XRT's submit_size) are queued on a
    # context: a cap of 96 or more never fires, whatever the runlist
    ("inflight-cap:96", r"inflight-cap:96 can never fire: at most 4 jobs of 24 commands "
                        r"\(96\)"),
    ("inflight-cap:1000", "can never fire"),
    ("inflight-cap:40,xrt-chain:10", "at most 4 jobs of 10 commands"),
])
def test_bad_tokens_name_themselves(text, words):
    with pytest.raises(BadInput, match=words):
        parse_profile(text)


tokens = st.one_of(
    st.sampled_from(FLAVOURS),
    st.sampled_from([f"device:{d}" for d in DEVICES]),
    st.integers(1, 500).map(lambda n: f"inflight-cap:{n}"),
    st.integers(1, 100).map(lambda n: f"xrt-chain:{n}"),
    st.integers(0, 100).map(lambda n: f"hang-at:{n}"),
    st.integers(1, 10**8).map(lambda n: f"slow:layer:{n}"),
    st.floats(0, 1).map(lambda p: f"flaky:{p!r}"),
    st.integers(0, 10**6).map(lambda n: f"seed:{n}"),
    st.just("realtime"),
)


@given(st.lists(tokens, max_size=6))
def test_name_round_trips(parts):
    try:
        profile = parse_profile(",".join(parts))
    except BadInput:
        heads = [p.split(":")[0] for p in parts if p not in FLAVOURS]
        given = {p.split(":")[0]: int(p.split(":")[1]) for p in parts
                 if p.startswith(("inflight-cap:", "xrt-chain:"))}
        never = given.get("inflight-cap", 0) >= 4 * given.get("xrt-chain", 24)
        assert never or sum(p in FLAVOURS for p in parts) > 1 or any(
            heads.count(h) > 1 for h in set(heads) if h not in ("hang-at", "slow"))
        return
    assert parse_profile(profile.name) == profile


@given(st.text(max_size=40))
def test_parser_only_raises_bad_input(text):
    try:
        parse_profile(text)
    except BadInput:
        pass


def test_the_largest_cap_that_can_fire_fires_and_every_larger_one_is_refused(tmp_path):
    # cap 95 fails at 96 commands in flight; 96, 97 and 1000 could never fail a runlist,
    # yet claimed to "make every runlist of more than N commands fail"
    rig = Rig(tmp_path, "staging,inflight-cap:95")
    assert failure(rig.runlist(96)[0]).startswith("runlist failed execution")
    assert "inflight-cap:95 makes every runlist of more than 95 commands fail" in \
        parse_profile("inflight-cap:95").by_construction[0]
    for cap in (96, 97, 200, 1000):
        with pytest.raises(BadInput, match="can never fire"):
            parse_profile(f"inflight-cap:{cap}")


@pytest.mark.parametrize("rule, source", [
    # round 4, each rule beside where it was read
    ("refuses any other at probe: 'aie2_check_protocol: Incompatible firmware protocol "
     "major 7 minor 2'", "dri-devel 2026-03 (Debian 6.19.6)"),
    ("throw 'qds_device::wait() unexpected command state'",
     "hw_queue.cpp qds_device::wait(const command*, size_t)"),
    ("before 6.17 the hung job ends TIMEOUT only when the firmware gave a report",
     "aie2_tdr.c aie2_legacy_tdr_detect, aie2_tdr_stop_hwctx"),
    ("mainline from 7818618a09a0 (7.0; 6.19.4 by stable backport) with AIE2_TEMPORAL_ONLY "
     "firmware (npu4/5/6) skips the solver",
     "6.19 299/781 'accel/amdxdna: Enable temporal sharing only mode'"),
    ("the flavour's version for its kernel: staging 0.16, mainline 0.0 before 6.18, 0.1 on "
     "6.18, 0.6 on 6.19 and 7.0, 0.8 on 7.1", "noamsto/nix-amd-ai#79 reads 0.8 from 7.1.3"),
    ("every connected context (new contexts start disconnected",
     "aie2_rq_dump_all and aie2_rq_stop_all (conn_list)"),
    ("whose first id goes to aie2_config_cu on a context with CUs",
     "aie2_ctx_connect and aie2_message.c aie2_config_cu"),
    ("ERT_START_NPU_PREEMPT when a group", "module_elf_aie2p::get_ert_opcode"),
    ("ERT_START_NPU_PREEMPT_ELF when the ELF carries a .pdi section anywhere",
     "elf_aie_gen2::get_ert_opcode"),
    ("before 89ff45359abb a timeout or abort writes no error_index",
     "amdxdna_cmd_set_error (89ff45359abb); Xilinx/XRT xrt_kernel.cpp "
     "runlist_impl::create_exec_buf"),
    ("xrt-runner silently runs a value past a C int as its low 32 bits",
     "json.hpp get_arithmetic_value (3.11.3, at 963c58ee)"),
    ("N below 96 (4 jobs in flight of 24 commands", "CTX_MAX_CMDS / HWCTX_MAX_CMDS"),
])
def test_sim_profiles_shows_each_round_4_rule_with_its_source(rule, source):
    shown = " ".join(CliRunner().invoke(main, ["sim", "profiles"]).output.split())
    at = shown.find(rule)
    assert at >= 0, rule
    cited = shown.find("[source:", at)
    assert source in shown[cited:shown.find("]", cited) + 1], source
