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
  4  harness fault: a worker crashed or missed its deadline
  130  interrupted (Ctrl-C); the report keeps everything so far"""


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

    for command in (xclbin_cmd.xclbin, xclbins_cmd.xclbins, cases_cmd.cases, run_cmd.run,
                    run_cmd.reproduce, run_cmd.worker, search_cmd.bisect, search_cmd.sweep,
                    sim_cmd.sim, probe_cmd.probe, report_cmd.report, serve_cmd.serve_probe,
                    serve_cmd.pack):
        main.add_command(command)


_register()


def reproduce_main() -> None:
    """The `reproduce_ert_timeout` console script: `runlist-harness reproduce`."""
    main(args=["reproduce", *sys.argv[1:]], prog_name="reproduce_ert_timeout")
