"""Every benchmark in benchmarks/ still runs: each in its quick mode, as a real process, all
at once, so a rename in the harness cannot break one unseen. What they measure is theirs to
print; this checks only that each ran to its end and printed its figure lines."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

# a line each prints last or near its end, figures and all
LAST_FIGURE = {
    "bisect_noise.py": r"naive bisect \(1 trial per depth\) +right +\d+/2 ",
    "bundle_scale.py": r"report bundle +[\d.]+ s, [\d.]+x the render, peak +\d+ MiB",
    "capture_flow.py": r"the whole flow [\d.]+ s \(target under 60 s\), [\d.]+x the "
                       r"shipped case's reproduce",
    "capture_scale.py": r"time ratio [\d.]+x for 10x the frames",
    "diagnose_accuracy.py": r"median device time per diagnosis: [\d.]+ min \(simulated clock; "
                            r"target under 5 min\)",
    "emulator_roundtrip.py": r"ratio emulated / simulated: +[\d.]+x|emulator: not measured here",
    "harness_overhead.py": r"ratio +[\d.]+x +\(target <= 1\.05x\)",
    "report_scale.py": r"report render +[\d.]+ s, peak +\d+ MiB",
    "reproduce_wall.py": r"--no-isolate \(baseline\) +[\d.]+ s +\([\d.]+x the interpreter; "
                         r"target under 5x\)",
    "sim_throughput.py": r"baseline +[\d,]+ commands/s",
    "start_up.py": r"making \d+ dataclasses +[\d.]+ s, compiling \d+ regular expressions "
                   r"+[\d.]+ s, \d+ garbage collections +[\d.]+ s",
    "stop_latency.py": r"in-process \(baseline\) +SIGTERM +median +[\d.]+ s",
}


def benchmark_scripts() -> list[str]:
    """The benchmarks: the scripts that run as a program (peak.py is a helper of two)."""
    return sorted(p.name for p in BENCHMARKS.glob("*.py")
                  if 'if __name__ == "__main__":' in p.read_text())


def test_every_benchmark_runs_in_its_quick_mode(tmp_path):
    if not BENCHMARKS.is_dir():
        pytest.skip(f"no benchmarks beside the tests ({BENCHMARKS})")
    scripts = benchmark_scripts()
    assert scripts == sorted(LAST_FIGURE)          # a new benchmark gets its line here
    running = {name: subprocess.Popen([sys.executable, str(BENCHMARKS / name), "--quick"],
                                      cwd=tmp_path, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
               for name in scripts}
    failed = []
    for name, process in running.items():
        out, err = process.communicate(timeout=300)
        if process.returncode != 0 or not re.search(LAST_FIGURE[name], out):
            failed.append(f"{name} --quick: exit {process.returncode}\n{out[-1500:]}"
                          f"{err[-1500:]}")
    assert not failed, "\n\n".join(failed)
