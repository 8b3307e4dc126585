"""`runlist-harness cases list|show|check`."""

from __future__ import annotations

import json
import textwrap

import click

from harness.app import exits
from harness.app.cli import SuggestingGroup
from harness.model.errors import CaseError
from harness.sources.case import Case, case_dirs, case_files, shipped_cases
from harness.sources.load import load_case


@click.group(cls=SuggestingGroup)
def cases() -> None:
    """List, show and check experiment definitions (cases/*.yaml)."""


@cases.command("list")
def list_cases() -> None:
    """Every case found: shipped with the harness, local (./cases) or from $HARNESS_CASES,
    one line each; a name found twice says which file wins."""
    found = case_files()
    if not found:
        where = ", ".join(str(d) for d, _ in case_dirs()) or "./cases"
        click.echo(f"no cases found (looked in {where}; set HARNESS_CASES to a folder)")
        return
    for entry in found:
        origin = f"[{entry.origin}]"
        if entry.shadowed_by is not None:
            click.echo(f"{entry.name:<22} {origin:<17} shadowed by {entry.shadowed_by} "
                       f"({entry.path})")
            continue
        try:
            case = load_case(entry.path)
        except CaseError as err:
            click.echo(f"{entry.name:<22} {origin:<17} INVALID: {err}")
            continue
        plans = ", ".join(p.label for p in case.plans)
        click.echo(f"{case.name:<22} {origin:<17} {case.layers:>3} layers  {plans}  "
                   f"({entry.path})")


@cases.command()
@click.argument("case_ref", metavar="CASE")
@click.option("--json", "as_json", is_flag=True, help="Print the parsed case as JSON.")
def show(case_ref: str, as_json: bool) -> None:
    """Show one case (a name such as minicpm5-2b-decode, or a file path)."""
    case = load_case(case_ref)
    if as_json:
        click.echo(json.dumps(case_dict(case), indent=2))
        return
    click.echo(f"{case.name}  ({case.file})")
    click.echo(textwrap.fill(case.description, width=78, initial_indent="  ",
                             subsequent_indent="  "))
    if case.source:
        click.echo(f"  source       {case.source}")
    click.echo(f"  pack         {case.pack}: "
               + ", ".join(f"{role}={f}" for role, f in case.xclbins.items()))
    click.echo(f"  decode       {case.layers} layers, runlists in the {case.runlist_context} "
               f"context, {case.runs_per_layer} run(s) per layer")
    for cmd in case.per_layer:
        latency = f", {cmd.latency_us:g} us" if cmd.latency_us is not None else ""
        click.echo(f"    {cmd.kernel}: instructions {cmd.instructions}, "
                   f"{len(cmd.buffers)} buffers{latency}")
    for plan in case.plans:
        expected = case.expect.get(plan.name)
        tail = f"   expect {expected.name}" if expected is not None else ""
        click.echo(f"  plan         {plan.label:<24}{tail}")
    click.echo(f"  trials       {case.trials}")


def _check_files(files: tuple[str, ...]) -> exits.ExitCode:
    targets = list(files) or [str(p) for p in shipped_cases()]
    if not targets:
        raise CaseError("no case files given and none shipped were found")
    bad = 0
    for target in targets:
        try:
            case = load_case(target)
        except CaseError as err:
            click.echo(f"error: {err}", err=True)
            bad += 1
            continue
        click.echo(f"ok     {target}  ({case.name}, {len(case.plans)} plans)")
    return exits.for_checked(bad > 0)


@cases.command("check")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False))
def check_cmd(files: tuple[str, ...]) -> exits.ExitCode:
    """Check case files strictly (default: every shipped case). Exit 2 on any error."""
    return _check_files(files)


@cases.command("validate", hidden=True)
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False))
def validate_cmd(files: tuple[str, ...]) -> exits.ExitCode:
    """The name `cases check` had before 0.3 (kept so scripts go on working)."""
    click.echo("note: `cases validate` is now `cases check`", err=True)
    return _check_files(files)


def case_dict(case: Case) -> dict:
    return {
        "case": case.name,
        "description": case.description,
        "source": case.source,
        "pack": case.pack,
        "xclbins": dict(case.xclbins),
        "decode": {
            "layers": case.layers,
            "runlist_context": case.runlist_context,
            "per_layer": [{"kernel": c.kernel, "instructions": c.instructions,
                           "buffers": list(c.buffers), "latency_us": c.latency_us,
                           "opcode": c.opcode} for c in case.per_layer],
        },
        "plans": {p.name: {"spec": p.spec, "chunks": list(p.chunks)} for p in case.plans},
        "expect": {k: v.name for k, v in case.expect.items()},
        "trials": case.trials,
        "file": case.file,
        "sha256": case.sha256,
    }
