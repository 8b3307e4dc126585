"""Run a case's plans trial by trial into a report: the main job.

Before each trial its ``in-flight`` entry is on disk; after it, its outcome.
Ctrl-C or SIGTERM marks the running trial ``interrupted``, keeps the file and
raises `Interrupted` naming the command that continues it; ``reopen`` finishes
such a report.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import __version__, command_argv
from harness.execution import stop, xrt_smi_control
from harness.execution.backend import Backend, PlaysAProfile, trial_seed
from harness.execution.environment import collect_environment
from harness.execution.session import run_trial, xrt_records
from harness.execution.settings import RunOptions, Setting, run_setting  # noqa: F401
from harness.formats.git_head import harness_commit
from harness.formats.xclbin import read_xclbin_cached
from harness.logs.driver_lines import trial_entry
from harness.logs.kernel_log import PERMISSION_FIX, KernelLogReader, Reading, Unreadable
from harness.logs.trace_events import TraceReader
from harness.logs.trace_events import trial_entry as trace_entry
from harness.model.drivers import JOBS_IN_FLIGHT
from harness.model.errors import (
    BadInput,
    EnvironmentNotReady,
    Interrupted,
    XclbinError,
    stop_behind,
)
from harness.model.plan import Plan
from harness.model.results import (
    ELF_FLOW,
    FULL_ELF,
    CommandSpec,
    TrialResult,
    TrialSpec,
    TrialStatus,
    numeric_cfg,
)
from harness.probe.holders import device_users, own_family
from harness.probe.kernel_log_access import kernel_log_reader
from harness.probe.readers import Sources
from harness.probe.trace_access import trace_reader
from harness.probe.xrt_loader import own_libraries
from harness.report.header import Timers, read_timers
from harness.report.journal import SIMULATED_SYNC_S, ReportFile
from harness.report.model import STAND_IN, PlanRecord, Report, continue_command, utc_now
from harness.report.timing import (
    duration_text,
    stack_timers,
    time_to_failure,
    ttf_text,
    waits_on,
)
from harness.report.verdict import Verdict, report_verdict
from harness.sources.case import Case, CaseKind
from harness.sources.depth_control import control_for
from harness.sources.pack_identity import check_identity
from harness.sources.packs import PackNotFound, ResolvedPack, resolve_pack
from harness.sources.programs import Programs, check_programs, program_identity, programs_for
from harness.sources.workload import describe as describe_workload
from harness.sources.workload import with_stand_in_work

if TYPE_CHECKING:              # recovery checks run on the hardware path only
    from harness.execution.recovery import Recovery

# progress(text, done): a trial starting (done=False) or finished (done=True)
Progress = Callable[[str, bool], None]
STARTUP_S = 15.0          # a worker's own start-up (python, numpy, pyxrt) within a deadline
HELD_RUNLISTS = 5_000     # runlist outcomes memory keeps whole (about 2 MB); then in brief


def check_pack(case: Case, pack: ResolvedPack, programs: Programs | None = None) -> list[str]:
    """What real XRT would refuse, refused before any trial starts; what it would take but
    a user probably did not mean, returned as warnings."""
    warnings = []
    if programs is not None:
        check_programs(case, programs)
    for role, path in pack.files.items():
        try:
            meta = read_xclbin_cached(path)
        except XclbinError as err:
            raise BadInput(f"{role} xclbin: {err}") from None
        if role != case.runlist_context or (programs and role in programs.files):
            continue
        for i, cmd in enumerate(case.per_layer):
            try:
                kernel = meta.kernel(cmd.kernel)
            except XclbinError as err:
                raise BadInput(f"{case.file}: decode.per_layer[{i}]: {err}") from None
            if cmd.args is not None:
                past = [a[0] for a in cmd.args if a[0] >= len(kernel.args)]
                if past:
                    raise BadInput(f"{case.file}: a run sets argument {past[0]} of "
                                   f"{kernel.name}, which takes {len(kernel.args)} in {path} "
                                   "(run.set_arg past the kernel's arguments raises "
                                   "IndexError)")
                continue
            data_args = len(kernel.args) - 3
            if data_args < 0:
                raise BadInput(f"kernel {kernel.name} in {path} has {len(kernel.args)} "
                               "arguments; an NPU kernel needs opcode, instr and ninstr first")
            if len(cmd.buffers) > data_args:
                raise BadInput(f"{case.file}: decode.per_layer[{i}].buffers: {len(cmd.buffers)} "
                               f"buffers, but {kernel.name} in {path} takes {data_args} "
                               "(run.set_arg past the kernel's arguments raises IndexError)")
            if len(cmd.buffers) < data_args:
                warnings.append(f"{case.file}: decode.per_layer[{i}] gives {len(cmd.buffers)} "
                                f"buffers, {kernel.name} takes {data_args}: arguments "
                                f"{3 + len(cmd.buffers)}..{2 + data_args} stay 0")
    return warnings


def profile_warnings(case: Case, backend: Backend) -> list[str]:
    """Hypotheses aimed at nothing this case runs (e.g. slow:nosuchkernel:1000)."""
    if backend.hardware or backend.profile is None:
        return []
    names = {c.kernel for c in case.per_layer} | {Path(f).stem for f in case.xclbins.values()}
    names |= {f"{Path(f).stem}/{c.kernel}" for f in case.xclbins.values() for c in case.per_layer}
    return [f"profile token slow:{target}:... names no kernel or xclbin of {case.name} "
            f"({', '.join(sorted(names))}); it changes nothing"
            for target, _ in backend.profile.slow if target not in names]


def derive_deadline(case: Case, plan: Plan, backend: Backend) -> float:
    """Worst case for one trial: start-up, plus each runlist hanging until the driver's
    timeout fires, once for each group of jobs in flight it needs (the 5th chain's
    submit blocks in the ioctl, inside `execute()`, until the driver's timeout ends the
    4 ahead of it), plus the time its commands take, with margin."""
    latency_s = max((c.latency_us or 50.0) for c in case.per_layer) / 1e6
    # asked once, not per runlist: a sweep's plans of a thousand one-layer runlists
    # spent more on asking than on anything else here
    timeout_s = backend.driver_timeout_s()
    per_layer, submit_size = case.runs_per_layer, backend.submit_size
    total = 0.0
    for n in plan.chunks:
        runs = n * per_layer
        chains = -(-runs // submit_size)
        hangs = max(1, -(-chains // JOBS_IN_FLIGHT))
        total += timeout_s * 1.5 * hangs + 2.0 + runs * latency_s
    return round(STARTUP_S + total, 1)


def check_deadline(deadline_s: float | None, backend: Backend) -> None:
    """Refuse, before the first trial, a --deadline shorter than the time the driver may
    take to notice a hang, where that time passes for real (hardware, `emulate`, the
    simulator with `realtime`): every hang would end at the deadline, unanswered, and read
    as a harness fault instead of the driver's TIMEOUT. On the simulator's virtual clock the
    driver's timer costs no wall time, so any deadline serves."""
    if deadline_s is None:
        return
    real_time = backend.hardware or (isinstance(backend, PlaysAProfile)
                                     and backend.played.realtime)
    timer_s = backend.driver_timeout_s()
    if real_time and deadline_s < timer_s:
        raise BadInput(f"--deadline {deadline_s:g}: shorter than the {timer_s:g} s the driver "
                       "may take to notice a hang, so a hung trial would be cut off before "
                       f"the driver answers; give --deadline {timer_s:g} or more, or leave "
                       "it out (the default covers the driver's timeout)")


