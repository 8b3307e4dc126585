"""Run each trial in a worker process with a hard deadline.

A pyxrt wait holds the GIL and can block forever (STACK.md 3), so no thread
in the harness's own process could stop it. Instead each trial runs in the
harness's lean worker (``python -m harness.worker``, `harness.worker`): the parent
sends the trial as JSON on its stdin, the worker sends the result back as JSON
on a dedicated pipe, and the parent kills the worker's whole process tree if
the deadline passes (recording ``deadline``) or records ``crashed`` with the
exit status and the tail of stderr if it dies.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import psutil

from harness.results import TrialResult, TrialSpec, TrialStatus

STDERR_TAIL = 2000
KILL_WAIT_S = 10.0
PR_SET_PDEATHSIG = 1


def worker_command(backend: dict[str, Any], result_fd: int) -> list[str]:
    args = [sys.executable, "-m", "harness.worker", "--result-fd", str(result_fd),
            "--parent", str(os.getpid()), "--backend", backend["kind"]]
    if backend.get("profile"):
        args += ["--profile", backend["profile"]]
    return args


def run_isolated(spec: TrialSpec, backend: dict[str, Any], deadline_s: float,
                 latencies: dict[str, float]) -> TrialResult:
    """Run one trial in a worker; never raises for what the worker does."""
    read_fd, write_fd = os.pipe()
    payload = json.dumps({"spec": spec.to_json(), "latencies": latencies})
    started = time.perf_counter()
    try:
        proc = subprocess.Popen(worker_command(backend, write_fd), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                pass_fds=(write_fd,), start_new_session=True)
    finally:
        os.close(write_fd)
    chunks: list[bytes] = []
    reader = threading.Thread(target=_drain, args=(read_fd, chunks), daemon=True)
    reader.start()
    try:
        _, stderr = proc.communicate(payload.encode(), timeout=deadline_s)
    except subprocess.TimeoutExpired:
        kill_tree(proc.pid)
        try:
            _, stderr = proc.communicate(timeout=KILL_WAIT_S)
            how = "the worker's process tree was killed"
        except subprocess.TimeoutExpired:
            # A process blocked inside the driver cannot die until the driver lets go.
            stderr = b""
            how = (f"the worker did not die within {KILL_WAIT_S:g} s of SIGKILL (stuck in the "
                   "driver?); it is left behind")
        reader.join(timeout=KILL_WAIT_S)
        return TrialResult(spec.trial, TrialStatus.DEADLINE, _ms(started), spec.seed,
                           error=f"no answer within the {deadline_s:g} s deadline; {how}. "
                                 f"{_tail(stderr)}".strip())
    except BaseException:
        kill_tree(proc.pid)
        proc.wait()
        raise
    reader.join(timeout=5)
    raw = b"".join(chunks)
    if proc.returncode == 0 and raw:
        try:
            return TrialResult.from_json(json.loads(raw))
        except (ValueError, TypeError, KeyError) as err:
            return TrialResult(spec.trial, TrialStatus.CRASHED, _ms(started), spec.seed,
                               error=f"worker sent an unreadable result ({err})")
    return TrialResult(spec.trial, TrialStatus.CRASHED, _ms(started), spec.seed,
                       error=f"worker {_exit_text(proc.returncode)}; stderr: "
                             f"{_tail(stderr) or '(empty)'}")


def _drain(fd: int, out: list[bytes]) -> None:
    with os.fdopen(fd, "rb") as pipe:
        while True:
            block = pipe.read(65536)
            if not block:
                return
            out.append(block)


def kill_tree(pid: int) -> None:
    """Kill a process and everything it started; tolerate those already gone."""
    try:
        root = psutil.Process(pid)
        family = root.children(recursive=True) + [root]
    except psutil.NoSuchProcess:
        return
    for proc in family:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(family, timeout=5)


def _exit_text(code: int | None) -> str:
    if code is None:
        return "did not exit"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code} without a result"


def _tail(stderr: bytes | None) -> str:
    text = (stderr or b"").decode("utf-8", "replace").strip()
    return text[-STDERR_TAIL:]


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 3)
