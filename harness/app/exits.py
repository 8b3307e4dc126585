"""The one place a command's ending becomes an exit status.

Every command ends in `run`, however it ends. What it returned says how it went:
nothing (0), a verdict from one of the `for_*` functions here, or `TrialsEnded`, the
statuses of the trials it ran. What it raised is turned into one line on stderr
(`ending_of`), or a JSON object on stdout with ``--json``. Then the convention asked
for with ``--exit-codes``, read from the command line in one place (`convention_of`),
gives the number.

The harness's own codes (`ExitCode`, in `harness.model.errors`): 0 every trial
completed, 1 a trial failed on the device, 2 bad input, 3 environment not ready, 4
harness fault (a worker crashed or missed its deadline, a disk fault, or an error of the
harness itself, whose traceback goes to a log file), 5 a search stopped at its
--max-trials budget, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).

`git bisect run` wants 0 good, 1 (up to 127) bad, 125 cannot-test and above 127
abort. In that convention (``--exit-codes git-bisect``) a run that saw the failure is
bad, one where every trial completed is good, and one that could not tell (a
deadline, a crash, the environment not ready, bad input, a harness fault) is 125,
so `git bisect run` skips that commit. Interruptions keep 130/143, which abort the
bisection as a user would want.
"""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from harness.model.cleanups import run_cleanups
from harness.model.errors import (
    ExitCode,
    HarnessError,
    Interrupted,
    Terminated,
    stop_behind,
)
from harness.model.results import TrialStatus

HARNESS = "harness"
GIT_BISECT = "git-bisect"
CONVENTIONS = (HARNESS, GIT_BISECT)
GIT_BISECT_SKIP = 125
EXIT_CODES_OPTION = "--exit-codes"
JSON_OPTION = "--json"


@dataclass(frozen=True)
class TrialsEnded:
    """What a command that ran trials returns: how they ended. The exit status it means
    depends on the convention (`status_of`)."""

    statuses: frozenset[TrialStatus]


def trials_ended(statuses: Iterable[TrialStatus]) -> TrialsEnded:
    return TrialsEnded(frozenset(statuses))


def for_trials(statuses: Iterable[TrialStatus], convention: str = HARNESS) -> int:
    """The exit status of a finished run whose trials ended so."""
    seen = set(statuses)
    failed = TrialStatus.FAILED in seen
    unanswered = bool(seen & {TrialStatus.DEADLINE, TrialStatus.CRASHED})
    if convention == GIT_BISECT:
        if failed:
            return int(ExitCode.DEVICE_FAILURE)
        return GIT_BISECT_SKIP if unanswered or not seen else int(ExitCode.OK)
    if unanswered:
        return int(ExitCode.HARNESS_FAULT)
    return int(ExitCode.DEVICE_FAILURE if failed else ExitCode.OK)


def for_search(stopped: bool) -> ExitCode:
    """A bisect or sweep: 5 when its --max-trials budget stopped it, else 0 (whatever it
    found: the answer is in its output and report)."""
    return ExitCode.STOPPED if stopped else ExitCode.OK


def for_checked(any_bad: bool) -> ExitCode:
    """Files a command checked or showed (`report check`, `cases check`, `inspect`):
    2 when one of them is bad, the others still reported."""
    return ExitCode.BAD_INPUT if any_bad else ExitCode.OK


def for_requests(any_failed: bool) -> ExitCode:
    """Requests to a running `flm serve`: 1 when one failed, as a trial on the device."""
    return ExitCode.DEVICE_FAILURE if any_failed else ExitCode.OK


def for_readiness(ready: bool) -> ExitCode:
    """`probe --require-npu`: 3 when this machine cannot run trials on an NPU."""
    return ExitCode.OK if ready else ExitCode.ENV_NOT_READY


def for_stop(signal_name: str) -> ExitCode:
    """A run stopped by a signal: 143 for SIGTERM, 130 for Ctrl-C (SIGINT)."""
    return ExitCode.TERMINATED if signal_name == "SIGTERM" else ExitCode.INTERRUPTED


