"""How often `investigate` names the right cause, and what it spends to get there.

Scenarios are drawn from a seeded generator: a cause and its parameter (a simulated
hypothesis: inflight-cap:N for a depth limit, work-hang:N, slow:layer:US sized against the
flavour's timer, reject-at:N, flaky:P; none for "nothing fails"), a driver flavour and a
kernel release, a seed, and for half of the fixed causes noise beside it (flaky:0.02: a
job in fifty hangs at random). For each, `investigate` runs on the simulated stack
(MiniCPM5's case, trials in this process) within the budget, and its first answer is
held against the cause drawn. Printed: top-1 accuracy per cause, how many answers were
"undetermined", how many named a wrong cause (confident wrong answers), and the median
simulated device time an investigation spent. Targets: top-1 >= 95% over all causes, no
confident wrong answer, median device time under 5 minutes.

Usage: python benchmarks/diagnose_accuracy.py [--per-cause N] [--seed S] [--budget MIN]
[--quick] (--quick: one scenario per cause, to check that it runs)
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from harness.execution.backend import choose_backend
from harness.execution.runner import RunOptions, open_run
from harness.model.drivers import driver_build
from harness.search.investigate import InvestigateSettings, Investigation, begin
from harness.sources.load import load_case

CASE = "minicpm5-2b-decode"          # 42 layers, one run each; the cut 21+21
CAUSES = ("depth-limit", "work-hang", "slow-work", "refused", "nondeterministic",
          "nothing-fails")
# the stacks drawn: a flavour, a kernel release, and what else it needs to come up (the
# in-tree driver before 7.0 refuses the default firmware's mailbox protocol 7: it gets a
# firmware it takes)
STACKS = (("mainline", "7.0", ""), ("mainline", "7.1", ""),
          ("mainline", "6.18", "firmware:1.0.0.63"),
          ("staging", "6.16", ""), ("staging", "6.18", ""), ("staging", "7.0", ""),
          ("oot", "6.18", ""), ("oot", "7.0", ""))
NOISE = "flaky:0.02"


@dataclass(frozen=True)
class Scenario:
    cause: str
    profile: str
    seed: int
    noise: bool


def hypothesis(cause: str, flavour: str, kernel: str, rng: random.Random) -> str | None:
    """The simulated hypothesis that plays `cause`, its parameter drawn (None: none)."""
    if cause == "depth-limit":
        return f"inflight-cap:{rng.randint(10, 41)}"
    if cause == "work-hang":
        return f"work-hang:{rng.randint(2, 42)}"
    if cause == "refused":
        return f"reject-at:{rng.randint(1, 41)}"
    if cause == "nondeterministic":
        return f"flaky:{rng.uniform(0.15, 0.5):.3f}"
    if cause == "slow-work":
        # a chain of 24 takes 1.2-2.2x the longest the driver takes to notice a hang
        worst = driver_build(flavour, kernel).worst_seconds
        return f"slow:layer:{round(rng.uniform(1.2, 2.2) * worst * 1e6 / 24)}"
    return None


def scenarios(per_cause: int, seed: int) -> list[Scenario]:
    rng = random.Random(seed)
    drawn = []
    for cause in CAUSES:
        for index in range(per_cause):
            flavour, kernel, extra = rng.choice(STACKS)
            tokens = [flavour, f"kernel:{kernel}", *([extra] if extra else [])]
            made = hypothesis(cause, flavour, kernel, rng)
            if made:
                tokens.append(made)
            noise = cause not in ("nondeterministic", "nothing-fails") and index % 2 == 1
            if noise:
                tokens.append(NOISE)
            tokens.append(f"seed:{rng.randint(1, 10**6)}")
            drawn.append(Scenario(cause, ",".join(tokens), rng.randint(0, 10**6), noise))
    return drawn


def investigate(scenario: Scenario, folder: Path, budget_min: float) -> tuple[str, bool, float]:
    """The top answer, whether it named a cause, and the device time spent (s)."""
    backend = choose_backend("sim", scenario.profile)
    options = RunOptions(trials=1, isolate=False, seed=scenario.seed)
    runner = open_run(load_case(CASE), None, options, backend=backend, xclbins_dir=None,
                      out=str(folder / "investigation.yaml"), force=True,
                      command="investigate")
    settings = InvestigateSettings(budget_min * 60.0, stand_in=True)
    begin(runner, settings)
    investigation = Investigation(runner, settings, lambda _: None)
    diagnosis = investigation.run()
    runner.handle.close()
    return diagnosis.top.id, diagnosis.determined, investigation.spent_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-cause", type=int, default=30)
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--budget", type=float, default=30.0, help="minutes of device time")
    parser.add_argument("--quick", action="store_true", help="one scenario per cause")
    args = parser.parse_args()
    if args.quick:
        args.per_cause = 1
    drawn = scenarios(args.per_cause, args.seed)
    rows: dict[str, list[tuple[str, bool, float]]] = {cause: [] for cause in CAUSES}
    wrong: list[tuple[Scenario, str]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for scenario in drawn:
            answer, determined, spent = investigate(scenario, Path(tmp), args.budget)
            rows[scenario.cause].append((answer, determined, spent))
            if answer != scenario.cause and answer != "undetermined":
                wrong.append((scenario, answer))
    elapsed = time.perf_counter() - started
    stacks = ", ".join(f"{f} {k}" for f, k, _ in STACKS)
    print(f"investigate on the simulated stack: {len(drawn)} scenarios ({args.per_cause} per "
          f"cause; stacks {stacks}; noise "
          f"{NOISE} beside half the fixed causes; seed {args.seed}; budget {args.budget:g} "
          f"min), {elapsed:.1f} s of wall time in this run")
    print(f"{'cause':<18} {'top-1':>9} {'undetermined':>13} {'wrong':>6} "
          f"{'median device time':>19}")
    spent_all = []
    right_all = 0
    for cause in CAUSES:
        results = rows[cause]
        right = sum(1 for answer, _, _ in results if answer == cause)
        undetermined = sum(1 for answer, _, _ in results if answer == "undetermined")
        wrongs = len(results) - right - undetermined
        spent = [s for _, _, s in results]
        spent_all += spent
        right_all += right
        print(f"{cause:<18} {right:>4}/{len(results):<4} {undetermined:>13} {wrongs:>6} "
              f"{statistics.median(spent) / 60:>15.2f} min")
    share = 100.0 * right_all / len(drawn)
    print(f"{'all':<18} {right_all:>4}/{len(drawn):<4} ({share:.1f}%; target >= 95%)")
    print(f"confident wrong answers: {len(wrong)} (target 0)")
    for scenario, answer in wrong:
        print(f"  {scenario.cause} as {answer}: --profile {scenario.profile} --seed "
              f"{scenario.seed}")
    print(f"median device time per diagnosis: {statistics.median(spent_all) / 60:.2f} min "
          "(simulated clock; target under 5 min)")


if __name__ == "__main__":
    main()
