"""What a sweep costs per runlist, against a hand-written pyxrt loop doing the same work.

Both sides run on the simulated stack (its default profile), each as a process of its
own started from here, timed from start to exit:
- the sweep: `python -m harness sweep minicpm5-2b-decode --depths 1..N --chunks 1
  --trials 1 --no-isolate`, as a user runs it (its report written, its grid printed),
  N(N+1)/2 one-run runlists in N trials;
- the baseline: the program a person writes with pyxrt for the same experiment, on the
  same xclbins and control code (`--loop N`, this file): for each depth, open the device,
  register the xclbins, make a hardware context for each, the kernel from the
  control-code ELF and its five buffers, as FastFlowLM does (each depth on contexts of its
  own, so that a hang cannot carry over), then one runlist of one run per layer, each
  executed, waited for and its outcome kept.

The two alternate, round after round, so that a busy spell of the machine hits both;
each figure is the side's wall time over its runlists, min / median / max over the
rounds, and the ratio is taken round by round. Target: the sweep at most 2x the loop.

Usage: python benchmarks/sweep_cost.py [--depth N] [--rounds R] [--quick]
(--quick: depths 1..16, 3 rounds, to check that it runs)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from figures import alternate, ratios, spread

CASE = "minicpm5-2b-decode"
TARGET = 2.0


def hand_written_loop(depths: int, profile: str | None) -> int:
    """The pyxrt program described above; the number of runlists it ran."""
    import harness.sim.pyxrt as pyxrt
    from harness.execution.runner import RunOptions, trial_spec
    from harness.formats.elf_writer import control_code_file
    from harness.formats.txn import nop_stream
    from harness.sim import control
    from harness.sources.load import load_case
    from harness.sources.packs import resolve_pack

    case = load_case(CASE)
    spec = trial_spec(case, resolve_pack(case, simulated=True), "x", [1], 0,
                      RunOptions(trials=1))
    control.configure(profile)          # what HARNESS_SIM_PROFILE gives a plain script
    elf_path = str(control_code_file(nop_stream(4)))
    kernel_name = spec.per_layer[0].kernel
    sizes = spec.per_layer[0].buffers
    runlists = 0
    for depth in range(1, depths + 1):
        dev = pyxrt.device(0)
        contexts = {role: pyxrt.hw_context(dev, dev.register_xclbin(pyxrt.xclbin(path)))
                    for role, path in spec.xclbins.items()}
        ctx = contexts[spec.runlist_context]
        k = pyxrt.ext.kernel(ctx, pyxrt.module(pyxrt.elf(elf_path)), kernel_name)
        bos = []
        for i, size in enumerate(sizes):
            bo = pyxrt.bo(dev, size, pyxrt.bo.host_only, k.group_id(3 + i))
            bo.sync(pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE)
            bos.append(bo)
        b0, b1, b2, b3, b4 = bos
        states = []
        for _ in range(depth):
            rl = pyxrt.runlist(ctx)
            r = pyxrt.run(k)
            r.set_arg(0, 3)
            r.set_arg(1, 0)
            r.set_arg(2, 0)
            r.set_arg(3, b0)
            r.set_arg(4, b1)
            r.set_arg(5, b2)
            r.set_arg(6, b3)
            r.set_arg(7, b4)
            rl.add(r)
            rl.execute()
            try:
                rl.wait()
                states.append("COMPLETED")
            except RuntimeError as err:
                states.append(str(err))
        runlists += len(states)
    return runlists


def timed(command: list[str], folder: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:4])}... failed ({done.returncode}): "
                         f"{done.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--depth", type=int, default=512, help="sweep depths 1..N")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (>= 3)")
    parser.add_argument("--profile", default=None,
                        help="simulated profile (default: the simulator's default)")
    parser.add_argument("--quick", action="store_true",
                        help="depths 1..16, 3 rounds: check that it runs")
    parser.add_argument("--loop", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.loop:
        hand_written_loop(args.loop, args.profile)
        return
    if args.quick:
        args.depth = 16
    count = args.depth * (args.depth + 1) // 2
    profile = ["--profile", args.profile] if args.profile else []
    loop = [sys.executable, str(Path(__file__).resolve()), "--loop", str(args.depth), *profile]
    sweep = [sys.executable, "-m", "harness", "sweep", CASE, "--depths", f"1..{args.depth}",
             "--chunks", "1", "--trials", "1", "--no-isolate", "--yes", "--force",
             "--out", "sweep.yaml", *profile]
    with tempfile.TemporaryDirectory() as folder:
        timed(sweep[:6] + ["1..2", *sweep[7:]], folder)      # the stand-in pack, made once
        loop_s, sweep_s = alternate([lambda: timed(loop, folder),
                                     lambda: timed(sweep, folder)], args.rounds)
    loop_us = [s / count * 1e6 for s in loop_s]
    sweep_us = [s / count * 1e6 for s in sweep_s]
    print(f"sweep --depths 1..{args.depth} --chunks 1 --trials 1 --no-isolate: {count:,} "
          f"one-run runlists in {args.depth} trials, simulated stack, each side a process "
          f"from start to exit, {len(loop_s)} alternating rounds, this run "
          "(min / median / max):")
    print(f"  hand-written pyxrt loop (baseline)  {spread(loop_us)} us per runlist")
    print(f"  sweep, in-process                   {spread(sweep_us)} us per runlist")
    print(f"  ratio, sweep / loop                 {spread(ratios(sweep_us, loop_us))}x  "
          f"(target <= {TARGET:g}x)")


if __name__ == "__main__":
    main()
