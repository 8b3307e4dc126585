"""What the emulated driver costs: an ioctl's round trip through the preload library and
the model process, and a 42-run runlist (chains 24 + 18 of NOP runs, 50 us each on the
device) submitted and waited for as XRT does it.

The baseline, measured in the same run: the same runlist through the simulated binding
in real time (`realtime` profile: the device's 2.1 ms pass on the wall clock, the rest is
the binding's own cost), so the ratio is what the emulator's transport adds.

Usage: python benchmarks/emulator_roundtrip.py [--runlists N] [--quick]
(--quick: 10 runlists, to check that it runs; the client half runs itself under the
preload: ``--client N``)
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
import time
from pathlib import Path

D = ord("d")
NOP = struct.pack("<5I", 0x06040100, 0x00000108, 1, 0x14, 5)


def iowr(nr: int, size: int) -> int:
    return (3 << 30) | (size << 16) | (D << 8) | nr


def ioctl(fd: int, request: int, fmt: str, *values) -> tuple:
    buf = bytearray(struct.pack(fmt, *values))
    fcntl.ioctl(fd, request, buf, True)
    return struct.unpack(fmt, buf)


def client(runlists: int) -> None:
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
    for _ in range(200):
        ioctl(fd, iowr(0x47, 16), "<IIQ", 9, 8, ctypes.addressof(qos))   # GET_POWER_MODE
    per_ioctl = (time.perf_counter() - start) / 200
    start = time.perf_counter()
    for _ in range(runlists):
        for handle, view in chains:
            view[0:1] = bytes([(view[0] & 0xF0) | 1])                      # NEW, as XRT
            seq = ioctl(fd, iowr(0x46, 56), "<QQIIQQIIQ", 0, 0, ctx, 0, handle, 0, 1, 0, 0)[8]
        points[0] = seq
        ioctl(fd, iowr(0xCA, 40), "<QQqIIII", ctypes.addressof(handles),
              ctypes.addressof(points), (1 << 63) - 1, 1, 3, 0, 0)
    per_runlist = (time.perf_counter() - start) / runlists
    print(json.dumps({"ioctl_s": per_ioctl, "runlist_s": per_runlist}))


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runlists", type=int, default=200)
    parser.add_argument("--quick", action="store_true",
                        help="10 runlists: checks that it runs, measures little")
    parser.add_argument("--client", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        client(args.client)
        return
    if args.quick:
        args.runlists = 10
    from harness.emulator import launch
    from harness.model.errors import EnvironmentNotReady
    from harness.sim.profiles import parse_profile
    try:
        emulation = launch.start(parse_profile("staging"))
    except EnvironmentNotReady as why:
        # the preload library is compiled here: without a compiler nothing can be measured
        print(f"emulator: not measured here ({why})")
        return
    try:
        done = subprocess.run([sys.executable, __file__, "--client", str(args.runlists)],
                              env=emulation.environment(), capture_output=True, text=True,
                              check=True)
    finally:
        emulation.stop()
    emulated = json.loads(done.stdout)
    baseline = simulated_realtime(args.runlists)
    print(f"ioctl round trip through the emulator: {emulated['ioctl_s'] * 1e6:8.1f} us")
    print(f"42-run runlist (24 + 18), emulated:    {emulated['runlist_s'] * 1e3:8.2f} ms")
    print(f"the same, simulated binding, realtime: {baseline * 1e3:8.2f} ms  (baseline; "
          "2.10 ms of it is the device's)")
    print(f"ratio emulated / simulated:            {emulated['runlist_s'] / baseline:8.2f}x")


if __name__ == "__main__":
    main()
