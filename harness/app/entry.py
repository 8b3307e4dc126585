"""The console scripts `runlist-harness` and `reproduce_ert_timeout`.

Kept light on purpose: its own imports are Python's built-in `gc`, `signal` and `sys`,
so Ctrl-C or SIGTERM at any moment after Python has started it ends with
one line and 130 or 143, never a traceback or click's "Aborted!". Everything
else (click, yaml, the simulator) is imported inside the guard.
"""

from __future__ import annotations

import gc
import signal
import sys

TYPE_CHECKING = False     # typing's own, without importing typing before the guard
if TYPE_CHECKING:
    import click

# Until harness.app.exits is loaded: the numbers ExitCode gives Ctrl-C and SIGTERM
# (tests/test_exit_codes.py holds them equal).
INTERRUPTED, TERMINATED = 130, 143


def _early_stop(signum: int, frame: object) -> None:
    # Until harness.execution.stop takes over: SIGTERM during start-up stops like Ctrl-C.
    raise KeyboardInterrupt if signum == signal.SIGINT else SystemExit(TERMINATED)


class ModulesLoading:
    """A block that loads modules, run with the cyclic garbage collector paused: loading
    them makes tens of thousands of objects that live as long as the process, which
    collections meanwhile walk again and again with nothing to free; they are then frozen
    (`gc.freeze`), so that later collections skip them too. `reproduce_ert_timeout
    --no-isolate` spent about a fifth of a bare interpreter's start-up in collections
    before, a fortieth after (`benchmarks/start_up.py` prints it). A command loads what
    it runs in one such block (`harness.app.cli.run_cmd`)."""

    def __enter__(self) -> None:
        self.enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        gc.freeze()
        if self.enabled:
            gc.enable()


def load_command(command_name: str | None) -> click.Command:
    """The click command `command_name` (the group for None), its modules loaded with the
    collector paused (`ModulesLoading`)."""
    with ModulesLoading():
        import click

        from harness.app.cli import main
        if command_name is None:
            return main
        command = main.get_command(click.Context(main), command_name)
        if command is None:
            raise LookupError(f"no command {command_name!r} in runlist-harness")
        return command


def _invoke(args: list[str], prog_name: str, command_name: str | None) -> int:
    from harness.execution import stop
    stop.install()
    command = load_command(command_name)
    return command.main(args=args, prog_name=prog_name, standalone_mode=False)


def _run(args: list[str], prog_name: str, command_name: str | None = None) -> int:
    signal.signal(signal.SIGTERM, _early_stop)
    # Python ignores SIGINT from the start when it inherited it ignored; the harness
    # always stops on Ctrl-C. A parent may also have blocked both signals until the
    # harness is ready for them (its tests do): from here on they are handled.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
        return _invoke(args, prog_name, command_name)
    except BaseException as err:
        from harness.model.errors import stop_behind
        stop = stop_behind(err)
        if stop is None:
            raise
        if isinstance(stop, KeyboardInterrupt):
            print("interrupted: stopped by Ctrl-C", file=sys.stderr)
            return INTERRUPTED
        print("terminated: stopped by SIGTERM", file=sys.stderr)
        return TERMINATED


def _exit(code: int) -> None:
    """Leave with `code` once everything is written (`harness.execution.stop.leave`): through
    the interpreter's normal exit, so that an XRT capture of the run is written; after an
    interruption at once, which is also what keeps the status: a KeyboardInterrupt that
    passed through `exec` makes Python kill itself with SIGINT at exit, whatever status
    the program chose (CPython's unhandled_keyboard_interrupt flag)."""
    from harness.execution.stop import leave
    leave(code)


def main() -> None:
    _exit(_run(sys.argv[1:], "runlist-harness"))


def reproduce() -> None:
    """`reproduce_ert_timeout`: the `reproduce` command on its own."""
    _exit(_run(sys.argv[1:], "reproduce_ert_timeout", "reproduce"))
