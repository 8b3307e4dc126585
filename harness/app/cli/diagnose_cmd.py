"""`runlist-harness diagnose FILE... [--json]`: the causes the evidence of harness reports
and of plain artefacts supports, ranked (harness.report.diagnosis)."""

from __future__ import annotations

import json

import click

from harness.formats.printable import escape_controls
from harness.report.diagnosis import IDS, text_lines
from harness.report.diagnosis import diagnose as ranking_of
from harness.report.pasted import Pasted


@click.command()
@click.argument("files", nargs=-1, required=True, metavar="FILE...",
                type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True,
              help="Print the ranking as a JSON list: one entry per cause with its stable id "
                   f"({', '.join(IDS)}), nothing-fails or undetermined first where that is "
                   "the answer; the first entry also says what each file was read as, what "
                   "could not be read, the machines' factors, and where the device stayed "
                   "wedged.")
@click.option("--redact/--no-redact", "do_redact", default=True, show_default=True,
              help="Replace host name, user, home folders and the other private values in "
                   "what is printed (the files' paths, lines quoted from them) with "
                   "placeholders, as `report render` does: what is printed gets pasted.")
def diagnose(files: tuple[str, ...], as_json: bool, do_redact: bool) -> None:
    """Rank the causes the evidence of reports and of a user's own artefacts supports.

    Reads harness reports (reproduce, run, bisect, sweep, investigate, serve-probe, with
    their kernel log, the firmware's account and xrt-smi's control) and what a user
    already has, each recognised by its content, never by its name: a kernel log (dmesg,
    dmesg -T, journalctl -k), the output of flm serve, run or validate and its JSON
    error, xrt-smi examine and validate, XRT's exception text from C++ or Python, an
    application's console, and an outcomes table (docs/diagnosis.md). It says which file
    it read as what and which it could not, and for each cause the observations for and
    against it (each naming its file and line or field), what would falsify it and the
    experiment that separates it from the next. A cause that an observation contradicts
    is never ranked first; where the evidence does not separate the leading causes the
    answer is "undetermined" with the experiment that would, and where nothing failed,
    "nothing-fails". Files from several machines get each machine's stack and the
    factors that separate the failing ones from the working ones. Nothing is run.
    """
    diagnosis = ranking_of(files)
    # everything printed goes through one redaction, whatever the lines quote
    pasted = Pasted(do_redact, files)
    if as_json:
        click.echo(json.dumps(pasted.data(diagnosis.to_json()), indent=1))
        return
    click.echo(escape_controls(pasted.text("\n".join(text_lines(diagnosis)))))
