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

import argparse
import atexit
import ctypes
import gc
import json
import os
import signal
import sys
import traceback
from typing import Any

from harness.model.results import TrialSpec
from harness.probe.xrt_config import capturing

PR_SET_PDEATHSIG = 1
SPARES = 2             # children a fork server keeps forked ahead of their trials
SPAWN = "spawn"
FORK_SERVER = "fork-server"


def die_with_parent(parent: int) -> None:
    """Ask Linux to kill this worker if its parent dies (e.g. kill -9), so no orphan keeps
    the NPU busy; elsewhere, or if the parent is already gone, do what can be done."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
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


def serve(backend_kind: str, profile: str | None) -> int:
    """The fork server: one request per line on stdin ({"request", "result", "stderr"}:
    the trial, and the files its child writes its result and its output to); for each,
    the child's pid and then its exit status, one JSON line each, on stdout. Ends at
    the end of stdin.

    A child is forked ahead of its request (a spare, waiting for it on a pipe of its
    own), so that a trial never waits for a fork; a child that wrote its result says so
    on another pipe and is reaped later, so no trial waits for its predecessor's exit.
    On the simulated stack a spare first rehearses the trial before it on a throw-away
    simulated NPU: what a forked child touches first is copied page by page (copy on
    write), and a rehearsed one runs its own trial as fast as the server would."""
    import harness.execution.backend
    import harness.execution.session  # noqa: F401 - what every child needs, imported once here

    backend = None
    if backend_kind == "sim":       # the hardware path's pyxrt is imported by each child
        backend = harness.execution.backend.choose_backend(backend_kind, profile)
    # A rehearsal submits work to a throw-away simulated NPU: under an XRT capture it would
    # be recorded as frames of the trial that follows (a child records what it submits).
    rehearse = backend is not None and not capturing()
    children = _Children(backend_kind, profile, backend)
    try:
        return _serve(children, backend, rehearse)
    except _ChildEnds as ended:          # in a child, after its trial
        return ended.code


def _serve(children: _Children, backend: Any, rehearse: bool) -> int:
    """The server's loop (`serve`)."""
    warmed = not rehearse
    replies = sys.stdout
    try:
        for line in sys.stdin:
            order = json.loads(line)
            if not warmed:
                _warm(order, backend)
                warmed = True
            child = children.take()
            child.give(order)
            replies.write(json.dumps({"pid": child.pid}) + "\n")
            replies.flush()
            # the next trial's child, forked (and rehearsing) while this one runs
            children.prepare(order if rehearse else None)
            status = children.wait(child)
            replies.write(json.dumps({"pid": child.pid, "status": status}) + "\n")
            replies.flush()
    finally:
        children.close()
    return 0


class _Child:
    """A forked child as the server holds it: its pid, the pipe its order goes down and
    the pipe it says "done" on once its result is written."""

    def __init__(self, pid: int, orders: int, done: int) -> None:
        self.pid, self.orders, self.done = pid, orders, done

    def give(self, order: dict[str, Any]) -> None:
        data = (json.dumps(order) + "\n").encode()
        while data:                       # a request larger than the pipe: in parts
            data = data[os.write(self.orders, data):]
        os.close(self.orders)
        self.orders = -1

    def fds(self) -> list[int]:
        return [fd for fd in (self.orders, self.done) if fd >= 0]


