"""What a trial is asked to do and what it answered: the harness's results model.

A `TrialSpec` travels to a worker as JSON; a `TrialResult` comes back with one
`RunlistOutcome` per runlist. Statuses are a closed set (`TrialStatus`); counts
of outcomes are told the same way everywhere (`counts_text`). This module
imports nothing heavy, so reading, validating and rendering reports never loads
the simulator or numpy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any


class TrialStatus(str, Enum):
    """How a trial ended, from the harness's side."""

    COMPLETED = "completed"        # every runlist completed
    FAILED = "failed"              # the stack answered with a failure
    DEADLINE = "deadline"          # no answer before the deadline; the worker was killed
    CRASHED = "crashed"            # the worker died without a result
    IN_FLIGHT = "in-flight"        # on disk while it runs; left so if the harness dies
    INTERRUPTED = "interrupted"    # stopped by the user, or found in flight on reopening

    def __str__(self) -> str:
        return self.value

    @property
    def finished(self) -> bool:
        """Counted as done: the trial will not be run again."""
        return self in FINISHED

    @property
    def answered(self) -> bool:
        """The stack gave an answer (completed or failed)."""
        return self in (TrialStatus.COMPLETED, TrialStatus.FAILED)


FINISHED = frozenset({TrialStatus.COMPLETED, TrialStatus.FAILED, TrialStatus.DEADLINE,
                      TrialStatus.CRASHED})
COMPLETED_STATE = "COMPLETED"
# a trial that ran on a device a wedge had left unusable (TrialResult.wedged_device): what
# it answered says nothing of the plan, so counts and searches take it for no answer
WEDGED_STATE = "wedged"
NO_ANSWER = frozenset(s.value for s in TrialStatus if not s.answered) | {WEDGED_STATE}
# a failed trial none of whose runlists answered: the stack refused its set-up
SETUP_FAILED = "set-up failed"


INSTR_BO, ELF_FLOW, FULL_ELF = "instr-bo", "elf", "full-elf"
FLOWS = (ELF_FLOW, INSTR_BO, FULL_ELF)
# How runs are submitted: the call shape a flow shares with an engine, which says nothing
# of what the runs carry (harness.sources.workload says that).
FLOW_TEXT = {
    ELF_FLOW: "elf: control-code ELF -> module -> ext.kernel, called (3, 0, 0, bo...): the "
              "call shape FastFlowLM's engine uses; XRT sends ERT_START_NPU commands",
    INSTR_BO: "instr-bo: kernel called (3, instruction bo, ninstr, bo...): the call shape of "
              "mlir-aie and IRON; XRT sends ERT_START_CU commands",
    FULL_ELF: "full-elf: hardware context made from full ELFs (hw_context(device, elf)), "
              "kernel opened by name (ext.kernel(hwctx, 'main:sequence')), buffers from "
              "argument 0: the call shape of mlir-aie, IRON's FullELFCallable and mlir-air; "
              "XRT sends ERT_START_NPU_PREEMPT_ELF commands",
}


def flow_text(flow: str | None) -> str:
    """How a report's runs got their control code, in words (reports before 0.2 say
    nothing: they ran the instruction-buffer flow)."""
    return FLOW_TEXT.get(flow or INSTR_BO, str(flow))


@dataclass
class CommandSpec:
    """One run: a kernel and its arguments.

    With `args` None (a decode case's command) the arguments are the NPU call:
    ``instr-bo`` flow (opcode, instruction buffer, ninstr, data buffers...), as mlir-aie
    and IRON call kernels; ``elf`` flow (opcode, 0, 0, data buffers...) on a kernel built
    from a control-code ELF (`elf`, or one made from `instructions` as FastFlowLM's
    aiebu step does), as FastFlowLM calls them; ``full-elf`` flow (data buffers from 0)
    on a kernel the runlist context's full ELF declares (`kernel` is its name, e.g.
    ``main:sequence``). With `args` (a recipe's or a capture's
    run) they are given: ``[argidx, "bo", buffer name]`` or ``[argidx, "int", value]``,
    buffers named in the trial's `buffers`."""

    kernel: str
    instructions: str
    buffers: list[int]
    opcode: int = 3
    flow: str = INSTR_BO
    elf: str | None = None
    args: list[list[Any]] | None = None


@dataclass
class BufferSpec:
    """A named buffer of a recipe or capture: its size, the file its content comes from
    (written and synced to the device before each runlist), if any, and for a capture's
    instruction buffer the flags and memory group it was allocated with."""

    size: int
    data: str | None = None
    flags: int | None = None
    memgrp: int | None = None


