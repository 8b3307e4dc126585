"""How long a Ctrl-C or SIGTERM takes to stop `reproduce_ert_timeout` mid-trial.

Each try starts the command in a session of its own on the simulated stack in real time
(`--realtime`, with `hang-at:30`, so each failing trial waits out the staging driver's
2 s timeout on the wall clock), waits until the first trial says it is running plus a
delay that varies per try (so the signal lands at different points of the trial), sends
the signal to the command's process group as a terminal's Ctrl-C does (SIGTERM: to the
command alone, as `kill` does), and times how long the command takes to exit. Measured
for each worker start (`fork-server`, `spawn`) and in-process (`--no-isolate`, the
baseline). Target: every stop within 0.5 s.

Usage: python benchmarks/stop_latency.py [--tries N] [--quick]
(--quick: one stop per figure, to check that it runs)
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

HARNESS = [sys.executable, "-m", "harness", "reproduce", "--realtime", "--profile",
           "staging,hang-at:30", "--trials", "3", "--no-control"]


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=9, help="stops per figure")
    parser.add_argument("--quick", action="store_true",
                        help="one stop per figure: check that it runs")
    args = parser.parse_args()
    if args.quick:
        args.tries = 1
    modes = [("fork-server", [], "fork-server"), ("spawn", [], "spawn"),
             ("in-process (baseline)", ["--no-isolate"], None)]
    print(f"time from the signal to the exit of reproduce_ert_timeout, {args.tries} tries "
          "each, this run:")
    with tempfile.TemporaryDirectory() as folder:
        base = None
        for label, extra, start in modes:
            for signum in (signal.SIGINT, signal.SIGTERM):
                times, codes = [], set()
                for n in range(args.tries):
                    delay = 0.05 + 1.5 * n / max(1, args.tries - 1)
                    took, code = one_stop(folder, extra, start, signum, delay)
                    times.append(took)
                    codes.add(code)
                times.sort()
                name = signal.Signals(signum).name
                worst = times[-1]
                if start is None and signum == signal.SIGINT:
                    base = times[len(times) // 2]
                ratio = f"  median {times[len(times) // 2] / base:4.1f}x in-process" \
                    if base else ""
                over = sum(t > 0.5 for t in times)
                print(f"  {label:<22} {name:<8} median {times[len(times) // 2]:5.2f} s, "
                      f"worst {worst:5.2f} s, over 0.5 s: {over}/{len(times)}, "
                      f"exit {sorted(codes)}{ratio}")


if __name__ == "__main__":
    main()
