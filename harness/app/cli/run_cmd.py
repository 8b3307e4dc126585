"""`runlist-harness run` and `reproduce` (= `reproduce_ert_timeout`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from harness import __version__
from harness.app import exits
from harness.app.cli import GuardedCommand
from harness.app.cli.options import (
    RunRequest,
    allow_different_machine_option,
    diagnose_pointer,
    echo_json,
    exit_codes_option,
    frame_option,
    refuse_given,
    refuse_settings_on_resume,
    run_request_options,
    start_run,
    with_frame,
)
from harness.app.cli.progress import announce, progress_line
from harness.execution.runner import Runner, flow_of
from harness.formats.printable import escape_controls
from harness.model.errors import BadInput
from harness.model.plan import cut_text, make_plan
from harness.model.results import BriefTrial, flow_text
from harness.report.failing import where_text
from harness.report.header import read_timers
from harness.report.model import PlanRecord, Report, model_word
from harness.report.provenance import captured_note
from harness.report.timing import trials_ttf_text
from harness.report.verdict import verdict_lines
from harness.sources.case import Case, CaseKind
from harness.sources.load import load_case
from harness.sources.recipe_export import export_plans

DEFAULT_CASE = "minicpm5-2b-decode"


def _execute(runner: Runner, as_json: bool, first_line: str) -> exits.TrialsEnded:
    announce(first_line, runner.warnings, as_json)
    report = runner.run()
    if as_json:
        echo_json(runner.handle.path)
    else:
        click.echo(escape_controls(summary_text(report, str(runner.handle.path))))
    return exits.trials_ended(t.status for p in report.plans for t in p.trials)


def summary_text(report: Report, path: str) -> str:
    answer, *reasons = verdict_lines(report.verdict)
    lines = [f"verdict: {answer}", *[f"  - {reason}" for reason in reasons]]
    width = max(len(p.label) for p in report.plans) if report.plans else 0
    timers = read_timers(report.sections.get("timers"))
    for plan in report.plans:
        timing = trials_ttf_text([t.time_to_failure for t in plan.trials
                                  if t.time_to_failure], timers)
        lines.append(f"  {plan.label:<{width}}  {plan.counts_text():<24} "
                     f"{_detail(plan, model_word(report.backend))}"
                     + (f"; {timing}" if timing else ""))
    pack = report.artifacts.get("pack", {})
    if pack.get("stand_ins") and report.case.get("kind", "case") != "case":
        names = ", ".join(Path(x.get("path", "")).name for x in report.artifacts["xclbins"])
        lines.append(f"xclbins: synthesized stand-ins for {names}, which the "
                     f"{report.case['kind']} names but is not here (same kernel signatures, "
                     "not the real kernels)")
    elif pack.get("stand_ins"):
        lines.append(f"xclbins: synthesized stand-ins (no {pack.get('name')} pack found; "
                     "same kernel signatures, not the real kernels)")
    else:
        lines.append(f"xclbins: {pack.get('name')} from {pack.get('source')}")
    workload = report.case.get("workload") or {}
    if workload:
        lines.append(f"each run carried: {workload.get('control_code')}; "
                     f"{workload.get('buffers')}")
    if workload.get("nop_only"):
        engine = report.case.get("engine") or "flm run MODEL"
        lines.append("  NOOP runs test submission depth, not the decode's work; to run the "
                     "engine's own commands, capture them: runlist-harness capture record "
                     f"-- {engine}, then reproduce_ert_timeout --capture DIR "
                     "(docs/captures.md)")
    captured = captured_note({"case": report.case, "artifacts": report.artifacts})
    if captured:                            # right below the verdict and its reasons
        lines.insert(1 + len(reasons), f"what ran: {captured}")
    lines.append(f"submitted as: {flow_text(report.settings.get('flow'))}")
    lines.append(f"report: {path}")
    lines.append(diagnose_pointer(path))
    return "\n".join(lines)


def _detail(plan: PlanRecord, model: str) -> str:
    for trial in plan.trials:
        for outcome in trial.runlists:
            if outcome.state not in (None, "COMPLETED") and outcome.failing_run is not None:
                # a run is named only where the device said which one
                return (f"runlist {outcome.index}: chains {cut_text(outcome.chains)}, "
                        f"{where_text(outcome.to_json(), model)}")
    for trial in plan.trials:
        if trial.error and not trial.status.answered:
            return trial.error.splitlines()[0][:100]
    if not plan.trials:
        return ""
    first = plan.trials[0]
    if isinstance(first, BriefTrial):       # a run past what memory holds whole
        return f"{first.runlists_in_file} runlists"
    chains = " | ".join(cut_text(r.chains) for r in first.runlists)
    if len(first.runlists) > 1:       # a trial runs them in turn, never side by side
        return f"{len(first.runlists)} runlists in turn (execute, wait, execute): chains {chains}"
    return f"chains {chains}" if chains else ""


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
        return _execute(runner, request.as_json,
                        f"{runner.backend.describe()}\nresuming {resume_path}")
    if not case_ref:
        raise BadInput("give a CASE (a shipped case name or a case file), or --resume REPORT")
    case = with_frame(load_case(case_ref, recipe_profile,
                                allow_outside_paths=request.allow_outside_paths), frame)
    runner = start_run(request, case, case.plans_for(plan_refs), "run", progress=progress_line)
    return _execute(runner, request.as_json, runner.backend.describe())


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
        _replaceable_recipes(_recipes_of(Path(request.out)), request.force)
    runner = start_run(request, case, None, "reproduce", progress=progress_line)
    if not no_control:
        why_not = runner.add_control()
        if why_not:
            runner.warnings.append(why_not)
            runner.handle.note(f"warning: {why_not}")
    _export_beside(runner, request.force)   # its rewrite also writes the control plan down
    return _execute(runner, request.as_json, runner.backend.describe())


def engine_case(capture_ref: str, frame: str | None, plan_refs: tuple[str, ...]) -> Case:
    """A capture's frame (the deepest runlist unless `frame`) as reproduce runs it: the frame
    as captured (plan `captured`), and its cut (`cut`, even:2 unless `plan_refs`)."""
    if not Path(capture_ref).exists():
        from harness.model.errors import CaseError
        from harness.sources.case import find_case
        try:
            find_case(capture_ref)
        except CaseError:
            raise BadInput(f"--capture {capture_ref}: no such folder, nor a case of that name; "
                           "give the folder `capture record` wrote (it holds replay.json) or "
                           "the case `capture import` made") from None
    case = with_frame(load_case(capture_ref), frame)
    if case.kind is not CaseKind.CAPTURE:
        raise BadInput(f"--capture {capture_ref}: {case.name} is a {case.kind}, not an XRT "
                       "capture (give a capture folder or a case `capture import` wrote)")
    depth = case.layers
    plans = [make_plan("captured", str(depth), depth)]
    for spec in plan_refs or ("even:2",):
        cut = make_plan(spec, spec, depth)
        plans.append(replace(cut, name=f"cut {'+'.join(map(str, cut.chunks))}"))
    if depth < 2 and not plan_refs:
        plans = plans[:1]                 # one run: nothing to cut
    names = [p.name for p in plans]
    if len(set(names)) != len(names):
        raise BadInput(f"--plan: {', '.join(plan_refs)} give the same cut twice")
    return replace(case, plans=tuple(plans))


def _export_beside(runner: Runner, force: bool) -> None:
    """The case's plans as XRT run recipes in REPORT.recipes/, so XRT and driver developers
    can reproduce with `xrt-runner` and no Python; the report records where."""
    folder = _recipes_of(runner.handle.path)
    if _replaceable_recipes(folder, force):
        from harness.sources.export_owned import clear_export
        clear_export(folder, "--force:")
    case, pack = runner.case, runner.pack
    plans = [(p.name, list(p.chunks)) for p in runner.report.plans if not p.control]
    done = export_plans(case, plans, pack.files[case.runlist_context], not pack.stand_ins,
                        flow_of(case, runner.options), folder)
    runner.report.sections["exports"] = {"folder": str(folder), "recipes": done.recipes,
                                         "plans": [name for name, _ in plans],
                                         "missing": done.missing}
    runner.handle.rewrite()


def _recipes_of(report: Path) -> Path:
    """REPORT.recipes/ beside a report (the file a linked report name points at)."""
    import os
    real = Path(os.path.realpath(report)) if report.is_symlink() else report
    return real.with_name(real.stem + ".recipes")


def _replaceable_recipes(folder: Path, force: bool) -> bool:
    """Whether an earlier export is there to replace; refused (BadInput) without --force,
    or with it when the folder holds anything the export did not write."""
    if not folder.exists() and not folder.is_symlink():
        return False
    if not force:
        raise BadInput(f"{folder} exists (the recipes of an earlier run); choose another "
                       "--out, remove the folder, or pass --force, which replaces it when it "
                       "holds only what the harness wrote")
    from harness.sources.export_owned import refusal
    why = refusal(folder, "--force:") if folder.is_dir() or folder.is_symlink() else \
        f"--force: {folder} is a file, not the recipes folder an export writes; move it away"
    if why:
        raise BadInput(why)
    return True
