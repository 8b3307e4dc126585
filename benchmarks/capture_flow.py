"""The engine's own commands as the main job, on the simulated stack: wall time of
`capture record` of the stand-in engine (tests/standin_engine.py, FastFlowLM's `flm run` as
the tests play it: prefill, then a 42-run runlist per token) and of
`reproduce_ert_timeout --capture` on what it wrote, against `reproduce_ert_timeout` of the
shipped case in the same run (the baseline), each under `hang-at:30` (the 42-run runlist
fails, the cut completes); the three in alternation, round after round, min / median /
max over the rounds, the ratio taken round by round. Target: the whole flow under 60 s.

Usage: python benchmarks/capture_flow.py [--repeat N] [--quick]
(--quick: three rounds: to check that it runs)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from figures import MIN_ROUNDS, ratios, spread

TESTS = Path(__file__).resolve().parents[1] / "tests"
HARNESS = [sys.executable, "-m", "harness"]
PROFILE = "staging,hang-at:30"


def timed(args: list[str], folder: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(args, cwd=folder, capture_output=True, text=True, timeout=600)
    took = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return took


def one_round(base: Path, number: int) -> tuple[float, float, float]:
    folder = base / f"round-{number}"
    folder.mkdir()
    sys.path.insert(0, str(TESTS))
    from machines import engine_pack
    pack = engine_pack(folder / "pack", f"flow-{number}")
    record = timed([*HARNESS, "capture", "record", "--frames", "8", "--out", "cap",
                    "--profile", PROFILE, "--", sys.executable,
                    str(TESTS / "standin_engine.py"), str(pack)], folder)
    replayed = timed([*HARNESS, "reproduce", "--capture", "cap", "--profile", PROFILE,
                      "--out", "captured.yaml"], folder)
    baseline = timed([*HARNESS, "reproduce", "--profile", PROFILE, "--out", "case.yaml"],
                     folder)
    return record, replayed, baseline


def main() -> None:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--repeat", type=int, default=MIN_ROUNDS, help="rounds (>= 3)")
    parser.add_argument("--quick", action="store_true", help="three rounds: check that it runs")
    args = parser.parse_args()
    rounds = MIN_ROUNDS if args.quick else max(MIN_ROUNDS, args.repeat)
    os.environ.pop("HARNESS_SIM_PROFILE", None)
    with tempfile.TemporaryDirectory() as scratch:
        figures = [one_round(Path(scratch), n) for n in range(rounds)]
    record = [f[0] for f in figures]
    replayed = [f[1] for f in figures]
    baseline = [f[2] for f in figures]
    flow = [r + p for r, p in zip(record, replayed, strict=True)]
    print(f"profile {PROFILE}, {rounds} alternating rounds, this run (min / median / max):")
    print(f"capture record --frames 8 (stand-in engine)    {spread(record)} s")
    print(f"reproduce_ert_timeout --capture                {spread(replayed)} s")
    print(f"reproduce_ert_timeout (shipped case, baseline) {spread(baseline)} s")
    print(f"the whole flow {spread(flow)} s (target under 60 s), "
          f"{spread(ratios(flow, baseline))}x the shipped case's reproduce")


if __name__ == "__main__":
    main()
