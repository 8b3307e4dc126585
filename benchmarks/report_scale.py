"""What keeping a report costs as it grows, and what reading a big one costs.

Figures, each measured in this run on the simulated stack, in alternation, round after
round (min / median / max over the rounds; ratios taken round by round):
- save cost per trial (an in-flight entry and the result), fsynced as on hardware and
  as on the simulated stack, when the report already holds 10, 100, 1,000 and 10,000
  trials, each round on a report of its own; target: all within 2x of the 10-trial cost;
- an isolated sweep of depths 1..32 x 5 chunk sizes, one trial per cell: the share of
  its wall time spent in the report file; target under 5%;
- in-process sweeps of depths 1..256 and 1..1024 x 5 chunk sizes (3 trials per cell),
  each in a child process: its peak memory; target flat (the 1..1024 peak within 1.2x
  the 1..256 peak) and under 250 MiB (its report is about 290 MB);
- reading each sweep's report back: `report check`, `report render` and `diagnose`
  against the baseline, a child that parses each journal line as JSON and nothing else (target: each
  within 3x of it), each with its peak memory (target: flat, the larger report's within
  1.2x the smaller's); and `load_report` in brief (what `sweep --replay` reads).

Peaks are each child's own high-water mark (`benchmarks/peak.py`).

Usage: python benchmarks/report_scale.py [--rounds N] [--quick]   (--quick: saving with
10 and 100 held, sweeps of 1..2 isolated and 1..4 and 1..8 in-process, to check that it
runs)
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

from figures import MIN_ROUNDS, alternate, ratios, spread
from peak import REPORT_PEAK, bare_peak, harness_run

from harness.execution.backend import choose_backend
from harness.execution.runner import RunOptions, open_run
from harness.execution.session import run_trial
from harness.model.results import TrialResult, TrialStatus
from harness.report.fileformat import load_report
from harness.report.journal import ReportFile
from harness.sources.load import load_case

SIZES = (10, 100, 1_000, 10_000)
# the commands a user runs on a report, each held to parsing its journal lines
JUDGED_READERS = ("report check", "report render", "diagnose")
MEASURED = 200                 # trials timed at each size
CHUNKS = "1,4,8,16,32"

# the baseline a report's readers are held to: every journal line parsed as JSON
PARSE_LINES = """
import json, sys
with open(sys.argv[1], "rb") as report:
    for line in report:
        if line.startswith(b"journal:"):
            break
    for line in report:
        json.loads(line[2:])
