"""The worker that runs one isolated trial: ``python -m harness.worker``.

It reads the trial as JSON on stdin and writes the result as JSON to the pipe
`--result-fd` names. It imports only what a trial needs (no click, no yaml, no
command modules), so a worker starts in a fraction of the time the full command
line would take. It asks the kernel to kill it when the harness dies, and returns
with each result its pid and the XRT libraries it really mapped: the parent's
fingerprint does not say which `libxrt_core` the worker loaded.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import sys

from harness.results import TrialSpec

PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """Ask Linux to kill this worker if the harness dies (e.g. kill -9), so no orphan keeps
    the NPU busy; elsewhere, or if the harness is already gone, do what can be done."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if parent and os.getppid() != parent:
        os._exit(3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.worker",
                                     description="Run one trial (internal to the harness).")
    parser.add_argument("--result-fd", type=int, required=True)
    parser.add_argument("--parent", type=int, default=0)
    parser.add_argument("--backend", required=True)
    parser.add_argument("--profile", default=None)
    args = parser.parse_args(argv)
    die_with_parent(args.parent)

    from harness.backend import choose_backend
    from harness.session import run_trial
    from harness.xrt_loader import own_libraries

    request = json.loads(sys.stdin.read())
    spec = TrialSpec.from_json(request["spec"])
    backend = choose_backend(args.backend, args.profile)
    backend.latencies = request.get("latencies", {})
    result = run_trial(spec, backend)
    result.worker = {"pid": os.getpid(), "xrt_libraries": own_libraries()}
    with os.fdopen(args.result_fd, "w") as pipe:
        json.dump(result.to_json(), pipe)
    return 0


if __name__ == "__main__":
    sys.exit(main())