def flow_of(case: Case, options: RunOptions) -> str:
    """The flow a run submits in: --flow, else the case's; a runlist context made from full
    ELFs runs only in the full-elf flow."""
    flow = options.flow or case.flow
    if case.runlist_context in case.programs and flow != FULL_ELF:
        raise BadInput(f"--flow {flow}: the runlist context {case.runlist_context!r} of "
                       f"{case.name} is made from full ELFs; only --flow full-elf runs it")
    return flow


def case_programs(case: Case, pack: ResolvedPack, options: RunOptions, *,
                  simulated: bool = True) -> Programs:
    """The full-ELF contexts of `case` in the run's flow (a stand-in only when simulated)."""
    columns = 4
    xclbin = pack.files.get(case.runlist_context)
    if xclbin is not None:
        part = read_xclbin_cached(xclbin).partition
        columns = part.column_width if part else columns
    return programs_for(case, flow_of(case, options), columns, simulated=simulated)


def trial_spec(case: Case, pack: ResolvedPack, plan_name: str, chunks: Sequence[int],
               index: int, options: RunOptions, programs: Programs | None = None) -> TrialSpec:
    flow = flow_of(case, options)
    programs = programs or case_programs(case, pack, options)
    full = case.runlist_context in programs.files

    def command_flow(c: Any) -> str:
        return FULL_ELF if full else ELF_FLOW if c.elf else flow
    return TrialSpec(
        plan=plan_name, chunks=list(chunks), trial=index,
        seed=trial_seed(options.seed, plan_name, index),
        xclbins={role: str(path) for role, path in pack.files.items()},
        runlist_context=case.runlist_context,
        per_layer=[CommandSpec(programs.kernels[i] or c.kernel, c.instructions,
                               list(c.buffers), c.opcode, command_flow(c), c.elf,
                               [list(a) for a in c.args] if c.args is not None else None)
                   for i, c in enumerate(case.per_layer)],
        continue_after_failure=options.continue_after_failure,
        buffers=dict(case.buffers),
        order=list(case.order) if case.order is not None else None,
        programs=programs.files,
        context_cfg={role: numeric for role, cfg in case.context_cfg.items()
                     if (numeric := numeric_cfg(cfg))})


