"""What the emulated driver costs: an ioctl's round trip through the preload library and
the model process, a 42-run runlist (chains 24 + 18 of NOP runs, 50 us each on the
device) submitted and waited for as XRT does it, and what `emulate` adds to a command.

Baselines, measured in the same run, in alternation, round after round (min / median /
max over the rounds, ratios taken round by round):
- the ioctl: the same Python call of `fcntl.ioctl` on a pipe (FIONREAD), which the kernel
  answers itself: the ratio is what the emulator's transport adds to a system call;
- the runlist: the same runlist through the simulated binding in real time (`realtime`
  profile: the device's 2.1 ms pass on the wall clock, the rest is the binding's own
  cost);
- `emulate -- true` against `runlist-harness --version`: the emulator's own start-up (the
  model process, the device's tree, the preload library from its cache).
With real XRT and its pyxrt installed (XILINX_XRT or /opt/xilinx/xrt), also one more
trial of `run --backend xrt` under `emulate --clock-rate 1000` (from runs of 2 and 32
trials): what real XRT costs a trial once the driver's timers no longer wait; and a
reproduce whose trial hangs, at the default clock rate against `--clock-rate 100`. Without
it, that line says it was not measured here. Every hung trial under `emulate` at its
default clock rate waits out the driver's real timeout (2 s staging, 60 s mainline).

Usage: python benchmarks/emulator_roundtrip.py [--runlists N] [--ioctls N] [--rounds R]
[--quick]   (--quick: 10 runlists and 200 ioctls, to check that it runs; the client half
runs itself under the preload: ``--client N M``)
"""

from __future__ import annotations

import argparse
import ctypes
import fcntl
import json
import mmap
import os
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

from figures import MIN_ROUNDS, alternate, ratios, spread

HARNESS = [sys.executable, "-m", "harness"]
D = ord("d")
NOP = struct.pack("<5I", 0x06040100, 0x00000108, 1, 0x14, 5)


def iowr(nr: int, size: int) -> int:
    return (3 << 30) | (size << 16) | (D << 8) | nr


def ioctl(fd: int, request: int, fmt: str, *values) -> tuple:
    buf = bytearray(struct.pack(fmt, *values))
    fcntl.ioctl(fd, request, buf, True)
    return struct.unpack(fmt, buf)


