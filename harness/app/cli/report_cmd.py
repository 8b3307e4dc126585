"""`runlist-harness report render|bundle|compare|check`.

Each reads a report a part at a time (`harness.report.reader.ReportReader`) and in
one pass: the check and the digest the render needs see each trial once, so a report of
any size renders in flat memory.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from harness.app import exits
from harness.app.cli import SuggestingGroup
from harness.formats.printable import escape_controls
from harness.formats.yamlio import write_atomic
from harness.model.errors import BadInput, ReportError
from harness.report.check import check_report_file, what_it_is
from harness.report.reader import REWRITTEN_NOTE, ReportReader, TrialEntry

if TYPE_CHECKING:         # each command loads what it writes: `report check` renders nothing
    from harness.report.digest import Digest


@click.group(cls=SuggestingGroup)
def report() -> None:
    """Turn reports into Markdown for upstream issues, compare them, check them."""


def _read(path: str, check: bool, *, kernel_log: bool = False,
          anyway: str | None = None) -> tuple[ReportReader, Digest]:
    """A report's reader and its digest, refused unless it checks: what checks renders.
    `anyway` says what --no-check does, for a command that has it. The caller closes
    both."""
    from harness.report.digest import Digest
    if not Path(path).is_file():
        # nothing to check: the hints of an invalid report would mislead
        what = "is a folder, not a report" if Path(path).is_dir() else "does not exist"
        raise ReportError(f"{path} {what}; give a report file (reports/*.yaml)")
    if check:
        made: dict[str, Digest] = {}

        def start(reader: ReportReader) -> Callable[[TrialEntry], None]:
            made["digest"] = Digest(reader.document(with_trials=False), kernel_log=kernel_log)
            return made["digest"].add
        result = check_report_file(path, start=start)
        if result.problems:
            if "digest" in made:
                made["digest"].close()
            if result.not_a_report is not None:
                raise ReportError(f"{path} is not a report: it is {result.not_a_report}")
            problems = result.problems
            more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
            raise ReportError(f"{path} is not a valid report: {'; '.join(problems[:3])}{more}. "
                              "`runlist-harness report check` lists every problem"
                              + (f"; {anyway}" if anyway else ""))
        rewritten = REWRITTEN_NOTE in result.notes
        reader = ReportReader(path)             # for what a bundle copies from the file
        digest = made["digest"]
    else:
        reader = ReportReader(path)             # refuses unknown layouts and broken files
        try:
            kind = what_it_is(reader.read_header())
            if kind is not None:
                raise ReportError(f"{path} is not a report: it is {kind}")
            digest = Digest.of_reader(reader, kernel_log=kernel_log, learn_everywhere=True)
        except BaseException:
            reader.close()
            raise
        rewritten = reader.whole
    if rewritten:
        click.echo(f"note: {path}: {REWRITTEN_NOTE}", err=True)
    return reader, digest


_CHECK_OPTION = click.option("--check/--no-check", default=True, show_default=True,
                             help="Refuse a report that does not pass `report check`.")


@report.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["md", "text"]), default="md",
              show_default=True)
@click.option("--redact/--no-redact", "do_redact", default=None,
              help="Replace host name, user, home folders, machine id, serials, MAC and IP "
                   "addresses with placeholders. Default: on for md, off for text.")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Write to this file instead of stdout (never over an existing file).")
@_CHECK_OPTION
def render(file: str, fmt: str, do_redact: bool | None, out: str | None, check: bool) -> None:
    """Render a report: Markdown that pastes into a GitHub issue, or plain text."""
    if do_redact is None:
        do_redact = fmt == "md"
    _check_out(out)
    if not check:
        click.echo(f"warning: rendering {file} without checking it", err=True)
    reader, digest = _read(file, check, anyway="--no-check renders it anyway")
    from harness.report import bundle as bundling
    from harness.report import render as rendering
    try:
        if fmt == "md":
            # once the bundle exists, the same text as its report.md, naming what it holds
            text = bundling.render_for_issue(Path(file), digest, do_redact)
        else:
            text = rendering.render_text(digest.view(do_redact))
    finally:
        reader.close()
        digest.close()
    _emit(text, out)


@report.command("bundle")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="The .tar.gz to write (default: REPORT.bundle.tar.gz beside the report).")
@click.option("--redact/--no-redact", "do_redact", default=True, show_default=True,
              help="Replace host name, user, home folders, machine id, serials, MAC and IP "
                   "addresses with placeholders in everything the bundle holds.")
@click.option("--force", is_flag=True, help="Replace --out if it exists.")
@click.option("--with-buffers", "with_buffers", is_flag=True,
              help="Ship the buffers' data of a capture and its recipes too: as the program "
                   "filled them, they hold what it was given (the prompt among it, in "
                   "whatever form the engine encodes it). Default: named with their sha256, "
                   "not shipped (--no-redact ships them).")
@_CHECK_OPTION
def bundle_cmd(file: str, out: str | None, do_redact: bool, force: bool, with_buffers: bool,
               check: bool) -> None:
    """One .tar.gz to attach to an upstream issue: README for the maintainer, the rendered
    report, the report, every trial's kernel log, xrt-smi output and the XRT recipes.
    Nothing from outside the report's folder; xclbins are named, not shipped, and so are
    the buffers' data (--with-buffers)."""
    from harness.report import bundle as bundling
    _check_out(out)
    target = Path(out) if out else bundling.bundle_path(Path(file))
    # (the report itself is refused as such by write_bundle, whatever --force says)
    if force and target.is_file() and not _same_file(target, Path(file)) \
            and bundling.README not in (bundling.bundle_names(target) or []):
        raise BadInput(f"{target} exists and is not a bundle of the harness; --force replaces "
                       "only a bundle, never another file: move it away or choose another "
                       "--out")
    reader, digest = _read(file, check, kernel_log=True,
                           anyway="--no-check bundles it anyway")
    try:
        target, contents = bundling.write_bundle(Path(file), reader, digest,
                                                 Path(out) if out else None,
                                                 do_redact=do_redact, force=force,
                                                 with_buffers=with_buffers)
    finally:
        reader.close()
        digest.close()
    click.echo(f"bundle: {target} ({target.stat().st_size} bytes): "
               + ", ".join(contents.names()))
    if contents.unfinished_command:
        click.echo(f"warning: {file} did not finish: the bundle is partial, and its README "
                   f"says so; {bundling.finish_hint(contents.unfinished_command, file)}")
    for item in contents.left_out:
        click.echo(f"  not included: {item}")
    if contents.buffers_shipped:
        click.echo("warning: the bundle ships the buffers' data as the program filled them: "
                   "they hold what it was given (the prompt among it), which no redaction "
                   "can find in an engine's encoding; attach it only if you accept that",
                   err=True)


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
    headers: list[tuple[str, dict[str, Any]]] = []
    for file in files:
        reader, digest = _read(file, True)
        reader.close()
        headers.append((file, digest.view(do_redact).header))
        digest.close()
    _check_out(out)
    from harness.report import compare as comparing
    matrix = comparing.build(headers)
    text = comparing.render_markdown(matrix) if fmt == "md" else comparing.render_text(matrix)
    _emit(text, out)


