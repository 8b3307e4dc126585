"""Wall time from typing `reproduce_ert_timeout` to its verdict, on the simulated stack.

Measured in this run: the default (6 isolated trials, workers forked by the fork
server), the same with a fresh interpreter per worker (HARNESS_WORKER_START=spawn),
in-process (`reproduce_ert_timeout --no-isolate`, the baseline the isolated figures are
compared with), the bare start-up of the command (`reproduce_ert_timeout --version`), and
a bare interpreter (`python -c pass`); these three in alternation, 3 x N rounds, so the
ratio of the start-up figures to the interpreter is measured under the same load. The
console script is the one installed beside this interpreter (`python -m harness
reproduce` where there is none; the output says which).
Targets: the default under 1.0 s and under 3x the in-process time; in-process under 5x
the bare interpreter. Also the cost of one more trial, isolated and in-process (from runs
of 2 and 42 trials of the 42-layer plan); target: isolated under 3x in-process.

Usage: python benchmarks/reproduce_wall.py [--repeat N] [--quick]
(--quick: each figure once, one trial per plan and no control, one more trial from runs of
1 and 2: to check that it runs)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HARNESS = [sys.executable, "-m", "harness"]


def reproduce_command() -> list[str]:
    """`reproduce_ert_timeout` as a user types it: the console script beside this
    interpreter, else the same command through `python -m harness`."""
    script = shutil.which("reproduce_ert_timeout", path=os.path.dirname(sys.executable))
    return [script] if script else [*HARNESS, "reproduce"]


def wall(args: list[str], folder: str, repeat: int, **env: str) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(args, cwd=folder, capture_output=True, check=False,
                       env={**os.environ, **env})
        best = min(best, time.perf_counter() - started)
    return best


def walls(commands: list[list[str]], folder: str, repeat: int) -> list[float]:
    """The best wall time of each command over `repeat` rounds, each round running every
    command once: a busy spell of the machine hits all of them, not one figure's runs."""
    best = [float("inf")] * len(commands)
    for _ in range(repeat):
        for i, command in enumerate(commands):
            best[i] = min(best[i], wall(command, folder, 1))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure (best kept)")
    parser.add_argument("--quick", action="store_true",
                        help="each figure once, one trial per plan and no control: check "
                             "that it runs")
    args = parser.parse_args()
    repeat = 1 if args.quick else args.repeat
    fewer = ["--trials", "1", "--no-control"] if args.quick else []
    few, many = (1, 2) if args.quick else (2, 42)
    reproduce = reproduce_command()
    with tempfile.TemporaryDirectory() as folder:
        # the start-up figures in alternation, so the ratio to the bare interpreter is
        # measured under the same load
        bare, baseline, in_process = walls([[sys.executable, "-c", "pass"],
                                            [*reproduce, "--version"],
                                            [*reproduce, "--no-isolate", *fewer]],
                                           folder, repeat if args.quick else 3 * repeat)
        forked = wall([*reproduce, *fewer], folder, repeat, HARNESS_WORKER_START="fork-server")
        spawned = wall([*reproduce, *fewer], folder, repeat, HARNESS_WORKER_START="spawn")
        per_trial = {}
        for mode, extra in (("isolated", []), ("in-process", ["--no-isolate"])):
            short, long = (wall([*HARNESS, "run", "minicpm5-2b-decode", "--plan", "42",
                                 "--trials", str(n), "--out", f"t{n}.yaml", "--force", *extra],
                                folder, repeat) for n in (few, many))
            per_trial[mode] = (long - short) / (many - few) * 1000
    command = "reproduce_ert_timeout" if len(reproduce) == 1 else "python -m harness reproduce"
    print(f"{command} on the simulated stack (staging), best of {repeat}, this run"
          + (" (quick: one trial per plan, no control)" if args.quick else "") + ":")
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
