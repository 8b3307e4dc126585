"""What `run` and `reproduce` do once their options are read: the run executed and its
summary printed, a capture's frame made the case reproduce runs, and the plans written
beside the report as XRT run recipes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from harness.app import exits
from harness.app.cli.options import diagnose_pointer, echo_json, with_frame
from harness.app.cli.progress import announce
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


def execute_run(runner: Runner, as_json: bool, first_line: str) -> exits.TrialsEnded:
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


def export_beside(runner: Runner, force: bool) -> None:
    """The case's plans as XRT run recipes in REPORT.recipes/, so XRT and driver developers
    can reproduce with `xrt-runner` and no Python; the report records where."""
    from harness.sources.recipe_export import export_plans
    folder = recipes_of(runner.handle.path)
    if replaceable_recipes(folder, force):
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


def recipes_of(report: Path) -> Path:
    """REPORT.recipes/ beside a report (the file a linked report name points at)."""
    import os
    real = Path(os.path.realpath(report)) if report.is_symlink() else report
    return real.with_name(real.stem + ".recipes")


def replaceable_recipes(folder: Path, force: bool) -> bool:
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
