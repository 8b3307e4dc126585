"""Every benchmark in benchmarks/ still runs: each in its quick mode, as a real process, so a
rename in the harness cannot break one unseen. What they measure is theirs to
print; this checks only that each ran to its end and printed its figure lines."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

# a line each prints last or near its end, figures and all
_FIGURES = r"[-\d.,%]+ / [-\d.,%]+ / [-\d.,%]+"      # min / median / max

LAST_FIGURE = {
    "bisect_noise.py": r"naive bisect \(1 trial per depth\) +right +\d+/3, per round of seeds "
                       + _FIGURES,
    "bundle_scale.py": r"report bundle +" + _FIGURES + r" s, " + _FIGURES
                       + r"x the render, peak " + _FIGURES + r" MiB \(target under 3x",
    "capture_flow.py": r"the whole flow " + _FIGURES + r" s \(target under 60 s\), "
                       + _FIGURES + r"x the shipped case's reproduce",
    "capture_scale.py": r"time ratio " + _FIGURES + r"x for 10x the frames \(target <= 30x",
    "diagnose_accuracy.py": r"median device time per diagnosis +" + _FIGURES
                            + r" min per round \(simulated clock; target under 5 min\)",
    "incident_corpus.py": r"\d+ of \d+ incidents: right cause first, \d+ undetermined with "
                          r"the right next experiment, \d+ confidently wrong",
    "emulator_roundtrip.py": r"ratio emulated / simulated: +" + _FIGURES
                             + r"x|emulator: not measured here",
    "harness_overhead.py": r"ratio +" + _FIGURES + r"x +\(target <= 1\.02x\)",
    "report_scale.py": r"report render +" + _FIGURES + r" s, " + _FIGURES
                       + r"x the baseline \(target within 3x\), peak " + _FIGURES
                       + r" MiB; " + _FIGURES + r"x its 1\.\.4 peak \(target flat",
    "reproduce_wall.py": r"one more trial: isolated " + _FIGURES + r" ms, in-process "
                         + _FIGURES + r" ms \(" + _FIGURES
                         + r"x; target at most 2 ms and under 3x\)",
    "sim_throughput.py": r"full cycle / baseline +" + _FIGURES
                         + r"x +\(time per command; target <= 2\.5x\)",
    "start_up.py": r"making \d+ dataclasses " + _FIGURES + r" s, compiling \d+ regular "
                   r"expressions " + _FIGURES + r" s, \d+ garbage collections " + _FIGURES
                   + " s",
    "stop_latency.py": r"spawn +SIGTERM +" + _FIGURES + r" s, " + _FIGURES
                       + r"x in-process; over 0\.5 s: \d+/3 \(target 0\)",
    "sweep_cost.py": r"ratio, sweep / loop +" + _FIGURES + r"x +\(target <= 2x\)",
}


def benchmark_scripts() -> list[str]:
    """The benchmarks: the scripts that run as a program (peak.py is a helper of two)."""
    return sorted(p.name for p in BENCHMARKS.glob("*.py")
                  if 'if __name__ == "__main__":' in p.read_text())


def test_every_benchmark_has_its_figure_line():
    if not BENCHMARKS.is_dir():
        pytest.skip(f"no benchmarks beside the tests ({BENCHMARKS})")
    assert benchmark_scripts() == sorted(LAST_FIGURE)     # a new benchmark gets its line here


# one test a benchmark, so that parallel workers (pytest-xdist) share them out
@pytest.mark.parametrize("name", sorted(LAST_FIGURE))
def test_each_benchmark_runs_in_its_quick_mode(tmp_path, name):
    if not (BENCHMARKS / name).is_file():
        pytest.skip(f"no {name} beside the tests ({BENCHMARKS})")
    done = subprocess.run([sys.executable, str(BENCHMARKS / name), "--quick"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and re.search(LAST_FIGURE[name], done.stdout), \
        f"{name} --quick: exit {done.returncode}\n{done.stdout[-1500:]}{done.stderr[-1500:]}"


DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
ROW = re.compile(r"^\| `(?P<label>[^`]+)` \| `(?P<command>[^`]+)` \|")


def test_each_figure_the_docs_quote_is_a_line_its_benchmark_prints():
    # docs/benchmarks.md quotes each figure beside the command that prints it: the command
    # runs a benchmark that exists, and the figure's label is one that benchmark prints
    if not DOCS.is_file():
        pytest.skip(f"no {DOCS}")
    rows = [m for line in DOCS.read_text().splitlines() if (m := ROW.match(line))]
    assert len(rows) >= len(LAST_FIGURE)            # a figure of every benchmark at least
    wrong = []
    for row in rows:
        script = re.search(r"benchmarks/(\w+\.py)", row["command"])
        if script is None or script[1] not in benchmark_scripts():
            wrong.append(f"{row['command']}: names no benchmark")
        elif row["label"] not in (BENCHMARKS / script[1]).read_text():
            wrong.append(f"{row['label']!r}: {script[1]} prints no such figure")
    assert wrong == []
    assert {re.search(r"benchmarks/(\w+\.py)", r["command"])[1] for r in rows} == \
        set(LAST_FIGURE)                              # and every benchmark is quoted
