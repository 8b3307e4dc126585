"""Run each trial in a worker process with a hard deadline.

A pyxrt wait holds the GIL and can block forever (STACK.md 3), so no thread
in the harness's own process could stop it. Instead each trial runs in one of
the harness's lean workers (`harness.execution.worker`), started one of two ways, chosen
by ``HARNESS_WORKER_START`` (default ``fork-server`` where the OS can fork):

- ``fork-server``: a server started once per run, early, that never opens the
  device, forks a child per trial. A trial then starts in milliseconds instead of
  an interpreter's start-up.
- ``spawn``: a fresh interpreter per trial, the trial as JSON on its stdin, the
  result as JSON on a dedicated pipe.

Either way the parent kills the trial's whole process tree if the deadline passes
(recording ``deadline``), or records ``crashed`` with the exit status and the tail
of its output if it dies, and each result says which way its worker started.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

import psutil

from harness.execution.worker import FORK_SERVER, PAGES, SPAWN
from harness.formats.scratch import set_owners, sweep_abandoned
from harness.model.cleanups import at_exit
from harness.model.errors import BadInput
from harness.model.results import TrialResult, TrialSpec, TrialStatus

STDERR_TAIL = 2000
KILL_WAIT_S = 10.0
WORKER_START_ENV = "HARNESS_WORKER_START"
STARTS = (FORK_SERVER, SPAWN)


def worker_start() -> str:
    """How workers start in this run: HARNESS_WORKER_START, or the fastest the OS allows."""
    chosen = os.environ.get(WORKER_START_ENV) or (FORK_SERVER if hasattr(os, "fork") else SPAWN)
    if chosen not in STARTS:
        raise BadInput(f"{WORKER_START_ENV}={chosen!r}: use one of {', '.join(STARTS)}")
    if chosen == FORK_SERVER and not hasattr(os, "fork"):
        raise BadInput(f"{WORKER_START_ENV}={FORK_SERVER} needs an OS that can fork; use "
                       f"{SPAWN}")
    return chosen


def worker_command(backend: dict[str, Any], *extra: str) -> list[str]:
    args = [sys.executable, "-m", "harness.execution.worker", "--parent", str(os.getpid()),
            "--backend", backend["kind"], *extra]
    if backend.get("profile") and backend["kind"] == "sim":
        # (an emulated NPU's profile is the emulator's: the worker finds it running under it)
        args += ["--profile", backend["profile"]]
    return args


def run_isolated(spec: TrialSpec, backend: dict[str, Any], deadline_s: float,
                 latencies: dict[str, float]) -> TrialResult:
    """Run one trial in a worker; never raises for what the worker does."""
    if worker_start() != FORK_SERVER:
        return _spawned(spec, backend, deadline_s, latencies)
    for _ in range(2):                 # a server gone since the last trial is replaced once
        try:
            return _server_for(backend).run(spec, deadline_s, latencies)
        except ServerGone as gone:
            failure = gone
    return TrialResult(spec.trial, TrialStatus.CRASHED, None, spec.seed, error=str(failure))


def prepare(backend: dict[str, Any]) -> None:
    """Start the fork server now, so that it imports while the harness gets ready."""
    if worker_start() == FORK_SERVER:
        _server_for(backend)


def shutdown() -> None:
    """Stop every fork server this process started (they also stop when it exits)."""
    while _SERVERS:
        _SERVERS.popitem()[1].close()


def _spawned(spec: TrialSpec, backend: dict[str, Any], deadline_s: float,
             latencies: dict[str, float]) -> TrialResult:
    read_fd, write_fd = os.pipe()
    payload = json.dumps({"spec": spec.to_json(), "latencies": latencies})
    started = time.perf_counter()
    try:
        proc = subprocess.Popen(worker_command(backend, "--result-fd", str(write_fd)),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, pass_fds=(write_fd,),
                                start_new_session=True)
    finally:
        os.close(write_fd)
    # On Ctrl-C, communicate() waits 0.25 s for the child to end of the same Ctrl-C; this
    # worker has a session of its own and never gets it: it is killed below instead.
    proc._sigint_wait_secs = 0  # type: ignore[attr-defined]  # CPython's, not typeshed's
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
            stderr = b""
            how = _STUCK
        reader.join(timeout=KILL_WAIT_S)
        return _deadline(spec, started, deadline_s, how, _tail(stderr))
    except BaseException:
        kill_tree(proc.pid)
        proc.wait()
        raise
    reader.join(timeout=5)
    raw = b"".join(chunks)
    try:
        result = json.loads(raw) if raw else None
    except ValueError as err:
        return _unreadable(spec, started, err)
    return _outcome(spec, started, proc.returncode, result, _tail(stderr))


# A process blocked inside the driver cannot die until the driver lets go.
_STUCK = (f"the worker did not die within {KILL_WAIT_S:g} s of SIGKILL (stuck in the driver?); "
          "it is left behind")


def _deadline(spec: TrialSpec, started: float, deadline_s: float, how: str,
              output: str) -> TrialResult:
    return TrialResult(spec.trial, TrialStatus.DEADLINE, _ms(started), spec.seed,
                       error=f"no answer within the {deadline_s:g} s deadline; {how}. "
                             f"{output}".strip())


def _outcome(spec: TrialSpec, started: float, code: int | None, result: Any,
             output: str) -> TrialResult:
    """The trial a worker answered (`result`, its JSON) or, when it sent none, what its
    exit status and the tail of its `output` say."""
    if code == 0 and result is not None:
        try:
            return TrialResult.from_json(result)
        except (ValueError, TypeError, KeyError) as err:
            return _unreadable(spec, started, err)
    return TrialResult(spec.trial, TrialStatus.CRASHED, _ms(started), spec.seed,
                       error=f"worker {_exit_text(code)}; stderr: {output or '(empty)'}")


def _unreadable(spec: TrialSpec, started: float, err: Exception) -> TrialResult:
    return TrialResult(spec.trial, TrialStatus.CRASHED, _ms(started), spec.seed,
                       error=f"worker sent an unreadable result ({err})")


WORKERS_PREFIX = "harness-workers-"


def sweep_abandoned_folders(root: Path | None = None) -> list[Path]:
    """Remove the worker folders of killed runs whose harness and fork server are both
    gone (`harness.formats.scratch`)."""
    return sweep_abandoned(WORKERS_PREFIX, root)


class ServerGone(Exception):
    """The fork server ended (or stopped answering) between trials."""


class ForkServer:
    """One `python -m harness.execution.worker --serve` and the files its children write."""

    def __init__(self, backend: dict[str, Any]) -> None:
        sweep_abandoned_folders()
        self.folder = Path(tempfile.mkdtemp(prefix=WORKERS_PREFIX))
        self.log = self.folder / "server.out"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(worker_command(backend, "--serve", "--pages",
                                                        str(self.folder / PAGES)),
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=log, start_new_session=True)
        # who uses this folder: the next run removes it once both are gone
        set_owners(self.folder, os.getpid(), self.proc.pid)
        self.buffer = bytearray()
        self.broken = False

    def run(self, spec: TrialSpec, deadline_s: float, latencies: dict[str, float]
            ) -> TrialResult:
        try:
            return self._run(spec, deadline_s, latencies)
        except BaseException:
            # a stop (or a fault) between the order and its reply: the server may be running
            # that trial still, so it is not used again, and closing it kills it at once
            self.broken = True
            raise

    def _run(self, spec: TrialSpec, deadline_s: float, latencies: dict[str, float]
             ) -> TrialResult:
        started = time.perf_counter()
        order = {"request": {"spec": spec.to_json(), "latencies": latencies}}
        try:
            stdin = _pipe(self.proc.stdin)
            stdin.write((json.dumps(order) + "\n").encode())
            stdin.flush()
            forked = self._reply(time.monotonic() + KILL_WAIT_S)
        except (OSError, ServerGone):
            forked = None
        if forked is None:
            self.broken = True
            raise ServerGone(f"the fork server did not fork a worker: {self._log_tail()}")
        pid = int(forked["pid"])
        try:
            ended = self._reply(time.monotonic() + deadline_s)
            if ended is None:
                kill_tree(pid)
                ended = self._reply(time.monotonic() + KILL_WAIT_S)
                if ended is None:      # the server waits on the stuck worker: leave both
                    self.broken = True
                how = "the worker's process tree was killed" if ended else _STUCK
                return _deadline(spec, started, deadline_s, how,
                                 _tail((ended or {}).get("output")))
        except ServerGone as gone:     # its children die with it (PDEATHSIG)
            self.broken = True
            return TrialResult(spec.trial, TrialStatus.CRASHED, _ms(started), spec.seed,
                               error=f"{gone}; the worker died with it")
        except BaseException:
            kill_tree(pid)
            self.broken = True         # its reply for this worker is never read
            raise
        return _outcome(spec, started, int(ended["status"]), ended.get("result"),
                        _tail(ended.get("output")))

    def _reply(self, until: float) -> dict[str, Any] | None:
        """The server's next line; None when `until` passes first."""
        stream = _pipe(self.proc.stdout).fileno()
        searched = 0                # a long result comes in many blocks: each looked at once
        while (end := self.buffer.find(b"\n", searched)) < 0:
            searched = len(self.buffer)
            left = until - time.monotonic()
            if left <= 0 or not select.select([stream], [], [], left)[0]:
                return None
            block = os.read(stream, 1 << 20)
            if not block:
                raise ServerGone(f"the fork server ended: {self._log_tail()}")
            self.buffer += block
        line = bytes(self.buffer[:end])
        del self.buffer[:end + 1]
        return json.loads(line)

    def _log_tail(self) -> str:
        return _tail(_read(self.log)) or "(no output)"

    @property
    def usable(self) -> bool:
        return not self.broken and self.proc.poll() is None

    def close(self) -> None:
        """End the server (it ends at the end of its input) and remove its files. A broken
        server (a trial stopped under it by Ctrl-C or SIGTERM, or a worker stuck) is killed
        at once with its children: it never opened the device, and a stop must not wait."""
        if self.broken:
            kill_tree(self.proc.pid, wait_s=1.0)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                _pipe(stream).close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            kill_tree(self.proc.pid)
        shutil.rmtree(self.folder, ignore_errors=True)


