"""The engine's own commands as the main job, on the simulated stack: wall time of
`capture record` of the stand-in engine (tests/standin_engine.py, FastFlowLM's `flm run` as
the tests play it: prefill, then a 42-run runlist per token) and of
`reproduce_ert_timeout --capture` on what it wrote, against `reproduce_ert_timeout` of the
shipped case in the same run (the baseline), each under `hang-at:30` (the 42-run runlist
fails, the cut completes). Target: the whole flow under 60 s.

Usage: python benchmarks/capture_flow.py [--repeat N] [--quick]
(--quick: each figure once: to check that it runs)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds = 1 if args.quick else args.repeat
    os.environ.pop("HARNESS_SIM_PROFILE", None)
    with tempfile.TemporaryDirectory() as scratch:
        figures = [one_round(Path(scratch), n) for n in range(rounds)]
    record = min(f[0] for f in figures)
    replayed = min(f[1] for f in figures)
    baseline = min(f[2] for f in figures)
    print(f"best of {rounds} round(s), profile {PROFILE}")
    print(f"capture record --frames 8 (stand-in engine)   {record:6.2f} s")
    print(f"reproduce_ert_timeout --capture               {replayed:6.2f} s")
    print(f"reproduce_ert_timeout (shipped case, baseline) {baseline:6.2f} s")
    print(f"the whole flow {record + replayed:.2f} s (target under 60 s), "
          f"{(record + replayed) / baseline:.2f}x the shipped case's reproduce")


if __name__ == "__main__":
    main()
