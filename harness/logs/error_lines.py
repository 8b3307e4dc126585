"""The error lines in a program's output: what failed, as the program printed it.

One pure function, `find_error_lines`, reads any output (FastFlowLM's console or its JSON
error body, an application's console, a C++ program's last words, a Python traceback)
and returns each error it holds as an `ErrorLine`: where it is (line numbers, 1-based),
what carried it (a FastFlowLM JSON error, FastFlowLM's ``[ERROR]`` line, a C++
``terminate``, a Python exception, or XRT's own text on a line of its own), the message,
and what XRT said inside it: the runlist's or command's state, an ioctl the XDNA shim saw
fail with its errno, or that no device or driver plug-in could be opened.

The texts recognised are the sources' own format strings:

- FastFlowLM answers a failed request as ``{"error": "..."}`` (ROCm/FastFlowLM
  `src/server/rest_handler.cpp`, also inside a server-sent ``data:`` line) and prints
  ``[ERROR]  message`` (`header_print`/`header_print_r` in
  `src/include/utils/debug_utils.hpp`: ``[HEADER]``, two spaces, the message; red on
  stderr with ANSI colour codes, which are stripped here).
- XRT (Xilinx/XRT `src/runtime_src/core/common/api/xrt_kernel.cpp`): ``runlist failed
  execution`` (2.20, 2.21.21), ``runlist failed execution (ERT_CMD_STATE_X)`` (PR #9408:
  the 2.21 branch tip, 2.23, master), ``Command failed to complete successfully
  (ERT_CMD_STATE_X)`` for a single run; `hw_queue.cpp`: ``qds_device::wait() unexpected
  command state`` (every tag); `pcie/linux/system_linux.cpp`: `` No such device with
  index 'N'``; `module_loader.cpp`: ``Failed to open library '...'``.
- The XDNA shim (amd/xdna-driver `src/shim/shim_debug.h` `shim_err`): the message, then
  `` (err=N)``, and XRT's `system_error` adds ``: strerror``; the ioctls say
  ``DRM_IOCTL_AMDXDNA_CREATE_HWCTX IOCTL failed (err=-22): Invalid argument``
  (`host/platform_host.cpp`).
- A command state named by the application itself (``decode dispatch pos6
  state=ert_cmd_state.ERT_CMD_STATE_TIMEOUT``: pyxrt's `ert_cmd_state` enum as Python prints
  it, or the bare ``ERT_CMD_STATE_X`` of XRT's `ert.h`): a run that ended so, in the
  program's words rather than XRT's (`STATE_NAMED`; COMPLETED is not a failure).
- A C++ program that does not catch it: libstdc++'s ``terminate called after throwing
  an instance of 'T'`` then ``  what():  message``; Python: ``Traceback (most recent
  call last):``, the frames, then ``Type: message`` (pyxrt raises RuntimeError with
  XRT's text).

The diagnosis reads these lines out of the artefacts a user already has; a reader of a
recorded program's output (`capture record`'s) reads them the same way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

# what carried the error
FLM_JSON = "flm-json-error"          # {"error": "..."}
FLM_ERROR = "flm-error"              # [ERROR]  ... (FastFlowLM's console)
CPP_TERMINATE = "cpp-terminate"      # terminate called after throwing ... / what():
PYTHON_EXCEPTION = "python-exception"
XRT_TEXT = "xrt-text"                # XRT's or the shim's own text on a line of its own
CARRIERS = (FLM_JSON, FLM_ERROR, CPP_TERMINATE, PYTHON_EXCEPTION, XRT_TEXT)

# what XRT said inside the message
RUNLIST_FAILED = "runlist-failed"
COMMAND_FAILED = "command-failed"
UNEXPECTED_STATE = "unexpected-state"
IOCTL_FAILED = "ioctl-failed"
SHIM_ERROR = "shim-error"            # another shim_err message, with its errno
NO_DEVICE = "no-device"
LIBRARY_FAILED = "library-failed"
STATE_NAMED = "state-named"          # a failing command state in the program's own words

MAX_LINE = 4096                       # a longer line is read up to here
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_STATE = re.compile(r"ERT_CMD_STATE_([A-Z_]{2,20})")
# each XRT text: (what it says, pattern); the first that matches a message names it
_XRT: tuple[tuple[str, re.Pattern[str]], ...] = (
    (RUNLIST_FAILED, re.compile(r"runlist failed execution")),
    (COMMAND_FAILED, re.compile(r"Command failed to complete successfully")),
    (UNEXPECTED_STATE, re.compile(r"qds_device::wait\(\) unexpected command state")),
    (IOCTL_FAILED, re.compile(r"(?P<ioctl>DRM_IOCTL_[A-Z0-9_]{1,60}) IOCTL failed "
                              r"\(err=(?P<errno>-?\d{1,4})\)")),
    (NO_DEVICE, re.compile(r"No such device with index '\d{1,6}'")),
    (LIBRARY_FAILED, re.compile(r"Failed to open library '[^']{1,400}'")),
    (STATE_NAMED, re.compile(r"\bERT_CMD_STATE_(?!COMPLETED\b)[A-Z][A-Z_]{1,19}\b")),
    (SHIM_ERROR, re.compile(r"\S.{0,400}? \(err=(?P<errno>-?\d{1,4})\)(?::|$)")),
)
_TERMINATE = re.compile(r"terminate called after throwing an instance of '([^']{1,200})'")
_WHAT = re.compile(r"^\s*what\(\):\s+(.*)$")
_TRACEBACK = "Traceback (most recent call last):"
_EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w]*\.)*([A-Za-z_]\w*(?:Error|Exception))(?::\s?(.*))?$")
_FLM_ERROR = re.compile(r"^\s*\[(?:ERROR|Error|error)\]\s+(.*)$")
# XRT's health lines after a runlist's message (harness.model.ert reads them)
_HEALTH = re.compile(r"^\s*[A-Za-z_][A-Za-z0-9_ ]{0,40}\s*[=:]\s*(?:0[xX][0-9a-fA-F]{1,16}|"
                     r"-?\d{1,20})\s*$")
_FOLLOW = 3                           # what(): follows terminate within this many lines


@dataclass(frozen=True)
class ErrorLine:
    """One error in a program's output.

    `line`/`end`: where it starts and ends (1-based; a traceback or a terminate with its
    what() spans lines); `carrier`: what printed it (one of CARRIERS); `message`: the
    error's text (a JSON error's value, what(), the exception's message, the line; XRT's
    health lines that follow a runlist's message are appended, one a line); `xrt`: what
    XRT or its shim said inside it (RUNLIST_FAILED, COMMAND_FAILED, UNEXPECTED_STATE,
    IOCTL_FAILED, SHIM_ERROR, NO_DEVICE, LIBRARY_FAILED, STATE_NAMED), or None; `state`: the
    command state it names (``TIMEOUT``), or None; `exception`: the C++ or Python type;
    `ioctl`, `errno`: the failing ioctl and its errno as printed (``-22``; older shims
    printed it positive, ``err=13``)."""

    line: int
    end: int
    carrier: str
    message: str
    xrt: str | None = None
    state: str | None = None
    exception: str | None = None
    ioctl: str | None = None
    errno: int | None = None


def plain(text: str) -> str:
    """A line as a person saw it: ANSI colour and cursor codes removed, the carriage
    return of a Windows line end dropped, cut at MAX_LINE."""
    return _ANSI.sub("", text[:MAX_LINE]).rstrip("\r\n")


def find_error_lines(lines: Iterable[str]) -> list[ErrorLine]:
    """Every error in `lines` (the program's output, one line each), in order."""
    text = [plain(line) for line in lines]
    found: list[ErrorLine] = []
    index = 0
    while index < len(text):
        error, index = _at(text, index)
        if error is not None:
            found.append(error)
    return found


def _at(text: list[str], i: int) -> tuple[ErrorLine | None, int]:
    """The error that starts at line i (None) and the index after what it took."""
    line = text[i]
    terminate = _TERMINATE.search(line)
    if terminate:
        for j in range(i + 1, min(len(text), i + 1 + _FOLLOW)):
            what = _WHAT.match(text[j])
            if what:
                message, end = _with_health(text, j, what[1])
                return _made(i, end, CPP_TERMINATE, message, terminate[1]), end + 1
        return _made(i, i, CPP_TERMINATE, "", terminate[1]), i + 1
    what = _WHAT.match(line)
    if what:
        message, end = _with_health(text, i, what[1])
        return _made(i, end, CPP_TERMINATE, message, None), end + 1
    if line.strip() == _TRACEBACK:
        return _traceback(text, i)
    body = _json_error(line)
    if body is not None:
        return _made(i, i, FLM_JSON, body, None), i + 1
    flm = _FLM_ERROR.match(line)
    if flm:
        return _made(i, i, FLM_ERROR, flm[1].strip(), None), i + 1
    exception = _EXCEPTION.match(line.strip())
    if exception and exception[2] is not None and _said(exception[2]) is not None:
        message, end = _with_health(text, i, exception[2])
        return _made(i, end, PYTHON_EXCEPTION, message, exception[1]), end + 1
    if _said(line) is not None:
        message, end = _with_health(text, i, line.strip())
        return _made(i, end, XRT_TEXT, message, None), end + 1
    return None, i + 1


def _traceback(text: list[str], start: int) -> tuple[ErrorLine | None, int]:
    """From "Traceback (most recent call last):" over the frames to the exception line."""
    for j in range(start + 1, min(len(text), start + 400)):
        line = text[j]
        if line.startswith((" ", "\t")) or not line.strip():
            continue
        exception = _EXCEPTION.match(line.strip())
        if exception:
            message, end = _with_health(text, j, exception[2] or "")
            return _made(start, end, PYTHON_EXCEPTION, message, exception[1]), end + 1
        if line.startswith(("During handling", "The above exception")):
            continue
        break
    return None, start + 1


def _with_health(text: list[str], at: int, message: str) -> tuple[str, int]:
    """The message, with XRT's health lines that follow a runlist's message on it."""
    if _said(message) not in (RUNLIST_FAILED, COMMAND_FAILED):
        return message.strip(), at
    end = at
    while end + 1 < len(text) and _HEALTH.match(text[end + 1]):
        end += 1
    extra = [text[j].strip() for j in range(at + 1, end + 1)]
    return "\n".join([message.strip(), *extra]), end


def _json_error(line: str) -> str | None:
    """The error of a JSON object on the line that has an "error" key (a string, or an
    OpenAI-style object with a message), else None."""
    start, stop = line.find("{"), line.rfind("}")
    if start < 0 or stop <= start or '"error"' not in line:
        return None
    try:
        body = json.loads(line[start:stop + 1])
    except ValueError:
        return None
    if not isinstance(body, dict) or "error" not in body:
        return None
    error = body["error"]
    if isinstance(error, dict):
        error = error.get("message", json.dumps(error))
    return str(error)


def _said(message: str) -> str | None:
    for kind, pattern in _XRT:
        if pattern.search(message):
            return kind
    return None


def _made(i: int, end: int, carrier: str, message: str, exception: str | None) -> ErrorLine:
    said = _said(message)
    state = _STATE.search(message)
    ioctl = errno = None
    for kind, pattern in _XRT:
        if kind == said and kind in (IOCTL_FAILED, SHIM_ERROR):
            match = pattern.search(message)
            if match:
                ioctl = match.groupdict().get("ioctl")
                errno = int(match["errno"])
    return ErrorLine(i + 1, end + 1, carrier, message, said, state[1] if state else None,
                     exception, ioctl, errno)
