"""What keeping a report costs as it grows: saving per trial, the share of a sweep spent
saving, loading a big report, and a big sweep's memory.

Four figures, each measured in this run on the simulated stack:
- save cost per trial (an in-flight entry and the result), fsynced as on hardware and
  as on the simulated stack, when the report already holds 10, 100, 1,000 and 10,000
  trials; target: all within 2x of each other (the 10-trial figure is the baseline);
- an isolated sweep of depths 1..32 x 5 chunk sizes, one trial per cell: the share of
  its wall time spent in the report file; target under 5%;
- a sweep of depths 1..256 x 5 chunk sizes in-process (3 trials per cell), in a child
  process: its peak memory (target under 200 MiB) and its report's size;
- loading that report back (`load_report`); target under 3 s for ~18 MB;
- rendering it (`report render`, a separate process), in seconds.

Usage: python benchmarks/report_scale.py [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def save_cost_per_trial(folder: Path, sync_every_s: float) -> dict[int, float]:
    """Microseconds to save one trial, by how many the report already holds, fsyncing at
    most every `sync_every_s` (0: every entry, as on the hardware path)."""
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
    for size in SIZES:
        while len(plan.trials) < size:
            save_one()
        started = time.perf_counter()
        for _ in range(MEASURED):
            save_one()
        costs[size] = (time.perf_counter() - started) / MEASURED * 1e6
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


def big_sweep(folder: Path, depths: str) -> tuple[float, Path]:
    """Peak resident MiB of an in-process sweep in a child process; its report."""
    out = folder / "big.yaml"
    subprocess.run([sys.executable, "-m", "harness", "sweep", "minicpm5-2b-decode",
                    "--depths", depths, "--chunks", CHUNKS, "--no-isolate", "--yes",
                    "--out", str(out)], check=True, capture_output=True)
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return peak_kib / 1024, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="smaller sweeps (1..8 isolated, 1..64 in-process)")
    args = parser.parse_args()
    small, large = ("1..8", "1..64") if args.quick else ("1..32", "1..256")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        policies = {"fsync every entry (hardware)": save_cost_per_trial(folder, 0.0),
                    "fsync every 0.5 s (simulated)": save_cost_per_trial(folder, 0.5)}
        saving, wall, trials = sweep_saving_share(folder, small)
        peak_mib, report = big_sweep(folder, large)
        started = time.perf_counter()
        loaded = load_report(report)
        load_s = time.perf_counter() - started
        size_mb = report.stat().st_size / 1e6
        held = sum(len(p.trials) for p in loaded.plans)
        started = time.perf_counter()
        rendered = subprocess.run([sys.executable, "-m", "harness", "report", "render",
                                   str(report)], capture_output=True, text=True, check=True)
        render_s = time.perf_counter() - started
    print("reports on the simulated stack, this run:")
    for policy, costs in policies.items():
        base = costs[SIZES[0]]
        print(f"  save one trial, {policy}:")
        for size, cost in costs.items():
            print(f"    {size:>6,} trials held   {cost:8.1f} us   ({cost / base:.2f}x the "
                  f"{SIZES[0]}-trial cost; target within 2x)")
    print(f"  isolated sweep {small} x {CHUNKS}: {trials} trials in {wall:.1f} s, "
          f"{saving:.2f} s saving ({saving / wall:.1%}; target under 5%)")
    print(f"  in-process sweep {large} x {CHUNKS}: peak {peak_mib:.0f} MiB "
          "(target under 200 MiB)")
    print(f"  load its report ({size_mb:.1f} MB, {held:,} trials)   {load_s:.2f} s "
          "(target under 3 s)")
    print(f"  render it (`report render`, {len(rendered.stdout):,} characters)   "
          f"{render_s:.2f} s (target under 10 s for a 1..1024 x 5 report)")


if __name__ == "__main__":
    main()
