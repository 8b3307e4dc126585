"""`runlist-harness investigate CASE|CAPTURE [--budget MINUTES] [--resume REPORT]`: the
three-way, then the experiments the diagnosis asks for, within a budget of device time,
into one report that ends with the diagnosis (harness.search.investigate)."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from harness.app import exits
from harness.app.cli.options import (
    Quantity,
    RunRequest,
    allow_different_machine_option,
    diagnose_pointer,
    exit_codes_option,
    frame_option,
    refuse_given,
    refuse_settings_on_resume,
    run_request_options,
    start_run,
)
from harness.app.cli.progress import announce, progress_line
from harness.app.cli.run_cmd import DEFAULT_CASE
from harness.app.cli.run_outcome import engine_case
from harness.app.cli.urls import recorded_url_option
from harness.formats.printable import escape_controls
from harness.model.errors import BadInput, HarnessError, ReportError
from harness.model.results import TrialStatus
from harness.report.diagnosis import text_lines
from harness.report.pasted import Pasted
from harness.sources.case import CaseKind
from harness.sources.load import load_case

if TYPE_CHECKING:
    from harness.search.investigate import InvestigateSettings

DEFAULT_BUDGET_MIN = 30.0
MAX_BUDGET_MIN = 7 * 24 * 60      # a week of device time: past it is a typing slip
MAX_LONGER_TIMEOUT_S = 3600       # an hour per job (harness.search.choosing reads a report so)
_NOT_OFFERED = ("--longer-timeout and --firmware change a machine: on the simulated stack "
                "they are not offered")


def _redacting(request: RunRequest, resume_path: str | None) -> bool:
    """Whether this investigation's report and output are redacted: as the report it goes
    on with was (its settings), else unless --no-redact."""
    if resume_path:
        from harness.execution.runner import RunOptions
        from harness.report.fileformat import load_report
        try:
            return RunOptions.from_settings(load_report(resume_path, trials=False).settings
                                            ).redact
        except (HarnessError, AttributeError, TypeError, ValueError):
            return True              # what is wrong with it is said when it is reopened
    return not request.setting("no_redact")


# what a continued investigation takes only from its own command line: the server it asks,
# and the changes of the machine it may make (and the kernel it names), each with how the
# report's value is said and the option that gives it
_THIS_COMMAND_LINE = {"longer_timeout_s": ("a driver timer of {} s", "--longer-timeout SECONDS"),
                      "firmware": ("firmware {}", "--firmware VERSION"),
                      "kernel": ("kernel {}", "--kernel RELEASE")}


def _only_this_command_line(settings: InvestigateSettings, given: dict[str, Any],
                            serve_model: str | None, hardware: bool) -> list[str]:
    """A continued investigation asks only a server this command line names (--serve) and
    makes only the changes of the machine it allows (--longer-timeout, --firmware; and
    names only its --kernel): a report is text anyone can edit, and what it names would be
    sent requests whose answers decide the diagnosis, or change this machine as root. The
    stand-in runs only off hardware, whatever the report says. Returns what to say of
    what the report named and this command line did not."""
    said = []
    named = settings.serve_url
    settings.serve_url = given.get("serve_url")
    if named and named != settings.serve_url:
        said.append(f"names a server to ask ({named}): not asked, as a report may come from "
                    "anywhere; give --serve URL to ask it")
    dropped = []
    for name, (shown, option) in _THIS_COMMAND_LINE.items():
        recorded = getattr(settings, name)
        setattr(settings, name, given.get(name))
        if recorded is not None and recorded != given.get(name):
            dropped.append(f"{shown.format(recorded)} ({option})")
    if dropped:
        said.append(f"allows what this command line does not: {'; '.join(dropped)}: not "
                    "taken, as a report may come from anywhere and the machine is changed "
                    "only as you allow it here; give the option again to allow it")
    settings.serve_model = serve_model or settings.serve_model
    settings.stand_in = not hardware
    return said


@click.command()
@click.argument("case_ref", metavar="CASE|CAPTURE", required=False)
@click.option("--budget", "budget_min", default=None, metavar="MINUTES",
              type=Quantity(0, MAX_BUDGET_MIN, unit="minutes", above=True, note=" (a week)"),
              help=f"Device time the trials may take, in minutes, above 0 and at most "
                   f"{MAX_BUDGET_MIN:,} (a week; default {DEFAULT_BUDGET_MIN:g}):"
                   " the simulated clock on the simulated stack, wall time on hardware. No "
                   "trial starts once it is spent, nor one its plan's trials so far say would "
                   "pass it.")
@click.option("--resume", "resume_path", type=click.Path(exists=True, dir_okay=False),
              help="Go on with a stopped investigation (Ctrl-C, or its budget: --budget "
                   "raises it).")
@click.option("--serve", "serve_url", metavar="URL",
              help="Also ask this running `flm serve` (e.g. http://127.0.0.1:52625) for one "
                   "token of the case's model, once: whether it fails where the NPU path "
                   "through pyxrt completes. On the simulated stack a stand-in server is "
                   "asked where the answer is open and no plan of the engine's commands "
                   "fails every trial. With --resume, the one server asked: a server the "
                   "report names is not.")
@click.option("--serve-model", "serve_model", metavar="TAG",
              help="The tag the server serves the case's model by (default: the TAG of the "
                   "case's `engine: flm run TAG`).")
@click.option("--plan-only", is_flag=True,
              help="Print the plan (each experiment it may run, when, and its device time "
                   "against the timer in force here) and exit 0, running no trial.")
@click.option("--longer-timeout", "longer_timeout_s", metavar="SECONDS",
              type=Quantity(0, MAX_LONGER_TIMEOUT_S, unit="seconds", above=True),
              help="Allow one step that sets the driver's timeout parameter to SECONDS (its "
                   "period: tdr_timeout_ms, timeout_in_sec), where a plan fails at the timer "
                   "every trial: slow work then completes, a hang does not. Asked again "
                   "before the step, which you make as root; the hardware path only. With "
                   "--resume, give it again: a report's is not taken.")
@click.option("--firmware", "firmware", metavar="VERSION",
              help="Allow one step on another NPU firmware (as fw_version reads it) where a "
                   "plan fails every trial. Asked again before the step, which you make as "
                   "root; the hardware path only. With --resume, give it again: a report's "
                   "is not taken.")
@click.option("--kernel", "kernel", metavar="RELEASE",
              help="Name a second kernel to try after this investigation (a reboot brings "
                   "it): the plan says how.")
@frame_option
@allow_different_machine_option
@run_request_options(trials_default="1 per plan at first; more where rates are unclear")
@exit_codes_option
def investigate(case_ref, budget_min, resume_path, serve_url, serve_model, plan_only,
                longer_timeout_s, firmware, kernel, frame, allow_different_machine,
                request: RunRequest) -> exits.TrialsEnded:
    """Investigate a failure within a budget, the way a careful engineer does by hand.

    Runs the three-way (the case's one runlist, its cut, the depth-only control of NOOPs
    on XRT's validate.xclbin; for a CAPTURE, a folder `capture record` wrote or the case
    `capture import` made, its deepest runlist as captured, or --frame), reads it with
    `diagnose`, and runs the experiment the
    diagnosis asks for next: the engine's work where only NOOPs ran (on the simulated
    stack, the simulator's stand-in work stream; on hardware, capture the engine's
    commands and investigate the capture), the server (--serve; on the simulated stack
    its stand-in, where the engine's commands do not fail every trial), a shallower depth
    where no runlist of the failing commands completed, more trials where a rate is
    unclear, chunk sizes, and the changes of the machine you allow (--longer-timeout,
    --firmware; asked again before each). Prints the plan with each step's device time
    against the timer in force before it starts (--plan-only: and stops). On the hardware
    path nothing is injected: a simulator hypothesis in --profile is refused. Stops when
    the answer settles, nothing is left to try or the budget is spent, and prints the
    diagnosis with the evidence it rests on. Everything is in one report; Ctrl-C keeps
    what ran and --resume goes on.
    """
    from harness.search.investigate import InvestigateSettings, Investigation, begin
    # everything printed goes through one redaction, as the report is written (--no-redact)
    pasted = Pasted(_redacting(request, resume_path))

    def progress(text: str, done: bool) -> None:
        progress_line(pasted.text(text), done)
    if resume_path:
        refuse_given(click.get_current_context(), {"case_ref": "CASE|CAPTURE",
                                                   "frame": "--frame",
                                                   "plan_only": "--plan-only"},
                     "--resume takes its case and plans from the report")
        if serve_url:
            serve_url = recorded_url_option(serve_url, "--serve")
        refuse_settings_on_resume(click.get_current_context(), resume_path, "--resume")
        from harness.execution.resume import budget_spent, reopen
        from harness.report.fileformat import load_report
        before = load_report(resume_path)
        if budget_spent(before):
            kept = before.sections["investigate"].get("settings")
            given = kept.get("budget_s") if isinstance(kept, dict) else None
            spent_min = given / 60 if isinstance(given, (int, float)) else 0.0
            if budget_min is None or budget_min <= spent_min:
                raise BadInput(f"{resume_path} stopped when its budget of {spent_min:g} min of "
                               f"device time was spent; give --budget more than {spent_min:g}"
                               " to go on")
        runner, report = reopen(resume_path, progress, kind="investigate",
                                allow_different_machine=allow_different_machine,
                                allow_outside_paths=request.allow_outside_paths)
        recorded = (report.sections.get("investigate") or {}).get("settings")
        if not recorded:
            raise ReportError(f"{resume_path} holds no investigation settings")
        settings = InvestigateSettings.from_dict(recorded)
        dropped = _only_this_command_line(
            settings, {"serve_url": serve_url, "longer_timeout_s": longer_timeout_s,
                       "firmware": firmware, "kernel": kernel}, serve_model,
            runner.backend.hardware)
        runner.warnings += [f"{resume_path} {text}" for text in dropped]
        if (longer_timeout_s or firmware) and not runner.backend.hardware:
            runner.warnings.append(_NOT_OFFERED)
        if budget_min is not None:
            settings.budget_s = budget_min * 60.0
        report.sections["investigate"]["settings"] = settings.to_dict()
        pasted.learn_document(runner.report.header_dict())
        announce(pasted.text(f"{runner.backend.describe()}\ncontinuing the investigation in "
                             f"{resume_path}"), [pasted.text(w) for w in runner.warnings],
                 request.as_json)
    else:
        case = load_case(case_ref or DEFAULT_CASE,
                         allow_outside_paths=request.allow_outside_paths)
        if case.kind is CaseKind.RECIPE:
            raise BadInput(f"{case.name} is a recipe: investigate takes a case or a capture")
        if case.kind is CaseKind.CAPTURE:       # its frame as captured, and its cut
            case = engine_case(case_ref, frame, ())
        elif frame:
            raise BadInput(f"--frame picks a frame of an XRT capture; {case.name} is a "
                           f"{case.kind}")
        if serve_url:
            # a bad URL is refused before any trial, and a password in it never recorded
            serve_url = recorded_url_option(serve_url, "--serve")
            if not (serve_model or case.model_tag):
                raise BadInput(f"--serve: {case.name} names no `engine: flm run TAG`, so the "
                               "model's tag is unknown; give --serve-model TAG")
        refuse_a_hypothesis_on_hardware(request)
        if plan_only:
            # the plan is made as the run would make it, into a report nobody keeps
            scratch = tempfile.TemporaryDirectory(prefix="harness-plan-")
            request = dataclasses.replace(request, out=str(Path(scratch.name) / "plan.yaml"),
                                          force=True)
        runner = start_run(request, case, None, "investigate", trials=request.trials or 1,
                           progress=progress)
        settings = InvestigateSettings(
            (budget_min or DEFAULT_BUDGET_MIN) * 60.0,
            first_trials=request.trials or 1, stand_in=not runner.backend.hardware,
            serve_url=serve_url, serve_model=serve_model or case.model_tag,
            longer_timeout_s=longer_timeout_s, firmware=firmware, kernel=kernel)
        if (longer_timeout_s or firmware) and not runner.backend.hardware:
            runner.warnings.append(_NOT_OFFERED)
        begin(runner, settings)
        pasted.learn_document(runner.report.header_dict())
        if plan_only:
            from harness.search.plan_preview import plan_lines
            announce(pasted.text(runner.backend.describe()),
                     [pasted.text(w) for w in runner.warnings], False)
            click.echo(escape_controls(pasted.text("\n".join(
                plan_lines(Investigation(runner, settings, lambda text: None))))))
            runner.handle.close()
            scratch.cleanup()
            return exits.trials_ended([])
        announce(pasted.text(runner.backend.describe()),
                 [pasted.text(w) for w in runner.warnings], request.as_json)
    say = (lambda text: None) if request.as_json else \
        (lambda text: click.echo(escape_controls(pasted.text(text)), err=True))
    investigation = Investigation(runner, settings, say, ask_the_user)
    if not resume_path and not request.as_json:
        from harness.search.plan_preview import plan_lines
        for line in plan_lines(investigation):
            say(line)
    pasted.keep_in_commands(runner.handle.path)
    if resume_path:
        pasted.keep_in_commands(resume_path)
    diagnosis = investigation.run()
    if request.as_json:
        from harness.app.cli.options import echo_json
        echo_json(runner.handle.path, pasted.data)
    else:
        click.echo(escape_controls(pasted.text("\n".join(
            [*text_lines(diagnosis), f"report: {runner.handle.path}",
             diagnose_pointer(runner.handle.path)]))))
    report = runner.report
    statuses = [t.status for p in report.plans for t in p.trials]
    from harness.serve.reproduce import request_failed
    if request_failed(report):
        statuses.append(TrialStatus.FAILED)      # the server failed: exit 1, as serve-probe
    return exits.trials_ended(statuses)


def refuse_a_hypothesis_on_hardware(request: RunRequest) -> None:
    """On the hardware path (an NPU and pyxrt here, and no --backend sim) nothing can be
    injected: a profile's simulator hypothesis is refused by name, before any trial."""
    if not request.profile or request.backend_kind == "sim":
        return
    from harness.probe.xrt_loader import load_pyxrt, npu_nodes
    from harness.sim.profiles import parse_profile
    hypotheses = parse_profile(request.profile).deviations
    if not hypotheses:
        return
    module, _ = load_pyxrt()
    if request.backend_kind == "auto" and (module is None or not npu_nodes()):
        return          # no NPU here: the profile picks the simulated stack, as it says
    named = ", ".join(hypotheses)
    raise BadInput(f"--profile {request.profile}: {named} is a simulator hypothesis, and "
                   "this is the hardware path, where nothing can be injected: investigate "
                   "runs only real experiments on a machine (see --plan-only); to rehearse "
                   f"{named} on the simulated stack add --backend sim")


def ask_the_user(question: str) -> bool:
    """A yes or no before a step that changes the machine; no answer (no terminal, end of
    input) is no."""
    try:
        return bool(click.confirm(escape_controls(question), default=False, err=True))
    except click.exceptions.Abort:
        return False
