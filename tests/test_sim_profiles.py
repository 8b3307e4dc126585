"""Profile strings: parsing, canonical names, and what counts as a deviation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.model.drivers import FLAVOURS as FLAVOUR_ROWS
from harness.model.errors import BadInput
from harness.sim.profiles import DEVICES, parse_profile

FLAVOURS = tuple(FLAVOUR_ROWS)


def test_default_is_documented_staging_on_strix_halo():
    profile = parse_profile("")
    assert profile.flavour == "staging" and profile.device == "npu5"
    assert profile.documented and profile.name == "staging"


def test_deviations_are_labelled():
    profile = parse_profile("mainline,inflight-cap:40,slow:layer:3000000")
    assert profile.deviations == ["inflight-cap:40", "slow:layer:3000000"]
    assert not profile.documented
    assert parse_profile("oot,device:npu1,seed:3,realtime").documented


@pytest.mark.parametrize("text, words", [
    ("staging,mainline", "two driver flavours"),
    ("inflight-cap:0", "N must be >= 1"),
    ("flaky:2", "probability"),
    ("slow:layer", "slow:KERNEL:US"),
    ("slow:layer:-5", "slow:KERNEL:US"),
    ("device:npu9", "unknown profile token"),
    ("turbo", "unknown profile token 'turbo'"),
    ("inflight-cap:40,inflight-cap:30", "inflight-cap twice"),
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
        assert sum(p in FLAVOURS for p in parts) > 1 or any(
            heads.count(h) > 1 for h in set(heads) if h not in ("hang-at", "slow"))
        return
    assert parse_profile(profile.name) == profile


@given(st.text(max_size=40))
def test_parser_only_raises_bad_input(text):
    try:
        parse_profile(text)
    except BadInput:
        pass
