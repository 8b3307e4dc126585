"""Errors a user can cause, and the exit codes the commands return.

Every error a user can cause is a `HarnessError`: the CLI prints its message
on one line and exits with its code, never with a traceback.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0                 # every trial completed
    DEVICE_FAILURE = 1     # a trial failed on the device (or the simulated one)
    BAD_INPUT = 2          # a file, option or argument is wrong
    ENV_NOT_READY = 3      # the machine cannot run this (no NPU, no pyxrt, server down)
    HARNESS_FAULT = 4      # a worker crashed or missed its deadline


class HarnessError(Exception):
    """An error the user can fix; the message says what is wrong and what to do."""

    exit_code: ExitCode = ExitCode.BAD_INPUT


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
