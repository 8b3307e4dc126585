"""Wall time from typing `reproduce_ert_timeout` to its verdict, on the simulated stack.

Measured in this run: the default (6 isolated trials, each in its own worker
process), the same in-process (--no-isolate), and as the baseline the bare
start-up of the command (`runlist-harness --version`). The target for the
default is a verdict within 15 s.

Usage: python benchmarks/reproduce_wall.py [--repeat N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time

HARNESS = [sys.executable, "-m", "harness"]


def wall(args: list[str], folder: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(args, cwd=folder, capture_output=True, check=False)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (best kept)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        baseline = wall([*HARNESS, "--version"], folder, args.repeat)
        isolated = wall([*HARNESS, "reproduce"], folder, args.repeat)
        in_process = wall([*HARNESS, "reproduce", "--no-isolate"], folder, args.repeat)
    print("reproduce_ert_timeout on the simulated stack (staging), best of "
          f"{args.repeat}, this run:")
    print(f"  start-up only (--version)     {baseline:6.2f} s")
    print(f"  default, 6 isolated trials    {isolated:6.2f} s   ({isolated / baseline:.1f}x the "
          "start-up; target under 15 s)")
    print(f"  --no-isolate                  {in_process:6.2f} s   ({in_process / baseline:.1f}x "
          "the start-up)")


if __name__ == "__main__":
    main()
