"""The observations the diagnosis reads, in one vocabulary that the report reader
(`observed`) and every artefact parser (`artefacts`) fill, and that the judges read.

- `Observed`: one file of evidence, a report or a plain artefact: where its facts come
  from (a machine, the SIMULATED or EMULATED stack), its timers, and what it showed:
- `Arm`: a plan and how its trials ended (a report's plans; an outcomes table's rows);
- `Sign`: a single observation with a meaning of its own (`SIGNS`): the driver's timeout
  lines, a firmware refused, a buffer the shim would not allocate, an ioctl that failed,
  another process holding the device; each cites its file and line or field;
- `StackFacts`: the stack it ran on (kernel, driver flavour and version, firmware, XRT,
  FastFlowLM, model), each fact with where it was read, and what tells its machine apart.

Every text an artefact contributes reaches the output through `quote`.
"""

from __future__ import annotations

import statistics
from array import array
from collections import Counter
from collections.abc import MutableSequence
from dataclasses import dataclass, field
from typing import Any

from harness.formats.printable import escape_controls
from harness.logs.error_lines import plain
from harness.model.drivers import DRM, FLAVOURS
from harness.report.header import Timers

HARDWARE = "hardware"          # a machine's source; a model's is its `source_tag`
NOOP, WORK = "noop", "work"
UNKNOWN_WORK = "unknown"       # an outcomes row that does not say what its runs carried
SUBMIT_SIZE = 24                # XRT's runlist chain (STACK.md 2), unless the profile says
QUOTE_LIMIT = 200


def flavour_of(*, dkms: bool, tree: str = DRM) -> str | None:
    """The flavour row built in or out of the kernel (`dkms`) whose lines look like `tree`
    (harness.model.drivers: the table names flavours, nothing else does)."""
    found = [row.name for row in FLAVOURS.values() if row.dkms == dkms and
             (not dkms or row.log_tree == tree)]
    return found[0] if len(found) == 1 else None


def is_flavour(name: str | None, *, dkms: bool, tree: str = DRM) -> bool:
    row = FLAVOURS.get(name or "")
    return row is not None and row.dkms == dkms and (not dkms or row.log_tree == tree)


def quote(text: str, limit: int = QUOTE_LIMIT) -> str:
    """An artefact's text as the diagnosis shows it: colour codes removed, control
    characters escaped, surrounding space dropped, cut at `limit` characters."""
    shown = escape_controls(plain(str(text))).strip()
    return shown if len(shown) <= limit else shown[:limit - 3] + "..."


@dataclass(frozen=True)
class Cite:
    """Where a fact was read: a file and a field in it (a report's) or a line of it (an
    artefact's, 1-based), with what it held."""

    file: str
    field: str
    value: str
    line: int | None = None

    def __str__(self) -> str:
        if self.line is not None:
            return f"{self.file}:{self.line}: {self.value}"
        return f"{self.file}: {self.field} = {self.value}"


@dataclass(frozen=True)
class SignKind:
    """What a sign means, and whether it is a failure (something failed) or a condition
    of the stack (a limit, another holder, a setting)."""

    meaning: str
    failure: bool = True


