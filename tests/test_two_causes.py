"""Two causes at once (issue 49.7's held-out family): an observation that contradicts a
cause for one plan does not contradict it where another plan shows it, and the held-out
families draw what they say they draw."""

from __future__ import annotations

import random
import sys
from pathlib import Path

from diagkit import completed_trial, failed_trial, hardware_report, of, plan

from harness.model.drivers import driver_build

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import held_out  # noqa: E402  (benchmarks/ is no package)


def _timeout(i: int, runs: int) -> dict:
    chains = [24] * (runs // 24) + ([runs % 24] if runs % 24 else [])
    return failed_trial(i, runs, chains, "TIMEOUT", wall_ms=60_010.0)


def test_a_depth_limit_beside_a_hang_in_the_work_is_neither_contradicted(tmp_path):
    """NOOPs fail at 42 and complete at 21 (a depth limit); the engine's commands fail at
    21 too, where NOOPs complete (a hang in the work). Each cause has its plans."""
    plans = [plan("monolithic", "42", [42], [_timeout(i, 42) for i in range(3)]),
             plan("halves", "21+21", [21, 21], [completed_trial(i, [21, 21], ms_per_run=0.05)
                                                for i in range(3)]),
             plan("depth-only", "42", [42], [_timeout(i, 42) for i in range(3)],
                  control=True)]
    noops = hardware_report(tmp_path, "noops", plans)
    work = hardware_report(tmp_path, "work", [
        plan("captured", "42", [42], [_timeout(i, 42) for i in range(3)]),
        plan("cut 21+21", "21+21", [21, 21], [_timeout(i, 21) for i in range(3)])],
        nop_only=False, case_kind="capture")
    diagnosis = of(noops, work)
    depth, hang = diagnosis.entry("depth-limit"), diagnosis.entry("work-hang")
    assert depth.status != "contradicted" and depth.supports
    assert any("depth alone does not fail there" in f.text for f in depth.against)
    assert hang.status != "contradicted" and any(
        "while NOOPs complete at 21" in f.text for f in hang.supports)
    assert diagnosis.top.id in ("depth-limit", "work-hang", "undetermined")


def test_a_refusal_named_at_once_stands_beside_another_plan_s_hang(tmp_path):
    refused = [failed_trial(i, 42, [24, 18], "ERROR", wall_ms=2.0, failing_chain=1,
                            failing_run=34, named=True) for i in range(3)]
    plans = [plan("monolithic", "42", [42], refused),
             plan("halves", "21+21", [21, 21], [completed_trial(i, [21, 21], ms_per_run=0.05)
                                                for i in range(3)])]
    noops = hardware_report(tmp_path, "noops", plans)
    work = hardware_report(tmp_path, "work", [
        plan("captured", "42", [42], [_timeout(i, 42) for i in range(3)])],
        nop_only=False, case_kind="capture")
    entry = of(noops, work).entry("refused")
    assert entry.status != "contradicted" and entry.supports
    assert any("failed at the driver's timer, every time" in f.text for f in entry.against)


def test_the_held_out_families_draw_what_they_say():
    rng = random.Random(5)
    for _ in range(200):
        rate = held_out.low_rates("mainline", "7.0", rng)
        per_job = float(rate.tokens[0].split(":")[1])
        assert 0.029 <= 1 - (1 - per_job) ** 2 <= 0.301
        cut = held_out.every_cut_holds_it("oot", "7.0", rng)
        assert 2 <= int(cut.tokens[0].split(":")[1]) <= 21
        slow = held_out.slow_at_the_timer("staging", "6.16", rng)
        build = driver_build("staging", "6.16")
        chain = int(slow.tokens[0].rsplit(":", 1)[1]) * 24 / 1e6
        if slow.cause == "nothing-fails":
            assert chain <= build.earliest_seconds + 1e-4
        else:
            assert chain >= build.worst_seconds - 1e-4
        budget = held_out.budget_below_a_hang("mainline", "7.0", rng)
        assert budget.budget_min is not None and budget.budget_min * 60 < 60.0
        assert "undetermined" in budget.accept and budget.needs
        ends = held_out.refused_at_the_ends("mainline", "7.0", rng)
        assert ends.tokens[0] in ("reject-at:0", "reject-at:41")
        two = held_out.two_causes("mainline", "7.0", rng)
        assert len(two.tokens) == 2 and len(set(two.accept)) == 2
    assert len(held_out.FAMILIES) == len(held_out.NAMES) == 6