def for_program(returncode: int | None) -> int:
    """`emulate`: the status of the program it ran, as a shell gives it (128 + N for a
    program a signal N killed)."""
    if returncode is None:
        return int(ExitCode.HARNESS_FAULT)
    return 128 - returncode if returncode < 0 else returncode


def for_emulated_program(returncode: int | None, *, model_failed: bool,
                         greeted: bool) -> int:
    """`emulate`: the program's status (`for_program`), unless the run was not what
    `emulate` said: 4 when the emulator's model died or failed requests while the program
    ran, 3 when the program never loaded the emulator's library (it ran on this machine's
    own devices)."""
    if model_failed:
        return int(ExitCode.HARNESS_FAULT)
    if not greeted:
        return int(ExitCode.ENV_NOT_READY)
    return for_program(returncode)


def translate(code: int, convention: str) -> int:
    """A harness exit status in the requested convention."""
    if convention != GIT_BISECT:
        return code
    if code in (ExitCode.OK, ExitCode.DEVICE_FAILURE) or code > 127:
        return code
    return GIT_BISECT_SKIP


def status_of(result: Any, convention: str) -> int:
    """What a command returned, as an exit status in `convention`."""
    if isinstance(result, TrialsEnded):
        return for_trials(result.statuses, convention)
    code = int(result) if isinstance(result, int) else int(ExitCode.OK)
    return translate(code, convention)


def _given(args: Sequence[str], option: str) -> list[str]:
    """The values `option` was given on a raw command line (``--opt V`` or ``--opt=V``),
    read without click, so they hold even when parsing the line failed."""
    values = [a.split("=", 1)[1] for a in args if a.startswith(option + "=")]
    values += [b for a, b in zip(args, args[1:], strict=False) if a == option]
    return values


def convention_of(args: Sequence[str]) -> str:
    """The exit-code convention a command line asks for: the one reading of --exit-codes."""
    return GIT_BISECT if GIT_BISECT in _given(args, EXIT_CODES_OPTION) else HARNESS


def wants_json(args: Sequence[str]) -> bool:
    return JSON_OPTION in args


# -- exceptions -----------------------------------------------------------------------

@dataclass(frozen=True)
class Ending:
    """How an exception ends a command: the label its one line starts with, the line,
    the harness's exit status."""

    label: str
    message: str
    code: int


# digits past any count the harness takes (a 5,000-digit number a user gave, echoed);
# compiled on first use, by re's own cache: a start-up does not pay for it
_LONG_NUMBER = r"\d{40,}"

# A folder or file the machine will not let us write (or read): the environment, not a bug.
_NOT_WRITABLE = {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT}


def fault_log(error: BaseException) -> str:
    """Keep a harness fault's traceback in a file of the user's private cache folder;
    return where. The error line asks the user to send it, so it is redacted as a report
    is; and it is created anew (never through a link, never over a file), mode 0600."""
    # imported here: only a fault needs it, and every start-up would pay for it
    import traceback

    from harness import __version__
    from harness.formats.cache import cache_dir
    from harness.report.redact import Redactor
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    text = (f"xdna-runlist-harness {__version__}\nargv: {sys.argv}\n\n"
            + "".join(traceback.format_exception(error)))
    redactor = Redactor()
    redactor.learn_machine()
    redactor.learn_text(text)
    try:
        path = cache_dir("faults") / f"fault-{stamp}-{os.getpid()}.log"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                     | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(redactor.text(text))
        return str(path)
    except (OSError, HarnessError) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        return f"nowhere (the log could not be written: {why})"


def _fault(err: BaseException) -> Ending:
    return Ending("harness fault", f"{type(err).__name__}: {err} (a bug in the harness; the "
                  f"traceback is in {fault_log(err)}; please report it)",
                  int(ExitCode.HARNESS_FAULT))


