"""The worker that runs isolated trials: ``python -m harness.execution.worker``.

Two ways to start one (`harness.execution.isolation` chooses):

- ``spawn``: one fresh interpreter per trial. It reads the trial as JSON on stdin and
  writes the result as JSON to the pipe `--result-fd` names.
- ``fork-server`` (``--serve``): one interpreter per run that imports what a trial
  needs once, then forks a child per trial (`serve`). The server never opens the
  device: on the hardware path it does not even import pyxrt (a child of a process
  that loaded XRT's native libraries would inherit their state), so each child starts
  as clean as a spawned worker, a few milliseconds after it is asked for.

Either way the worker imports only what a trial needs (no click, no yaml, no
command modules), asks the kernel to kill it when its parent dies, and returns with
each result its pid, how it was started and the XRT libraries it really mapped: the
parent's fingerprint does not say which `libxrt_core` the worker loaded. A worker that
ran its trial ends through the interpreter's normal exit, so that XRT, which it loaded,
does at exit what it does there (write a capture's replay.json: capture.cpp `~frames`).
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # signal.py's C module: typeshed has no stub
import argparse
import atexit
import ctypes
import functools
import gc
import json
import os
import signal
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

from harness.execution import prefault
from harness.model.results import TrialSpec
from harness.probe.xrt_config import capturing

PR_SET_PDEATHSIG = 1
SPARES = 2             # children a fork server keeps forked ahead of their trials
PAGES = "pages"        # in the workers' folder: the pages children last owned (prefault)
SPAWN = "spawn"
FORK_SERVER = "fork-server"
_STOP_SIGNALS = (int(signal.SIGINT), int(signal.SIGTERM))    # a child takes their default
_DEFAULT_ACTION = int(signal.SIG_DFL)


@functools.cache
def _prctl() -> Any:
    """libc's prctl, looked up once (a fork server's children inherit it); None where
    there is none."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def die_with_parent(parent: int) -> None:
    """Ask Linux to kill this worker if its parent dies (e.g. kill -9), so no orphan keeps
    the NPU busy; elsewhere, or if the parent is already gone, do what can be done."""
    prctl = _prctl()
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if parent and os.getppid() != parent:
        os._exit(3)


def run_request(request: dict[str, Any], backend_kind: str, profile: str | None,
                start: str, backend: Any = None) -> dict[str, Any]:
    """Run the trial a request names (on `backend` when the fork server made it already);
    the result as JSON."""
    from harness.execution.backend import choose_backend
    from harness.execution.session import run_trial
    from harness.probe.xrt_loader import own_libraries

    spec = TrialSpec.from_json(request["spec"])
    backend = backend or choose_backend(backend_kind, profile)
    backend.latencies = request.get("latencies", {})
    result = run_trial(spec, backend)
    # the simulated stack maps no XRT library: /proc/self/maps is read only on hardware
    result.worker = {"pid": os.getpid(), "start": start,
                     "xrt_libraries": own_libraries() if backend.hardware else []}
    return result.to_json()


def serve(backend_kind: str, profile: str | None, pages: str | None = None) -> int:
    """The fork server: one request per line on stdin ({"request": the trial}); for each,
    one JSON line on stdout with the pid of the child that runs it, and then one with
    its answer: {"pid", "status": 0, "result": the result as the child wrote it}, or
    {"pid", "status": its exit status, "output": the tail of what it printed}. Ends at
    the end of stdin.

    A child is forked ahead of its request (a spare, waiting for it on a pipe of its
    own), so that a trial never waits for a fork; a child sends its result on another
    pipe and is reaped later, so no trial waits for its predecessor's exit. What a child
    prints goes to a memory file the server holds (no file is made per trial). On the
    simulated stack a spare first copies the pages the trials before it came to own
    (reported in `pages`; `harness.execution.prefault`): what a forked child writes is
    copied page by page (copy on write), and a spare that copied them ahead runs its
    trial without those copies. Nothing is submitted ahead of a trial, so an XRT
    capture records only the trials'."""
    import harness.execution.backend
    import harness.execution.session  # noqa: F401 - what every child needs, imported once here

    backend = None
    if backend_kind == "sim":       # the hardware path's pyxrt is imported by each child
        backend = harness.execution.backend.choose_backend(backend_kind, profile)
    _prctl()                        # looked up here, not in every child
    prefault.libc_madvise()
    # Warming makes contexts and buffers on a throw-away simulated NPU: under an XRT
    # capture they would be recorded with the trial that follows.
    warm = backend is not None and not capturing()
    children = _Children(backend_kind, profile, backend,
                         Path(pages) if pages and backend is not None else None)
    try:
        return _serve(children, backend if warm else None)
    except _ChildEnds as ended:          # in a child, after its trial
        return ended.code


