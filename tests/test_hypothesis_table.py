"""A profile hypothesis is one entry of `harness.sim.profiles.HYPOTHESES`: its token, how its
parameter is read, what it assumes and its source, what it makes happen by construction,
where the simulator and emulator play it and the diagnosis cause that names it. A throw-away
hypothesis added as an entry (and the `Profile` field it fills) is parsed, labelled a
deviation, said to fail by construction, listed by `sim profiles` and refused with an error
naming it on a bad parameter, with no other code knowing its name."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from click.testing import CliRunner

from harness.app.cli import main
from harness.model.errors import BadInput
from harness.report.diagnosis import IDS
from harness.sim import profiles
from harness.sim.profiles import HYPOTHESES, Hypothesis, parse_profile


@dataclass(frozen=True)
class WithDrift(profiles.Profile):
    drift: int | None = None


def _drift(token: str, parameter: str) -> int:
    if not parameter.isdigit() or not 1 <= int(parameter) <= 9:
        raise BadInput(f"profile token {token!r}: D must be a digit 1 to 9, e.g. drift:3")
    return int(parameter)


DRIFT = Hypothesis(
    "drift", "D", "drift", _drift,
    "the firmware's clock drifts D parts in ten (throw-away)",
    "hypothesis: none (a test's)",
    lambda d: f"drift:{d} makes every runlist fail (throw-away)",
    "nothing (a test's)")


@pytest.fixture
def drift(monkeypatch) -> None:
    monkeypatch.setattr(profiles, "Profile", WithDrift)
    monkeypatch.setitem(HYPOTHESES, "drift", DRIFT)


def test_a_throw_away_hypothesis_is_parsed_and_labelled(drift):
    profile = parse_profile("mainline,drift:3,inflight-cap:40")
    assert profile.drift == 3
    assert profile.deviations == ["inflight-cap:40", "drift:3"]
    assert not profile.documented
    assert "drift:3 makes every runlist fail (throw-away)" in profile.by_construction
    assert parse_profile(profile.name) == profile          # the canonical text parses back


def test_a_throw_away_hypothesis_is_listed_by_sim_profiles(drift):
    result = CliRunner().invoke(main, ["sim", "profiles"])
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if line.strip().startswith("drift:D"))
    assert "deviation" in line and "clock drifts" in line


@pytest.mark.parametrize("text, words", [
    ("drift:12", "'drift:12': D must be a digit 1 to 9"),
    ("drift:3,drift:4", "gives drift twice"),
])
def test_a_throw_away_hypothesis_refuses_a_bad_parameter(drift, text, words):
    with pytest.raises(BadInput, match=words):
        parse_profile(text)
    result = CliRunner().invoke(main, ["run", "nop-depth", "--profile", text])
    assert result.exit_code == 2 and words.split(": ")[-1] in result.output


@pytest.mark.parametrize("text, words", [
    ("hang-at:x", "'hang-at:x': hang-at takes a whole number"),
    ("work-hang:-1", "'work-hang:-1': work-hang takes a whole number"),
    ("reject-at:1e3", "'reject-at:1e3': reject-at takes a whole number"),
])
def test_a_bad_parameter_names_its_hypothesis(text, words):
    with pytest.raises(BadInput, match=words):
        parse_profile(text)


def test_every_hypothesis_is_one_entry():
    """Each entry's field is a Profile field defaulting to 'not assumed', its cause a real
    diagnosis, and its token round-trips through the canonical name."""
    samples = {"inflight-cap": "40", "xrt-chain": "12", "hang-at": "3", "work-hang": "8",
               "reject-at": "5", "slow": "layer:3000000", "flaky": "0.25",
               "held-contexts": "13", "serve-fault": "error", "wedge": "2:hang",
               "firmware-dead": "1"}
    assert set(samples) == set(HYPOTHESES)
    for head, entry in HYPOTHESES.items():
        assert entry.cause is None or entry.cause in IDS
        profile = parse_profile(f"{head}:{samples[head]}")
        assert profile.deviations == [f"{head}:{samples[head]}"]
        assert len(profile.by_construction) == 1
        assert parse_profile(profile.name) == profile
    assert {entry.cause for entry in HYPOTHESES.values()} >= {"work-hang", "refused"}