"""
LOAD_BRIEF = ("import sys; from harness.report.fileformat import load_report; "
              "r = load_report(sys.argv[1], detail=False); "
              "print(sum(len(p.trials) for p in r.plans))")


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
    handle.close()
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


def sweep_saving_share(folder: Path, depths: str, clock: SaveClock) -> tuple[float, int]:
    """(share of its wall time in the report file, trials) of an isolated sweep, run as
    the command line runs it."""
    from harness.app.cli import main as cli
    clock.seconds = 0.0
    out = folder / "sweep.yaml"
    started = time.perf_counter()
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet), \
            contextlib.redirect_stderr(quiet):
        cli.main(["sweep", "minicpm5-2b-decode", "--depths", depths, "--chunks", CHUNKS,
                  "--trials", "1", "--out", str(out), "--force"], standalone_mode=False)
    wall = time.perf_counter() - started
    trials = sum(len(p.trials) for p in load_report(out).plans)
    return clock.seconds / wall, trials


def big_sweep(folder: Path, depths: str) -> tuple[float, float, Path]:
    """(peak MiB, seconds) of an in-process sweep in a child process; its report."""
    out = folder / f"sweep-{depths.replace('..', '-')}.yaml"
    wall, peak, done = harness_run(["sweep", "minicpm5-2b-decode", "--depths", depths,
                                    "--chunks", CHUNKS, "--no-isolate", "--yes", "--out",
                                    str(out), "--force"])
    if done.returncode != 0:
        raise SystemExit(f"the sweep failed: {done.stderr[-2000:]}")
    return peak / 2**20, wall, out


def python_child(code: str, report: Path) -> tuple[float, float]:
    """(seconds, peak MiB) of `python -c code report` as a process."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", REPORT_PEAK + code, str(report)],
                          capture_output=True, text=True, check=True)
    return time.perf_counter() - started, int(done.stderr.split("PEAK ")[1]) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--rounds", type=int, default=MIN_ROUNDS, help="alternating rounds")
    parser.add_argument("--quick", action="store_true",
                        help="10 and 100 trials held; sweeps of 1..2 isolated, 1..4 and 1..8 "
                             "in-process: check that it runs")
    args = parser.parse_args()
    small, mid, large = ("1..2", "1..4", "1..8") if args.quick else \
        ("1..32", "1..256", "1..1024")
    sizes, measured = ((10, 100), 20) if args.quick else (SIZES, MEASURED)
    rounds = max(MIN_ROUNDS, args.rounds)
    policies = {"fsync every entry (hardware)": 0.0, "fsync every 0.5 s (simulated)": 0.5}
    costs: dict[str, list[dict[int, float]]] = {name: [] for name in policies}
    clock = SaveClock()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for _ in range(rounds):
            for name, every in policies.items():
                costs[name].append(save_cost_per_trial(folder, every, sizes, measured))
        clock.install()
        shares, trials = [], 0
        for _ in range(rounds):
            share, trials = sweep_saving_share(folder, small, clock)
            shares.append(share)
        peaks: dict[str, list[float]] = {mid: [], large: []}
        walls: dict[str, list[float]] = {mid: [], large: []}
        reports: dict[str, Path] = {}

        def sweep(depths: str) -> float:
            peak, wall, reports[depths] = big_sweep(folder, depths)
            peaks[depths].append(peak)
            walls[depths].append(wall)
            return peak
        mid_peaks, large_peaks = alternate([lambda: sweep(mid), lambda: sweep(large)], rounds)
        size_mb = {depths: report.stat().st_size / 1e6 for depths, report in reports.items()}
        reads: dict[tuple[str, str], list[tuple[float, float]]] = {}

        def read(name: str, depths: str) -> float:
            report = reports[depths]
            if name == "parse each line (baseline)":
                seconds, peak = python_child(PARSE_LINES, report)
            elif name == "load in brief":
                seconds, peak = python_child(LOAD_BRIEF, report)
            else:
                seconds, peak_bytes, _ = harness_run([*name.split(), str(report)], check=True)
                peak = peak_bytes / 2**20
            reads.setdefault((name, depths), []).append((seconds, peak))
            return seconds
        names = ("parse each line (baseline)", "report check", "report render",
                 "diagnose", "load in brief")
        alternate([lambda name=name, depths=depths: read(name, depths)
                   for depths in (mid, large) for name in names], rounds)
        base = bare_peak() / 2**20
    print(f"reports on the simulated stack, {rounds} alternating rounds, this run "
          "(min / median / max):")
    for policy, rows in costs.items():
        print(f"  save one trial, {policy}:")
        for size in sizes:
            cost = [row[size] for row in rows]
            first = [row[sizes[0]] for row in rows]
            print(f"    {size:>6,} trials held   {spread(cost, '.1f')} us   "
                  f"({spread(ratios(cost, first))}x the {sizes[0]}-trial cost; target "
                  "within 2x)")
    print(f"  isolated sweep {small} x {CHUNKS}: {trials} trials, saving "
          f"{spread([s * 100 for s in shares], '.1f')}% of its wall time (target under 5%)")
    print(f"  a bare interpreter peaks at {base:.0f} MiB")
    print(f"  in-process sweep {mid} x {CHUNKS}: peak {spread(mid_peaks, '.0f')} MiB "
          f"({spread(walls[mid], '.0f')} s), its report {size_mb[mid]:.1f} MB")
    print(f"  in-process sweep {large} x {CHUNKS}: peak {spread(large_peaks, '.0f')} MiB "
          f"({spread(walls[large], '.0f')} s), its report {size_mb[large]:.1f} MB; "
          f"{spread(ratios(large_peaks, mid_peaks))}x the {mid} peak (target within 1.2x, "
          "under 250 MiB)")
    for depths in (mid, large):
        print(f"  reading the {depths} report ({size_mb[depths]:.1f} MB):")
        baseline = [seconds for seconds, _ in reads[(names[0], depths)]]
        for name in names:
            seconds = [s for s, _ in reads[(name, depths)]]
            peak = [p for _, p in reads[(name, depths)]]
            versus = "" if name == names[0] else \
                f", {spread(ratios(seconds, baseline))}x the baseline" + \
                (" (target within 3x)" if name in JUDGED_READERS else "")
            flat = ""
            if depths == large and name in JUDGED_READERS:
                smaller = [p for _, p in reads[(name, mid)]]
                flat = f"; {spread(ratios(peak, smaller))}x its {mid} peak (target flat, " \
                       "within 1.2x)"
            print(f"    {name:<27} {spread(seconds)} s{versus}, peak {spread(peak, '.0f')} "
                  f"MiB{flat}")


if __name__ == "__main__":
    main()