def _serve(children: _Children, backend: Any) -> int:
    """The server's loop (`serve`); `backend` warmed, if given, once the first child is
    forked (so that the first trial does not wait for it) and before the next."""
    warmed = backend is None
    replies = sys.stdout.buffer
    try:
        for line in sys.stdin.buffer:
            child = children.take()
            child.give(line)              # as the parent wrote it: not encoded again
            replies.write(b'{"pid": %d}\n' % child.pid)
            replies.flush()
            if not warmed:                # while the first trial runs, in its own child
                _warm(json.loads(line), backend)
                warmed = True
            # the next trial's child, forked (and copying its pages) while this one runs
            children.prepare()
            replies.write(children.answer(child))
            replies.flush()
    finally:
        children.close()
    return 0


OUTPUT_TAIL = 8000     # bytes of a failed child's output sent back with its exit status
REPORT_EVERY = 16      # children between two reports of the pages a trial owned


class _Child:
    """A forked child as the server holds it: its pid, the pipe its order goes down, the
    pipe its result comes back on, and the memory file its output goes to."""

    def __init__(self, pid: int, orders: int, done: int, output: int) -> None:
        self.pid, self.orders, self.done, self.output = pid, orders, done, output

    def give(self, line: bytes) -> None:
        data = line if line.endswith(b"\n") else line + b"\n"
        while data:                       # a request larger than the pipe: in parts
            data = data[os.write(self.orders, data):]
        os.close(self.orders)
        self.orders = -1

    def fds(self) -> list[int]:
        return [fd for fd in (self.orders, self.done, self.output) if fd >= 0]

    def output_tail(self) -> str:
        size = os.fstat(self.output).st_size
        tail = os.pread(self.output, min(size, OUTPUT_TAIL), max(0, size - OUTPUT_TAIL))
        return tail.decode("utf-8", "replace")


