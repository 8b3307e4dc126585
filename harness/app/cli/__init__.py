"""The `runlist-harness` command line (click).

Commands import on use, so `--help` and `report render` never load the simulator.
Every command, under the group or on its own (`reproduce_ert_timeout`), ends through
`harness.app.exits.run`: what it returned or raised becomes its exit status there.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NoReturn, cast, overload

import click
from click import utils as click_utils

from harness import __version__
from harness.app import exits

# click 8.5 serves this through a deprecating module __getattr__, so its type is unknown
_short_help = cast(Callable[[str, int], str], click_utils.make_default_short_help)

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


@dataclass(frozen=True)
class Entry:
    """Where a command lives, and its summary for `--help`."""

    module: str            # under harness.app.cli
    attribute: str
    summary: str           # the command's first paragraph, for --help without importing it


# Commands import on use, so `--help` and `report render` never load the simulator;
# tests/test_start_up.py checks each summary against its command's own help.
COMMANDS: dict[str, Entry] = {
    "xclbin": Entry("xclbin_cmd", "xclbin", "Look inside xclbin files (no XRT needed)."),
    "elf": Entry("elf_cmd", "elf", "Look inside control-code ELFs (XRT's nop.elf, "
                 "FastFlowLM's, the harness's own)."),
    "xclbins": Entry("xclbins_cmd", "xclbins", "Model packs: import them into "
                     "xclbins/<pack>/, and see where a case's come from."),
    "capture": Entry("capture_cmd", "capture", "XRT captures (xrt-capture): record what a "
                     "program submits, import one as a case, see what it holds."),
    "cases": Entry("cases_cmd", "cases", "List, show and check experiment definitions "
                   "(cases/*.yaml)."),
    "run": Entry("run_cmd", "run", "Run a case's plans (runlists of the given depth and "
                 "cut) and write a report."),
    "reproduce": Entry("run_cmd", "reproduce", "Run one runlist and its cut side by "
                       "side and say whether the failure reproduces (default case: "
                       "minicpm5-2b-decode, the 42-layer decode of ROCm/FastFlowLM#712). "
                       "`reproduce_ert_timeout` runs this command."),
    "bisect": Entry("search_cmd", "bisect", "Find the smallest depth at which one runlist "
                    "(or the given cut) fails."),
    "sweep": Entry("search_cmd", "sweep", "Run every depth x chunk-size cell, K trials each "
                   "(default 3), into one report."),
    "investigate": Entry("investigate_cmd", "investigate", "Investigate a failure within a "
                         "budget, the way a careful engineer does by hand."),
    "export": Entry("export_cmd", "export", "Write CASE's plans as XRT run recipes + profile "
                    "+ artefacts into FOLDER (new), runnable with XRT's own `xrt-runner "
                    "--recipe R --profile P` and no Python."),
    "diagnose": Entry("diagnose_cmd", "diagnose", "Rank the causes the evidence of reports "
                      "and of a user's own artefacts supports."),
    "emulate": Entry("emulate_cmd", "emulate", "Run COMMAND against the XRT installed on "
                     "this machine with one emulated NPU of the profile's device, firmware "
                     "and driver flavour: XRT's own libraries, pyxrt and XDNA shim answer, "
                     "over a driver whose every command is decided by the harness's model."),
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


class Guarded(click.Command):
    """A click command whose `main` ends through `harness.app.exits.run`: parsing errors
    and what the command returns or raises alike (click's own handling, which prints a
    blank line before an abort, never runs)."""

    @overload
    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: Literal[True] = True,
             **extra: Any) -> NoReturn: ...

    @overload
    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> int: ...

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> int:
        given = list(sys.argv[1:] if args is None else args)

        def command() -> Any:
            try:
                # click's parser consumes the list it is given: parse a copy, so that the
                # line `exits.run` reads (--json, --exit-codes) is the line as typed
                with self.make_context(prog_name or self.name, list(given), **extra) as ctx:
                    return self.invoke(ctx)
            except click.exceptions.Exit as done:      # --help, --version
                return done.exit_code
            except click.NoSuchOption as err:
                raise name_where_else(err) from None
        code = exits.run(command, given)
        if standalone_mode:
            sys.exit(code)
        return code


class SuggestingGroup(click.Group):
    """A group that answers a mistyped command with the close names it has (`bisct`: did
    you mean `bisect`?), or lists its commands: click before 8.4 names neither, and a group
    whose commands load on use has none for click to compare with."""

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        # an option-like word is click's to answer (it parses `--help` there)
        if name and not name.startswith("-") and not ctx.resilient_parsing \
                and self.get_command(ctx, name) is None:
            raise click.UsageError(unknown_command(name, self.list_commands(ctx),
                                                   ctx.command_path), ctx)
        return super().resolve_command(ctx, args)


def unknown_command(name: str, commands: list[str], where: str) -> str:
    """What a mistyped command is told: the close names, else every name there is."""
    import difflib
    # a name the group has with another case or separator (`Serve_Probe`) is the one meant
    folded = {c.lower().replace("_", "-"): c for c in commands}
    key = name.lower().replace("_", "-")
    close = [folded[key]] if key in folded else \
        difflib.get_close_matches(name, commands, n=3, cutoff=0.6)
    if len(close) == 1:
        return f"No such command {name!r}; did you mean `{where} {close[0]}`?"
    if close:
        return (f"No such command {name!r}; did you mean one of "
                + ", ".join(f"`{where} {c}`" for c in close) + "?")
    return f"No such command {name!r}; `{where}` has: {', '.join(commands)}"


class HarnessGroup(Guarded, SuggestingGroup):
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
        rows = [(name, _short_help(COMMANDS[name].summary, width))
                for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        _remember(ctx, args)
        return super().parse_args(ctx, args)


def _remember(ctx: click.Context, args: list[str]) -> None:
    """Keep the command line as typed, for reports (see `harness.invoked_as`)."""
    import harness
    harness.invoked_as = [ctx.info_name or "runlist-harness", *args]


class GuardedCommand(Guarded, click.Command):
    """A command that also runs without the group (`reproduce_ert_timeout`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if ctx.parent is None:
            _remember(ctx, args)
        return super().parse_args(ctx, args)


@click.group("runlist-harness", cls=HarnessGroup, epilog=EXIT_CODES,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="runlist-harness")
def main() -> None:
    """Reproduce, bisect and report XRT runlist failures on AMD XDNA 2 NPUs.

    Runs on a real NPU through pyxrt, or on the simulated stack that ships
    with the harness when there is none.
    """


def commands_taking(option: str) -> list[str]:
    """The commands of runlist-harness that take `option` (`run`, `report render`), for an
    error that names an option the command given does not take. Loads every command: it
    runs only on that error."""
    found: list[str] = []
    pending: list[tuple[str, click.Command]] = [("", main)]
    while pending:
        path, command = pending.pop(0)
        if path and any(isinstance(p, click.Option) and option in (*p.opts, *p.secondary_opts)
                        for p in command.params):
            found.append(path)
        if isinstance(command, click.Group):
            context = click.Context(command)
            for name in command.list_commands(context):
                sub = command.get_command(context, name)
                if sub is not None:
                    pending.append((f"{path} {name}".strip(), sub))
    return found


def name_where_else(err: click.NoSuchOption) -> click.NoSuchOption:
    """An unknown option that another command takes: say which, instead of click's close
    spelling (`reproduce_ert_timeout --resume` is `run --resume`, not `--realtime`)."""
    where = getattr(err, "ctx", None)
    here = where.command_path if where is not None else ""
    elsewhere = [name for name in commands_taking(err.option_name)
                 if not here.endswith(f" {name}") and here != name]
    if not elsewhere:
        return err
    named = ", ".join(f"`runlist-harness {name}`" for name in elsewhere[:3])
    return click.NoSuchOption(err.option_name, ctx=where,
                              message=f"No such option '{err.option_name}' here; {named} "
                                      f"{'takes' if len(elsewhere) == 1 else 'take'} it")