SIGNS: dict[str, SignKind] = {
    # what failed, as XRT, the shim, the application or the driver said it
    "runlist-failed": SignKind("XRT failed a runlist or a run, naming its state or not"),
    "unexpected-state": SignKind("XRT found a command still below COMPLETED after its wait "
                                 "(qds_device::wait() unexpected command state)"),
    "ioctl-failed": SignKind("an amdxdna ioctl the XDNA shim issued failed, with its errno"),
    "shim-error": SignKind("the XDNA shim refused an operation, with its errno"),
    "exception": SignKind("the application stopped on an error that carries no XRT text"),
    "xrt-error": SignKind("XRT reported an error in a message of its own ([tag] ERROR: ...)"),
    "device-answered": SignKind("the device answered after the failure (the check after the "
                                "run, or a later trial: a run on a fresh context completed)",
                                False),
    "app-crash": SignKind("the application crashed or was killed (a signal, a core dump)"),
    "driver-timeout": SignKind("the driver's timeout lines: TDR timeout, no progress, the "
                               "firmware's timeout capture, a context dump"),
    "firmware-recovery": SignKind("the driver power-cycled or reset the NPU after its "
                                  "firmware stopped answering"),
    "aie-error": SignKind("the firmware reported an AIE error (tile, module, event)"),
    "mailbox-error": SignKind("the firmware refused a management command (its status) or "
                              "did not answer it in time"),
    "restart-failed": SignKind("the driver could not bring a context back after a hang (its "
                               "restart's create, map or configure failed; a legacy context "
                               "dead): the device stays wedged, later runs say nothing of "
                               "the runlist"),
    "context-dead": SignKind("a submit refused -EIO: the legacy driver could not connect the "
                             "context to the firmware (at its first job, or again after a "
                             "hang) and refuses every submit on it"),
    "device-wedged": SignKind("the device stayed wedged: trials began on it, or the "
                              "recovery check after a failed trial found it so"),
    "validate-failed": SignKind("an xrt-smi validate test failed"),
    "runlist-test-failed": SignKind("xrt-smi validate's deep-runlist test "
                                    "(runlist-latency/-throughput, cmd-chain-*) failed"),
    "runlist-test-passed": SignKind("xrt-smi validate's deep-runlist test passed", False),
    "validate-passed": SignKind("an xrt-smi validate test other than the deep runlist "
                                "passed", False),
    # the stack
    "firmware-refused": SignKind("the driver refused the firmware's mailbox protocol"),
    "firmware-missing": SignKind("the driver could not load a firmware file"),
    "firmware-boot-failed": SignKind("the firmware did not come up (PSP, mailbox, alive)"),
    "firmware-too-old": SignKind("FastFlowLM's check refused the firmware version"),
    "iommu-page-fault": SignKind("the IOMMU logged an IO_PAGE_FAULT"),
    "sva-failed": SignKind("binding the process's address space to the NPU failed (SVA, "
                           "PASID, IOMMU group)"),
    "iommu-mode": SignKind("the kernel command line sets the IOMMU's mode", False),
    "smu-failed": SignKind("the SMU refused or timed out a power or clock command"),
    "suspend-resume-failed": SignKind("suspending or resuming the NPU or its firmware "
                                      "failed"),
    "system-suspend": SignKind("the system suspended and resumed during the log", False),
    "no-device": SignKind("no NPU device was found (no node, XRT sees no device)"),
    "permission-denied": SignKind("the NPU's device node could not be opened: permission"),
    "ioctl-not-permitted": SignKind("an ioctl the driver gives root only was refused to this "
                                    "user (the device node itself was open)"),
    "hypervisor": SignKind("the driver refuses to run under a hypervisor"),
    "driver-probe-failed": SignKind("the driver did not bind to the NPU (probe failed)"),
    "plugin-missing": SignKind("XRT could not load its XDNA driver plug-in"),
    "buffer-alloc-failed": SignKind("a buffer could not be allocated (memory, the device "
                                    "heap)"),
    "buffer-refused": SignKind("the XDNA shim refused a buffer of a kind or flags it does "
                               "not make (the program's request, not memory)"),
    "device-heap-refused": SignKind("the driver's device heap, which cacheable buffers are "
                                 "carved from, could not hold a buffer (the heap's size, "
                                 "not host memory or the memlock limit)"),
    "host-map-failed": SignKind("the driver could not pin or map host memory for the NPU"),
    "memlock-low": SignKind("the memlock limit is below what the engine needs", False),
    "memlock-refused": SignKind("the kernel refused a locked mapping (EAGAIN): past the "
                                "process's memlock limit"),
    "unsupported-path": SignKind("the driver refused a request its build does not support "
                                 "on this platform (the device heap on its CMA path)"),
    "oom": SignKind("the kernel's out-of-memory killer ended a process"),
    "context-unavailable": SignKind("a hardware context was refused: none left to give"),
    "context-refused": SignKind("the driver refused to create a hardware context, with an "
                                "errno that does not say whether none was left or the request "
                                "was one it does not take (-EINVAL)"),
    "other-holders": SignKind("other processes hold the NPU or the GPU's compute node",
                              False),
    "no-other-holders": SignKind("the probe saw no other process holding the NPU", False),
    "server-unreachable": SignKind("a client could not reach its server, or the server "
                                   "dropped the connection"),
    "server-stopped": SignKind("FastFlowLM left its serve loop and stopped its server",
                               False),
    "gpu-fault": SignKind("the GPU's driver reported a hang or reset beside the NPU run",
                          False),
    "wrong-columns": SignKind("a partition did not fit the device's columns"),
    "xclbin-mismatch": SignKind("the shim found no kernel or PDI it needs in the xclbin"),
}


@dataclass(frozen=True)
class Sign:
    """One observation of a kind in SIGNS, where it was read, and its facts (a state, an
    errno, a count...)."""

    kind: str
    cite: Cite
    facts: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def failure(self) -> bool:
        return SIGNS[self.kind].failure


@dataclass(frozen=True)
class Fact:
    """One fact of a stack (a version, a flavour) and where it was read."""

    value: str
    cite: Cite