_SERVERS: dict[tuple[str, str | None], ForkServer] = {}
at_exit(shutdown)


def _server_for(backend: dict[str, Any]) -> ForkServer:
    key = (backend["kind"], backend.get("profile"))
    server = _SERVERS.get(key)
    if server is None or not server.usable:
        if server is not None:
            server.close()
        server = _SERVERS[key] = ForkServer(backend)
    return server


def _read(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except OSError:
        return b""
    path.unlink(missing_ok=True)
    return data


def _drain(fd: int, out: list[bytes]) -> None:
    with os.fdopen(fd, "rb") as pipe:
        while True:
            block = pipe.read(65536)
            if not block:
                return
            out.append(block)


def kill_tree(pid: int, wait_s: float = 5.0) -> None:
    """Kill a process and everything it started; tolerate those already gone. Returns once
    each is dead: ours reaped, another's (a fork server's child) dead as a zombie, which
    its parent reaps; waiting for that parent would hold a Ctrl-C up for seconds."""
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
    until = time.monotonic() + wait_s
    while True:
        _, family = psutil.wait_procs(family, timeout=0)       # reaps those that are ours
        family = [proc for proc in family if not _dead(proc)]
        if not family or time.monotonic() >= until:
            return
        time.sleep(0.002)


def _dead(proc: psutil.Process) -> bool:
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _exit_text(code: int | None) -> str:
    if code is None:
        return "did not exit"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code} without a result"


def _tail(output: bytes | str | None) -> str:
    text = output.decode("utf-8", "replace") if isinstance(output, bytes) else output or ""
    return text.strip()[-STDERR_TAIL:]


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 3)


def _pipe(stream: IO[bytes] | None) -> IO[bytes]:
    """A pipe the server was started with (stdin and stdout are always PIPE)."""
    if stream is None:
        raise ValueError("the worker server was started without its pipes")
    return stream