def _same_file(one: Path, other: Path) -> bool:
    try:
        return os.path.samefile(one, other)
    except OSError:
        return False


def _check_out(out: str | None) -> None:
    """An --out into missing folders is refused before any report is read."""
    if out is not None:
        from harness.formats.output_paths import check_folder
        check_folder(Path(out).parent, path=Path(out), what="--out")


def _emit(text: str, out: str | None) -> None:
    if out is None:
        click.echo(text, nl=False)
        return
    try:
        write_atomic(out, text, overwrite=False)
    except FileExistsError:
        raise ReportError(f"{out} exists; choose another --out") from None
    click.echo(f"wrote {out}")


def _check_files(files: tuple[str, ...]) -> exits.ExitCode:
    bad = 0
    for file in files:
        result = check_report_file(file)
        for note in result.notes:
            click.echo(f"{file}: note: {note}")
        problems = result.problems
        if problems:
            bad += 1
            for problem in problems[:20]:
                click.echo(escape_controls(f"{file}: {problem}"))
            if len(problems) > 20:
                click.echo(f"{file}: ... and {len(problems) - 20} more")
        else:
            click.echo(f"{file}: valid")
    return exits.for_checked(bad > 0)


@report.command("check")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
def check_cmd(files: tuple[str, ...]) -> exits.ExitCode:
    """Check reports against the report schema and for consistency; per file: valid, or
    what is wrong where (line and key path)."""
    return _check_files(files)


@report.command("validate", hidden=True)
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
def validate_cmd(files: tuple[str, ...]) -> exits.ExitCode:
    """The name `report check` had before 0.3 (kept so scripts go on working)."""
    click.echo("note: `report validate` is now `report check`", err=True)
    return _check_files(files)
