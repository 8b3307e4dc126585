"""A failure that comes in a few trials of many (issue 54.6): a fixed cause (a depth limit,
a hang at the Nth run, work that outlasts the timer) fails every trial of a runlist it
fails, so the same runlists completing in most trials, or a deeper one completing, is
evidence against it, never for it; with no plan failing every trial the rare failure is
the failure, and an investigation whose answer is still open spends its budget on the
trials that show its rate instead of stopping."""

from __future__ import annotations

import pytest
from diagkit import completed_trial, failed_trial, hardware_report, invoke, of, plan

from harness.report.fileformat import load_report


def _rare_cut(tmp_path, failures: int, where: str):
    """Staging's 2 s timer: the one runlist completes 6 of 6, and `where` (the cut, or the
    depth-only control) fails `failures` of 12 trials at the timer."""
    def trials(bad: int, chunks: list[int]) -> list:
        # XRT's chain split: 24 runs a chain, the rest in the last (42 as 24+18)
        split = [24] * (chunks[0] // 24) + ([chunks[0] % 24] if chunks[0] % 24 else [])
        return [failed_trial(i, chunks[0], split, "TIMEOUT", wall_ms=2010.0)
                if i < bad else completed_trial(i, chunks, ms_per_run=0.05)
                for i in range(12)]
    plans = [plan("monolithic", "42", [42], [completed_trial(i, [42], ms_per_run=0.05)
                                             for i in range(6)]),
             plan("halves", "21+21", [21, 21], trials(failures if where == "cut" else 0,
                                                      [21, 21])),
             plan("depth-only", "42", [42], trials(failures if where == "control" else 0,
                                                   [42]), control=True)]
    return hardware_report(tmp_path, f"rare-{where}-{failures}", plans, flavour="staging",
                           kernel="6.18.0-1-generic")


def test_a_deeper_runlist_completing_contradicts_a_depth_limit(tmp_path):
    """1 of 12 cut trials failing, the 42-deep runlist 6 of 6: neither depth-limit nor
    slow-work may score on that failure."""
    diagnosis = of(_rare_cut(tmp_path, 1, "cut"))
    depth = diagnosis.entry("depth-limit")
    assert depth.status == "contradicted" and not depth.supports
    assert "halves 21+21 failed 1 of 12 trials at runlists of 21 runs while depth-only 42 " \
        "completes 12 of 12 trials at 42 runs" in depth.contradictions[0].text
    slow = diagnosis.entry("slow-work")
    assert slow.status == "contradicted" and not slow.supports
    # one failure in 24 trials: intermittent by its runlists, but one may be a one-off
    top = diagnosis.top
    assert top.id == "undetermined" and top.leading == ["nondeterministic"]
    assert top.experiment.startswith("runlist-harness run minicpm5-2b-decode --plan halves "
                                     "--trials 20")


def test_two_rare_failures_with_no_plan_failing_every_trial_are_nondeterministic(tmp_path):
    """2 of 12 control trials failing: a rate, with nothing fixed beside it."""
    diagnosis = of(_rare_cut(tmp_path, 2, "control"))
    assert diagnosis.top.id == "nondeterministic"
    assert diagnosis.entry("depth-limit").status == "contradicted"


def test_a_rare_failure_beside_a_fixed_one_is_noise(tmp_path):
    """The one runlist fails every trial; the cut fails 1 of 12: the fixed failure leads
    and the rare one does not make the answer intermittent."""
    plans = [plan("monolithic", "42", [42], [
        failed_trial(i, 42, [24, 18], "TIMEOUT", wall_ms=2010.0) for i in range(3)]),
        plan("halves", "21+21", [21, 21], [
            failed_trial(0, 21, [21], "TIMEOUT", wall_ms=2010.0),
            *[completed_trial(i, [21, 21], ms_per_run=0.05) for i in range(1, 12)]]),
        plan("depth-only", "42", [42], [
            failed_trial(i, 42, [24, 18], "TIMEOUT", wall_ms=2010.0) for i in range(3)],
            control=True)]
    report = hardware_report(tmp_path, "fixed", plans, flavour="staging",
                             kernel="6.18.0-1-generic")
    diagnosis = of(report)
    assert diagnosis.top.id == "depth-limit"
    assert diagnosis.entry("nondeterministic").score < diagnosis.top.score


@pytest.mark.parametrize("profile", ["staging,flaky:0.05,seed:3",
                                     "flaky:0.05,seed:1"])
def test_investigate_spends_its_budget_on_a_rare_failure_until_its_rate_shows(
        tmp_path, profile):
    """Before, each of these stopped within seconds of device time answering undetermined
    between depth-limit and slow-work on one or two rare failures; the trials that show
    the rate name it."""
    out = tmp_path / "inv.yaml"
    result = invoke("investigate", "minicpm5-2b-decode", "--no-isolate", "--profile",
                    profile, "--out", str(out))
    assert result.stdout.splitlines()[2].startswith("diagnosis: nondeterministic: "), \
        result.stdout
    answer = load_report(out).sections["investigate"]["answer"]
    assert answer["top"] == "nondeterministic" and "stopped" not in answer
