"""`runlist-harness xclbin inspect`."""

from __future__ import annotations

import click

from harness.app.cli import SuggestingGroup
from harness.app.cli.inspection import show_each
from harness.formats.xclbin import read_xclbin
from harness.formats.xclbin_view import render_text, summary
from harness.model.errors import ExitCode


@click.group(cls=SuggestingGroup)
def xclbin() -> None:
    """Look inside xclbin files (no XRT needed)."""


@xclbin.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one object a file.")
def inspect(files: tuple[str, ...], as_json: bool) -> ExitCode | None:
    """Show uuid, kernels and their arguments, partition, sections and hashes.

    A file byte-identical to one FastFlowLM shipped is named ("known as
    Qwen3-1.7B-NPU2/layer.xclbin"). A malformed file is one error line and
    exit status 2; the other files are still shown.
    """
    return show_each(files, read_xclbin, summary, render_text, as_json)
