"""Continuing a stopped report: `run --resume`, `bisect --replay`, `sweep --replay`,
`investigate --resume`.

A report is continued only as it began: by the command that wrote it, unfinished (or an
investigation its budget ended), valid (`report check` accepts it), with its case and
every xclbin unchanged, and on the hardware path on the same machine (kernel, driver,
firmware, XRT) unless allowed. Trials it shows in flight become interrupted: the harness
stopped while they ran.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from harness.execution.backend import choose_backend
from harness.execution.environment import collect_environment, fingerprint_differences
from harness.execution.runner import Progress, Runner, case_latencies
from harness.execution.settings import RunOptions
from harness.model.errors import CaseError, ReportError
from harness.model.results import TrialStatus
from harness.report.journal import ReportFile
from harness.report.model import Report, utc_now
from harness.report.recorded_paths import on_this_machine
from harness.sources.capture_case import frame_case
from harness.sources.case import Case, find_case
from harness.sources.depth_control import control_for
from harness.sources.load import load_case
from harness.sources.packs import ResolvedPack

RESUMABLE = {"run": ("run", "reproduce"), "bisect": ("bisect",), "sweep": ("sweep",),
             "investigate": ("investigate",)}


def _check_continuable(report: Report, path: str, kind: str) -> None:
    """Refuse, with the file untouched, a report this command cannot continue."""
    if report.command not in RESUMABLE[kind]:
        if report.command in ("bisect", "sweep"):
            raise ReportError(f"{path} is a {report.command} report: continue it with "
                              f"`runlist-harness {report.command} --replay {path}`")
        if report.command == "investigate":
            raise ReportError(f"{path} is an investigate report: continue it with "
                              f"`runlist-harness investigate --resume {path}`")
        if report.command in RESUMABLE["run"]:
            raise ReportError(f"{path} is a {report.command} report: continue it with "
                              f"`runlist-harness run --resume {path}`")
        raise ReportError(f"{path} is a {report.command} report; it has no trials to continue")
    if report.finished and not budget_spent(report):
        raise ReportError(f"{path} already finished (at {report.finished}); start a new run "
                          "to add trials")
    if kind == "run" and not report.plans:
        raise ReportError(f"{path} has no plans to run")


def budget_spent(report: Report) -> bool:
    """Whether an investigation ended because its budget was spent: it goes on with a
    larger one, as one a stop cut short does."""
    section = report.sections.get("investigate")
    answer = section.get("answer") if isinstance(section, dict) else None
    return report.command == "investigate" and isinstance(answer, dict) \
        and bool(answer.get("stopped"))


def recorded_case(report: Report, path: str, *, allow_outside_paths: bool = False) -> Case:
    """The case a report names, loaded. A header is text anyone can edit: a case file it
    names is read only once it is the very file the run used (its sha256), so no error
    quotes a byte of some other file. A redacted report's paths are found here with this
    machine's names put back (`on_this_machine`)."""
    reference = str(report.case.get("reference") or report.case["file"])
    profile = report.case.get("recipe_profile")
    if report.case.get("kind", "case") == "case" and not profile:
        reference = _the_recorded_case(report, path, reference)
    elif profile:
        reference, profile = _here(reference), _here(str(profile))
    else:
        reference = _here(reference)
    return load_case(reference, profile, allow_outside_paths=allow_outside_paths)


def _the_recorded_case(report: Report, path: str, reference: str) -> str:
    """Of the places `reference` may be here, the case file whose sha256 the report has."""
    missing: CaseError | None = None
    found = False
    for candidate in on_this_machine(reference):
        try:
            named = find_case(candidate)
        except CaseError as err:
            missing = missing or err
            continue
        found = True
        if hashlib.sha256(named.read_bytes()).hexdigest() == report.case.get("sha256"):
            return candidate
    if not found and missing is not None:
        raise missing
    raise ReportError(f"{report.case['file']} changed since {path} was written "
                      "(sha256 differs); start a new run instead")


