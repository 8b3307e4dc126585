"""`runlist-harness report render|compare|validate`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from harness.app import exits
from harness.formats.yamlio import write_atomic
from harness.model.errors import ReportError
from harness.report import bundle as bundling
from harness.report import compare as comparing
from harness.report import render as rendering
from harness.report.check import validate_file
from harness.report.fileformat import REWRITTEN_NOTE, load_report
from harness.report.model import Report
from harness.report.redact import redact


@click.group()
def report() -> None:
    """Turn reports into Markdown for upstream issues, compare them, check them."""


def _data(path: str, do_redact: bool, check: bool = True) -> dict[str, Any]:
    """A report's content, refused unless it validates: what validates renders."""
    if check:
        validation = validate_file(path)
        problems = validation.problems
        if problems:
            more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
            raise ReportError(f"{path} is not a valid report: {'; '.join(problems[:3])}{more}. "
                              "`runlist-harness report validate` lists every problem; "
                              "--no-check renders it anyway")
        # what validation read is the report: no second parse of a big file
        loaded = Report.from_dict(validation.document, path)
        rewritten = REWRITTEN_NOTE in validation.notes
    else:
        loaded = load_report(path)              # refuses unknown schemas and broken files
        rewritten = loaded.read_whole
    if rewritten:
        click.echo(f"note: {path}: {REWRITTEN_NOTE}", err=True)
    data = loaded.to_dict()
    return redact(data) if do_redact else data


@report.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["md", "text"]), default="md",
              show_default=True)
@click.option("--redact/--no-redact", "do_redact", default=None,
              help="Replace host name, user, home folders, machine id, serials, MAC and IP "
                   "addresses with placeholders. Default: on for md, off for text.")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Write to this file instead of stdout (never over an existing file).")
@click.option("--check/--no-check", default=True, show_default=True,
              help="Refuse a report that does not validate against the schema.")
def render(file: str, fmt: str, do_redact: bool | None, out: str | None, check: bool) -> None:
    """Render a report: Markdown that pastes into a GitHub issue, or plain text."""
    if do_redact is None:
        do_redact = fmt == "md"
    if not check:
        click.echo(f"warning: rendering {file} without checking it against the schema", err=True)
    data = _data(file, do_redact=False, check=check)
    if fmt == "md":
        # the same text as report.md in the bundle, naming the bundle and what it holds
        contents = bundling.collect(Path(file), do_redact, data, names_only=True)
        text = contents.files[bundling.REPORT_MD].decode()
    else:
        text = rendering.render_text(redact(data) if do_redact else data)
    _emit(text, out)


@report.command("bundle")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="The .tar.gz to write (default: REPORT.bundle.tar.gz beside the report).")
@click.option("--redact/--no-redact", "do_redact", default=True, show_default=True,
              help="Replace host name, user, home folders, machine id, serials, MAC and IP "
                   "addresses with placeholders in everything the bundle holds.")
@click.option("--force", is_flag=True, help="Replace --out if it exists.")
@click.option("--check/--no-check", default=True, show_default=True,
              help="Refuse a report that does not validate against the schema.")
def bundle_cmd(file: str, out: str | None, do_redact: bool, force: bool, check: bool) -> None:
    """One .tar.gz to attach to an upstream issue: README for the maintainer, the rendered
    report, the report, every trial's kernel log, xrt-smi output and the XRT recipes.
    Nothing from outside the report's folder; xclbins are named, not shipped."""
    _data(file, do_redact, check)              # refuses what does not validate, as render
    target, contents = bundling.write_bundle(Path(file), Path(out) if out else None,
                                             do_redact=do_redact, force=force)
    click.echo(f"bundle: {target} ({target.stat().st_size} bytes): "
               + ", ".join(contents.names()))
    for item in contents.left_out:
        click.echo(f"  not included: {item}")


@report.command("compare")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "md"]), default="text",
              show_default=True)
@click.option("--redact/--no-redact", "do_redact", default=None,
              help="As for render. Default: on for md, off for text.")
@click.option("--out", type=click.Path(dir_okay=False), default=None)
def compare_cmd(files: tuple[str, ...], fmt: str, do_redact: bool | None,
                out: str | None) -> None:
    """One matrix across reports: a column per report, labelled by what differs (firmware,
    driver, its parameters, XRT, profile, machine); a row per plan; differing cells marked."""
    if len(files) < 2:
        raise ReportError("give at least two reports to compare")
    if do_redact is None:
        do_redact = fmt == "md"
    matrix = comparing.build([(f, _data(f, do_redact)) for f in files])
    text = comparing.render_markdown(matrix) if fmt == "md" else comparing.render_text(matrix)
    _emit(text, out)


def _emit(text: str, out: str | None) -> None:
    if out is None:
        click.echo(text, nl=False)
        return
    try:
        write_atomic(out, text, overwrite=False)
    except FileExistsError:
        raise ReportError(f"{out} exists; choose another --out") from None
    click.echo(f"wrote {out}")


@report.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
def validate(files: tuple[str, ...]) -> None:
    """Check reports against the report schema; per file: valid, or what is wrong where."""
    bad = 0
    for file in files:
        validation = validate_file(file)
        for note in validation.notes:
            click.echo(f"{file}: note: {note}")
        problems = validation.problems
        if problems:
            bad += 1
            for problem in problems[:20]:
                click.echo(f"{file}: {problem}")
            if len(problems) > 20:
                click.echo(f"{file}: ... and {len(problems) - 20} more")
        else:
            click.echo(f"{file}: valid")
    return exits.for_checked(bad > 0)
