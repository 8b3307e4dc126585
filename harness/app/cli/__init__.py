"""The `runlist-harness` command line (click), and the one place exit statuses are decided.

Commands return an `ExitCode` (or nothing, for 0). `HarnessGroup.invoke` turns
everything else into a status too: a `HarnessError` prints its one line and
exits with its code; Ctrl-C exits 130 and SIGTERM 143, each with one line; a
click usage error exits 2; a closed output pipe ends quietly; anything else is
a harness fault: one line naming a log file that keeps the traceback, exit 4.
With `--json` the error is a JSON object on stdout instead. With
`--exit-codes git-bisect` the status is translated for `git bisect run`
(`harness.app.exits`).
"""

from __future__ import annotations

import datetime as dt
import errno
import importlib
import json
import os
import sys
import traceback
from dataclasses import dataclass

import click
from click.utils import make_default_short_help

from harness import __version__
from harness.app.exits import GIT_BISECT, HARNESS, translate
from harness.model.errors import ExitCode, HarnessError, Terminated
from harness.sources.confine import allow_outside_for_cases

EXIT_CODES = """\b
Exit codes:
  0    every trial completed (or the command succeeded)
  1    a trial failed on the device (real or simulated)
  2    bad input: a file, option or argument is wrong
  3    environment not ready (no NPU, no pyxrt, server unreachable)
  4    harness fault: a worker crashed or missed its deadline, a disk
       fault, or an error of the harness itself (traceback in a log file)
  5    stopped early: bisect/sweep spent --max-trials before the search
       ended; the report keeps everything and --replay continues it
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
    from harness.formats.cache import cache_dir
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    try:
        path = cache_dir("faults") / f"fault-{stamp}-{os.getpid()}.log"
        path.write_text(f"xdna-runlist-harness {__version__}\nargv: {sys.argv}\n\n"
                        + "".join(traceback.format_exception(error)))
        return str(path)
    except OSError as err:
        return f"nowhere (the log could not be written: {err.strerror})"


# A folder or file the machine will not let us write (or read): the environment, not a bug.
_NOT_WRITABLE = {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT}


def _not_writable(err: OSError) -> str:
    name = errno.errorcode.get(err.errno or 0, "")
    where = err.filename if err.filename is not None else "a file"
    return (f"cannot use {where}: {err.strerror} ({name}); this user cannot write (or read) "
            "it there: choose a folder that can be written and has space, or fix its "
            "permissions")


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
    except OSError as err:
        if err.errno not in _NOT_WRITABLE:
            code = fail("harness fault", f"{type(err).__name__}: {err} (a bug in the harness; "
                        f"the traceback is in {fault_log(err)}; please report it)",
                        int(ExitCode.HARNESS_FAULT))
        else:
            code = fail("error", _not_writable(err), int(ExitCode.ENV_NOT_READY))
    except Exception as err:
        code = fail("harness fault", f"{type(err).__name__}: {err} (a bug in the harness; "
                    f"the traceback is in {fault_log(err)}; please report it)",
                    int(ExitCode.HARNESS_FAULT))
    finally:
        # Only what this run loaded: an import that Ctrl-C cut short must not run again.
        for module, cleanup in (("harness.report.lock", "release_all"),
                                ("harness.execution.isolation", "shutdown")):
            hook = getattr(sys.modules.get(module), cleanup, None)
            if hook is not None:
                hook()
    ctx.exit(translate(code, convention))


@dataclass(frozen=True)
class Entry:
    module: str            # under harness.app.cli
    attribute: str
    summary: str           # the command's first paragraph, for --help without importing it


# Commands import on use, so `--help` and `report render` never load the simulator;
# tests/test_cli_help.py checks each summary against its command's own help.
COMMANDS: dict[str, Entry] = {
    "xclbin": Entry("xclbin_cmd", "xclbin", "Look inside xclbin files (no XRT needed)."),
    "elf": Entry("elf_cmd", "elf", "Look inside control-code ELFs (XRT's nop.elf, "
                 "FastFlowLM's, the harness's own)."),
    "xclbins": Entry("xclbins_cmd", "xclbins", "Model packs: import them into "
                     "xclbins/<pack>/, and see where a case's come from."),
    "capture": Entry("capture_cmd", "capture", "XRT captures (xrt-capture): import one as a "
                     "case, see what it holds."),
    "cases": Entry("cases_cmd", "cases", "List, show and validate experiment definitions "
                   "(cases/*.yaml)."),
    "run": Entry("run_cmd", "run", "Run a case's plans (runlists of the given depth and "
                 "chunking) and write a report."),
    "reproduce": Entry("run_cmd", "reproduce", "Run the monolithic and chunked plans side by "
                       "side and say whether the failure reproduces (default case: "
                       "minicpm5-2b-decode, the 42-layer decode of ROCm/FastFlowLM#712). "
                       "`reproduce_ert_timeout` runs this command."),
    "bisect": Entry("search_cmd", "bisect", "Find the smallest depth at which one runlist "
                    "(or the given chunking) fails."),
    "sweep": Entry("search_cmd", "sweep", "Run every depth x chunk-size cell, K trials each "
                   "(default 3), into one report."),
    "export": Entry("export_cmd", "export", "Write CASE's plans as XRT run recipes + profile "
                    "+ artefacts into FOLDER (new), runnable with XRT's own `xrt-runner "
                    "--recipe R --profile P` and no Python."),
    "sim": Entry("sim_cmd", "sim", "The simulated XDNA stack: its profiles, and running your "
                 "own pyxrt scripts on it."),
    "probe": Entry("probe_cmd", "probe", "Fingerprint this machine's NPU stack and check it "
                   "is ready, naming each fix."),
    "report": Entry("report_cmd", "report", "Turn reports into Markdown for upstream issues, "
                    "compare them, check them."),
    "serve-probe": Entry("serve_cmd", "serve_probe", "Reproduce through a running `flm "
                         "serve`: send chat completions with a tight max_tokens, classify "
                         "each answer (FastFlowLM reports errors as {\"error\": ...} with "
                         "HTTP 200), and check that the answers can be trusted: is the tag "
                         "known and resident, does a made-up tag get answered, is the decode "
                         "speed physically possible?"),
    "pack": Entry("serve_cmd", "pack", "FastFlowLM model folders (model.q4nx, config.json)."),
}


class HarnessGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        entry = COMMANDS.get(name)
        if entry is None:
            return None
        module = importlib.import_module(f"harness.app.cli.{entry.module}")
        return getattr(module, entry.attribute)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        width = formatter.width - 6 - max(len(name) for name in COMMANDS)
        rows = [(name, make_default_short_help(COMMANDS[name].summary, width))
                for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        _remember(ctx, args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context):
        guarded(ctx, lambda: super(HarnessGroup, self).invoke(ctx))


def _remember(ctx: click.Context, args: list[str]) -> None:
    """Keep the command line as typed, for reports (see `harness.invoked_as`)."""
    import harness
    harness.invoked_as = [ctx.info_name or "runlist-harness", *args]


class GuardedCommand(click.Command):
    """A command that guards its own exit status when it runs without the group
    (`reproduce_ert_timeout`); under the group, the group does."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if ctx.parent is None:
            _remember(ctx, args)
        return super().parse_args(ctx, args)

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
    allow_outside_for_cases(False)     # until a command's --allow-outside-paths says so
