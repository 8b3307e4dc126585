"""The console scripts `runlist-harness` and `reproduce_ert_timeout`.

Kept light on purpose: signal handling is in place before the command line (and
click, yaml, the simulator) is even imported, so Ctrl-C or SIGTERM at any moment
of start-up still ends with one line and 130 or 143, never a traceback or
click's "Aborted!".
"""

from __future__ import annotations

import signal
import sys

from harness.errors import ExitCode, Terminated


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


def _invoke(args: list[str], prog_name: str, command_name: str | None) -> int:
    import click

    from harness.exits import GIT_BISECT, HARNESS, translate
    if command_name is None:
        from harness.cli import main as command
    else:
        from harness.cli import main
        command = main.commands[command_name]
    bisecting = f"--exit-codes={GIT_BISECT}" in args or any(
        a == "--exit-codes" and b == GIT_BISECT for a, b in zip(args, args[1:], strict=False))
    try:
        code = command.main(args=args, prog_name=prog_name, standalone_mode=False)
    except click.Abort:                 # click's form of a Ctrl-C while it parses
        raise KeyboardInterrupt from None
    except click.ClickException as err:  # usage errors before a command runs
        err.show()
        code = int(ExitCode.BAD_INPUT)
    return translate(int(code or 0), GIT_BISECT if bisecting else HARNESS)


def _run(args: list[str], prog_name: str, command_name: str | None = None) -> int:
    signal.signal(signal.SIGTERM, _terminate)
    try:
        return _invoke(args, prog_name, command_name)
    except KeyboardInterrupt:
        print("interrupted: stopped by Ctrl-C", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    except Terminated:
        print("terminated: stopped by SIGTERM", file=sys.stderr)
        return int(ExitCode.TERMINATED)


def main() -> None:
    sys.exit(_run(sys.argv[1:], "runlist-harness"))


def reproduce() -> None:
    """`reproduce_ert_timeout`: the `reproduce` command on its own."""
    sys.exit(_run(sys.argv[1:], "reproduce_ert_timeout", "reproduce"))
