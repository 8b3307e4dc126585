"""What this process undoes before it ends, in one registry: the report locks it holds,
the fork servers it started.

A module registers its clean-up when it is loaded (`at_exit`), so only what a run loaded
is undone, and an import a Ctrl-C cut short is never run again to find one. The command
line runs them all when its command ends, before the exit status is final
(`harness.app.exits.run`); the interpreter's exit runs them too, for a process that ends
another way (a worker, a script using the harness). Each is safe to run twice.
"""

from __future__ import annotations

import atexit
from collections.abc import Callable

_CLEANUPS: list[Callable[[], None]] = []


def at_exit(cleanup: Callable[[], None]) -> Callable[[], None]:
    """Register `cleanup`, once."""
    if cleanup not in _CLEANUPS:
        _CLEANUPS.append(cleanup)
    return cleanup


def run_cleanups() -> None:
    """Run every clean-up registered, in the order they were."""
    for cleanup in list(_CLEANUPS):
        cleanup()


atexit.register(run_cleanups)