def _captured_commands(case: Case) -> dict[str, Any]:
    # a capture's reader loads with the first capture a run meets, not with every run
    from harness.sources.capture_case import captured_commands
    return captured_commands(case)


def case_latencies(case: Case) -> dict[str, float]:
    return {f"{case.runlist_context}/{c.kernel}": c.latency_us
            for c in case.per_layer if c.latency_us is not None}


class Runner:
    def __init__(self, case: Case, backend: Backend, pack: ResolvedPack, handle: ReportFile,
                 options: RunOptions, progress: Progress | None = None) -> None:
        self.case = case
        self.backend = backend
        self.pack = pack
        self.handle = handle
        self.options = options
        self.progress = progress or (lambda text, done: None)
        self.warnings: list[str] = []
        self.held_runlists = 0            # runlist outcomes of trials held whole
        self.control: tuple[Case, ResolvedPack] | None = None   # what control plans run
        backend.latencies = case_latencies(case)
        if not backend.hardware:         # nothing simulated can hang the machine
            handle.sync_every_s = SIMULATED_SYNC_S
        if options.isolate:      # isolation (and psutil) load only when trials isolate
            from harness.execution.isolation import prepare
            prepare(backend.as_report())
        handle.resume_command = continue_command(handle.report.command, handle.path)
        # a report from before time to failure was recorded gets its timers now
        self.timers = read_timers(self.report.sections.setdefault(
            "timers", stack_timers(self.report.header_dict()))) or Timers()
        # The hardware path reads the kernel log around each trial; the simulated stack
        # hands its own log back with each trial (Backend.simulated_kernel_log).
        self.kernel_log: KernelLogReader | Unreadable | None = \
            kernel_log_reader(Sources.live()) if backend.hardware else None
        # and the driver's trace events, where this machine lets them be recorded
        self.trace: TraceReader | None = trace_reader(
            Sources.live(), self.report.environment.get("trace_events") or {}) \
            if backend.hardware else None

    @property
    def report(self) -> Report:
        return self.handle.report

    def spec(self, plan: PlanRecord, index: int) -> TrialSpec:
        case, pack, options = self._workload(plan)
        programs = case_programs(case, pack, options, simulated=not self.backend.hardware)
        spec = trial_spec(case, pack, plan.name, plan.chunks, index, options, programs)
        spec.device = self.backend.device_life()     # what earlier trials left on it
        return spec

    def _workload(self, plan: PlanRecord) -> tuple[Case, ResolvedPack, RunOptions]:
        if plan.work == STAND_IN:
            if self.backend.hardware:
                raise BadInput(f"plan {plan.name} runs the simulator's stand-in work stream, "
                               "which never runs on a device: run it with --backend sim")
            return with_stand_in_work(self.case), self.pack, self.options
        if plan.control and self.control is not None:
            case, pack = self.control
            return case, pack, replace(self.options, flow=None)    # the control's own flow
        if plan.frame and plan.frame != self.case.frame:
            from harness.sources.capture_case import frame_case
            return frame_case(self.case, plan.frame), self.pack, self.options
        return self.case, self.pack, self.options

    def add_control(self) -> str | None:
        """Add the depth-only control plan (`harness.sources.depth_control`) to the header;
        None if it was added, else why not (its validate.xclbin is not on this machine).
        The caller rewrites the header before the trials (reproduce does, with its exports):
        the plan and what resume needs to run it (artifacts.control) land in one write."""
        case, plan, what = control_for(self.case)
        try:
            pack = resolve_pack(case, simulated=not self.backend.hardware)
        except EnvironmentNotReady as err:
            # the verdict and the render say it did not run, and why (in short: `why`)
            why = err.summary if isinstance(err, PackNotFound) else str(err)
            self.report.artifacts["control"] = {"not_run": str(err), "why": why}
            return f"the depth-only control was not run: {err}"
        if pack.stand_ins:
            what = control_for(self.case, stand_in=True)[2]
        self.control = (case, pack)
        self.backend.latencies.update(case_latencies(case))
        self.handle.declare_plan(PlanRecord(plan.name, plan.spec, list(plan.chunks),
                                            control=what))
        self.report.artifacts["control"] = {
            "case": case.name, "runs": case.layers,
            "workload": describe_workload(case, None).to_json(),
            "pack": pack.to_report(searched=False), "xclbins": pack.xclbin_entries()}
        return None

    def run(self) -> Report:
        total = sum(max(0, self.options.trials - len(p.finished())) for p in self.report.plans)
        done = 0
        for plan in self.report.plans:
            while len(plan.finished()) < self.options.trials:
                done += 1
                self.trial(plan, done, total)
        return self.conclude(lambda: report_verdict(self.report))

    def conclude(self, verdict: Callable[[], Verdict]) -> Report:
        """End the run: on hardware, XRT's own deep runlist once a plan of the case failed;
        the verdict (`verdict`, asked once that ran, so it can say what XRT answered); the
        report finished."""
        if xrt_smi_control.wanted(self.report, self.backend.hardware,
                                  self.options.xrt_smi_control):
            self.progress("xrt-smi validate --run runlist-latency: XRT's own deep runlist, "
                          "as a control", False)
            xrt_smi_control.run_control(self.report)
        self.report.verdict = verdict().to_dict()
        self.handle.finish()
        return self.report

    def trial(self, plan: PlanRecord, number: int, total: int) -> TrialResult:
        # A trial a stop interrupted gave no answer: it is run again in its own place (its
        # index, its seed), so continuing never adds a trial beyond the plan's count.
        index = next((position for position, t in enumerate(plan.trials)
                      if t.status is TrialStatus.INTERRUPTED), len(plan.trials))
        counter = f"[{number}/{total}]" if total else f"[{number}]"
        placeholder: TrialResult | None = None
        # Everything from the in-flight entry to the recorded outcome sits inside the
        # try: a stop anywhere in between marks the trial interrupted and names how to go on.
        try:
            spec = self.spec(plan, index)
            placeholder = TrialResult(index, TrialStatus.IN_FLIGHT, seed=spec.seed,
                                      started=utc_now())
            if index < len(plan.trials):
                plan.trials[index] = placeholder
            else:
                plan.trials.append(placeholder)
            self.handle.record_trial(plan.name, placeholder)
            deadline = None
            if self.options.isolate:
                case = self._workload(plan)[0]
                deadline = self.options.deadline_s or case.deadline_s or \
                    derive_deadline(case, Plan(plan.name, plan.spec, tuple(plan.chunks)),
                                    self.backend)
            self.progress(f"{counter} {plan.label}: trial {index + 1} running, waiting on "
                          f"{waits_on(self.timers, deadline)}", False)
            self._mark_kernel_log()
            stop.raise_if_requested()
            if deadline is not None:
                from harness.execution.isolation import run_isolated
                result = run_isolated(spec, self.backend.as_report(), deadline,
                                      self.backend.latencies)
                result.deadline_s = deadline
            else:
                result = run_trial(spec, self.backend)
                if self.backend.hardware:
                    result.worker = {"pid": os.getpid(), "in_process": True,
                                     "xrt_libraries": own_libraries()}
            stop.raise_if_requested()      # a stop swallowed during the trial stops here
            result.started = placeholder.started
            self.backend.adopt_device_life(result.device_life)
            result.time_to_failure = time_to_failure(result, self.timers)
            for outcome in result.runlists:
                outcome.health = self.backend.recorded_health(outcome.health)
            recovery = self._after_hardware_trial(result) if self.backend.hardware else None
            plan.trials[index] = result
            self.handle.record_trial(plan.name, result)
            plan.trials[index] = self._held(result)
        except BaseException as err:
            signalled = stop_behind(err)      # also a stop Python wrapped (see there)
            if signalled is None:
                raise
            how, signal = (("Ctrl-C", "SIGINT") if isinstance(signalled, KeyboardInterrupt)
                           else ("SIGTERM", "SIGTERM"))
            if placeholder is not None and plan.trials[index] is placeholder:
                placeholder.status = TrialStatus.INTERRUPTED
                placeholder.error = f"interrupted by {how}"
                self.handle.record_trial(plan.name, placeholder)
            self.handle.close()
            again = continue_command(self.report.command, self.handle.path)
            raise Interrupted(f"stopped by {how}; everything so far is in {self.handle.path}; "
                              f"continue with `{again}`", signal) from None
        self.progress(f"{counter} {plan.label}: trial {index + 1} {result.state}"
                      + _timing(result, self.timers), True)
        if recovery is not None and not recovery.recovered:
            self.handle.note(f"the NPU did not answer after {plan.label} trial {index + 1}; "
                             "the run stopped there")
            self.handle.close()
            raise EnvironmentNotReady(
                f"the NPU did not answer after {plan.label} trial {index + 1} failed "
                f"({recovery.attempts} attempts over {recovery.waited_s:g} s: "
                f"{recovery.last_error}); it is {recovery.state}; {recovery.fix}. "
                "Everything so far is in "
                f"{self.handle.path}; continue with "
                f"`{continue_command(self.report.command, self.handle.path)}`")
        return result

    def _held(self, result: TrialResult) -> TrialResult:
        """What memory keeps of a recorded trial: the trial whole while the run holds few
        runlist outcomes, in brief past that (the file has it whole), so a sweep of any
        size runs in flat memory."""
        if self.held_runlists + len(result.runlists) > HELD_RUNLISTS:
            return result.brief()
        self.held_runlists += len(result.runlists)
        return result

    def _mark_kernel_log(self) -> None:
        if self.trace is not None:
            try:
                self.trace.mark()
            except OSError as err:
                self.trace = None
                self.handle.note(f"warning: the trace buffer stopped being readable "
                                 f"({err.strerror}); trace events are not recorded from here")
        if self.kernel_log is None or isinstance(self.kernel_log, Unreadable):
            return
        try:
            self.kernel_log.mark()
        except OSError as err:
            self.kernel_log = Unreadable(self.kernel_log.source, f"marking failed: "
                                         f"{err.strerror}", PERMISSION_FIX)

    def _after_hardware_trial(self, result: TrialResult) -> Recovery | None:
        """What a maintainer asks for after a failure on hardware: who else held the
        device, whether it answers again, and the kernel log of the trial (read last,
        so it includes what the recovery check made the driver print)."""
        failed = result.status in (TrialStatus.FAILED, TrialStatus.DEADLINE,
                                   TrialStatus.CRASHED)
        recovery = None
        if failed:
            result.device_users = device_users(Sources.live(), own_family())
            recovery = self._check_recovery()
            result.recovery = recovery.to_json()
        reader = self.kernel_log
        if reader is not None:
            if not isinstance(reader, Unreadable):
                try:
                    reading: Reading | Unreadable = reader.read()
                except OSError as err:
                    reading = Unreadable(reader.source, f"reading failed: {err.strerror}",
                                         PERMISSION_FIX)
            else:
                reading = reader
            flavour = (self.report.environment.get("driver") or {}).get("flavour")
            # the simulator standing in for pyxrt printed these lines, if any
            result.kernel_log = trial_entry(reading, flavour, failed,
                                            simulated=self.backend.simulated)
            if result.kernel_log is not None and recovery is not None:
                result.kernel_log["includes"] = "the trial and the recovery check after it"
        if self.trace is not None:
            try:
                result.trace_events = trace_entry(self.trace.read(), str(self.trace.source),
                                                  simulated=self.backend.simulated)
            except OSError as err:
                result.trace_events = {"source": str(self.trace.source), "lines": [],
                                       "unreadable": err.strerror or "read failed"}
        return recovery

    def _check_recovery(self) -> Recovery:
        from harness.execution.recovery import check_error, check_recovery, recovery_fix
        spec, what = self._recovery_spec()
        deadline = derive_deadline(self.case, Plan("recovery", "1", (1,)), self.backend)

        def attempt() -> str | None:
            if self.options.isolate:
                from harness.execution.isolation import run_isolated
                answer = run_isolated(spec, self.backend.as_report(), deadline,
                                      self.backend.latencies)
            else:
                answer = run_trial(spec, self.backend)
            return check_error(answer)
        environment = self.report.environment
        bdf = (environment.get("npu") or {}).get("bdf")
        module = (environment.get("driver") or {}).get("module")
        return check_recovery(attempt, what, recovery_fix(module, bdf))

    def _recovery_spec(self) -> tuple[TrialSpec, str]:
        """One NOP run on a fresh context (XRT's validate.xclbin and nop.elf, as xrt-smi
        validate runs them); where this machine lacks them, one layer of the case."""
        control = replace(control_for(self.case)[0], layers=1)
        options = replace(self.options, flow=None)
        context = ("on the context the run shares while XRT's capture records"
                   if not self.options.isolate and xrt_records() else "on a fresh context")
        try:
            pack = resolve_pack(control, simulated=False)
            spec = trial_spec(control, pack, "recovery", [1], 0, options)
            return spec, f"one NOP run (nop.elf on XRT's validate.xclbin) {context}"
        except (EnvironmentNotReady, BadInput):
            programs = case_programs(self.case, self.pack, self.options, simulated=False)
            spec = trial_spec(self.case, self.pack, "recovery", [1], 0, self.options,
                              programs)
            return spec, (f"one layer of the case {context} (XRT's validate.xclbin for a "
                          "NOP run is not on this machine)")


