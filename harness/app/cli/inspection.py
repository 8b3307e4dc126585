"""What `xclbin inspect` and `elf inspect` share: each file shown, or one error line for
a file that cannot be read (exit 2), the others still shown."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from harness.app import exits
from harness.model.errors import BadInput, ExitCode


def show_each(files: tuple[str, ...], read: Callable[[str], Any],
              summary: Callable[[Any], dict[str, Any]], render: Callable[[Any], str],
              as_json: bool) -> ExitCode | None:
    results = []
    failed = False
    for path in files:
        try:
            results.append(read(path))
        except BadInput as err:
            click.echo(f"error: {err}", err=True)
            failed = True
    if as_json:
        click.echo(json.dumps([summary(r) for r in results], indent=2))
    elif results:
        click.echo("\n\n".join(render(r) for r in results))
    return exits.for_checked(failed)