def ending_of(err: BaseException) -> Ending | None:
    """The one mapping from an exception to how a command ends; None for one that is
    not an ending (click's own exit, after --help or --version)."""
    import click
    if isinstance(err, click.exceptions.Exit):
        return None
    if isinstance(err, click.ClickException):
        # One line, as for every other error; the usage is a --help away.
        where = getattr(err, "ctx", None)
        hint = f" (see `{where.command_path} --help`)" if where is not None else ""
        return Ending("error", err.format_message() + hint, int(ExitCode.BAD_INPUT))
    if isinstance(err, Interrupted):
        return Ending(err.label, str(err), int(for_stop(err.signal)))
    if isinstance(err, HarnessError):
        return Ending(err.label, str(err), int(err.exit_code))
    if isinstance(err, (KeyboardInterrupt, click.Abort)):
        return Ending("interrupted", "stopped by Ctrl-C", int(ExitCode.INTERRUPTED))
    if isinstance(err, Terminated):
        return Ending("terminated", "stopped by SIGTERM", int(ExitCode.TERMINATED))
    stop = stop_behind(err)
    if stop is not None and stop is not err:
        return ending_of(stop)
    if isinstance(err, OSError) and err.errno in _NOT_WRITABLE:
        name = errno.errorcode.get(err.errno or 0, "")
        where = err.filename if err.filename is not None else "a file"
        return Ending("error", f"cannot use {where}: {err.strerror} ({name}); this user "
                      "cannot write (or read) it there: choose a folder that can be written "
                      "and has space, or fix its permissions", int(ExitCode.ENV_NOT_READY))
    if isinstance(err, Exception):
        return _fault(err)
    return None                  # SystemExit and the like: not ours to decide


# What must give way before an error line is written: a live progress line that a thread
# redraws in place (harness.app.cli.progress) would land on it, or be drawn over it.
_BEFORE_SAYING: list[Callable[[], None]] = []


def before_saying(give_way: Callable[[], None]) -> None:
    """Have `give_way` run before an ending's line is written, once per registration."""
    if give_way not in _BEFORE_SAYING:
        _BEFORE_SAYING.append(give_way)


def _say(ending: Ending, convention: str, as_json: bool) -> None:
    for give_way in _BEFORE_SAYING:
        give_way()
    if as_json:
        print(json.dumps({"error": {"kind": ending.label, "message": ending.message,
                                    "exit_code": translate(ending.code, convention)}}))
    else:
        print(f"{ending.label}: {one_line(ending.message)}", file=sys.stderr)


def one_line(message: str) -> str:
    """An error as one line a terminal shows as it is: control characters escaped (a file
    name may hold ESC), and a run of digits past what any count could be (a number of
    5,000 digits a user gave) cut to its ends and its length."""
    from harness.formats.printable import escape_controls
    message = re.sub(_LONG_NUMBER, lambda m: f"{m.group()[:8]}...{m.group()[-4:]} "
                     f"({len(m.group())} digits)", message)
    return escape_controls(message.replace("\n", " "))


def run(command: Callable[[], Any], args: Sequence[str]) -> int:
    """Run a command to its end and return the exit status it means: its result, or the
    exception that ended it (said in one line), in the convention `args` ask for. A
    stop that something swallowed (a Ctrl-C inside a `__del__`) still counts."""
    from harness.execution import stop
    convention = convention_of(args)
    try:
        code = status_of(command(), convention)
    except BrokenPipeError:
        # the reader went away (`| head`): stop writing, and say nothing more
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives until exit
        code = int(ExitCode.OK)
    except BaseException as err:
        ending = ending_of(err)
        if ending is None:
            raise
        _say(ending, convention, wants_json(args))
        code = translate(ending.code, convention)
    finally:
        run_cleanups()             # what this run loaded registered its own
    if stop.requested() and code == int(ExitCode.OK):
        code = int(for_stop(stop.requested() or ""))
    return code
