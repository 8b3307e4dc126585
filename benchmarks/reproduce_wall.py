"""Wall time from typing `reproduce_ert_timeout` to its verdict, on the simulated stack.

Measured in this run: the default (6 isolated trials, workers forked by the fork
server), the same with a fresh interpreter per worker (HARNESS_WORKER_START=spawn),
in-process (--no-isolate, the baseline the isolated figures are compared with), and
the bare start-up of the command (`runlist-harness --version`), and a bare interpreter
(`python -c pass`). Targets: the default under 1.0 s and under 3x the in-process time;
in-process under 5x the bare interpreter. Also the cost of one more trial, isolated and
in-process (from runs of 2 and 42 trials of the 42-layer plan); target: isolated under
3x in-process.

Usage: python benchmarks/reproduce_wall.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

HARNESS = [sys.executable, "-m", "harness"]


def wall(args: list[str], folder: str, repeat: int, **env: str) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(args, cwd=folder, capture_output=True, check=False,
                       env={**os.environ, **env})
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure (best kept)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        bare = wall([sys.executable, "-c", "pass"], folder, args.repeat)
        baseline = wall([*HARNESS, "--version"], folder, args.repeat)
        in_process = wall([*HARNESS, "reproduce", "--no-isolate"], folder, args.repeat)
        forked = wall([*HARNESS, "reproduce"], folder, args.repeat,
                      HARNESS_WORKER_START="fork-server")
        spawned = wall([*HARNESS, "reproduce"], folder, args.repeat,
                       HARNESS_WORKER_START="spawn")
        per_trial = {}
        for mode, extra in (("isolated", []), ("in-process", ["--no-isolate"])):
            few, many = (wall([*HARNESS, "run", "minicpm5-2b-decode", "--plan", "42",
                               "--trials", str(n), "--out", f"t{n}.yaml", "--force", *extra],
                              folder, args.repeat) for n in (2, 42))
            per_trial[mode] = (many - few) / 40 * 1000
    print("reproduce_ert_timeout on the simulated stack (staging), best of "
          f"{args.repeat}, this run:")
    print(f"  bare interpreter (python -c pass)  {bare:6.2f} s")
    print(f"  start-up only (--version)          {baseline:6.2f} s   "
          f"({baseline / bare:.1f}x the interpreter)")
    print(f"  --no-isolate (baseline)            {in_process:6.2f} s   "
          f"({in_process / bare:.1f}x the interpreter; target under 5x)")
    print(f"  isolated, fork-server (default)    {forked:6.2f} s   "
          f"({forked / in_process:.1f}x the baseline; target under 1.0 s and 3x)")
    print(f"  isolated, spawn                    {spawned:6.2f} s   "
          f"({spawned / in_process:.1f}x the baseline)")
    ratio = per_trial["isolated"] / per_trial["in-process"]
    print(f"  one more trial: isolated {per_trial['isolated']:.1f} ms, in-process "
          f"{per_trial['in-process']:.1f} ms ({ratio:.1f}x; target under 3x)")


if __name__ == "__main__":
    main()
