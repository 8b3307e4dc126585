"""How often bisect finds the right boundary when the stack is noisy.

On the simulated stack with ``inflight-cap:37,flaky:0.1`` (depth 38 and up
always fail; any submitted job also hangs with probability 0.1), bisect over
depths 1..128 for many seeds and count how often it answers exactly 38. The
baseline, measured in the same run on the same seeds, seed by seed in alternation, is
the naive bisect: one trial per depth, no classification, no confirmation. The seeds are
taken in rounds of equal size; the share right is min / median / max over the rounds.
Target: the harness right for at least 95% of seeds.

Usage: python benchmarks/bisect_noise.py [--seeds N] [--trials K] [--quick]
(--quick: 3 seeds, to check that it runs)
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from figures import MIN_ROUNDS, spread

from harness.execution.backend import choose_backend
from harness.execution.runner import RunOptions, open_run
from harness.model.plan import plan_for_depth
from harness.search.bisect import BisectSettings, run_bisect
from harness.search.measure import Measurer
from harness.sources.load import load_case

PROFILE = "inflight-cap:37,flaky:0.1"
LO, HI, RIGHT = 1, 128, 38
TARGET = 0.95
ROUNDS = 5


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
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--trials", type=int, default=5, help="K for the harness bisect")
    parser.add_argument("--quick", action="store_true", help="3 seeds: check that it runs")
    args = parser.parse_args()
    if args.quick:
        args.seeds = MIN_ROUNDS
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
    rounds = max(MIN_ROUNDS, min(ROUNDS, args.seeds))
    for name, label in (("harness", f"harness bisect (K={args.trials}, confirmed)"),
                        ("naive", "naive bisect (1 trial per depth)")):
        rows = results[name]
        right = [answer == RIGHT for answer, _ in rows]
        shares = [sum(right[i::rounds]) / len(right[i::rounds]) for i in range(rounds)]
        trials = sum(used for _, used in rows) / len(rows)
        target = f" (target at least {TARGET:.0%})" if name == "harness" else ""
        print(f"  {label:<36} right {sum(right):>3}/{len(rows)}, per round of seeds "
              f"{spread(shares, '.0%')}{target}; {trials:5.1f} trials per bisect")


if __name__ == "__main__":
    main()
