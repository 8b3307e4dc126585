"""Ctrl-C and SIGTERM, so that neither is ever lost.

Python turns SIGINT into a KeyboardInterrupt wherever the main thread happens to
be, and a few places swallow it (a `__del__` method, an `atexit` hook: "Exception
ignored in ..."). So the handlers installed here also remember the request, and
the runner asks at every trial boundary: a stop that was swallowed still stops
the run there, with its trial recorded.

How a process leaves (`leave`) lives here too: one that finished its work ends through
the interpreter's normal exit, so that what native libraries do at exit happens (XRT
writes a capture's replay.json there); after a stop it ends at once and keeps the status
chosen, which an ordinary interpreter exit would not.
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


# What a stopped process exits with (harness.app.exits maps the signals to these; its
# test holds them equal): such an exit is at once, whatever the interpreter would do.
STOPPED = (130, 143)


def leave(code: int) -> None:
    """End this process with `code`, for a process that has written everything it writes
    (the console scripts, the trial worker).

    Work that finished ends through the interpreter's normal exit (`SystemExit`): Python's
    exit hooks run (locks let go of, fork servers ended), then the C library's `exit`,
    whose handlers are what native libraries do at exit. XRT writes a capture's
    replay.json there, in the destructor of its capture singleton (capture.cpp `~frames`);
    an `os._exit`, a kill or a crash skips it, so a harness that always left through
    `os._exit` could never be captured (`xrt-capture -- reproduce_ert_timeout`).

    After a stop (Ctrl-C, SIGTERM) it ends at once: the exit hooks run, the streams are
    flushed, and the process ends with the status chosen without tearing the interpreter
    down. An ordinary exit would not keep that status: a KeyboardInterrupt that passed
    through `exec` (a dataclass being made, say) makes CPython kill itself with SIGINT at
    exit whatever status was chosen (its unhandled_keyboard_interrupt flag)."""
    if code not in STOPPED and _requested is None:
        raise SystemExit(code)
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