class _Children:
    """The children of a fork server: spares forked ahead (`SPARES` of them, each
    copying the pages the trials before it owned while those run), and the pids that
    ended to reap."""

    def __init__(self, backend_kind: str, profile: str | None, backend: Any,
                 pages: Path | None) -> None:
        self.kind, self.profile, self.backend = backend_kind, profile, backend
        self.spares: list[_Child] = []
        self.ended: list[int] = []        # pids that sent their result: reaped once ended
        self.owner = os.getpid()          # a child inherits this object; it is not its own
        self.pages = pages                # where the children report the pages they own
        self.ahead: prefault.Ahead | None = None      # what the last report listed
        self.forked = 0

    def take(self) -> _Child:
        return self.spares.pop(0) if self.spares else self._fork(None)

    def prepare(self) -> None:
        """Fork spares up to `SPARES`; each copies the pages of the last report a child
        wrote in `pages` (none on the hardware path) and reports its own after its trial."""
        self._reap()
        if self.pages is not None:
            self.ahead = prefault.latest(self.pages, self.ahead)
        while len(self.spares) < SPARES:
            self.spares.append(self._fork(self.ahead))

    def _fork(self, ahead: prefault.Ahead | None) -> _Child:
        orders_read, orders_write = os.pipe()
        done_read, done_write = os.pipe()
        output = _memory_file()
        sys.stdout.flush()
        sys.stderr.flush()
        held = [fd for spare in self.spares for fd in spare.fds()]
        # the second child (the first forked once the server warmed, while the first ran)
        # reports the pages it owned, and one in REPORT_EVERY after it (a report costs a
        # child about as much as its trial, after it)
        reports = self.pages if self.forked % REPORT_EVERY == 1 else None
        self.forked += 1
        pid = os.fork()
        if pid == 0:
            for fd in (orders_write, done_read, *held):
                os.close(fd)             # another child's pipes are not this one's
            _child(orders_read, done_write, output, ahead, reports, self.kind, self.profile,
                   os.getppid(), self.backend)
        os.close(orders_read)
        os.close(done_write)
        return _Child(pid, orders_write, done_read, output)

    def answer(self, child: _Child) -> bytes:
        """The child's answer line: its result once it has sent it whole (the child is
        reaped later: it may still be reporting its pages, and it ends through the
        interpreter's exit), else its exit status and the tail of its output."""
        said = _read_to_end(child.done)
        os.close(child.done)
        child.done = -1
        if said.endswith(b"\n"):
            self.ended.append(child.pid)
            line = b'{"pid": %d, "status": 0, "result": %s}\n' % (child.pid, said[:-1])
        else:
            _, status = os.waitpid(child.pid, 0)
            line = (json.dumps({"pid": child.pid, "status": os.waitstatus_to_exitcode(status),
                                "output": child.output_tail()}) + "\n").encode()
        os.close(child.output)
        child.output = -1
        return line

    def _reap(self, *, block: bool = False) -> None:
        """Reap the children that sent their result and have ended since (all of them,
        waiting, with `block`): a child ends through the interpreter's exit after its
        result, and no trial waits for that."""
        for pid in list(self.ended):
            ended, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
            if ended:
                self.ended.remove(pid)

    def close(self) -> None:
        """Spares are ended without a trial (the run must not wait for one still copying
        its pages: none ever opened the device); every child is reaped. Nothing in a
        child, which holds a copy of this object and none of its children."""
        if os.getpid() != self.owner:
            return
        for spare in self.spares:
            for fd in spare.fds():
                os.close(fd)
            try:
                os.kill(spare.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for spare in self.spares:
            os.waitpid(spare.pid, 0)
        self.spares = []
        self._reap(block=True)


def _read_to_end(fd: int) -> bytes:
    """Everything a pipe gives until its writer closes it (no file object: a forked
    child's every object it makes or touches is a page it copies)."""
    blocks = []
    while block := os.read(fd, 1 << 16):
        blocks.append(block)
    return b"".join(blocks)


def _memory_file() -> int:
    """A file in memory for a child's output, gone with the last descriptor to it."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("trial-output", os.MFD_CLOEXEC)
    with tempfile.TemporaryFile() as handle:        # already unlinked: gone with its fds
        return os.dup(handle.fileno())


def _warm(order: dict[str, Any], backend: Any) -> None:
    """Once the first child is forked (simulated stack only): load what its trial loads
    and rehearse its runlists (`harness.execution.session.warm`), so every later child
    inherits the filled caches and warmed code, then freeze what exists, so children do
    not copy the pages the collector would touch. A set-up that fails here fails in the child
    too, where it is recorded; here it is only a missed head start."""
    from harness.execution.session import warm
    try:
        backend.latencies = order["request"].get("latencies", {})
        warm(TrialSpec.from_json(order["request"]["spec"]), backend)
    except Exception:  # noqa: BLE001 - see above: the child meets and records it
        pass
    gc.collect()
    gc.freeze()


class _ChildEnds(BaseException):
    """A forked child's trial is over: unwind to `serve`, which returns its status, so that
    the child ends through the interpreter's normal exit (see the module's note)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _child(orders: int, done: int, output: int, ahead: prefault.Ahead | None,
           pages: Path | None,
           backend_kind: str, profile: str | None, server: int, backend: Any = None) -> None:
    """A forked trial: its own session (no terminal signals), killed with the server, the
    pages `ahead` copied while its order has not come, its order read from `orders`, its
    output in `output`, its result (one JSON line) sent on `done`, and last the pages it
    came to own reported in `pages`; never returns: it raises `_ChildEnds` with its
    status (a simulated trial that records no capture ends at once, with nothing to do
    at exit). A spare whose order never comes (the run ended) leaves quietly. What the
    server registered to do at exit is not the child's to do (`atexit` is cleared); what
    the child's own trial registered (a simulated XRT's capture) is."""
    code = 1
    gc.disable()        # one trial, then exit: its garbage goes with the process
    getattr(atexit, "_clear", lambda: None)()
    try:
        os.setsid()
        die_with_parent(server)
        # _signal's own call: signal.signal converts to and from enums, some fifty
        # pages of the server's objects a child would copy
        for stop in _STOP_SIGNALS:
            _signal.signal(stop, _DEFAULT_ACTION)
        quiet = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(quiet, fd)           # the server's pipes are not the child's
        if ahead is not None:
            prefault.copy_ahead(ahead.plan)
        before = prefault.snapshot() if pages is not None else None
        line = _read_to_end(orders)       # the server closes its end once it is written
        os.close(orders)
        if not line:
            os._exit(0)                  # nothing ran: nothing to do at exit
        os.dup2(output, 1)
        os.dup2(output, 2)
        order = json.loads(line)
        result = run_request(order["request"], backend_kind, profile, FORK_SERVER, backend)
        data = (json.dumps(result) + "\n").encode()
        sys.stdout.flush()
        sys.stderr.flush()
        while data:
            data = data[os.write(done, data):]
        os.close(done)                    # the server goes on; what follows is for the next
        code = 0
        if before is not None and pages is not None:
            prefault.report(pages, prefault.merged(ahead.ranges if ahead else None,
                                                   prefault.written_since(before)))
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    if backend is not None and not capturing():
        # A simulated trial that records no capture leaves nothing to do at exit, and
        # tearing the interpreter down touches every object the server made: each page
        # copied once more, twice the CPU of the whole isolated trial
        # (benchmarks/reproduce_wall.py).
        os._exit(code)
    raise _ChildEnds(code)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.execution.worker",
                                     description="Run isolated trials (internal to the "
                                                 "harness).")
    parser.add_argument("--serve", action="store_true",
                        help="be a fork server: a child per trial read on stdin")
    parser.add_argument("--pages", default=None,
                        help="with --serve: where children report the pages they own")
    parser.add_argument("--result-fd", type=int)
    parser.add_argument("--parent", type=int, default=0)
    parser.add_argument("--backend", required=True)
    parser.add_argument("--profile", default=None)
    args = parser.parse_args(argv)
    die_with_parent(args.parent)
    if args.serve:
        return serve(args.backend, args.profile, args.pages)
    if args.result_fd is None:
        parser.error("--result-fd is needed without --serve")
    result = run_request(json.loads(sys.stdin.read()), args.backend, args.profile, SPAWN)
    with os.fdopen(args.result_fd, "w") as pipe:
        json.dump(result, pipe)
    return 0


if __name__ == "__main__":
    from harness.execution.stop import leave
    leave(main())
