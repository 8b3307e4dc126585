"""The `runlist-harness` command line (click), and the one place exit statuses are decided.

Commands return an `ExitCode` (or nothing, for 0). `HarnessGroup.invoke` turns
everything else into a status too: a `HarnessError` prints its one line and
exits with its code; Ctrl-C exits 130 and SIGTERM 143, each with one line; a
click usage error exits 2; a closed output pipe ends quietly; anything else is
a harness fault: one line naming a log file that keeps the traceback, exit 4.
With `--json` the error is a JSON object on stdout instead. With
`--exit-codes git-bisect` the status is translated for `git bisect run`
(`harness.exits`).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import traceback

import click

from harness import __version__
from harness.errors import ExitCode, HarnessError, Terminated
from harness.exits import GIT_BISECT, HARNESS, translate

EXIT_CODES = """\b
Exit codes:
  0    every trial completed (or the command succeeded)
  1    a trial failed on the device (real or simulated)
  2    bad input: a file, option or argument is wrong
  3    environment not ready (no NPU, no pyxrt, server unreachable)
  4    harness fault: a worker crashed or missed its deadline, a disk
       fault, or an error of the harness itself (traceback in a log file)
  130  interrupted (Ctrl-C); the report keeps everything so far
  143  terminated (SIGTERM); the report keeps everything so far
  With --exit-codes git-bisect (run, reproduce): 0 good, 1 bad,
  125 cannot test (deadline, crash, environment, bad input)."""


def _requested(ctx: click.Context, flag: str, value: str | None = None) -> bool:
    """Whether the command line asked for `flag` (with `value`), read from the raw arguments
    so it holds even when parsing them failed."""
    # click 8.2 keeps the subcommand's name apart from its arguments (_protected_args)
    args = list(getattr(ctx, "_protected_args", None) or []) + list(ctx.args)
    if value is None:
        return flag in args
    return f"{flag}={value}" in args or any(a == flag and b == value
                                            for a, b in zip(args, args[1:], strict=False))


def fault_log(error: BaseException) -> str:
    """Keep a harness fault's traceback in a file; return where."""
    from harness.cache import cache_dir
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    try:
        path = cache_dir("faults") / f"fault-{stamp}-{os.getpid()}.log"
        path.write_text(f"xdna-runlist-harness {__version__}\nargv: {sys.argv}\n\n"
                        + "".join(traceback.format_exception(error)))
        return str(path)
    except OSError as err:
        return f"nowhere (the log could not be written: {err.strerror})"


def guarded(ctx: click.Context, invoke) -> None:
    """Run `invoke()` and end with the exit status its result or its failure means."""
    convention = GIT_BISECT if _requested(ctx, "--exit-codes", GIT_BISECT) else HARNESS
    as_json = _requested(ctx, "--json")

    def fail(label: str, message: str, code: int) -> int:
        if as_json:
            click.echo(json.dumps({"error": {"kind": label, "message": message,
                                             "exit_code": translate(code, convention)}}))
        else:
            click.echo(f"{label}: {message}", err=True)
        return code

    try:
        result = invoke()
        code = int(result) if isinstance(result, int) else int(ExitCode.OK)
    except click.exceptions.Exit:
        raise
    except click.ClickException as err:
        # One line, as for every other error; the usage is a --help away.
        where = getattr(err, "ctx", None)
        hint = f" (see `{where.command_path} --help`)" if where is not None else ""
        code = fail("error", err.format_message() + hint, int(ExitCode.BAD_INPUT))
    except HarnessError as err:
        code = fail(err.label, str(err), int(err.exit_code))
    except (KeyboardInterrupt, click.Abort):
        code = fail("interrupted", "stopped by Ctrl-C", int(ExitCode.INTERRUPTED))
    except Terminated:
        code = fail("terminated", "stopped by SIGTERM", int(ExitCode.TERMINATED))
    except BrokenPipeError:
        # the reader went away (`| head`): stop writing, and say nothing more
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives until exit
        code = int(ExitCode.OK)
    except Exception as err:
        code = fail("harness fault", f"{type(err).__name__}: {err} (a bug in the harness; "
                    f"the traceback is in {fault_log(err)}; please report it)",
                    int(ExitCode.HARNESS_FAULT))
    finally:
        from harness.reportfile import release_all
        release_all()
    ctx.exit(translate(code, convention))


class HarnessGroup(click.Group):
    def invoke(self, ctx: click.Context):
        guarded(ctx, lambda: super(HarnessGroup, self).invoke(ctx))


class GuardedCommand(click.Command):
    """A command that guards its own exit status when it runs without the group
    (`reproduce_ert_timeout`); under the group, the group does."""

    def invoke(self, ctx: click.Context):
        if ctx.parent is not None:
            return super().invoke(ctx)
        guarded(ctx, lambda: super(GuardedCommand, self).invoke(ctx))


@click.group(cls=HarnessGroup, epilog=EXIT_CODES,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="runlist-harness")
def main() -> None:
    """Reproduce, bisect and report XRT runlist failures on AMD XDNA 2 NPUs.

    Runs on a real NPU through pyxrt, or on the simulated stack that ships
    with the harness when there is none.
    """


def _register() -> None:
    from harness.cli import (
        cases_cmd,
        probe_cmd,
        report_cmd,
        run_cmd,
        search_cmd,
        serve_cmd,
        sim_cmd,
        xclbin_cmd,
        xclbins_cmd,
    )

    for command in (xclbin_cmd.xclbin, xclbins_cmd.xclbins, cases_cmd.cases, run_cmd.run,
                    run_cmd.reproduce, search_cmd.bisect, search_cmd.sweep,
                    sim_cmd.sim, probe_cmd.probe, report_cmd.report, serve_cmd.serve_probe,
                    serve_cmd.pack):
        main.add_command(command)


_register()