def _here(recorded: str) -> str:
    """A recorded path as it is on this machine: the first candidate that exists."""
    return next((c for c in on_this_machine(recorded) if Path(c).exists()), recorded)


def reopen(path: str, progress: Progress | None = None, *, kind: str = "run",
           allow_different_machine: bool = False, allow_outside_paths: bool = False
           ) -> tuple[Runner, Report]:
    """Reopen a stopped report to add trials to it: it must be one this command continues,
    unfinished; the case and every xclbin must be unchanged; on the hardware path so must
    the machine's kernel, driver, firmware and XRT (unless allowed, and then the report
    notes it). Trials it shows in flight become interrupted."""
    handle = ReportFile.reopen(path)
    try:
        runner = _reopened(handle, path, progress, kind, allow_different_machine,
                           allow_outside_paths)
    except BaseException:
        handle.close()
        raise
    return runner, runner.report


def _reopened(handle: ReportFile, path: str, progress: Progress | None, kind: str,
              allow_different_machine: bool, allow_outside_paths: bool) -> Runner:
    report = handle.report
    _check_continuable(report, path, kind)
    from harness.report.check import check_report_file
    problems = check_report_file(str(handle.path)).problems
    if problems:
        # what `report check` rejects is never continued: it would build on a broken file
        more = f" (and {len(problems) - 2} more)" if len(problems) > 2 else ""
        raise ReportError(f"{path} is not a valid report: {'; '.join(problems[:2])}{more}; "
                          "`runlist-harness report check` lists every problem")
    options = RunOptions.from_settings(report.settings)
    if options.redact:
        handle.continue_redacted()       # its placeholders kept, new names after them
    case = recorded_case(report, path, allow_outside_paths=allow_outside_paths)
    if report.case.get("frame"):
        case = frame_case(case, report.case["frame"])
    if case.sha256 != report.case.get("sha256"):
        raise ReportError(f"{report.case['file']} changed since {path} was written "
                          "(sha256 differs); start a new run instead of resuming")
    backend = choose_backend(report.backend["kind"], report.backend.get("profile"))
    backend.adopt_environment(report.environment)
    if backend.hardware:
        # compared as the report holds them, where it was written redacted
        shown = handle.redaction.redactor.text if handle.redaction is not None else None
        differences = fingerprint_differences(report.environment,
                                              collect_environment(backend), shown)
        if differences and not allow_different_machine:
            raise ReportError(f"this machine is not the one that wrote {path}: "
                              + "; ".join(differences) + ". Start a new run, or pass "
                              "--allow-different-machine to add trials to it anyway")
        if differences:
            report.sections.setdefault("resumed_elsewhere", []).append(
                {"at": utc_now(), "differences": differences})
    pack = ResolvedPack.from_report(report.artifacts.get("pack", {}),
                                    report.artifacts.get("xclbins", []), case.pack, path,
                                    on_this_machine)
    runner = Runner(case, backend, pack, handle, options, progress)
    control = report.artifacts.get("control")
    if control:
        control_case = control_for(case)[0]
        runner.control = (control_case, ResolvedPack.from_report(
            control.get("pack", {}), control.get("xclbins", []), control_case.pack, path,
            on_this_machine))
        backend.latencies.update(case_latencies(control_case))
    report.finished = None
    handle.take_over()
    recorded = report.settings.get("worker_start")
    if options.isolate and recorded:
        from harness.execution.isolation import worker_start
        if worker_start() != recorded:
            # this machine starts workers another way now: said, as each trial says its own
            handle.note(f"continued with workers started by {worker_start()} (the report "
                        f"began with {recorded}); each trial's worker says which ran it")
    for plan in report.plans:
        for trial in plan.trials:
            if trial.status is TrialStatus.IN_FLIGHT:
                trial.status = TrialStatus.INTERRUPTED
                trial.error = ("the harness stopped while this trial ran (found when the report "
                               "was reopened)")
                handle.record_trial(plan.name, trial)
    return runner