def _timing(result: TrialResult, timers: Timers) -> str:
    if result.time_to_failure:
        return " " + ttf_text(result.time_to_failure, timers)
    device = sum(r.device_ms or 0.0 for r in result.runlists)
    if any(r.device_ms is not None for r in result.runlists):
        return f" ({duration_text(device)} of simulated device time)"
    return f" ({(result.wall_ms or 0.0) / 1000:.1f} s)" if result.wall_ms else ""


def new_report(case: Case, backend: Backend, pack: ResolvedPack, plans: list[Plan],
               options: RunOptions, command: str, environment: dict[str, Any],
               programs: Programs | None = None) -> Report:
    backend_info = backend.as_report()
    backend_info["isolation"] = options.isolate
    report = Report(
        command=command,
        # platform.python_version() reads the same first word of sys.version, through
        # nine regular expressions compiled at its import
        harness={"version": __version__, "python": sys.version.split()[0],
                 "argv": command_argv(), "commit": harness_commit()},
        backend=backend_info,
        case={"name": case.name, "file": str(Path(case.file).resolve()),
              "sha256": case.sha256, "source": case.source, "layers": case.layers,
              "runlist_context": case.runlist_context, "runs_per_layer": case.runs_per_layer,
              "kind": case.kind, "flow": case.flow,
              "workload": describe_workload(case, flow_of(case, options)).to_json(),
              **({"reference": case.reference, "recipe_profile": case.recipe_profile}
                 if case.kind is CaseKind.RECIPE else {}),
              **({"engine": case.engine} if case.engine else {}),
              **(_captured_commands(case) if case.kind is CaseKind.CAPTURE else {})},
        settings=options.to_settings(flow_of(case, options),
                                     _worker_start() if options.isolate else None),
        environment=environment,
        artifacts={"pack": pack.to_report(), "xclbins": pack.xclbin_entries(),
                   **({"programs": [program_identity(role, path, programs.stand_in)
                                    for role, paths in programs.files.items()
                                    for path in paths]} if programs and programs.files
                      else {})},
        plans=[PlanRecord(p.name, p.spec, list(p.chunks),
                          case.expect[p.name].name if p.name in case.expect else None)
               for p in plans],
    )
    report.sections["timers"] = stack_timers(report.header_dict())
    return report


