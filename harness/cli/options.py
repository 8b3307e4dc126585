"""Options shared by the commands that run trials."""

from __future__ import annotations

import sys
from collections.abc import Callable

import click

from harness.backend import KINDS, Backend, choose_backend
from harness.case import Case, load_case
from harness.environment import collect_environment
from harness.errors import ExitCode, PlanError
from harness.plan import Plan, make_plan
from harness.report import Report
from harness.runner import Runner, RunOptions, start


def backend_options(fn: Callable) -> Callable:
    for option in reversed([
        click.option("--backend", "backend_kind", type=click.Choice(KINDS), default="auto",
                     show_default=True,
                     help="auto: hardware when pyxrt imports and an NPU node exists, else "
                          "the simulated stack."),
        click.option("--profile", default=None,
                     help="Simulated stack profile, e.g. inflight-cap:40 or "
                          "mainline,hang-at:3 (see `sim profiles`). Implies the simulator."),
        click.option("--realtime", is_flag=True,
                     help="Simulated time passes in real time (waits really block)."),
        click.option("--seed", type=int, default=0, show_default=True,
                     help="Base seed for flaky profiles; each trial derives its own."),
    ]):
        fn = option(fn)
    return fn


def trial_options(fn: Callable) -> Callable:
    for option in reversed([
        click.option("--trials", type=click.IntRange(1, 1000), default=None,
                     help="Trials per plan (default: the case's, usually 3)."),
        click.option("--xclbins", "xclbins_dir", type=click.Path(file_okay=False),
                     help="Folder holding the pack's xclbins (or <pack>/ under it)."),
        click.option("--out", type=click.Path(dir_okay=False),
                     help="Report file (default: reports/<case>-<time>-<id>.yaml)."),
        click.option("--force", is_flag=True, help="Replace --out if it exists."),
        click.option("--no-isolate", is_flag=True,
                     help="Run trials in this process: fast, but a hang cannot be cut off."),
        click.option("--deadline", type=click.FloatRange(0.1, None), default=None,
                     help="Seconds before a trial's worker is killed (default: derived from "
                          "the case and the driver's timeout)."),
        click.option("--continue-after-failure", is_flag=True,
                     help="Run a trial's later runlists after one fails (default: record "
                          "them as skipped)."),
        click.option("--json", "as_json", is_flag=True,
                     help="Print the report as JSON instead of the summary."),
    ]):
        fn = option(fn)
    return fn


def make_backend(kind: str, profile: str | None, realtime: bool) -> Backend:
    return choose_backend(kind, profile, realtime=realtime)


def start_runner(case_ref: str, plans: list[Plan] | None, command: str, backend: Backend, *,
                 trials: int | None, no_isolate: bool, deadline: float | None,
                 continue_after_failure: bool, seed: int, xclbins_dir: str | None,
                 out: str | None, force: bool, progress=None) -> tuple[Runner, Case]:
    """Load the case, find its pack, open the report: what every trial-running command does.
    `plans` None means the case's own plans; an empty list, plans added as the search goes."""
    case = load_case(case_ref)
    options = RunOptions(trials=trials or case.trials, isolate=not no_isolate,
                         deadline_s=deadline, continue_after_failure=continue_after_failure,
                         seed=seed)
    runner = start(case_ref, plans, options, backend=backend, xclbins_dir=xclbins_dir,
                   out=out, force=force, command=command,
                   environment=collect_environment(backend), progress=progress)
    return runner, case


def plans_from_refs(case: Case, refs: tuple[str, ...]) -> list[Plan]:
    """`--plan` values: a plan name of the case, or a spec like 21+21 / even:3 / max:24."""
    if not refs:
        return list(case.plans)
    plans = []
    names = {p.name: p for p in case.plans}
    for ref in refs:
        if ref in names:
            plans.append(names[ref])
            continue
        try:
            plan = make_plan(ref, ref, case.layers)
        except PlanError as err:
            raise PlanError(f"--plan {ref!r} is neither a plan of {case.name} "
                            f"({', '.join(names)}) nor a valid spec: {err}") from None
        plans.append(Plan("+".join(map(str, plan.chunks)), plan.spec, plan.chunks))
    return plans


def exit_code(report: Report) -> ExitCode:
    statuses = {t.status for p in report.plans for t in p.trials}
    if statuses & {"deadline", "crashed"}:
        return ExitCode.HARNESS_FAULT
    if "failed" in statuses:
        return ExitCode.DEVICE_FAILURE
    return ExitCode.OK


class TrialBar:
    """A bar of trials done on stderr, drawn only on a terminal; a search (bisect,
    sweep) gives an estimate of its total, so the bar says roughly how far it is."""

    WIDTH = 30

    def __init__(self, total: int, label: str) -> None:
        self.total = max(total, 1)
        self.done = 0
        self.label = label
        self.tty = sys.stderr.isatty()

    def __call__(self, text: str, done: bool) -> None:
        if done:
            self.done += 1
        if self.tty:
            filled = min(self.WIDTH, self.WIDTH * self.done // self.total)
            bar = "#" * filled + "." * (self.WIDTH - filled)
            click.echo(f"\r\033[K{self.label} [{bar}] {self.done}/~{self.total} trials",
                       err=True, nl=False)

    def say(self, text: str) -> None:
        """A line of its own above the bar."""
        click.echo(("\r\033[K" if self.tty else "") + text, err=True)

    def close(self) -> None:
        if self.tty:
            click.echo("\r\033[K", err=True, nl=False)


def progress_line(text: str, done: bool) -> None:
    """Trial progress on stderr: a line per finished trial; on a terminal, the running
    trial too, overwritten when it ends."""
    if sys.stderr.isatty():
        click.echo(f"\r\033[K{text}", err=True, nl=done)
    elif done:
        click.echo(text, err=True)
