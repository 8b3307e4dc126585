"""`runlist-harness elf inspect`."""

from __future__ import annotations

import json

import click

from harness.elf import ElfError, read_elf
from harness.elf_view import render_text, summary
from harness.errors import ExitCode


@click.group()
def elf() -> None:
    """Look inside control-code ELFs (XRT's nop.elf, FastFlowLM's, the harness's own)."""


@elf.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one object a file.")
def inspect(files: tuple[str, ...], as_json: bool) -> None:
    """Show sections, XRT's UID note, and the TXN in .ctrltext decoded: version,
    device generation, the columns it targets, its operations.

    A malformed file is one error line and exit status 2; the other files are
    still shown.
    """
    results = []
    failed = False
    for path in files:
        try:
            results.append(read_elf(path))
        except ElfError as err:
            click.echo(f"error: {err}", err=True)
            failed = True
    if as_json:
        click.echo(json.dumps([summary(e) for e in results], indent=2))
    elif results:
        click.echo("\n\n".join(render_text(e) for e in results))
    if failed:
        return ExitCode.BAD_INPUT