class _Children:
    """The children of a fork server: spares forked ahead (`SPARES` of them, each
    rehearsing while the trials before it run), and the pids that ended to reap."""

    def __init__(self, backend_kind: str, profile: str | None, backend: Any) -> None:
        self.kind, self.profile, self.backend = backend_kind, profile, backend
        self.spares: list[_Child] = []
        self.ended: list[int] = []        # pids that said done: reaped once they have ended
        self.owner = os.getpid()          # a child inherits this object; it is not its own

    def take(self) -> _Child:
        return self.spares.pop(0) if self.spares else self._fork(None)

    def prepare(self, rehearsal: dict[str, Any] | None) -> None:
        self._reap()
        while len(self.spares) < SPARES:
            self.spares.append(self._fork(rehearsal))

    def _fork(self, rehearsal: dict[str, Any] | None) -> _Child:
        orders_read, orders_write = os.pipe()
        done_read, done_write = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        held = [fd for spare in self.spares for fd in spare.fds()]
        pid = os.fork()
        if pid == 0:
            for fd in (orders_write, done_read, *held):
                os.close(fd)             # another child's pipes are not this one's
            _child(orders_read, done_write, rehearsal, self.kind, self.profile,
                   os.getppid(), self.backend)
        os.close(orders_read)
        os.close(done_write)
        return _Child(pid, orders_write, done_read)

    def wait(self, child: _Child) -> int:
        """The child's exit status: 0 once it says its result is written (it is reaped
        later), else the status it ended with."""
        with os.fdopen(child.done, "rb") as done:
            said = done.read()
        child.done = -1
        if said == b"done":
            self.ended.append(child.pid)
            return 0
        _, status = os.waitpid(child.pid, 0)
        return os.waitstatus_to_exitcode(status)

    def _reap(self, *, block: bool = False) -> None:
        """Reap the children that said done and have ended since (all of them, waiting,
        with `block`): a child ends through the interpreter's exit after its result, and
        no trial waits for that."""
        for pid in list(self.ended):
            ended, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
            if ended:
                self.ended.remove(pid)

    def close(self) -> None:
        """Spares are ended without a trial (a spare may be rehearsing a long trial, and
        the run must not wait for it: it never opened the device); every child is reaped.
        Nothing in a child, which holds a copy of this object and none of its children."""
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


def _warm(order: dict[str, Any], backend: Any) -> None:
    """Before the first fork (simulated stack only): load what its trial loads, so every
    child inherits the filled caches, then freeze what exists, so children do not copy
    the pages the collector would touch. A set-up that fails here fails in the child
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


def _child(orders: int, done: int, rehearsal: dict[str, Any] | None, backend_kind: str,
           profile: str | None, server: int, backend: Any = None) -> None:
    """A forked trial: its own session (no terminal signals), killed with the server, its
    order read from `orders` when it comes, its output in the file the parent reads, its
    result in another, then "done" on `done`; never returns: it raises `_ChildEnds` with
    its status. A spare whose order never comes (the run ended) leaves quietly. What the
    server registered to do at exit is not the child's to do (`atexit` is cleared); what
    the child's own trial registered (a simulated XRT's capture) is."""
    code = 1
    gc.disable()        # one trial, then exit: its garbage goes with the process
    getattr(atexit, "_clear", lambda: None)()
    try:
        os.setsid()
        die_with_parent(server)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        quiet = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(quiet, fd)           # the server's pipes are not the child's
        if rehearsal is not None:
            _rehearse(rehearsal, backend)
        with os.fdopen(orders, "rb") as pipe:
            line = pipe.readline()
        if not line:
            os._exit(0)                  # nothing ran: nothing to do at exit
        order = json.loads(line)
        output = os.open(order["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(output, 1)
        os.dup2(output, 2)
        result = run_request(order["request"], backend_kind, profile, FORK_SERVER, backend)
        with open(order["result"], "w") as out:
            json.dump(result, out)
        sys.stdout.flush()
        sys.stderr.flush()
        os.write(done, b"done")
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    raise _ChildEnds(code)


def _rehearse(order: dict[str, Any], backend: Any) -> None:
    """Run the trial before this one on a throw-away simulated NPU (its result dropped),
    so this child's own trial finds its pages copied; what fails here is the real
    trial's to meet and record."""
    from harness.execution.session import run_trial
    try:
        backend.latencies = order["request"].get("latencies", {})
        run_trial(TrialSpec.from_json(order["request"]["spec"]), backend)
    except Exception:  # noqa: BLE001 - see above
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.execution.worker",
                                     description="Run isolated trials (internal to the "
                                                 "harness).")
    parser.add_argument("--serve", action="store_true",
                        help="be a fork server: a child per trial read on stdin")
    parser.add_argument("--result-fd", type=int)
    parser.add_argument("--parent", type=int, default=0)
    parser.add_argument("--backend", required=True)
    parser.add_argument("--profile", default=None)
    args = parser.parse_args(argv)
    die_with_parent(args.parent)
    if args.serve:
        return serve(args.backend, args.profile)
    if args.result_fd is None:
        parser.error("--result-fd is needed without --serve")
    result = run_request(json.loads(sys.stdin.read()), args.backend, args.profile, SPAWN)
    with os.fdopen(args.result_fd, "w") as pipe:
        json.dump(result, pipe)
    return 0


if __name__ == "__main__":
    from harness.execution.stop import leave
    leave(main())
