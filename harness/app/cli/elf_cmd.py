"""`runlist-harness elf inspect`."""

from __future__ import annotations

import click

from harness.app.cli import SuggestingGroup
from harness.app.cli.inspection import show_each
from harness.formats.elf import read_elf
from harness.formats.elf_view import render_text, summary
from harness.model.errors import ExitCode


@click.group(cls=SuggestingGroup)
def elf() -> None:
    """Look inside control-code ELFs (XRT's nop.elf, FastFlowLM's, the harness's own)."""


@elf.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one object a file.")
def inspect(files: tuple[str, ...], as_json: bool) -> ExitCode | None:
    """Show sections, XRT's UID note, and the TXN in .ctrltext decoded: version,
    device generation, the columns it targets, its operations.

    A malformed file is one error line and exit status 2; the other files are
    still shown.
    """
    return show_each(files, read_elf, summary, render_text, as_json)
