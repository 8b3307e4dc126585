"""Wall time from typing `reproduce_ert_timeout` to its verdict, on the simulated stack.

Measured in this run, in alternation (each round runs every command once, so a busy
spell of the machine hits all of them): the default (6 isolated trials, workers forked
by the fork server), the same with a fresh interpreter per worker
(HARNESS_WORKER_START=spawn), in-process (`reproduce_ert_timeout --no-isolate`, the
baseline the isolated figures are compared with), the bare start-up of the command
(`reproduce_ert_timeout --version`), a bare interpreter (`python -c pass`), and the cost
of one more trial, isolated and in-process (from runs of 2 and 102 trials of the
42-layer plan), in wall time and in the CPU time of every process the run waited for (the
fork server and its children included). Figures are min / median / max over the rounds;
ratios are taken round by round. The console script is the one installed beside this
interpreter (`python -m harness reproduce` where there is none; the output says which).
Targets: the default under 1.0 s and under 3x in-process; in-process under 5x the bare
interpreter; one more isolated trial at most 2 ms and under 3x one in-process.

Usage: python benchmarks/reproduce_wall.py [--rounds N] [--quick]
(--quick: 3 rounds of one trial per plan and no control, one more trial from runs of 1
and 2: to check that it runs)
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from figures import MIN_ROUNDS, alternate, ratios, spread

HARNESS = [sys.executable, "-m", "harness"]


def reproduce_command() -> list[str]:
    """`reproduce_ert_timeout` as a user types it: the console script beside this
    interpreter, else the same command through `python -m harness`."""
    script = shutil.which("reproduce_ert_timeout", path=os.path.dirname(sys.executable))
    return [script] if script else [*HARNESS, "reproduce"]


CPU: dict[tuple[str, ...], list[float]] = {}     # per command: its processes' CPU seconds


def wall(args: list[str], folder: str, **env: str) -> float:
    """Wall seconds of `args`; the CPU time of it and every process it waited for (the
    fork server and its children included) is kept in CPU."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(args, cwd=folder, capture_output=True, check=False,
                   env={**os.environ, **env})
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.setdefault(tuple(args), []).append(after.ru_utime + after.ru_stime
                                           - before.ru_utime - before.ru_stime)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (>= 3)")
    parser.add_argument("--quick", action="store_true",
                        help="3 rounds, one trial per plan and no control: check that it runs")
    args = parser.parse_args()
    rounds = MIN_ROUNDS if args.quick else args.rounds
    fewer = ["--trials", "1", "--no-control"] if args.quick else []
    few, many = (1, 2) if args.quick else (2, 102)
    reproduce = reproduce_command()

    def trials(n: int, extra: list[str]) -> list[str]:
        return [*HARNESS, "run", "minicpm5-2b-decode", "--plan", "42", "--trials", str(n),
                "--out", f"t{n}.yaml", "--force", *extra]
    with tempfile.TemporaryDirectory() as folder:
        (bare, version, in_process, forked, spawned, iso_few, iso_many, in_few,
         in_many) = alternate([
             lambda: wall([sys.executable, "-c", "pass"], folder),
             lambda: wall([*reproduce, "--version"], folder),
             lambda: wall([*reproduce, "--no-isolate", *fewer], folder),
             lambda: wall([*reproduce, *fewer], folder, HARNESS_WORKER_START="fork-server"),
             lambda: wall([*reproduce, *fewer], folder, HARNESS_WORKER_START="spawn"),
             lambda: wall(trials(few, []), folder),
             lambda: wall(trials(many, []), folder),
             lambda: wall(trials(few, ["--no-isolate"]), folder),
             lambda: wall(trials(many, ["--no-isolate"]), folder)], rounds)
    isolated_ms = [(b - a) / (many - few) * 1000 for a, b in zip(iso_few, iso_many,
                                                                 strict=True)]
    in_process_ms = [(b - a) / (many - few) * 1000 for a, b in zip(in_few, in_many,
                                                                   strict=True)]
    cpu_ms = {mode: [(b - a) / (many - few) * 1000 for a, b in zip(
        CPU[tuple(trials(few, extra))], CPU[tuple(trials(many, extra))], strict=True)]
        for mode, extra in (("isolated", []), ("in-process", ["--no-isolate"]))}
    command = "reproduce_ert_timeout" if len(reproduce) == 1 else "python -m harness reproduce"
    print(f"{command} on the simulated stack (staging), {len(bare)} alternating rounds, this "
          "run (min / median / max)" + (" (quick: one trial per plan, no control)"
                                        if args.quick else "") + ":")
    print(f"  bare interpreter (python -c pass)  {spread(bare)} s")
    print(f"  start-up only (--version)          {spread(version)} s   "
          f"({spread(ratios(version, bare), '.1f')}x the interpreter)")
    print(f"  --no-isolate (baseline)            {spread(in_process)} s   "
          f"({spread(ratios(in_process, bare), '.1f')}x the interpreter; target under 5x)")
    print(f"  isolated, fork-server (default)    {spread(forked)} s   "
          f"({spread(ratios(forked, in_process), '.1f')}x the baseline; target under 1.0 s "
          "and 3x)")
    print(f"  isolated, spawn                    {spread(spawned)} s   "
          f"({spread(ratios(spawned, in_process), '.1f')}x the baseline)")
    print(f"  CPU of one more trial (every process): isolated {spread(cpu_ms['isolated'], '.1f')}"
          f" ms, in-process {spread(cpu_ms['in-process'], '.1f')} ms")
    print(f"  one more trial: isolated {spread(isolated_ms, '.1f')} ms, in-process "
          f"{spread(in_process_ms, '.1f')} ms "
          f"({spread(ratios(isolated_ms, in_process_ms), '.1f')}x; target at most 2 ms and "
          "under 3x)")


if __name__ == "__main__":
    main()
