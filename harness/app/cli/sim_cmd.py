"""`runlist-harness sim profiles|exec`."""

from __future__ import annotations

import os
import shutil
import signal
import textwrap

import click

from harness.app.cli import SuggestingGroup
from harness.sim.host_script import run_host_script
from harness.sim.profiles import DEFAULT_STACK, catalogue, parse_profile
from harness.sim.rules import rules


@click.group(cls=SuggestingGroup)
def sim() -> None:
    """The simulated XDNA stack: its profiles, and running your own pyxrt scripts on it."""


@sim.command()
def profiles() -> None:
    """List the profile tokens (documented flavours, device, XRT release, hypotheses, modes),
    then every rule the simulated stack plays, each with where it was read.

    Combine tokens with commas, e.g. --profile mainline,inflight-cap:40. A
    profile with any 'deviation' token is a hypothesis, and reports say so.
    """
    width = min(shutil.get_terminal_size((100, 20)).columns, 120)

    def show(head: str, text: str) -> None:
        # Never break inside a word: sources such as amd/xdna-driver stay searchable.
        click.echo(textwrap.fill(text, width=width, initial_indent=head,
                                 subsequent_indent=" " * len(head), break_on_hyphens=False,
                                 break_long_words=False))
    show("default profile: ", DEFAULT_STACK)
    click.echo("\nprofile tokens:")
    for doc in catalogue():
        show(f"  {doc.syntax:<34} {doc.kind:<10} ", f"{doc.assumes} [source: {doc.source}]")
    click.echo("\nrules of the documented stack:")
    for rule in rules():
        show(f"  {rule.layer:<9} ", f"{rule.text} [source: {rule.source}]")
    from harness.emulator.interface_rules import RULES as EMULATOR_RULES
    click.echo("\nrules of the emulated driver (`runlist-harness emulate`; the rules above "
               "decide what its commands do):")
    for rule in EMULATOR_RULES:
        show(f"  {rule.layer:<9} ", f"{rule.text} [source: {rule.source}]")


@sim.command("exec", context_settings={"ignore_unknown_options": True,
                                       "allow_interspersed_args": False})
@click.option("--profile", default=None,
              help="Simulated stack profile (see `sim profiles`); default HARNESS_SIM_PROFILE, "
                   "else the #712 machine's stack: mainline (in-tree amdxdna) on Linux 7.0, "
                   "npu5 with firmware 1.1.2.65, XRT 2.26.")
@click.argument("script", type=click.Path(dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def exec_script(profile: str | None, script: str, args: tuple[str, ...]) -> int:
    """Run SCRIPT, written for the real pyxrt, with `import pyxrt` bound to the simulator,
    as `python SCRIPT ARGS` would: its folder first on sys.path, its exit status, and for
    an exception it does not catch, Python's traceback and exit 1."""
    from harness.sim.control import PROFILE_ENV
    # a program started on the simulated stack (`capture record -- runlist-harness sim exec`)
    # plays the profile it was started with, as its `import pyxrt` would
    parsed = parse_profile(profile or os.environ.get(PROFILE_ENV))
    click.echo(f"backend: simulated stack, profile {parsed.name} (not hardware)", err=True)
    # Ctrl-C is the script's, as under `python SCRIPT`: one it handles lets it end
    # normally (its exit status, and the replay.json XRT's capture writes at a normal
    # exit), where the harness's own handler noted a stop and left through os._exit
    signal.signal(signal.SIGINT, signal.default_int_handler)
    return run_host_script(script, list(args), parsed)