def client(runlists: int, ioctls: int) -> None:
    """Under the preload: make a context, 42 NOP runs in chains of 24 + 18, and time."""
    fd = os.open("/dev/accel/accel0", os.O_RDWR)
    keep = []

    def bo(kind: int, size: int):
        handle = ioctl(fd, iowr(0x43, 32), "<QQQII", 0, 0, size, kind, 0)[4]
        info = ioctl(fd, iowr(0x44, 48), "<QQIIQQQ", 0, 0, handle, 0, 0, 0, 0)
        view = None if info[4] == (1 << 64) - 1 else mmap.mmap(fd, max(size, 4096),
                                                               offset=info[4])
        return handle, info[6], view
    heap, heap_addr, heap_view = bo(2, 64 << 20)
    qos = (ctypes.c_uint32 * 8)()
    keep.append(qos)
    ctx, sync = ioctl(fd, iowr(0x40, 56), "<QQQIIIIIIII", 0, 0, ctypes.addressof(qos), 0, 0,
                      0, 32, 0, 0, 0, 0)[9:11]
    instr, instr_addr, _ = bo(3, 4096)
    heap_view[instr_addr - heap_addr:instr_addr - heap_addr + len(NOP)] = NOP
    runs = []
    for _ in range(42):
        handle, _, view = bo(4, 4096)
        regmap = struct.pack("<QQI", 3, instr_addr, 5) + bytes(40)
        view[:8 + len(regmap)] = struct.pack("<II", (16 << 12) | 1, 1) + regmap
        runs.append(handle)
    chains = []
    for start in (0, 24):
        handle, _, view = bo(4, 4096)
        members = runs[start:start + 24]
        payload = struct.pack("<6I", len(members), 0, 0, 0, 0, 0) + b"".join(
            struct.pack("<Q", h) for h in members)
        view[:4 + len(payload)] = struct.pack("<I", (19 << 23) | (len(payload) // 4 << 12)
                                              | 1) + payload
        chains.append((handle, view))
    handles, points = (ctypes.c_uint32 * 1)(sync), (ctypes.c_uint64 * 1)(0)
    keep += [handles, points]
    start = time.perf_counter()
    for _ in range(ioctls):
        ioctl(fd, iowr(0x47, 16), "<IIQ", 9, 8, ctypes.addressof(qos))   # GET_POWER_MODE
    per_ioctl = (time.perf_counter() - start) / ioctls
    read, write = os.pipe()
    start = time.perf_counter()
    for _ in range(ioctls):
        ioctl(read, termios.FIONREAD, "<I", 0)           # the kernel's own answer
    per_plain = (time.perf_counter() - start) / ioctls
    os.close(read)
    os.close(write)
    start = time.perf_counter()
    for _ in range(runlists):
        for handle, view in chains:
            view[0:1] = bytes([(view[0] & 0xF0) | 1])                      # NEW, as XRT
            seq = ioctl(fd, iowr(0x46, 56), "<QQIIQQIIQ", 0, 0, ctx, 0, handle, 0, 1, 0, 0)[8]
        points[0] = seq
        ioctl(fd, iowr(0xCA, 40), "<QQqIIII", ctypes.addressof(handles),
              ctypes.addressof(points), (1 << 63) - 1, 1, 3, 0, 0)
    per_runlist = (time.perf_counter() - start) / runlists
    print(json.dumps({"ioctl_s": per_ioctl, "plain_ioctl_s": per_plain,
                      "runlist_s": per_runlist}))


def simulated_realtime(runlists: int) -> float:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from simkit import Rig
    with tempfile.TemporaryDirectory() as folder:
        rig = Rig(Path(folder), "staging,realtime")
        rl, _ = rig.runlist(42)
        start = time.perf_counter()
        for _ in range(runlists):
            rl.execute()
            rl.wait()
        return (time.perf_counter() - start) / runlists


def wall(command: list[str], env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:6])}... ended {done.returncode}: "
                         f"{done.stderr[-1500:]}")
    return time.perf_counter() - started


def real_xrt(rounds: int, folder: str) -> list[str]:
    """What real XRT costs under `emulate`, or why it was not measured here: one more trial
    and the start-up of `run --backend xrt` at `--clock-rate 1000` (from runs of 2 and 32
    trials), and a reproduce whose trial hangs at the default clock rate against
    `--clock-rate 100` (the driver's timeout waited on the wall clock, or not)."""
    from harness.formats.xclbin_writer import flm_spec, synthesize
    from harness.probe.xrt import xrt_install
    found = xrt_install(os.environ.get("XILINX_XRT"))
    if found is None:
        return ["not measured here (no XRT installed: XILINX_XRT is unset and /opt/xilinx/xrt "
                "holds none)"]
    if os.environ.get("HARNESS_PYXRT") == "none":
        return ["not measured here (pyxrt sealed off: HARNESS_PYXRT=none)"]
    root = found[0]
    env = dict(os.environ, XILINX_XRT=root, PYTHONPATH=f"{root}/python",
               LD_LIBRARY_PATH=f"{root}/lib", PATH=f"{root}/bin{os.pathsep}{os.environ['PATH']}")
    if subprocess.run([sys.executable, "-c", "import pyxrt"], capture_output=True,
                      env=env).returncode != 0:
        return [f"not measured here (XRT {root} has no pyxrt that imports)"]
    pack = Path(folder) / "pack"                     # stand-ins of the case's xclbins
    pack.mkdir()
    for role in ("attn", "mm", "layer", "dequant"):
        (pack / f"{role}.xclbin").write_bytes(synthesize(flm_spec(f"Bench/{role}")))

    def trials(n: int) -> float:
        return wall([*HARNESS, "emulate", "--profile", "staging", "--clock-rate", "1000",
                     "--", *HARNESS, "run", "minicpm5-2b-decode", "--plan", "42", "--trials",
                     str(n), "--backend", "xrt", "--xclbins", str(pack), "--out",
                     f"{folder}/x{n}.yaml", "--force"], env)

    def hung(rate: str) -> float:
        started = time.perf_counter()
        subprocess.run([*HARNESS, "emulate", "--profile", "staging,hang-at:30", "--clock-rate",
                        rate, "--", *HARNESS, "reproduce", "--backend", "xrt", "--xclbins",
                        str(pack), "--trials", "1", "--no-control", "--out",
                        f"{folder}/h{rate}.yaml", "--force"], capture_output=True, env=env)
        return time.perf_counter() - started    # (it exits 1: the failure reproduced)
    few, many, waited, faster = alternate([lambda: trials(2), lambda: trials(32),
                                           lambda: hung("1"), lambda: hung("100")], rounds)
    per_trial = [(b - a) / 30 for a, b in zip(few, many, strict=True)]
    start_up = [a - 2 * t for a, t in zip(few, per_trial, strict=True)]
    return [f"{spread([t * 1e3 for t in per_trial], '.1f')} ms (XRT {found[1] or root})",
            f"{spread(start_up)} s",
            f"{spread(waited)} s at --clock-rate 1 (a trial's hang waits the driver's 2 s), "
            f"{spread(faster)} s at 100: {spread(ratios(waited, faster), '.1f')}x"]


