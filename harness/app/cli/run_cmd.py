"""`runlist-harness run` and `reproduce` (= `reproduce_ert_timeout`): the commands and
their options. What a run does and prints is `harness.app.cli.run_outcome`, imported
when a command runs, so that `--help` loads none of it."""

from __future__ import annotations

from pathlib import Path

import click

from harness import __version__
from harness.app import exits
from harness.app.cli import GuardedCommand
from harness.app.cli.options import (
    RunRequest,
    allow_different_machine_option,
    exit_codes_option,
    frame_option,
    refuse_given,
    refuse_settings_on_resume,
    run_request_options,
)
from harness.app.entry import ModulesLoading
from harness.model.errors import BadInput

DEFAULT_CASE = "minicpm5-2b-decode"


@click.command()
@click.argument("case_ref", metavar="CASE", required=False)
@click.option("--plan", "plan_refs", multiple=True,
              help="A plan of the case by name, or a spec: 42, 21+21, even:3, max:24. "
                   "Repeatable; default: every plan of the case.")
@click.option("--resume", "resume_path", type=click.Path(exists=True, dir_okay=False),
              help="Finish an interrupted report (its in-flight trial becomes interrupted).")
@click.option("--recipe-profile", "recipe_profile", type=click.Path(dir_okay=False),
              help="The XRT execution profile of a recipe CASE (its bindings give buffer "
                   "sizes and files).")
@frame_option
@allow_different_machine_option
@run_request_options
@exit_codes_option
def run(case_ref, plan_refs, resume_path, recipe_profile, frame, allow_different_machine,
        request: RunRequest) -> exits.TrialsEnded:
    """Run a case's plans (runlists of the given depth and cut) and write a report.

    CASE is a shipped case name (see `cases list`), a case file, an XRT run
    recipe (RECIPE.json, with --recipe-profile PROFILE.json) or
    xrt-validate:NAME (a recipe of XRT's validate suite, e.g. cmd_chain_latency:
    1000 NOP runs in one runlist), or an XRT capture (its folder, or the case
    `capture import` wrote; --frame picks the frame). A recipe's or frame's runs
    are what plans cut: --plan 500+500 or max:24. Each trial runs in a worker
    process with a hard deadline unless --no-isolate.
    """
    with ModulesLoading():
        from harness.app.cli.options import start_run, with_frame
        from harness.app.cli.progress import progress_line
        from harness.app.cli.run_outcome import execute_run
        from harness.sources.load import load_case
    if resume_path:
        refuse_given(click.get_current_context(),
                     {"case_ref": "CASE", "plan_refs": "--plan",
                      "recipe_profile": "--recipe-profile", "frame": "--frame"},
                     "--resume takes its case and plans from the report")
        refuse_settings_on_resume(click.get_current_context(), resume_path, "--resume")
        from harness.execution.resume import reopen
        runner, report = reopen(resume_path, progress_line,
                                allow_different_machine=allow_different_machine,
                                allow_outside_paths=request.allow_outside_paths)
        # the banner the run began with, then what is being continued
        return execute_run(runner, request.as_json,
                           f"{runner.backend.describe()}\nresuming {resume_path}")
    if not case_ref:
        raise BadInput("give a CASE (a shipped case name or a case file), or --resume REPORT")
    case = with_frame(load_case(case_ref, recipe_profile,
                                allow_outside_paths=request.allow_outside_paths), frame)
    runner = start_run(request, case, case.plans_for(plan_refs), "run", progress=progress_line)
    return execute_run(runner, request.as_json, runner.backend.describe())


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    # click's own version_option keeps the first program name it saw for the process
    if value and not ctx.resilient_parsing:
        click.echo(f"{ctx.find_root().info_name}, version {__version__}")
        ctx.exit()


# Standalone (`reproduce_ert_timeout`) there is no group to inherit -h or --version from.
@click.command(cls=GuardedCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_show_version, help="Show the version and exit.")
@click.argument("case_ref", metavar="[CASE]", required=False, default=DEFAULT_CASE)
@click.option("--no-control", is_flag=True,
              help="Skip the depth-only control (the case's depth as NOP ELF runs on XRT's "
                   "validate.xclbin).")
@click.option("--capture", "capture_ref", metavar="DIR|NAME", default=None,
              help="The engine's own commands instead of a case: an XRT capture's folder "
                   "(`capture record` writes one) or the case `capture import` wrote. Runs "
                   "its deepest runlist (or --frame) as captured, its cut, and the NOOP "
                   "control at that depth.")
@frame_option
@click.option("--plan", "plan_refs", multiple=True,
              help="With --capture: the cut beside the frame as captured (a spec: 21+21, "
                   "even:3, max:24; repeatable). Default: even:2 (21+21 for 42 runs).")
@run_request_options
@exit_codes_option
def reproduce(case_ref, no_control, capture_ref, frame, plan_refs,
              request: RunRequest) -> exits.TrialsEnded:
    """Run one runlist and its cut side by side and say whether the failure
    reproduces (default case: minicpm5-2b-decode, the 42-layer decode of
    ROCm/FastFlowLM#712). `reproduce_ert_timeout` runs this command.

    Beside the case it runs a depth-only control: the same depth as NOP runs
    (ELF flow) on XRT's own validate.xclbin, as `xrt-smi validate`'s runlist-latency
    does; the verdict then says whether depth alone fails, depth fails only with the
    case's commands, or nothing fails. The case's plans are also written as XRT run
    recipes beside the report (REPORT.recipes/), runnable with `xrt-runner`.

    Without an NPU this runs on the simulated stack; on its documented profile
    the verdict says so plainly, and --profile inflight-cap:40 plays the
    hypothesis that the firmware wedges on deep runlists.
    """
    with ModulesLoading():
        from harness.app.cli.options import start_run
        from harness.app.cli.progress import progress_line
        from harness.app.cli.run_outcome import (
            engine_case,
            execute_run,
            export_beside,
            recipes_of,
            replaceable_recipes,
        )
        from harness.sources.load import load_case
    ctx = click.get_current_context()
    if capture_ref is None:
        refuse_given(ctx, {"frame": "--frame", "plan_refs": "--plan"},
                     "--frame and --plan pick a captured frame and its cut; give --capture")
        case = load_case(case_ref, allow_outside_paths=request.allow_outside_paths)
    else:
        refuse_given(ctx, {"case_ref": "CASE"},
                     "--capture runs the engine's own commands instead of a case")
        case = engine_case(capture_ref, frame, plan_refs)
    if request.out:            # refused before the report is written, as it is after
        replaceable_recipes(recipes_of(Path(request.out)), request.force)
    runner = start_run(request, case, None, "reproduce", progress=progress_line)
    if not no_control:
        why_not = runner.add_control()
        if why_not:
            runner.warnings.append(why_not)
            runner.handle.note(f"warning: {why_not}")
    export_beside(runner, request.force)   # its rewrite also writes the control plan down
    return execute_run(runner, request.as_json, runner.backend.describe())
