"""What reports observed, as the diagnosis reads it: one `Arm` per plan (what its runs
carried, how deep its runlists were, how its trials ended and how long the failures took)
and each report's own facts (where its results come from, its timers, a server's answers,
a bisection's boundary). Every fact keeps where it was read (`Cite`: the file and field).

Nothing here knows which backend produced a report beyond what the report says; nothing
is run. A report that does not pass `report check` is refused: its fields cannot be
trusted to mean what the diagnosis reads them to mean.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.logs.error_lines import find_error_lines
from harness.model.errors import BadInput, ReportError
from harness.model.results import COMPLETED_STATE
from harness.report.check import check_report_file
from harness.report.diagnosis.sign_rules import signs_of_error, signs_of_events
from harness.report.diagnosis.stack_of_report import fill_stack
from harness.report.diagnosis.vocabulary import (
    HARDWARE,
    NOOP,
    SUBMIT_SIZE,
    WORK,
    Arm,
    Cite,
    Observed,
    quote,
)
from harness.report.header import Timers, read_header, read_timers, section
from harness.report.model import continue_command, is_simulated, played_profile, source_tag
from harness.report.reader import ReportReader, TrialEntry
from harness.report.timing import stack_timers, time_to_failure

# what a refused context looks like, in a trial's error (XRT's shim on the create ioctl,
# the simulated binding) and in the kernel log (harness.logs.driver_lines)
CONTEXT_REFUSED = ("CREATE_HWCTX", "Failed to create hardware context",
                   "create context failed")
CONTEXT_EVENTS = ("mailbox_failure",)
MAX_LINES = 2000               # texts kept a report for the known defects' symptoms
# the states the recovery check names a device no reload clears by (recovery.device_state)
WEDGED_STATES = ("wedged", "no device")
# the driver's trace events, read as its kernel-log lines are: in-tree 7.0 logs nothing on
# a timeout, and "job timedout" is its one record (harness.logs.trace_events)
TRACE_TIMER_EVENTS = ("job_timedout",)
TIMER_EVENTS = ("tdr_timeout", "no_progress", "timeout_capture", "context_dump",
                *TRACE_TIMER_EVENTS)
__all__ = ["CONTEXT_EVENTS", "HARDWARE", "NOOP", "TIMER_EVENTS", "TRACE_TIMER_EVENTS",
           "WORK", "Arm", "Cite", "Observed", "context_refused", "observe",
           "observe_document"]


def observe(path: str | Path) -> Observed:
    """Read one report (refused, naming its problems, unless it passes `report check`)."""
    file = str(path)
    gathered: dict[str, Any] = {}

    def start(reader: ReportReader):
        doc = reader.document(with_trials=False)
        gathered["observed"] = _header(file, doc)
        return lambda entry: _trial(gathered["observed"], entry)
    result = check_report_file(file, start)
    if not result.valid:
        shown = "; ".join(result.problems[:3])
        raise ReportError(f"{file} does not pass `report check` ({shown}"
                       + (f"; {len(result.problems) - 3} more" if len(result.problems) > 3
                          else "") + "); diagnose reads only reports it can trust")
    observed: Observed = gathered["observed"]
    _keep_answered(observed)
    return observed


def observe_document(document: dict[str, Any], file: str) -> Observed:
    """A report already in memory (`Report.to_dict()`: a run that is still going, as
    investigate reads its own), observed as `observe` reads a file."""
    observed = _header(file, document)
    for position, plan in enumerate(document.get("plans") or []):
        for trial in plan.get("trials") or []:
            _trial(observed, TrialEntry(position, trial, None))
    _keep_answered(observed)
    return observed


def _header(file: str, doc: dict[str, Any]) -> Observed:
    header = read_header(doc)
    backend, case = header.backend.raw, header.case
    source = source_tag(backend) if is_simulated(backend) else HARDWARE
    timers = header.timers or read_timers(stack_timers(doc)) or Timers()
    profile = played_profile(backend)
    submit = SUBMIT_SIZE
    if profile:
        from harness.sim.profiles import parse_profile
        try:
            submit = parse_profile(profile).xrt_chain
        except BadInput:
            submit = SUBMIT_SIZE
    observed = Observed(
        file=file, command=str(header.command), source=source, profile=profile,
        by_construction=list(header.backend.by_construction),
        documented=bool(header.backend.documented), timers=timers,
        case=str(case.name or "?"), case_kind=case.kind, layers=case.layers,
        engine=case.engine,
        xrt_smi=doc.get("xrt_smi_control") if isinstance(doc.get("xrt_smi_control"), dict)
        else None, finished=bool(doc.get("finished")),
        resume=None if doc.get("finished") else continue_command(str(header.command), file))
    server = doc.get("server")
    if isinstance(server, dict):
        observed.server_requests = [r for r in server.get("requests") or []
                                    if isinstance(r, dict)]
        # serve-probe keeps the tag in its settings; investigate beside its server's answers
        observed.server_model = server.get("model") or header.settings.model
    fill_stack(observed, doc, header)
    run = section(doc.get("engine_run"))
    if run:                              # capture record's report: the engine's own run
        from harness.report.diagnosis.engine_run import observe_engine_run
        observe_engine_run(observed, run)
    case_noop = case.nop_only and observed.case_kind == "case"
    per_layer = case.runs_per_layer if observed.case_kind == "case" else 1
    for position, plan in enumerate(doc.get("plans") or []):
        control = bool(plan.get("control"))
        stand_in = plan.get("work") == "stand-in"
        noop = control or (case_noop and not stand_in)
        unit = 1 if control else int(per_layer or 1)
        observed.arms.append(Arm(
            file=file, position=position, name=str(plan.get("name")),
            label=_label(plan), workload=NOOP if noop else WORK, stand_in=stand_in,
            group=f"{file}#" + ("control" if control else "stand-in" if stand_in
                                else str(plan.get("frame") or "case")),
            runs=[int(c) * unit for c in plan.get("chunks") or []], submit_size=submit,
            changed=plan.get("changed") or None))     # an object, by `report check`
    return observed


def _keep_answered(observed: Observed) -> None:
    """The arms that got an answer (or none, or a failed set-up); what ran on a wedged
    device is kept apart, by plan."""
    observed.wedged = {arm.label: arm.wedged for arm in observed.arms if arm.wedged}
    observed.wedged_state = next((a.wedged_state for a in observed.arms if a.wedged_state),
                                 None)
    if observed.wedged:
        plans = ", ".join(f"{label} x{n}" for label, n in observed.wedged.items())
        observed.sign("device-wedged", observed.cite("plans[*].trials[*].wedged_device.state",
                                                     quote(observed.wedged_state or "wedged")),
                      trials=sum(observed.wedged.values()), plans=plans)
    observed.arms = [arm for arm in observed.arms if arm.answered or arm.no_answer
                     or arm.setup_failed]


def _label(plan: dict[str, Any]) -> str:
    from harness.model.plan import plan_label
    return plan_label(str(plan.get("name")), plan.get("chunks") or [])


def _trial(observed: Observed, entry: TrialEntry) -> None:
    if entry.plan >= len(observed.arms):
        return
    arm = observed.arms[entry.plan]
    trial = entry.body
    status = trial.get("status")
    if status == "completed":
        arm.completed += 1
        _answered_after_restart(observed, arm, trial)
        key = "device_ms" if observed.timers.clock == "device" else "wall_ms"
        # one comprehension over what may be thousands of runlists a trial (a sweep's)
        arm.run_ms.extend([float(ms) / runs for outcome in trial.get("runlists") or []
                           if isinstance(ms := outcome.get(key), (int, float))
                           and isinstance(runs := outcome.get("runs"), int) and runs > 0])
        arm.states[COMPLETED_STATE] += 1
        return
    if status in ("deadline", "crashed"):
        arm.no_answer += 1
        arm.states[str(status)] += 1
        ttf = trial.get("time_to_failure") or time_to_failure(trial, observed.timers)
        if ttf:
            arm.ttf.append((float(ttf["ms"]), str(ttf["class"])))
        return
    if status != "failed":
        return
    _recovery(observed, arm, trial)
    # (the schema checked both: `observe` reads only reports that pass `report check`)
    wedged = trial.get("wedged_device")
    if wedged:
        # what a device a wedge left unusable answered says nothing of depth or the cut
        arm.wedged += 1
        arm.wedged_state = arm.wedged_state or str(wedged.get("state"))
        return
    trace = trial.get("trace_events")
    timed_out = trace.get("timed_out") if trace else None
    if timed_out:
        arm.events["job_timedout"] += timed_out
    runlists = [r for r in trial.get("runlists") or [] if isinstance(r, dict)]
    failing = next((r for r in runlists if r.get("state") not in (None, COMPLETED_STATE)),
                   None)
    log = trial.get("kernel_log") if isinstance(trial.get("kernel_log"), dict) else {}
    _keep_lines(observed, arm, trial, log)
    events = [e for e in log.get("events") or [] if isinstance(e, dict)]
    # the wedge's lines, and contexts refused once the runlists ran (the driver's restart,
    # not the set-up): no evidence of a cause of their own
    for event, event_signs in signs_of_events(events, submitted=bool(runlists)):
        arm.events[str(event.get("event"))] += 1
        for kind, facts in event_signs:
            observed.sign(kind, arm.cite(f"trials[{trial.get('index')}].kernel_log.events",
                                         event.get("event")), **facts)
    if failing is None:
        error = str(trial.get("error") or "")
        for found in find_error_lines(error.splitlines()[:1]):
            for kind, facts in signs_of_error(found):
                observed.sign(kind, arm.cite(f"trials[{trial.get('index')}].error",
                                             quote(found.message)), **facts)
        arm.setup_failed += 1
        arm.setup_errors.append(error.splitlines()[0][:200] if error else "set-up failed")
        arm.states["set-up failed"] += 1
        return
    arm.failed += 1
    arm.states[str(failing.get("state"))] += 1
    ttf = trial.get("time_to_failure") or time_to_failure(trial, observed.timers)
    if ttf:
        arm.ttf.append((float(ttf["ms"]), str(ttf["class"])))
    runs = failing.get("runs")
    if isinstance(runs, int):
        arm.failing_depths.append(runs)
    chains = failing.get("chains") or []
    chain = failing.get("failing_chain")
    if isinstance(chain, int) and 0 <= chain < len(chains):
        arm.failing_chain_runs.append(int(chains[chain]))
    if failing.get("failing_run_named") and isinstance(failing.get("failing_run"), int):
        arm.named_runs.append(int(failing["failing_run"]))
    if failing.get("health"):
        arm.health += 1
    for outcome in runlists:
        if outcome is failing:
            break
        ms = outcome.get("device_ms") if observed.timers.clock == "device" \
            else outcome.get("wall_ms")
        if outcome.get("state") == COMPLETED_STATE and isinstance(ms, (int, float)) \
                and outcome.get("runs"):
            arm.run_ms.append(float(ms) / int(outcome["runs"]))


def _answered_after_restart(observed: Observed, arm: Arm, trial: dict[str, Any]) -> None:
    """A trial that completed after an earlier one's restart failed: the device answered a
    fresh context, so the failed restart left no wedge (staging's firmware-dead path
    power-cycles the NPU after it, xdna-driver 856409ca aie2_ctx.c aie2_hw_reset). Trials
    are read in the order they ran, plan after plan."""
    if any(s.kind == "restart-failed" for s in observed.signs) and not any(
            s.kind == "device-answered" for s in observed.signs):
        observed.sign("device-answered", arm.cite(f"trials[{trial.get('index')}].status",
                                                  "completed"))


def _recovery(observed: Observed, arm: Arm, trial: dict[str, Any]) -> None:
    """The recovery check after a failed trial, where it found the device wedged (its state
    in words: harness.execution.recovery.device_state)."""
    state = str(section(trial.get("recovery")).get("state") or "")
    if state.startswith(WEDGED_STATES):
        observed.sign("device-wedged", arm.cite(f"trials[{trial.get('index')}].recovery.state",
                                                quote(state)))


def _keep_lines(observed: Observed, arm: Arm, trial: dict[str, Any],
                log: dict[str, Any]) -> None:
    """The trial's texts a known defect's symptoms may show in: its error, its runlists'
    messages and its kernel-log lines (up to MAX_LINES a report)."""
    where = f"{arm.where}.trials[{trial.get('index')}]"
    texts = [("error", str(trial["error"]))] if trial.get("error") else []
    texts += [("runlists[*].message", str(r["message"])) for r in
              map(section, trial.get("runlists") or []) if r.get("message")]
    texts += [("kernel_log.lines", str(line)) for line in log.get("lines") or []]
    room = MAX_LINES - len(observed.lines)
    observed.lines += [(f"{where}.{name}", None, text) for name, text in texts[:max(room, 0)]]


def context_refused(arm: Arm) -> list[str]:
    """The set-up errors of `arm` that are a context refused."""
    return [e for e in arm.setup_errors if any(mark in e for mark in CONTEXT_REFUSED)]
