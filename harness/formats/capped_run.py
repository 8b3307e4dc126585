"""Running another program (`journalctl`, `xrt-smi`, `flm`) with its output read as a stream
up to a cap, and a deadline after which its whole process group is ended.

A program's output is whatever it chooses to print: `journalctl` over a busy boot prints
gigabytes, and reading all of it before cutting it (as `capture_output=True` does) costs
that much memory. Here each stream is read as it comes and kept up to `max_bytes`; past
that the program is stopped, its output marked cut. The program runs in a session of its
own, so that on the deadline, on the cap, on Ctrl-C, and after it exits, every process it
started is ended with it: nothing it left behind runs on after the harness.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import subprocess

DEFAULT_MAX_BYTES = 8 << 20
_READ = 1 << 16


@dataclass(frozen=True)
class Completed:
    returncode: int | None        # None: stopped at the deadline
    stdout: str
    stderr: str
    truncated: bool = False       # an output reached the cap and the program was stopped


def run_capped(argv: list[str], timeout_s: float, max_bytes: int = DEFAULT_MAX_BYTES
               ) -> Completed | None:
    """Run `argv` with no input for at most `timeout_s` seconds, keeping at most
    `max_bytes` of each output; None when it cannot start."""
    # imported here: most commands run no program, and start-up would pay for these
    import selectors
    import subprocess
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except (OSError, ValueError):
        return None
    deadline = time.monotonic() + timeout_s
    assert proc.stdout is not None and proc.stderr is not None     # both PIPE
    kept = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    truncated = late = exited = False
    try:
        with selectors.DefaultSelector() as selector:
            for stream, held in kept.items():
                selector.register(stream, selectors.EVENT_READ, held)
            while selector.get_map() and not truncated:
                left = deadline - time.monotonic()
                if left <= 0:
                    late = True
                    break
                # once the program itself has exited, what it left running may hold its
                # output open: take what is there, and stop
                ready = selector.select(0 if exited else min(left, 0.1))
                if not ready and exited:
                    break
                for key, _ in ready:
                    chunk = os.read(key.fd, _READ)
                    if not chunk:
                        selector.unregister(key.fileobj)
                        continue
                    held = key.data
                    room = max_bytes - len(held)
                    held += chunk[:room]
                    if len(chunk) > room:
                        truncated = True        # enough: the rest is never read
                exited = exited or _exited(proc.pid)
        if not (late or truncated):
            late = not _exits_by(proc.pid, deadline)
    finally:
        _end(proc)
    return Completed(None if late else proc.returncode, _text(kept[proc.stdout]),
                     _text(kept[proc.stderr]), truncated)


def _exited(pid: int) -> bool:
    """Whether the program has exited, without reaping it: unreaped, its pid (its group's
    id) cannot be given to another process before the group is ended."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _exits_by(pid: int, deadline: float) -> bool:
    """Wait (without reaping) for the program to exit; False at the deadline."""
    pause = 0.001
    while not _exited(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
    return True


def _end(proc: subprocess.Popen[bytes]) -> None:
    """End the program's whole group (what it left running too), then reap it."""
    import signal
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    proc.wait()


def _text(data: bytearray) -> str:
    return data.decode("utf-8", "replace")
