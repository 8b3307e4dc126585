"""What keeping a report costs as it grows, and what reading a big one costs.

Figures, each measured in this run on the simulated stack:
- save cost per trial (an in-flight entry and the result), fsynced as on hardware and
  as on the simulated stack, when the report already holds 10, 100, 1,000 and 10,000
  trials; target: all within 2x of each other (the 10-trial figure is the baseline);
- an isolated sweep of depths 1..32 x 5 chunk sizes, one trial per cell: the share of
  its wall time spent in the report file; target under 5%;
- in-process sweeps of depths 1..256 and 1..1024 x 5 chunk sizes (3 trials per cell),
  each in a child process: its peak memory; target flat in the depth and under 250 MiB
  at 1..1024 (its report is about 290 MB);
- reading the 1..1024 report back: `report check`, `report render` (target under 10 s
  and 200 MiB), and `load_report` in brief (what `sweep --replay` reads), each in a
  child process, with its peak memory.

Peaks are each child's own high-water mark (`benchmarks/peak.py`).

Usage: python benchmarks/report_scale.py [--quick]   (--quick: saving with 10 and 100
held, sweeps of 1..2 isolated and 1..4 and 1..8 in-process, to check that it runs)
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from peak import REPORT_PEAK, bare_peak, harness_run

from harness.execution.backend import choose_backend
from harness.execution.runner import RunOptions, open_run
from harness.execution.session import run_trial
from harness.model.results import TrialResult, TrialStatus
from harness.report.fileformat import load_report
from harness.report.journal import ReportFile
from harness.sources.load import load_case

SIZES = (10, 100, 1_000, 10_000)
MEASURED = 200                 # trials timed at each size
CHUNKS = "1,4,8,16,32"


def save_cost_per_trial(folder: Path, sync_every_s: float, sizes: tuple[int, ...] = SIZES,
                        measured: int = MEASURED) -> dict[int, float]:
    """Microseconds to save one trial, by how many the report already holds (`sizes`),
    fsyncing at most every `sync_every_s` (0: every entry, as on the hardware path); each
    the mean of `measured` saves."""
    case = load_case("minicpm5-2b-decode")
    runner = open_run(case, None, RunOptions(trials=1, isolate=True),
                      backend=choose_backend("sim", "staging"), xclbins_dir=None,
                      out=str(folder / f"grow-{sync_every_s}.yaml"), force=True,
                      command="run")
    plan = runner.report.plans[0]
    sample = run_trial(runner.spec(plan, 0), runner.backend)     # a real simulated result
    handle: ReportFile = runner.handle
    handle.sync_every_s = sync_every_s

    def save_one() -> None:
        index = len(plan.trials)
        placeholder = TrialResult(index, TrialStatus.IN_FLIGHT, seed=sample.seed)
        plan.trials.append(placeholder)
        handle.record_trial(plan.name, placeholder)
        result = copy.copy(sample)
        result.index = index
        plan.trials[index] = result
        handle.record_trial(plan.name, result)

    costs = {}
    for size in sizes:
        while len(plan.trials) < size:
            save_one()
        started = time.perf_counter()
        for _ in range(measured):
            save_one()
        costs[size] = (time.perf_counter() - started) / measured * 1e6
    handle.finish()
    return costs


class SaveClock:
    """Time spent inside ReportFile's methods (outermost calls only, so a method that
    calls another is counted once)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.depth = 0

    def wrap(self, fn):
        def timed(*args, **kwargs):
            self.depth += 1
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.depth -= 1
                if not self.depth:
                    self.seconds += time.perf_counter() - started
        return timed

    def install(self) -> None:
        for name in ("record_trial", "append", "rewrite", "finish", "note", "close"):
            setattr(ReportFile, name, self.wrap(getattr(ReportFile, name)))
        ReportFile.create = classmethod(self.wrap(ReportFile.create.__func__))


