"""The `runlist-harness` command line (click)."""

from __future__ import annotations

import sys

import click

from harness import __version__
from harness.errors import HarnessError

EXIT_CODES = """\b
Exit codes:
  0  every trial completed (or the command succeeded)
  1  a trial failed on the device (real or simulated)
  2  bad input: a file, option or argument is wrong
  3  environment not ready (no NPU, no pyxrt, server unreachable)
  4  harness fault: a worker crashed or missed its deadline"""


class HarnessGroup(click.Group):
    """Prints a `HarnessError` as one line and exits with its code; no traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except HarnessError as err:
            click.echo(f"error: {err}", err=True)
            ctx.exit(int(err.exit_code))


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

    main.add_command(xclbin_cmd.xclbin)
    main.add_command(xclbins_cmd.xclbins)
    main.add_command(cases_cmd.cases)
    main.add_command(run_cmd.run)
    main.add_command(run_cmd.reproduce)
    main.add_command(run_cmd.worker)
    main.add_command(search_cmd.bisect)
    main.add_command(search_cmd.sweep)
    main.add_command(sim_cmd.sim)
    main.add_command(probe_cmd.probe)
    main.add_command(report_cmd.report)
    main.add_command(serve_cmd.serve_probe)
    main.add_command(serve_cmd.pack)


_register()


def reproduce_main() -> None:
    """The `reproduce_ert_timeout` console script: `runlist-harness reproduce`."""
    main(args=["reproduce", *sys.argv[1:]], prog_name="reproduce_ert_timeout")