FACTORS = ("kernel", "driver", "firmware", "xrt", "flm", "model")
FACTOR_WORDS = {"kernel": "kernel", "driver": "driver", "firmware": "firmware",
                "xrt": "XRT", "flm": "FastFlowLM", "model": "model"}


@dataclass
class StackFacts:
    """The stack one file shows: each factor (FACTORS: the kernel release, the driver's
    flavour and version, the NPU firmware, XRT, FastFlowLM, the model), the NPU, what
    tells its machine apart from others (`identity`: never shown, only compared) and a
    label a table gave it."""

    facts: dict[str, Fact] = field(default_factory=dict)
    npu: Fact | None = None
    flavour: str | None = None       # a driver flavour row's name, where the file tells it
    module: str | None = None        # the driver module's name its lines or probe show
    identity: str | None = None
    label: str | None = None

    def set(self, factor: str, value: Any, cite: Cite) -> None:
        """Keep the first value a file shows for a factor (later lines do not replace it)."""
        text = str(value).strip() if value is not None else ""
        if text and factor not in self.facts:
            self.facts[factor] = Fact(text, cite)

    def value(self, factor: str) -> str | None:
        fact = self.facts.get(factor)
        return fact.value if fact else None


@dataclass
class Arm:
    """One plan of one report (or one outcomes row or group of rows), as observed."""

    file: str
    position: int
    name: str
    label: str
    workload: str                  # NOOP, WORK or UNKNOWN_WORK
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
    # completed runlists, per run: 8 bytes each (a sweep's report holds millions)
    run_ms: MutableSequence[float] = field(default_factory=lambda: array("d"))
    setup_errors: list[str] = field(default_factory=list)
    events: Counter[str] = field(default_factory=Counter)  # kernel-log events, failed trials
    health: int = 0                # failing runlists with the firmware's health data
    # trials that began on a wedged device: not evidence of the plan, so counted apart
    # (neither answered nor set-up failures), with the device's state as the first said it
    wedged: int = 0
    wedged_state: str | None = None
    changed: dict[str, Any] | None = None   # the machine changed for it (investigate)
    # the driver's timer these trials ran under, where it differs by plan (an outcomes
    # table's timer column; None: the file's), and whether it was only "longer than" it
    timers: Timers | None = None
    timer_s: float | None = None
    timer_longer: bool = False
    machine: str | None = None     # the machine an outcomes row names
    model: str | None = None       # the model an outcomes row names
    line: int | None = None        # the outcomes row's line (artefacts)

    @property
    def where(self) -> str:
        return f"plans[{self.position}] ({self.label})"

    def cite(self, what: str, value: Any) -> Cite:
        if self.line is not None:
            return Cite(self.file, what, f"{self.label}: {value}", self.line)
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
    """One file of evidence: a report, or a plain artefact (`kind` "artefact", what it
    was read as in `read_as`)."""

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
    # trials that ran on a wedged device, by plan label (kept here: a plan that has only
    # those answered nothing, and is left out of `arms`), and the device's state
    wedged: dict[str, int] = field(default_factory=dict)
    wedged_state: str | None = None
    finished: bool = True          # the run ended on its own (not Ctrl-C, not a kill)
    resume: str | None = None      # the command that goes on with it, where it did not
    kind: str = "report"
    read_as: list[str] = field(default_factory=list)
    signs: list[Sign] = field(default_factory=list)
    stack: StackFacts = field(default_factory=StackFacts)
    contexts: int | None = None    # the hardware contexts the run asks (one per xclbin)
    capture: str | None = None     # an XRT capture of the engine beside it (its folder)
    # the texts a known defect's symptoms are looked for in: (field, line, text)
    lines: list[tuple[str, int | None, str]] = field(default_factory=list)

    @property
    def answered(self) -> int:
        return sum(a.answered for a in self.arms)

    @property
    def failures(self) -> int:
        return sum(a.failed + a.no_answer + a.setup_failed for a in self.arms) + \
            sum(1 for r in self.server_requests if r.get("outcome") != "success") + \
            sum(1 for s in self.signs if s.failure)

    def cite(self, what: str, value: Any) -> Cite:
        return Cite(self.file, what, str(value))

    def sign(self, kind: str, cite: Cite, **facts: Any) -> None:
        self.signs.append(Sign(kind, cite, facts))


def artefact_observed(file: str, timers: Timers | None = None) -> Observed:
    """An empty observation of a plain artefact: a machine's output (HARDWARE), unless its
    lines say the simulated stack printed them (the parser then sets the source)."""
    return Observed(file=file, command="artefact", source=HARDWARE, profile=None,
                    by_construction=[], documented=True, timers=timers or Timers(),
                    case="CASE", case_kind="artefact", layers=None, kind="artefact")
