"""A stand-in for FastFlowLM's `flm run MODEL` failing as it does on the #712 machine, for
tests: its first decode hangs and the machine's driver times the job out.

What it does, as the sources say each part happens on a machine:
- it prints FastFlowLM's loading line (``[FLM]  Loading model: <folder>``, its
  `header_print`, src/include/utils/debug_utils.hpp);
- it submits the decode: the staging driver's trace event "job run" goes into the trace
  buffer of the fabricated machine's tracefs (``TASK-PID [CPU] FLAGS TIMESTAMP: xdna_job:
  fence=(context:C, seqno:S), NAME seq#:N job run, op=0``: amd/xdna-driver 856409ca
  drivers/accel/amdxdna/aie2_ctx.c trace_xdna_job);
- the job hangs for `--hang` seconds; then the staging driver's timeout lines go into the
  machine's /dev/kmsg as it prints them (``aie2_tdr_detect: TDR timeout detected`` and the
  firmware's timeout capture block from ``aie2_set_cmd_timeout``, STACK.md 10), each record
  stamped with the kernel's clock (this machine's monotonic clock, in microseconds) and
  escaped as /dev/kmsg escapes it (a tab is ``\\x09``), and the job's "job free" is traced;
- it prints FastFlowLM's error, ``{"error":"runlist failed execution
  (ERT_CMD_STATE_TIMEOUT)"}`` (ROCm/FastFlowLM#712), and ends as `--end` says: `exit` (status
  1), `zero` (status 0, as `flm run` goes on to its prompt), `kill` (SIGKILL, as a crash
  ends it) or `wait` (it waits for its input to end, as the interactive CLI does).

Usage: failing_engine.py ROOT [--hang S] [--end exit|zero|kill|wait] [--no-trace]
ROOT is the fabricated machine's root folder (HARNESS_ROOT).
"""

import argparse
import os
import signal
import sys
import time
from pathlib import Path

BDF = "0000:c7:00.1"
FENCE, SEQNO, SEQ = 12, 7, 6
CAPTURE = ("Version: 2.0", "Report size: 0x230", "Context ID: 1", "DPU PC: 0x0",
           "TXN OP ID: 0x0", "Context PC: 0x0", "Fatal error type: 0x0",
           "Fatal error exception type: 0x0", "Fatal error exception PC: 0x0",
           "Fatal error app module: 0x0", "Fatal error task ID: 0",
           "Timed out sub command ID: 0")


def now_us() -> int:
    return int(time.monotonic() * 1e6)


def kmsg(root: Path, seq: int, text: str) -> None:
    escaped = text.replace("\\", "\\x5c").replace("\t", "\\x09")
    with open(root / "dev" / "kmsg", "a") as log:
        log.write(f"3,{seq},{now_us()},-;{escaped}\n")


def trace(root: Path, what: str) -> None:
    us = now_us()
    with open(root / "sys" / "kernel" / "tracing" / "trace", "a") as buffer:
        buffer.write(f"             flm-{os.getpid()} [003] ..... {us // 1_000_000}."
                     f"{us % 1_000_000:06d}: xdna_job: fence=(context:{FENCE}, "
                     f"seqno:{SEQNO}), hwctx.{os.getpid()}.1 seq#:{SEQ} {what}, op=0\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--hang", type=float, default=0.2)
    parser.add_argument("--end", choices=("exit", "zero", "kill", "wait"), default="exit")
    parser.add_argument("--no-trace", action="store_true")
    args = parser.parse_args()
    print("[FLM]  Loading model: /home/porter/.config/flm/models/MiniCPM5-2B-NPU2", flush=True)
    if not args.no_trace:
        trace(args.root, "job run")
    time.sleep(args.hang)
    prefix = f"amdxdna {BDF}: [drm] *ERROR* "
    kmsg(args.root, 100, prefix + "aie2_tdr_detect: TDR timeout detected")
    kmsg(args.root, 101, prefix + "aie2_set_cmd_timeout: Firmware timeout state capture:")
    for number, field in enumerate(CAPTURE):
        kmsg(args.root, 102 + number, prefix + f"aie2_set_cmd_timeout: \t{field}")
    if not args.no_trace:
        trace(args.root, "job free")
    print('{"error":"runlist failed execution (ERT_CMD_STATE_TIMEOUT)"}', flush=True)
    if args.end == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if args.end == "wait":
        sys.stdin.read()
    return 1 if args.end == "exit" else 0


if __name__ == "__main__":
    sys.exit(main())
