"""How many commands per second the simulated stack runs, in process, on one core.

Three figures, measured in alternation, round after round, in this run:
- full cycle: create 42 runs, set their 8 arguments, add them to a runlist,
  execute and wait (what the harness does for every trial);
- re-execute: execute and wait on an already built runlist of 42;
- baseline: the same Python loop of object creation and calls with every
  simulated pyxrt call replaced by a no-op, to show what the loop costs.
Each round measures each for `--seconds`; the figures are min / median / max over the
rounds, and the ratio of the full cycle to the baseline is taken round by round.
Target: the full cycle at most 2.5x its no-op loop.

Usage: python benchmarks/sim_throughput.py [--seconds S] [--rounds N] [--quick]
(--quick: 3 rounds of 0.02 s, to check that it runs)
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from pathlib import Path

import numpy as np
from figures import alternate, ratios, spread

import harness.sim.pyxrt as pyxrt
from harness.formats.txn import nop_stream, word_count
from harness.formats.xclbin_writer import flm_spec, synthesize
from harness.sim import control

DEPTH = 42
TARGET = 2.5


def setup(folder: Path):
    path = folder / "layer.xclbin"
    path.write_bytes(synthesize(flm_spec("Bench/layer")))
    control.configure("staging")
    dev = pyxrt.device(0)
    x = pyxrt.xclbin(str(path))
    dev.register_xclbin(x)
    ctx = pyxrt.hw_context(dev, x.get_uuid())
    k = pyxrt.kernel(ctx, "MLIR_AIE")
    stream = nop_stream(8)
    instr = pyxrt.bo(dev, len(stream), pyxrt.bo.cacheable, k.group_id(1))
    instr.write(np.frombuffer(stream, dtype=np.uint8), 0)
    instr.sync(pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE)
    bufs = [pyxrt.bo(dev, 4096, pyxrt.bo.host_only, k.group_id(3 + i)) for i in range(5)]
    return ctx, k, instr, word_count(stream), bufs


class _Null:
    """Stands in for every pyxrt object in the baseline loop."""

    def __init__(self, *args):
        pass

    def set_arg(self, index, value):
        pass

    def add(self, run):
        pass

    def execute(self):
        pass

    def wait(self):
        pass


def full_cycle(runlist_cls, run_cls, ctx, k, instr, words, bufs) -> None:
    rl = runlist_cls(ctx)
    for _ in range(DEPTH):
        r = run_cls(k)
        r.set_arg(0, 3)
        r.set_arg(1, instr)
        r.set_arg(2, words)
        for i, b in enumerate(bufs):
            r.set_arg(3 + i, b)
        rl.add(r)
    rl.execute()
    rl.wait()


def rate(fn, seconds: float) -> float:
    """Commands per second of `fn` (one runlist of DEPTH), the collector paused while it
    runs (collections between rounds hit no figure)."""
    gc.collect()
    gc.disable()
    try:
        fn()                               # warm up
        count, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            fn()
            count += 1
        return count * DEPTH / (time.perf_counter() - started)
    finally:
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--seconds", type=float, default=0.5, help="time per figure, per round")
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds (>= 3)")
    parser.add_argument("--quick", action="store_true",
                        help="3 rounds of 0.02 s: check that it runs")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.rounds = 0.02, 3
    with tempfile.TemporaryDirectory() as tmp:
        ctx, k, instr, words, bufs = setup(Path(tmp))
        built = pyxrt.runlist(ctx)
        for _ in range(DEPTH):
            r = pyxrt.run(k)
            for i, v in enumerate([3, instr, words, *bufs]):
                r.set_arg(i, v)
            built.add(r)

        def again() -> None:
            built.execute()
            built.wait()

        full, reexec, baseline = alternate([
            lambda: rate(lambda: full_cycle(pyxrt.runlist, pyxrt.run, ctx, k, instr, words,
                                            bufs), args.seconds),
            lambda: rate(again, args.seconds),
            lambda: rate(lambda: full_cycle(_Null, _Null, ctx, k, instr, words, bufs),
                         args.seconds)], args.rounds)
    print(f"simulated stack, staging profile, runlists of {DEPTH}, one core, {len(full)} "
          "alternating rounds, this run (min / median / max):")
    print(f"  full cycle   {spread(full, ',.0f')} commands/s")
    print(f"  re-execute   {spread(reexec, ',.0f')} commands/s")
    print(f"  baseline     {spread(baseline, ',.0f')} commands/s   (the loop with no-op calls)")
    print(f"  full cycle / baseline   {spread(ratios(baseline, full))}x  "
          f"(time per command; target <= {TARGET:g}x)")


if __name__ == "__main__":
    main()
