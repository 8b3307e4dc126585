"""`runlist-harness capture import|show`: XRT captures of what an application submitted."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click

from harness.app.cli import SuggestingGroup
from harness.formats.capture_origin import EMULATED, SIMULATED
from harness.formats.printable import escape_controls
from harness.formats.yamlio import dump_yaml, write_atomic
from harness.model.errors import BadInput
from harness.sources.capture import Capture, load_capture, replay_file
from harness.sources.capture_view import render_text, summary, written_by
from harness.sources.case import CaseKind
from harness.sources.load import load_case, parse_case


@click.group(cls=SuggestingGroup)
def capture() -> None:
    """XRT captures (xrt-capture): record what a program submits, import one as a case, see
    what it holds."""


@capture.command("import")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--name", default=None,
              help="The case's name (default: capture-FOLDER). It is written to "
                   "CASES/NAME.yaml.")
@click.option("--cases", "cases_dir", type=click.Path(file_okay=False), default="cases",
              show_default=True, help="Where to write the case.")
@click.option("--force", is_flag=True, help="Replace a case of the same name.")
def import_(folder: str, name: str | None, cases_dir: str, force: bool) -> None:
    """Check a capture folder (replay.json and every artefact it names) and write a case
    that points at it; its plans cut the deepest runlist frame unless --frame says
    another at run time."""
    from harness.formats.output_paths import check_folder
    check_folder(Path(cases_dir), what="--cases")
    loaded = load_capture(folder)
    name = name or "capture-" + re.sub(r"[^A-Za-z0-9._-]+", "-", loaded.folder.name).strip("-")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise BadInput(f"--name {name!r}: letters, digits, '.', '_' and '-' only")
    deepest = loaded.frame(None)
    context = loaded.context_of(deepest)
    text = dump_yaml({
        "case": name,
        "description": (f"{_capture_kind(loaded)} imported from {loaded.folder}: "
                        f"{len(loaded.frames)} "
                        f"frames; the deepest runlist is {deepest.name}, {deepest.depth} runs "
                        f"in {context} ({Path(loaded.hwctxs[context]).name})"),
        "source": f"xrt-capture {loaded.folder}",
        "capture": str(loaded.folder),
        "frame": deepest.name,
        "trials": 3})
    target = Path(cases_dir) / f"{name}.yaml"
    parse_case(text.encode(), str(target))          # what is written reads back
    try:
        write_atomic(target, text, overwrite=force)
    except FileExistsError:
        raise BadInput(f"{target} exists; choose another --name or pass --force") from None
    click.echo(escape_controls(f"wrote {target}: {deepest.name}, {deepest.depth} runs in "
                               f"{context}"))
    click.echo(escape_controls(f"written by: {written_by(loaded)}"))
    click.echo(f"see it:  runlist-harness capture show {name}")
    click.echo(f"run it:  runlist-harness run {name} --plan {deepest.depth} --plan even:2")


@capture.command()
@click.argument("ref", metavar="FOLDER|CASE")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--redact/--no-redact", "do_redact", default=True, show_default=True,
              help="Replace host name, user, home folders and the other private values a "
                   "capture's paths, names, cfg and ini may hold with placeholders (what is "
                   "shown gets pasted).")
def show(ref: str, as_json: bool, do_redact: bool) -> None:
    """Contexts (and the FastFlowLM xclbins they match), kernels and their control code,
    frames in order with thread, depth, kernels and waits, the depth histogram, and the
    chains XRT makes of each runlist. A capture's names, cfg and ini are another program's
    text: control characters in them are shown escaped."""
    from harness.report.redact import Redactor
    loaded = _capture_of(ref)
    info = summary(loaded)
    redactor = Redactor()
    if do_redact:
        redactor.learn_machine()
        redactor.learn_strings(info)
    if as_json:
        click.echo(json.dumps(redactor.data(info) if do_redact else info, indent=2))
        return
    text = render_text(loaded)
    if do_redact:
        text = "\n".join(redactor.text(line) for line in text.splitlines())
    click.echo(escape_controls(text))


def _capture_kind(capture: Capture) -> str:
    stack = capture.origin.stack
    return {SIMULATED: "SIMULATED stack's capture", EMULATED: "XRT capture over the EMULATED "
            "device"}.get(stack, "XRT capture")


def _capture_of(ref: str) -> Capture:
    if replay_file(ref).is_file():
        return load_capture(ref)
    case = load_case(ref)
    if case.kind is not CaseKind.CAPTURE or not case.capture:
        raise BadInput(f"{ref} is a {case.kind}, not a capture (give a capture folder or a "
                       "case `capture import` wrote)")
    return load_capture(case.capture)


def _record() -> click.Command:
    from harness.app.cli.capture_record_cmd import record_command
    return record_command


capture.add_command(_record())
