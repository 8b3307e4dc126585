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
parent's fingerprint does not say which `libxrt_core` the worker loaded.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import signal
import sys
import traceback
from typing import Any

from harness.model.results import TrialSpec

PR_SET_PDEATHSIG = 1
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
    the end of stdin."""
    import harness.execution.backend
    import harness.execution.session  # noqa: F401 - what every child needs, imported once here

    backend = None
    if backend_kind == "sim":       # the hardware path's pyxrt is imported by each child
        backend = harness.execution.backend.choose_backend(backend_kind, profile)
    warmed = backend is None
    replies = sys.stdout
    for line in sys.stdin:
        order = json.loads(line)
        if not warmed:
            _warm(order, backend)
            warmed = True
        replies.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(order, backend_kind, profile, os.getppid(), backend)
        replies.write(json.dumps({"pid": pid}) + "\n")
        replies.flush()
        _, status = os.waitpid(pid, 0)
        replies.write(json.dumps({"pid": pid, "status": os.waitstatus_to_exitcode(status)})
                      + "\n")
        replies.flush()
    return 0


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


def _child(order: dict[str, Any], backend_kind: str, profile: str | None,
           server: int, backend: Any = None) -> None:
    """A forked trial: its own session (no terminal signals), killed with the server, its
    output in the file the parent reads, its result in another; never returns."""
    code = 1
    gc.disable()        # one trial, then exit: its garbage goes with the process
    try:
        os.setsid()
        die_with_parent(server)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        output = os.open(order["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        result = run_request(order["request"], backend_kind, profile, FORK_SERVER, backend)
        with open(order["result"], "w") as out:
            json.dump(result, out)
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


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
    sys.exit(main())
