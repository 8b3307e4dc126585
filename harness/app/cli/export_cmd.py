"""`runlist-harness export`: a case's plans as XRT run recipes for `xrt-runner`."""

from __future__ import annotations

from pathlib import Path

import click

from harness.app.cli.options import ALLOW_OUTSIDE_PATHS
from harness.model.results import FLOWS
from harness.sources.load import load_case
from harness.sources.packs import resolve_pack
from harness.sources.recipe_export import export_plans


@click.command()
@click.argument("case_ref", metavar="CASE")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--plan", "plan_refs", multiple=True,
              help="A plan of the case by name, or a spec: 42, 21+21, max:24. Repeatable; "
                   "default: every plan of the case.")
@click.option("--recipe-profile", type=click.Path(dir_okay=False),
              help="The profile of a recipe CASE.")
@click.option("--flow", type=click.Choice(FLOWS), default=None,
              help="elf, instr-bo or full-elf (default: the case's).")
@click.option("--xclbins", "xclbins_dir", type=click.Path(file_okay=False),
              help="Folder holding the pack's xclbins (or <pack>/ under it).")
@ALLOW_OUTSIDE_PATHS
def export(case_ref, folder, plan_refs, recipe_profile, flow, xclbins_dir,
           allow_outside_paths) -> None:
    """Write CASE's plans as XRT run recipes + profile + artefacts into FOLDER (new),
    runnable with XRT's own `xrt-runner --recipe R --profile P` and no Python.

    run_PLAN.sh runs a plan as a trial of the harness does (one process, its runlists in
    turn) by replaying replay_PLAN.json with `xrt-runner --replay` (XRT 2.26, master since
    2026-06); each runlist of a plan is also one recipe, for an xrt-runner without
    --replay (not in the instruction-buffer flow, which XRT's runner cannot run). The
    runlist context's xclbin is copied when found; the README in FOLDER names what is
    missing and where the scripts differ from the harness's trial.
    """
    from harness.formats.output_paths import check_folder
    check_folder(Path(folder), what="FOLDER")     # before the case is read and the pack found
    case = load_case(case_ref, recipe_profile, allow_outside_paths=allow_outside_paths)
    plans = [(p.name, list(p.chunks)) for p in case.plans_for(plan_refs)]
    # The stand-ins of a missing pack give the partition the control code is sized to;
    # they are never written out as the pack.
    pack = resolve_pack(case, xclbins_dir=xclbins_dir, simulated=True)
    done = export_plans(case, plans, pack.files.get(case.runlist_context),
                        not pack.stand_ins, flow or case.flow, Path(folder))
    click.echo(f"wrote {len(done.replays)} replay script(s) and {len(done.recipes)} "
               f"recipe(s) for {len(plans)} plan(s) to {folder}:")
    for name in [*done.replays, *done.recipes]:
        click.echo(f"  {name}")
    if done.missing:
        click.echo(f"warning: not found here, copy into {folder} before running: "
                   f"{', '.join(done.missing)}", err=True)
    for script in done.scripts:
        click.echo(f"run: cd {Path(folder)} && sh {script}   (see {Path(folder) / 'README.md'})")