def _worker_start() -> str:
    from harness.execution.isolation import worker_start
    return worker_start()


def open_run(case: Case, plans: list[Plan] | None, options: RunOptions, *,
             backend: Backend, xclbins_dir: str | None, out: str | None, force: bool,
             command: str, progress: Progress | None = None,
             xrt_smi_validate: bool = False, allow_other_pack: bool = False) -> Runner:
    """Probe the machine, find the pack, write the report's first version: a run ready to go.
    `plans` None means the case's own plans; an empty list, plans added as a search goes.
    `allow_other_pack`: run with xclbins that are another pack's folder (refused else)."""
    if backend.hardware and case.absent:
        raise EnvironmentNotReady(f"{case.file} names {', '.join(case.absent)}, which is not "
                                  "there; the hardware path runs only real artefacts")
    environment = collect_environment(backend, xrt_smi_validate=xrt_smi_validate)
    backend.adopt_environment(environment)
    check_deadline(options.deadline_s, backend)
    pack = resolve_pack(case, xclbins_dir=xclbins_dir, simulated=not backend.hardware)
    programs = case_programs(case, pack, options, simulated=not backend.hardware)
    warnings = list(case.notes) + [f"{path} is absent: a stand-in takes its place"
                                   for path in case.absent]
    if programs.stand_in:
        warnings.append(f"no full ELF for context {case.runlist_context!r}: a stand-in built "
                        "from the case's commands takes its place (simulated stack only)")
    warnings += check_pack(case, pack, programs) + profile_warnings(case, backend)
    said, identity = check_identity(case, pack, allowed=allow_other_pack)
    warnings += said
    report = new_report(case, backend, pack, list(case.plans) if plans is None else plans,
                        options, command, environment, programs)
    if identity:
        report.artifacts["pack"]["identity"] = identity
    handle = ReportFile.create(report, out=out, name=case.name, force=force,
                               redact=options.redact,
                               sync_every_s=0.0 if backend.hardware else SIMULATED_SYNC_S)
    for warning in warnings:
        handle.note(f"warning: {warning}")
    runner = Runner(case, backend, pack, handle, options, progress)
    runner.warnings = warnings
    return runner