def sweep_saving_share(folder: Path, depths: str) -> tuple[float, float, int]:
    """(seconds in the report file, wall seconds, trials) of an isolated sweep, run as
    the command line runs it."""
    from harness.app.cli import main as cli
    clock = SaveClock()
    clock.install()
    out = folder / "sweep.yaml"
    started = time.perf_counter()
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet), \
            contextlib.redirect_stderr(quiet):
        cli.main(["sweep", "minicpm5-2b-decode", "--depths", depths, "--chunks", CHUNKS,
                  "--trials", "1", "--out", str(out)], standalone_mode=False)
    wall = time.perf_counter() - started
    trials = sum(len(p.trials) for p in load_report(out).plans)
    return clock.seconds, wall, trials


def big_sweep(folder: Path, depths: str) -> tuple[float, float, Path]:
    """(peak MiB, seconds) of an in-process sweep in a child process; its report."""
    out = folder / f"sweep-{depths.replace('..', '-')}.yaml"
    wall, peak, done = harness_run(["sweep", "minicpm5-2b-decode", "--depths", depths,
                                    "--chunks", CHUNKS, "--no-isolate", "--yes", "--out",
                                    str(out)])
    if done.returncode != 0:
        raise SystemExit(f"the sweep failed: {done.stderr[-2000:]}")
    return peak / 2**20, wall, out


LOAD_BRIEF = ["-c", "import sys; from harness.report.fileformat import load_report; "
              "r = load_report(sys.argv[1], detail=False); "
              "print(sum(len(p.trials) for p in r.plans))"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="10 and 100 trials held; sweeps of 1..2 isolated, 1..4 and 1..8 "
                             "in-process: check that it runs")
    args = parser.parse_args()
    small, mid, large = ("1..2", "1..4", "1..8") if args.quick else \
        ("1..32", "1..256", "1..1024")
    sizes, measured = ((10, 100), 20) if args.quick else (SIZES, MEASURED)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        policies = {"fsync every entry (hardware)": save_cost_per_trial(folder, 0.0, sizes,
                                                                        measured),
                    "fsync every 0.5 s (simulated)": save_cost_per_trial(folder, 0.5, sizes,
                                                                         measured)}
        saving, wall, trials = sweep_saving_share(folder, small)
        mid_peak, mid_wall, _ = big_sweep(folder, mid)
        large_peak, large_wall, report = big_sweep(folder, large)
        size_mb = report.stat().st_size / 1e6
        base = bare_peak() / 2**20
        reads = {}
        for name, command in (("report check", ["report", "check", str(report)]),
                              ("report render", ["report", "render", str(report)]),
                              ("load in brief", None)):
            if command is None:
                started = time.perf_counter()
                done = subprocess.run([sys.executable, "-c", REPORT_PEAK + LOAD_BRIEF[1],
                                       str(report)], capture_output=True, text=True,
                                      check=True)
                seconds = time.perf_counter() - started
                peak = int(done.stderr.split("PEAK ")[1])
            else:
                seconds, peak, done = harness_run(command, check=True)
            reads[name] = (seconds, peak / 2**20)
    print("reports on the simulated stack, this run:")
    for policy, costs in policies.items():
        first = costs[sizes[0]]
        print(f"  save one trial, {policy}:")
        for size, cost in costs.items():
            print(f"    {size:>6,} trials held   {cost:8.1f} us   ({cost / first:.2f}x the "
                  f"{sizes[0]}-trial cost; target within 2x)")
    print(f"  isolated sweep {small} x {CHUNKS}: {trials} trials in {wall:.1f} s, "
          f"{saving:.2f} s saving ({saving / wall:.1%}; target under 5%)")
    print(f"  a bare interpreter peaks at {base:.0f} MiB")
    print(f"  in-process sweep {mid} x {CHUNKS}: peak {mid_peak:.0f} MiB ({mid_wall:.0f} s)")
    print(f"  in-process sweep {large} x {CHUNKS}: peak {large_peak:.0f} MiB ({large_wall:.0f} "
          f"s), {large_peak / mid_peak:.2f}x the {mid} peak (target flat, under 250 MiB)")
    print(f"  its report: {size_mb:.1f} MB")
    for name, (seconds, peak) in reads.items():
        target = " (target under 10 s and 200 MiB)" if name == "report render" else ""
        print(f"    {name:<14} {seconds:6.2f} s, peak {peak:4.0f} MiB{target}")


if __name__ == "__main__":
    main()
