"""`runlist-harness run`, `reproduce` (= `reproduce_ert_timeout`) and the hidden worker."""

from __future__ import annotations

import json

import click

from harness.case import load_case
from harness.cli.options import (
    backend_options,
    exit_code,
    make_backend,
    plans_from_refs,
    progress_line,
    start_runner,
    trial_options,
)
from harness.errors import BadInput
from harness.report import Report
from harness.runner import Interrupted, Runner, reopen

DEFAULT_CASE = "minicpm5-2b-decode"
INTERRUPTED_EXIT = 130


def _execute(runner: Runner, as_json: bool, first_line: str) -> None:
    if not as_json:
        click.echo(first_line)
    try:
        report = runner.run()
    except Interrupted as stop:
        click.echo(f"interrupted; everything so far is in {stop.path} (finish it with "
                   f"`runlist-harness run --resume {stop.path}`)", err=True)
        raise SystemExit(INTERRUPTED_EXIT) from None
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        click.echo(summary_text(report, str(runner.handle.path)))
    raise SystemExit(int(exit_code(report)))


def summary_text(report: Report, path: str) -> str:
    lines = [f"verdict: {report.verdict['text']}"]
    width = max(len(p.label) for p in report.plans) if report.plans else 0
    for plan in report.plans:
        lines.append(f"  {plan.label:<{width}}  {plan.counts_text():<24} {_detail(plan)}")
    pack = report.artifacts.get("pack", {})
    if pack.get("stand_ins"):
        lines.append(f"xclbins: synthesized stand-ins (no {pack.get('name')} pack found; "
                     "same kernel signatures, not the real kernels)")
    lines.append(f"report: {path}")
    return "\n".join(lines)


def _detail(plan) -> str:
    for trial in plan.trials:
        for outcome in trial.runlists:
            if outcome.state not in (None, "COMPLETED") and outcome.failing_run is not None:
                return (f"runlist {outcome.index}: chains "
                        f"{'+'.join(map(str, outcome.chains))}, failing run "
                        f"{outcome.failing_run} (chain {outcome.failing_chain}), "
                        f"{outcome.state} from the {outcome.source}")
    for trial in plan.trials:
        if trial.error and trial.status != "completed":
            return trial.error.splitlines()[0][:100]
    chains = " | ".join("+".join(map(str, r.chains)) for r in plan.trials[0].runlists) \
        if plan.trials else ""
    return f"chains {chains}" if chains else ""


@click.command()
@click.argument("case_ref", metavar="CASE", required=False)
@click.option("--plan", "plan_refs", multiple=True,
              help="A plan of the case by name, or a spec: 42, 21+21, even:3, max:24. "
                   "Repeatable; default: every plan of the case.")
@click.option("--resume", "resume_path", type=click.Path(exists=True, dir_okay=False),
              help="Finish an interrupted report (its in-flight trial becomes interrupted).")
@backend_options
@trial_options
def run(case_ref, plan_refs, resume_path, backend_kind, profile, realtime, seed, trials,
        xclbins_dir, out, force, no_isolate, deadline, continue_after_failure,
        as_json) -> None:
    """Run a case's plans (runlists of the given depth and chunking) and write a report.

    CASE is a shipped case name (see `cases list`) or a case file. Each trial
    runs in a worker process with a hard deadline unless --no-isolate.
    """
    if resume_path:
        if case_ref or plan_refs:
            raise BadInput("--resume takes its case and plans from the report; drop CASE and "
                           "--plan")
        runner, report = reopen(resume_path, progress_line)
        line = f"resuming {resume_path}: " + ("SIMULATED stack, profile "
                                               f"{report.backend.get('profile')}"
                                               if report.simulated else "hardware NPU")
        _execute(runner, as_json, line)
        return
    if not case_ref:
        raise BadInput("give a CASE (a shipped case name or a case file), or --resume REPORT")
    backend = make_backend(backend_kind, profile, realtime)
    runner, _ = start_runner(
        case_ref, plans_from_refs(load_case(case_ref), plan_refs), "run", backend,
        trials=trials, no_isolate=no_isolate, deadline=deadline,
        continue_after_failure=continue_after_failure, seed=seed, xclbins_dir=xclbins_dir,
        out=out, force=force, progress=progress_line)
    _execute(runner, as_json, backend.describe())


@click.command()
@click.argument("case_ref", metavar="[CASE]", required=False, default=DEFAULT_CASE)
@backend_options
@trial_options
def reproduce(case_ref, backend_kind, profile, realtime, seed, trials, xclbins_dir, out,
              force, no_isolate, deadline, continue_after_failure, as_json) -> None:
    """Run the monolithic and chunked plans side by side and say whether the failure
    reproduces (default case: minicpm5-2b-decode, the 42-layer decode of
    ROCm/FastFlowLM#712). Same as `reproduce_ert_timeout`.

    Without an NPU this runs on the simulated stack; on its documented profile
    the verdict says so plainly, and --profile inflight-cap:40 plays the
    hypothesis that the firmware wedges on deep runlists.
    """
    backend = make_backend(backend_kind, profile, realtime)
    runner, _ = start_runner(
        case_ref, None, "reproduce", backend, trials=trials, no_isolate=no_isolate,
        deadline=deadline, continue_after_failure=continue_after_failure, seed=seed,
        xclbins_dir=xclbins_dir, out=out, force=force, progress=progress_line)
    _execute(runner, as_json, backend.describe())


@click.command("_worker", hidden=True)
@click.option("--result-fd", type=int, required=True)
@click.option("--parent", type=int, default=0)
@click.option("--backend", "backend_kind", required=True)
@click.option("--profile", default=None)
def worker(result_fd: int, parent: int, backend_kind: str, profile: str | None) -> None:
    """Run one trial sent on stdin; the result goes to --result-fd (internal)."""
    from harness.isolation import worker_main
    raise SystemExit(worker_main(result_fd, backend_kind, profile, parent))
