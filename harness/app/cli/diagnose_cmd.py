"""`runlist-harness diagnose REPORT... [--json]`: the causes the reports' evidence
supports, ranked (harness.report.diagnosis)."""

from __future__ import annotations

import json

import click

from harness.formats.printable import escape_controls
from harness.report.diagnosis import diagnose as ranking_of
from harness.report.diagnosis import text_lines
from harness.report.pasted import Pasted


@click.command()
@click.argument("reports", nargs=-1, required=True, metavar="REPORT...",
                type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True,
              help="Print the ranking as a JSON list: one entry per cause with its stable id "
                   "(depth-limit, work-hang, slow-work, refused, resources, nondeterministic, "
                   "not-npu-path), nothing-fails or undetermined first where that is the "
                   "answer.")
@click.option("--redact/--no-redact", "do_redact", default=True, show_default=True,
              help="Replace host name, user, home folders and the other private values in "
                   "what is printed (the reports' paths, lines quoted from them) with "
                   "placeholders, as `report render` does: what is printed gets pasted.")
def diagnose(reports: tuple[str, ...], as_json: bool, do_redact: bool) -> None:
    """Rank the causes the evidence of one or more reports supports.

    Reads reports of reproduce, run, bisect, sweep, investigate and serve-probe (with
    their kernel log, the firmware's account and xrt-smi's control) and says, for each
    cause, the observations for and against it (each naming its report and field), what
    would falsify it and the experiment that separates it from the next. A cause that an
    observation contradicts is never ranked first; where the evidence does not separate
    the leading causes the answer is "undetermined", and where no trial failed,
    "nothing-fails". Nothing is run.
    """
    diagnosis = ranking_of(reports)
    # everything printed goes through one redaction, whatever the lines quote
    pasted = Pasted(do_redact, reports)
    if as_json:
        click.echo(json.dumps(pasted.data(diagnosis.to_json()), indent=1))
        return
    click.echo(escape_controls(pasted.text("\n".join(text_lines(diagnosis)))))