def numeric_cfg(cfg: dict[str, str]) -> dict[str, int]:
    """The keys of a context's cfg pyxrt can pass (`hw_context(device, uuid, cfg_param:
    dict[str, int])`, XRT's cfg_param_type of QoS numbers): those with a decimal value."""
    return {key: int(value) for key, value in cfg.items()
            if value.strip().isdigit() and int(value) < 2**32}


@dataclass
class TrialSpec:
    """Everything a worker needs to run one trial (sent to it as JSON).

    `order` None: the runlist is `per_layer` repeated, and `chunks` count layers. Set
    (a recipe or capture): run i of the sequence is `per_layer[order[i]]`, and `chunks`
    count runs."""

    plan: str
    chunks: list[int]
    trial: int
    seed: int
    xclbins: dict[str, str]
    runlist_context: str
    per_layer: list[CommandSpec]
    continue_after_failure: bool = False
    buffers: dict[str, BufferSpec] = field(default_factory=dict)
    order: list[int] | None = None
    # contexts made from full ELFs instead of an xclbin: role -> ELF files
    programs: dict[str, list[str]] = field(default_factory=dict)
    # a captured context's configuration as pyxrt takes it (role -> QoS key -> number)
    context_cfg: dict[str, dict[str, int]] = field(default_factory=dict)
    # the simulated device's life as the trial finds it (harness.sim.device_life): what an
    # earlier trial left on it; None on hardware and where the profile plays nothing of it
    device: dict[str, Any] | None = None

    @property
    def runs_per_unit(self) -> int:
        return 1 if self.order is not None else len(self.per_layer)

    def to_json(self) -> dict[str, Any]:
        """The spec as JSON takes it. It shares its lists and dicts with the spec (it is
        serialised at once, a trial at a time: a deep copy was a tenth of what sending an
        isolated trial cost its parent): read it, do not change it."""
        return {**{name: getattr(self, name) for name in _SPEC_FIELDS},
                "per_layer": [{name: getattr(c, name) for name in _COMMAND_FIELDS}
                              for c in self.per_layer],
                "buffers": {name: {key: getattr(b, key) for key in _BUFFER_FIELDS}
                            for name, b in self.buffers.items()}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrialSpec:
        data = dict(data)
        data["per_layer"] = [CommandSpec(**c) for c in data["per_layer"]]
        data["buffers"] = {name: BufferSpec(**b) for name, b in data.get("buffers", {}).items()}
        return cls(**data)


@dataclass
class RunlistOutcome:
    """What one runlist of a trial came to: its runs and chains, the state the stack answered,
    which run and chain failed (where the device said), and its timing."""

    index: int
    runs: int
    chains: list[int]
    state: str | None = None             # None: not run (skipped after a failure)
    state_code: int | None = None
    failing_run: int | None = None
    failing_chain: int | None = None
    source: str | None = None            # device | host
    device_ms: float | None = None
    wall_ms: float | None = None
    message: str | None = None
    health: dict[str, int | str] | None = None   # "not modelled": unknown to the simulator
    skipped: bool = False
    message_form: str | None = None      # "state in message" (XRT >= 2.21.75) or not (2.20)
    located_by: str | None = None        # how the failing run was found
    # False: the device named no run, only the chain (a hang's TIMEOUT or ABORT at the
    # chain's read index 0, or a chain never run): XRT's failing run is its first
    failing_run_named: bool | None = None
    # True: it ran on a device a wedge had already left unusable (said on the simulated
    # stack, which knows it); what it answered is not evidence of its depth or cut
    wedged_device: bool | None = None

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _OUTCOME_FIELDS}


