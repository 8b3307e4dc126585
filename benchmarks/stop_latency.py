"""How long a Ctrl-C or SIGTERM takes to stop `reproduce_ert_timeout` mid-trial.

Each try starts the command in a session of its own on the simulated stack in real time
(`--realtime`, with `hang-at:30`, so each failing trial waits out the staging driver's
2 s timeout on the wall clock), waits until the first trial says it is running plus a
delay that varies per try (so the signal lands at different points of the trial), sends
the signal to the command's process group as a terminal's Ctrl-C does (SIGTERM: to the
command alone, as `kill` does), and times how long the command takes to exit. Measured
for each worker start (`fork-server`, `spawn`) and in-process (`--no-isolate`, the
baseline), in alternation: each round stops each of them once, at the same delay, so the
ratio to the baseline is taken round by round. Figures are min / median / max over the
rounds. Target: every stop within 0.5 s.

Usage: python benchmarks/stop_latency.py [--tries N] [--quick]
(--quick: three stops per figure, to check that it runs)
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from figures import MIN_ROUNDS, ratios, spread

HARNESS = [sys.executable, "-m", "harness", "reproduce", "--realtime", "--profile",
           "staging,hang-at:30", "--trials", "3", "--no-control"]
TARGET_S = 0.5


def one_stop(folder: str, extra: list[str], start: str | None, signum: int,
             delay_s: float) -> tuple[float, int]:
    env = dict(os.environ)
    if start:
        env["HARNESS_WORKER_START"] = start
    report = Path(tempfile.mkdtemp(dir=folder)) / "r.yaml"      # its own recipes folder too
    proc = subprocess.Popen([*HARNESS, *extra, "--out", str(report)], cwd=folder,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    assert proc.stderr is not None
    while b'"in-flight"' not in _read(report):     # the first trial is running
        if proc.poll() is not None:
            raise SystemExit(f"the command ended before its first trial: "
                             f"{proc.stderr.read().decode()[-500:]}")
        time.sleep(0.005)
    time.sleep(delay_s)
    sent = time.perf_counter()
    if signum == signal.SIGINT:
        os.killpg(proc.pid, signum)
    else:
        proc.send_signal(signum)
    proc.stderr.read()
    code = proc.wait()
    return time.perf_counter() - sent, code


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def main() -> None:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--tries", type=int, default=9, help="stops per figure (>= 3)")
    parser.add_argument("--quick", action="store_true",
                        help="three stops per figure: check that it runs")
    args = parser.parse_args()
    tries = MIN_ROUNDS if args.quick else max(MIN_ROUNDS, args.tries)
    modes = [("in-process (baseline)", ["--no-isolate"], None),
             ("fork-server", [], "fork-server"), ("spawn", [], "spawn")]
    signals = (signal.SIGINT, signal.SIGTERM)
    took: dict[tuple[str, int], list[float]] = {}
    codes: dict[tuple[str, int], set[int]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for n in range(tries):                 # a round: every mode and signal, one delay
            # the signal lands early, mid-way, late in the trial (quick: early only)
            delay = 0.05 + (0.2 if args.quick else 1.5) * n / max(1, tries - 1)
            for label, extra, start in modes:
                for signum in signals:
                    seconds, code = one_stop(folder, extra, start, signum, delay)
                    took.setdefault((label, signum), []).append(seconds)
                    codes.setdefault((label, signum), set()).add(code)
    print(f"time from the signal to the exit of reproduce_ert_timeout, {tries} alternating "
          "rounds, this run (min / median / max):")
    for label, _, _ in modes:
        for signum in signals:
            times = took[(label, signum)]
            base = took[(modes[0][0], signum)]
            ratio = "" if label == modes[0][0] else \
                f", {spread(ratios(times, base), '.1f')}x in-process"
            over = sum(t > TARGET_S for t in times)
            print(f"  {label:<22} {signal.Signals(signum).name:<8} {spread(times)} s{ratio}; "
                  f"over {TARGET_S:g} s: {over}/{len(times)} (target 0), exit "
                  f"{sorted(codes[(label, signum)])}")


if __name__ == "__main__":
    main()
