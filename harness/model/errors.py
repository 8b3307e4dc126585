"""Errors a user can cause, and the exit codes they mean.

Every error a user can cause is a `HarnessError`: the command line prints its message
on one line and exits with its code, never with a traceback. Which exception, result
or signal ends a command with which status is decided in `harness.app.exits` alone.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0                 # every trial completed
    DEVICE_FAILURE = 1     # a trial failed on the device (or the simulated one)
    BAD_INPUT = 2          # a file, option or argument is wrong
    ENV_NOT_READY = 3      # the machine cannot run this (no NPU, no pyxrt, server down)
    HARNESS_FAULT = 4      # a worker crashed or missed its deadline, or the harness broke
    STOPPED = 5            # a search stopped at its --max-trials budget, unfinished
    INTERRUPTED = 130      # Ctrl-C (SIGINT)
    TERMINATED = 143       # SIGTERM (a scheduler, timeout(1))


class HarnessError(Exception):
    """An error the user can fix; the message says what is wrong and what to do."""

    exit_code: ExitCode = ExitCode.BAD_INPUT
    label = "error"               # how the CLI's one line starts


class BadInput(HarnessError):
    exit_code = ExitCode.BAD_INPUT


class EnvironmentNotReady(HarnessError):
    exit_code = ExitCode.ENV_NOT_READY


class XclbinError(BadInput):
    """A file is not a well-formed xclbin."""


class CaseError(BadInput):
    """A case file is malformed."""


class PlanError(BadInput):
    """A plan spec does not parse or does not cover the layer count."""


class ReportError(BadInput):
    """A report file is malformed or of an unknown schema version."""


class DiskFault(HarnessError):
    """Writing a file failed (full disk, read-only folder, file-size limit, ...)."""

    exit_code = ExitCode.HARNESS_FAULT


class RedactionFault(HarnessError):
    """Redaction would garble a report (replace a word of the harness's own): a bug of the
    harness, so nothing is written."""

    exit_code = ExitCode.HARNESS_FAULT


class Interrupted(HarnessError):
    """The user (Ctrl-C, SIGINT) or a signal (SIGTERM) stopped a run; the message says
    where everything so far is kept and how to continue."""

    label = "interrupted"

    def __init__(self, message: str, signal: str = "SIGINT") -> None:
        super().__init__(message)
        self.signal = signal


class Terminated(BaseException):
    """Raised in the main thread when SIGTERM arrives, as KeyboardInterrupt is for SIGINT."""


def stop_behind(err: BaseException) -> BaseException | None:
    """The Ctrl-C or SIGTERM an exception stands for: itself, or the one it was raised from
    or while handling. CPython 3.11 wraps whatever `__set_name__` raises in a RuntimeError,
    so a signal landing while a dataclass is being made (a module imported mid-run) arrives
    as one; early in start-up a SIGTERM is a SystemExit(143)."""
    current: BaseException | None = err
    for _ in range(16):                  # a chain is short; a cycle must not hang the exit
        if current is None:
            return None
        if isinstance(current, (KeyboardInterrupt, Terminated)) or (
                isinstance(current, SystemExit) and current.code == ExitCode.TERMINATED):
            return current
        current = current.__cause__ or current.__context__
    return None