@dataclass
class TrialResult:
    """One trial as recorded: its status, each runlist's outcome, and what was read around it
    (the worker, the kernel log, a recovery check, the device's other users)."""

    index: int
    status: TrialStatus
    wall_ms: float | None = None
    seed: int | None = None
    runlists: list[RunlistOutcome] = field(default_factory=list)
    error: str | None = None
    started: str | None = None
    worker: dict[str, Any] | None = None  # the process that ran it: pid, XRT libraries mapped
    deadline_s: float | None = None       # what bounded it: the worker's deadline; None in process
    kernel_log: dict[str, Any] | None = None   # the driver's lines then (logs.driver_lines)
    recovery: dict[str, Any] | None = None     # after a hardware failure: did the device answer
    device_users: dict[str, Any] | None = None  # other processes on the NPU or /dev/kfd then
    trace_events: dict[str, Any] | None = None  # the driver's trace events then (tracefs)
    # a failing trial: how long its answer took and which timer that matches
    # (harness.report.timing)
    time_to_failure: dict[str, Any] | None = None
    # it began on a wedged device: its state and since when (the simulated stack says so;
    # on a machine the recovery check after a failure stops the run instead)
    wedged_device: dict[str, Any] | None = None
    # the simulated device's life after the trial, handed to the next (harness.sim
    # .device_life); only where the profile plays a wedge or a dead firmware
    device_life: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self.status = TrialStatus(self.status)

    @property
    def state(self) -> str:
        """The trial's outcome in one word: the first failing runlist's state, `set-up
        failed` where it failed before any runlist answered, or its status; `wedged` for a
        trial that began on a wedged device."""
        if self.wedged_device:
            return WEDGED_STATE
        for outcome in self.runlists:
            if outcome.state not in (None, COMPLETED_STATE):
                return outcome.state
        if self.status is TrialStatus.FAILED:
            return SETUP_FAILED
        return COMPLETED_STATE if self.status is TrialStatus.COMPLETED else self.status.value

    @property
    def setup_failed(self) -> bool:
        """Failed before any runlist answered (a buffer, an xclbin or a context refused):
        the run could not start, which says nothing about a runlist."""
        return self.state == SETUP_FAILED

    def to_json(self) -> dict[str, Any]:
        # By hand, not dataclasses.asdict: its deep copy made a long report's save and
        # render spend most of their time copying (benchmarks/report_scale.py). The
        # result shares its lists and dicts with this object: read it, do not change it.
        out = {name: getattr(self, name) for name in TRIAL_FIELDS}
        out["status"] = self.status.value
        out["runlists"] = [r.to_json() for r in self.runlists]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrialResult:
        """A trial as a worker sends it or a report keeps it: a report's derived `state`
        (written for readers, recomputed here) and a v2 journal entry's `plan` are left."""
        fields = {key: value for key, value in data.items() if key not in DERIVED_KEYS}
        fields["runlists"] = [RunlistOutcome(**r) for r in fields.get("runlists") or []]
        return cls(**fields)

    def brief(self) -> TrialResult:
        """This trial as summaries and verdicts read it, in a few hundred bytes whatever its
        depth: its status, its outcome in one word (the runlist that failed first). The
        rest is in the report file, which is where a report's readers take trials from. A
        trial with nothing more than that is itself."""
        failing = next((r for r in self.runlists if r.state not in (None, COMPLETED_STATE)),
                       None)
        kept = [] if failing is None else [failing]
        if len(self.runlists) == len(kept) and all(
                getattr(self, name) is None for name in HEAVY_FIELDS):
            return self
        values = {name: getattr(self, name) for name in BRIEF_FIELDS}
        return BriefTrial(**values, runlists=kept, runlists_in_file=len(self.runlists))


@dataclass
class BriefTrial(TrialResult):
    """A trial held in brief (`TrialResult.brief`): never written, never shown whole."""

    runlists_in_file: int = 0

    def brief(self) -> TrialResult:
        return self


_SPEC_FIELDS = tuple(f.name for f in fields(TrialSpec))
_COMMAND_FIELDS = tuple(f.name for f in fields(CommandSpec))
_BUFFER_FIELDS = tuple(f.name for f in fields(BufferSpec))
# what a report writes beside a trial's fields: its state in one word, and (v2) its plan
DERIVED_KEYS = frozenset({"state", "plan"})
_OUTCOME_FIELDS = tuple(f.name for f in fields(RunlistOutcome))
TRIAL_FIELDS = tuple(f.name for f in fields(TrialResult) if f.name != "runlists")
# what a brief trial keeps: the short fields (not the kernel log, worker, recovery, users)
BRIEF_FIELDS = ("index", "status", "wall_ms", "seed", "error", "started", "deadline_s",
                "time_to_failure", "wedged_device")
HEAVY_FIELDS = tuple(name for name in TRIAL_FIELDS if name not in BRIEF_FIELDS)


def chain_split(runs: int, submit_size: int) -> list[int]:
    """The chains XRT makes of a runlist of `runs` runs: ``submit_size`` each, the rest last."""
    full, rest = divmod(runs, submit_size)
    return [submit_size] * full + ([rest] if rest else [])


def count_states(trials: Iterable[TrialResult]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for trial in trials:
        counts[trial.state] = counts.get(trial.state, 0) + 1
    return counts


def counts_text(counts: Mapping[str, int]) -> str:
    """``TIMEOUT 3/3`` or ``COMPLETED 2/3, TIMEOUT 1/3``, most frequent first; ``untested``."""
    total = sum(counts.values())
    parts = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{state} {n}/{total}" for state, n in parts) if total else "untested"
