"""How often bisect finds the right boundary when the stack is noisy.

On the simulated stack with ``inflight-cap:37,flaky:0.1`` (depth 38 and up
always fail; any submitted job also hangs with probability 0.1), bisect over
depths 1..128 for many seeds and count how often it answers exactly 38. The
baseline, measured in the same run on the same seeds, is the naive bisect: one
trial per depth, no classification, no confirmation.

Usage: python benchmarks/bisect_noise.py [--seeds N] [--trials K] [--quick]
(--quick: 2 seeds, to check that it runs)
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from harness.execution.backend import choose_backend
from harness.execution.runner import RunOptions, open_run
from harness.model.plan import plan_for_depth
from harness.search.bisect import BisectSettings, run_bisect
from harness.search.measure import Measurer
from harness.sources.load import load_case

PROFILE = "inflight-cap:37,flaky:0.1"
LO, HI, RIGHT = 1, 128, 38


def runner_for(folder: Path, seed: int, trials: int):
    backend = choose_backend("sim", PROFILE)
    options = RunOptions(trials=trials, isolate=False, seed=seed)
    runner = open_run(load_case("minicpm5-2b-decode"), [], options, backend=backend,
                      xclbins_dir=None, out=str(folder / f"seed-{seed}-k{trials}.yaml"),
                      force=True, command="bisect")
    return runner


def harness_bisect(folder: Path, seed: int, trials: int) -> tuple[int, int]:
    runner = runner_for(folder, seed, trials)
    answer = run_bisect(runner, BisectSettings("depth", LO, HI, trials), None, lambda _: None)
    used = sum(len(p.trials) for p in runner.report.plans)
    return (answer.first if answer.first is not None else -1), used


def naive_bisect(folder: Path, seed: int) -> tuple[int, int]:
    runner = runner_for(folder, seed, 1)
    measurer = Measurer(runner, 1, None)
    good, bad = LO, HI
    while bad - good > 1:
        mid = (good + bad) // 2
        counts, _ = measurer.measure(plan_for_depth(mid))
        if counts.get("COMPLETED"):
            good = mid
        else:
            bad = mid
    return bad, measurer.spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--trials", type=int, default=5, help="K for the harness bisect")
    parser.add_argument("--quick", action="store_true", help="2 seeds: check that it runs")
    args = parser.parse_args()
    if args.quick:
        args.seeds = 2
    results = {"harness": [], "naive": []}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for seed in range(args.seeds):
            results["harness"].append(harness_bisect(folder, seed, args.trials))
            results["naive"].append(naive_bisect(folder, seed))
    elapsed = time.perf_counter() - started
    print(f"bisect over depths {LO}..{HI}, simulated profile {PROFILE}, right answer {RIGHT}, "
          f"{args.seeds} seeds ({elapsed:.1f} s, this run):")
    for name, label in (("harness", f"harness bisect (K={args.trials}, confirmed)"),
                        ("naive", "naive bisect (1 trial per depth)")):
        rows = results[name]
        right = sum(1 for answer, _ in rows if answer == RIGHT)
        trials = sum(used for _, used in rows) / len(rows)
        print(f"  {label:<36} right {right:>3}/{len(rows)}   {trials:5.1f} trials per bisect")
    harness_right = sum(1 for a, _ in results["harness"] if a == RIGHT)
    naive_right = sum(1 for a, _ in results["naive"] if a == RIGHT)
    if naive_right:
        print(f"  right answers, harness vs naive: {harness_right / naive_right:.2f}x")


if __name__ == "__main__":
    main()
