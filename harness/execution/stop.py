"""Ctrl-C and SIGTERM, so that neither is ever lost.

Python turns SIGINT into a KeyboardInterrupt wherever the main thread happens to
be, and a few places swallow it (a `__del__` method, an `atexit` hook: "Exception
ignored in ..."). So the handlers installed here also remember the request, and
the runner asks at every trial boundary: a stop that was swallowed still stops
the run there, with its trial recorded.

How a finished process leaves (`leave`) lives here too: after a stop it must keep
the status chosen, which an ordinary interpreter exit would not.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys

from harness.model.errors import Terminated

_requested: str | None = None


def _on_sigint(signum: int, frame: object) -> None:
    global _requested
    _requested = "SIGINT"
    raise KeyboardInterrupt


def _on_sigterm(signum: int, frame: object) -> None:
    global _requested
    _requested = "SIGTERM"
    raise Terminated


def _quiet_when_swallowed(unraisable: sys.UnraisableHookArgs) -> None:
    # A stop raised where Python can only print it ("Exception ignored in ...") is not
    # lost: the flag above stops the run at the next trial boundary, with one line.
    if isinstance(unraisable.exc_value, (KeyboardInterrupt, Terminated)) and _requested:
        return
    sys.__unraisablehook__(unraisable)


def install() -> None:
    """Take SIGINT and SIGTERM over (the command line does; a library user keeps theirs)."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _on_sigint)
    signal.signal(signal.SIGTERM, _on_sigterm)
    sys.unraisablehook = _quiet_when_swallowed


def requested() -> str | None:
    return _requested


def raise_if_requested() -> None:
    if _requested == "SIGINT":
        raise KeyboardInterrupt
    if _requested == "SIGTERM":
        raise Terminated


def leave(code: int) -> None:
    """End this process with `code` without tearing the interpreter down module by module
    (a tenth of a short run's wall time): the exit hooks run (locks let go of, fork servers
    ended), the streams are flushed, then it ends. For a process that has written
    everything it writes: the console scripts and the trial worker."""
    try:
        getattr(atexit, "_run_exitfuncs", lambda: None)()
    except BaseException:  # noqa: BLE001 - a second Ctrl-C in a hook: still leave, as said
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
