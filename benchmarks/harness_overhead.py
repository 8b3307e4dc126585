"""The harness's own host overhead per run, against a minimal hand-written pyxrt loop.

Both sides build, submit and wait for the same 42-run decode runlist on the
simulated stack, in this process, in the same run; the harness side also
classifies the outcome and times it (`harness.execution.session.run_chunk`). The two
sides alternate over many short rounds; each figure is min / median / max over them, and
the ratio is taken round by round (on a shared machine the least is the cost; the rest is
the neighbours). Target: at most 1.02x.

Usage: python benchmarks/harness_overhead.py [--seconds S] [--rounds N] [--quick]
(--quick: 3 rounds of 0.02 s, to check that it runs)
"""

from __future__ import annotations

import argparse
import gc
import time

from figures import alternate, ratios, spread

from harness.execution.backend import choose_backend
from harness.execution.runner import RunOptions, trial_spec
from harness.execution.session import _Loaded, run_chunk
from harness.sources.load import load_case
from harness.sources.packs import resolve_pack

DEPTH = 42
TARGET = 1.02


def per_run_us(fn, seconds: float) -> float:
    # The collector runs between rounds, not inside them, so neither side pays for the
    # other's garbage.
    gc.collect()
    gc.disable()
    try:
        fn()
        count, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            fn()
            count += 1
        return (time.perf_counter() - started) / (count * DEPTH) * 1e6
    finally:
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--seconds", type=float, default=0.25, help="time per side, per round")
    parser.add_argument("--rounds", type=int, default=20, help="alternating rounds per side")
    parser.add_argument("--quick", action="store_true",
                        help="3 rounds of 0.02 s: check that it runs")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.rounds = 0.02, 3

    case = load_case("minicpm5-2b-decode")
    backend = choose_backend("sim", "staging")
    pack = resolve_pack(case, simulated=True)
    plan = case.plan("monolithic")
    spec = trial_spec(case, pack, plan.name, list(plan.chunks), 0, RunOptions(trials=1))
    backend.prepare_trial(spec.seed)
    loaded = _Loaded(backend.xrt, spec)
    xrt = backend.xrt
    kernel, arguments = loaded.commands[0]
    opcode, instr, words, *bufs = [value for _, value in arguments]

    def minimal() -> None:
        rl = xrt.runlist(loaded.ctx)
        for _ in range(DEPTH):
            r = xrt.run(kernel)
            r.set_arg(0, opcode)
            r.set_arg(1, instr)
            r.set_arg(2, words)
            r.set_arg(3, bufs[0])
            r.set_arg(4, bufs[1])
            r.set_arg(5, bufs[2])
            r.set_arg(6, bufs[3])
            r.set_arg(7, bufs[4])
            rl.add(r)
        rl.execute()
        rl.wait()

    def harness_side() -> None:
        outcome = run_chunk(loaded, backend, 0, DEPTH)
        assert outcome.state == "COMPLETED"

    minimal_us, harness_us = alternate([lambda: per_run_us(minimal, args.seconds),
                                        lambda: per_run_us(harness_side, args.seconds)],
                                       args.rounds)
    print(f"42-run decode runlist on the simulated stack (staging), {len(minimal_us)} "
          "alternating rounds, this run (min / median / max):")
    print(f"  hand-written pyxrt loop   {spread(minimal_us)} us per run")
    print(f"  harness (run_chunk)       {spread(harness_us)} us per run")
    print(f"  ratio                     {spread(ratios(harness_us, minimal_us), '.3f')}x  "
          f"(target <= {TARGET:g}x)")


if __name__ == "__main__":
    main()