def main() -> None:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--runlists", type=int, default=200, help="runlists per round")
    parser.add_argument("--ioctls", type=int, default=5000, help="ioctls per round")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (>= 3)")
    parser.add_argument("--quick", action="store_true",
                        help="10 runlists, 200 ioctls: checks that it runs, measures little")
    parser.add_argument("--client", type=int, nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        client(*args.client)
        return
    if args.quick:
        args.runlists, args.ioctls, args.rounds = 10, 200, MIN_ROUNDS
    from harness.emulator import launch
    from harness.model.errors import EnvironmentNotReady
    from harness.sim.profiles import parse_profile
    try:
        emulation = launch.start(parse_profile("staging"))
    except EnvironmentNotReady as why:
        # the preload library is compiled here: without a compiler nothing can be measured
        print(f"emulator: not measured here ({why})")
        return
    measured: list[dict[str, float]] = []

    def emulated() -> float:
        done = subprocess.run([sys.executable, __file__, "--client", str(args.runlists),
                               str(args.ioctls)], env=emulation.environment(),
                              capture_output=True, text=True, check=True)
        measured.append(json.loads(done.stdout))
        return measured[-1]["runlist_s"]
    try:
        runlist_s, baseline_s = alternate([emulated, lambda: simulated_realtime(
            args.runlists)], args.rounds)
    finally:
        emulation.stop()
    with tempfile.TemporaryDirectory() as folder:
        started_s, harness_s = alternate([
            lambda: wall([*HARNESS, "emulate", "--profile", "staging", "--", "true"]),
            lambda: wall([*HARNESS, "--version"])], args.rounds)
        xrt = real_xrt(args.rounds, folder)
    ioctl_us = [m["ioctl_s"] * 1e6 for m in measured]
    plain_us = [m["plain_ioctl_s"] * 1e6 for m in measured]
    print(f"the emulated driver (staging), {len(runlist_s)} alternating rounds, this run "
          "(min / median / max):")
    print(f"  ioctl round trip through the emulator ({args.ioctls:,} a round): "
          f"{spread(ioctl_us, '.1f')} us, {spread(ratios(ioctl_us, plain_us), '.0f')}x a plain "
          f"ioctl the kernel answers ({spread(plain_us, '.2f')} us)")
    print(f"  42-run runlist (24 + 18), emulated:    {spread([s * 1e3 for s in runlist_s])} ms")
    print(f"  the same, simulated binding, realtime: {spread([s * 1e3 for s in baseline_s])} ms "
          "(baseline; 2.10 ms of it is the device's)")
    print(f"  emulate's own start-up (emulate -- true): {spread(started_s)} s, "
          f"{spread(ratios(started_s, harness_s), '.1f')}x runlist-harness --version")
    print(f"  one more trial of real XRT under emulate --clock-rate 1000: {xrt[0]}")
    if len(xrt) > 1:
        print(f"  start-up of run --backend xrt under emulate: {xrt[1]}")
        print(f"  a hung reproduce under emulate (staging,hang-at:30, one trial a plan): {xrt[2]}")
    print(f"  ratio emulated / simulated:            "
          f"{spread(ratios(runlist_s, baseline_s))}x")


if __name__ == "__main__":
    main()
