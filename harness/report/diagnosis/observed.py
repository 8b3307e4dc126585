"""What reports observed, as the diagnosis reads it: one `Arm` per plan (what its runs
carried, how deep its runlists were, how its trials ended and how long the failures took)
and each report's own facts (where its results come from, its timers, a server's answers,
a bisection's boundary). Every fact keeps where it was read (`Cite`: the file and field).

Nothing here knows which backend produced a report beyond what the report says; nothing
is run. A report that does not pass `report check` is refused: its fields cannot be
trusted to mean what the diagnosis reads them to mean.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.model.errors import BadInput, ReportError
from harness.model.results import COMPLETED_STATE
from harness.report.check import check_report_file
from harness.report.header import Timers, read_header, read_timers
from harness.report.model import continue_command, is_simulated, played_profile, source_tag
from harness.report.reader import ReportReader, TrialEntry
from harness.report.timing import stack_timers, time_to_failure

HARDWARE = "hardware"          # a machine's source; a model's is its `source_tag`
NOOP, WORK = "noop", "work"
# what a refused context looks like, in a trial's error (XRT's shim on the create ioctl,
# the simulated binding) and in the kernel log (harness.logs.driver_lines)
CONTEXT_REFUSED = ("CREATE_HWCTX", "Failed to create hardware context",
                   "create context failed")
CONTEXT_EVENTS = ("mailbox_failure",)
TIMER_EVENTS = ("tdr_timeout", "no_progress", "timeout_capture", "context_dump")
SUBMIT_SIZE = 24                # XRT's runlist chain (STACK.md 2), unless the profile says


@dataclass(frozen=True)
class Cite:
    """Where a fact was read: a report file and a field in it, with what it held."""

    file: str
    field: str
    value: str

    def __str__(self) -> str:
        return f"{self.file}: {self.field} = {self.value}"


@dataclass
class Arm:
    """One plan of one report, as observed."""

    file: str
    position: int
    name: str
    label: str
    workload: str                  # NOOP or WORK
    stand_in: bool                 # WORK stood in for by the simulator (not an engine's)
    group: str                     # runs of the same commands share a group
    runs: list[int]                # each runlist's runs
    submit_size: int = SUBMIT_SIZE
    completed: int = 0
    failed: int = 0
    no_answer: int = 0
    setup_failed: int = 0
    states: Counter[str] = field(default_factory=Counter)
    ttf: list[tuple[float, str]] = field(default_factory=list)     # (ms, class)
    named_runs: list[int] = field(default_factory=list)   # runs the device named in failing
    failing_chain_runs: list[int] = field(default_factory=list)
    failing_depths: list[int] = field(default_factory=list)   # the failing runlists' runs
    run_ms: list[float] = field(default_factory=list)      # completed runlists, per run
    setup_errors: list[str] = field(default_factory=list)
    events: Counter[str] = field(default_factory=Counter)  # kernel-log events, failed trials
    health: int = 0                # failing runlists with the firmware's health data
    changed: dict[str, Any] | None = None   # the machine changed for it (investigate)

    @property
    def where(self) -> str:
        return f"plans[{self.position}] ({self.label})"

    def cite(self, what: str, value: Any) -> Cite:
        return Cite(self.file, f"{self.where}.{what}", str(value))

    @property
    def deepest(self) -> int:
        return max(self.runs) if self.runs else 0

    @property
    def answered(self) -> int:
        return self.completed + self.failed

    @property
    def rate(self) -> float | None:
        """The failing share of the trials the device answered."""
        return self.failed / self.answered if self.answered else None

    @property
    def always_fails(self) -> bool:
        return self.failed > 0 and self.completed == 0

    @property
    def never_fails(self) -> bool:
        return self.completed > 0 and self.failed == 0 and self.no_answer == 0 \
            and self.setup_failed == 0

    @property
    def mixed(self) -> bool:
        return self.failed > 0 and self.completed > 0

    def ttf_classes(self) -> Counter[str]:
        return Counter(kind for _, kind in self.ttf)

    @property
    def median_run_ms(self) -> float | None:
        return statistics.median(self.run_ms) if self.run_ms else None

    @property
    def longest_failing_chain(self) -> int | None:
        return max(self.failing_chain_runs) if self.failing_chain_runs else None

    def chains_of(self, runs: int) -> int:
        return -(-runs // self.submit_size)


@dataclass
class Observed:
    """One report, as observed."""

    file: str
    command: str
    source: str                    # HARDWARE, SIMULATED or EMULATED
    profile: str | None
    by_construction: list[str]
    documented: bool
    timers: Timers
    case: str
    case_kind: str
    layers: int | None
    engine: str | None = None      # the command line that runs the case's engine
    arms: list[Arm] = field(default_factory=list)
    server_requests: list[dict[str, Any]] = field(default_factory=list)
    server_model: str | None = None
    xrt_smi: dict[str, Any] | None = None   # XRT's own deep-runlist control, where it ran
    finished: bool = True          # the run ended on its own (not Ctrl-C, not a kill)
    resume: str | None = None      # the command that goes on with it, where it did not

    @property
    def answered(self) -> int:
        return sum(a.answered for a in self.arms)

    @property
    def failures(self) -> int:
        return sum(a.failed + a.no_answer + a.setup_failed for a in self.arms) + \
            sum(1 for r in self.server_requests if r.get("outcome") != "success")

    def cite(self, what: str, value: Any) -> Cite:
        return Cite(self.file, what, str(value))


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
    observed.arms = [arm for arm in observed.arms if arm.answered or arm.no_answer
                     or arm.setup_failed]
    return observed


def observe_document(document: dict[str, Any], file: str) -> Observed:
    """A report already in memory (`Report.to_dict()`: a run that is still going, as
    investigate reads its own), observed as `observe` reads a file."""
    observed = _header(file, document)
    for position, plan in enumerate(document.get("plans") or []):
        for trial in plan.get("trials") or []:
            _trial(observed, TrialEntry(position, trial, None))
    observed.arms = [arm for arm in observed.arms if arm.answered or arm.no_answer
                     or arm.setup_failed]
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
        clock = observed.timers.clock
        for outcome in trial.get("runlists") or []:
            ms = outcome.get("device_ms") if clock == "device" else outcome.get("wall_ms")
            runs = outcome.get("runs")
            if isinstance(ms, (int, float)) and isinstance(runs, int) and runs > 0:
                arm.run_ms.append(float(ms) / runs)
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
    runlists = [r for r in trial.get("runlists") or [] if isinstance(r, dict)]
    failing = next((r for r in runlists if r.get("state") not in (None, COMPLETED_STATE)),
                   None)
    log = trial.get("kernel_log") if isinstance(trial.get("kernel_log"), dict) else {}
    for event in log.get("events") or []:
        if isinstance(event, dict):
            arm.events[str(event.get("event"))] += 1
    if failing is None:
        error = str(trial.get("error") or "")
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


def context_refused(arm: Arm) -> list[str]:
    """The set-up errors of `arm` that are a context refused."""
    return [e for e in arm.setup_errors if any(mark in e for mark in CONTEXT_REFUSED)]
