"""The simulated amdxdna driver and NPU firmware: a discrete-event model.

Each rule below is a fact of STACK.md 4 and `harness.model.drivers` (driver) or a labelled
hypothesis of the profile (`harness.sim.profiles`):

- 4 jobs in flight per hardware context (`CTX_MAX_CMDS`); a further submission blocks
  inside the submit ioctl (`down_interruptible(&hwctx->priv->job_sem)`, the legacy
  tree's `down_killable`) until a job of that context ends, so the host call that made
  it (`runlist.execute()`, `run.start()`) returns only then (`Job.blocked_us`). A device
  holds at most `hwctx_limit` contexts (6 on npu1, 16 on npu4/5/6), the firmware
  refusing the next; the out-of-tree driver multiplexes virtual contexts on them and
  refuses the 33rd (the 7th on npu1) itself.
- A chain's sub-commands are packed into one 4 KiB buffer, one `cmd_chain_slot_npu`
  each: a 52-byte header plus the command's argument bytes (`aie2_cmdlist_fill_npu_cf`
  for ERT_START_CU, `_fill_npu_dpu` for ERT_START_NPU, which also refuses more than 104
  bytes of arguments, `_fill_npu_elf` for ERT_START_NPU_PREEMPT_ELF); the out-of-tree
  flavour also caps a chain at 64; all sub-commands share one opcode. A chain breaking
  these rules fails in `run_job`, after the submit succeeded, and its header stays NEW.
- The firmware runs each context's jobs in order, one sub-command after the other, each
  taking its kernel's latency; contexts whose partitions overlap time-share the array (a
  job holds its columns until it ends). A firmware error in a sub-command ends the chain
  ERROR with `error_index` at it.
- A hang is noticed as the driver build (flavour x kernel) does: a per-context job timer
  (mainline, 60 s; staging on kernels >= 6.17, tdr_timeout_ms, and then only when no job
  started or completed anywhere on the device for as long), or a periodic device check
  that fires after two silent periods (staging before 6.17, out-of-tree). What the jobs
  end as, their `error_index`, and what the driver writes over a failed command's payload
  (0xFF, version-1 health data) follow the build too; XRT never re-encodes a payload, so
  a run submitted again carries what the driver wrote. The firmware's app health report
  exists only when the profile's firmware has the feature (`harness.model.firmware`); it
  names run list entry 0 on a timeout (xdna-driver test/shim_test/io_test.cpp: "firmware
  leaves the runlist read index at 0") and leaves what the model cannot know unset
  ("not modelled").
- After a hang the context (or every context) is reset and later submissions run, unless
  the firmware stopped taking contexts (`wedge:N`, `firmware-dead:N`): then the restart
  fails as the tree's does (`harness.model.wedge`), and what outlives the trial is the
  device's life (`harness.sim.device_life`). The legacy tree's check skips its detection
  on a pass that swaps out an idle connected context. Cacheable buffers and each
  context's command buffers come from the client's heap, bounded as the tree bounds it
  (`harness.model.heap`). Every line the driver prints on the way is kept in
  `kernel_log`, as the flavour prints it, and its `xdna_job` trace events in `trace`.

Time is a virtual clock: a job's sub-command completion times are computed when it
starts, so a healthy job costs one event however long it is, and a 60 s timeout costs no
wall time. In realtime mode the same events are reached by sleeping. (One module on
purpose: the driver's rules and the firmware share the event queue and each job's
timeline.)
"""

from __future__ import annotations

import bisect
import errno
import heapq
import itertools
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from harness.model import drivers
from harness.model.drivers import (
    DEVICE_TWO_CHECKS,
    FLAVOURS,
    JOB_TIMER_DEVICE_STAMP,
    JOBS_IN_FLIGHT,
    PAYLOAD_FF,
    PAYLOAD_HEALTH_FF,
    Printed,
    driver_build,
)
from harness.model.ert import CmdState
from harness.model.firmware import REPORT_SIZE, REPORT_VERSION
from harness.model.heap import CONTEXT_BUFFERS, HeapSpace
from harness.model.wedge import (
    MGMT_ERT_NOAVAIL,
    MSG_OP_CREATE_CONTEXT,
    REFUSED,
)
from harness.sim.clock import RealClock, VirtualClock
from harness.sim.device_life import HANGS, REFUSES, SILENT, DeviceLife
from harness.sim.driver_log import KernelLog
from harness.sim.firmware_faults import ContextRefused, FirmwareAndHeap, ioctl_error
from harness.sim.profiles import Profile
from harness.sim.trace_log import TraceLog

CTX_MAX_CMDS = JOBS_IN_FLIGHT
# the device time the first read of an unfinished command lets pass (Stack.poll); each
# further read of it doubles it
POLL_STEP_US = 10.0
MAX_CHAIN_CMDBUF_SIZE = 4096
SLOT_HEADER_BYTES = 52
MAX_SLOT_ARG_BYTES = 104
STAGING_TDR_US = driver_build("staging").period_s * 1e6
MAINLINE_TIMEOUT_US = driver_build("mainline").period_s * 1e6
DEFAULT_LATENCY_US = 50.0
# Firmware dispatch cost of a sub-command that fails validation before running.
FAULT_US = 5.0
# the firmware's note on a run `reject-at:N` fails (the simulator's log)
REJECTED = "the firmware fails run {position} at once (hypothesis reject-at:{position})"

START_CU, CMD_CHAIN, START_NPU, START_NPU_PREEMPT, START_NPU_PREEMPT_ELF = 0, 19, 20, 21, 22
FF = 0xFFFFFFFF
# aie2_cmdlist_fill_slot: these need the firmware's AIE2_PREEMPT (npu4/5/6, never npu1)
PREEMPT_OPCODES = {START_NPU_PREEMPT: "ERT_START_NPU_PREEMPT",
                   START_NPU_PREEMPT_ELF: "ERT_START_NPU_PREEMPT_ELF"}
HEALTH_V1, NPU_GEN_AIE2 = 1, 0
# the legacy tree's aie2_ctx_runqueue.c: a connected context idle for this many checks is
# swapped out, and the check that finds it skips its hang detection
RQ_CTX_IDLE_COUNT = 3
MAILBOX_MAGIC, MAILBOX_IDS = 0x1D000000, 256
HWCTX_CREATE_FAILED = "DRM_IOCTL_AMDXDNA_CREATE_HWCTX IOCTL failed (err=-22): Invalid argument"
# the legacy tree's aie2_rq_add: -ENOENT, as XRT's shim reports it (shim_err, system_error)
CTX_LIMIT_FAILED = ("DRM_IOCTL_AMDXDNA_CREATE_HWCTX IOCTL failed (err=-2): No such file or "
                    "directory")
# aie2_ctx_cmd_health_data copies the context's health data, which kzalloc left zero (a
# version-0 report of zeros) until a capture filled it
ZERO_HEALTH = (0,) * 8

NEW, QUEUED, RUNNING = int(CmdState.NEW), int(CmdState.QUEUED), int(CmdState.RUNNING)
COMPLETED, ERROR = int(CmdState.COMPLETED), int(CmdState.ERROR)
ABORT, TIMEOUT = int(CmdState.ABORT), int(CmdState.TIMEOUT)
STATES = {drivers.TIMEOUT: TIMEOUT, drivers.ABORT: ABORT, drivers.NEW: NEW}
_WAIT, _SIGNALED = 0, 1          # enum aie2_tdr_status


class SimulatorStall(RuntimeError):
    """A wait that could only end on hardware by blocking forever (virtual clock only)."""


class Overwrite(NamedTuple):
    """What the driver wrote over a command's payload (`data[]` after the header): its
    first words, and the value of every later word (None: the rest is as XRT wrote it).
    A word None is one the firmware wrote whose value the model does not know: the
    simulated binding prints it "not modelled"; a device emulated from this model must
    write a number there, and say that it chose it."""

    words: tuple[int | None, ...]
    fill: int | None


@dataclass(frozen=True)
class Health:
    """The firmware's app health report for a context (`struct app_health_report`): the
    version and size its firmware writes, the context and run list entry the model
    knows, and None ("not modelled") for what it cannot know: the program counters, the
    TXN op, the fatal error's details."""

    context_id: int
    run_list_id: int
    txn_op_id: int | None = None
    dpu_pc: int | None = None
    ctx_pc: int | None = None
    fatal_type: int | None = None
    exception_type: int | None = None
    exception_pc: int | None = None
    app_module: int | None = None
    task_index: int | None = None
    major: int = REPORT_VERSION[0]
    minor: int = REPORT_VERSION[1]
    size: int = REPORT_SIZE

    @property
    def v1_words(self) -> tuple[int | None, ...]:
        """`struct aie2_ctx_health` / `amdxdna_ctx_health_data` as the driver copies it."""
        return (HEALTH_V1, NPU_GEN_AIE2, self.txn_op_id, self.ctx_pc, self.fatal_type,
                self.exception_type, self.exception_pc, self.app_module)


@dataclass(eq=False, slots=True)
class Job:
    """One submission to the driver: a single run or an ERT_CMD_CHAIN of runs."""

    seq: int
    ctx: Context
    latencies: list[float]        # per sub-command
    arg_bytes: list[int]          # per sub-command
    opcodes: list[int]            # per sub-command
    faults: dict[int, str]        # sub-commands the firmware rejects: the chain ends ERROR
    hangs: set[int]               # sub-commands that never complete
    chained: bool
    submitted_us: float
    state: int = NEW
    error_index: int = 0
    index_written: bool = False   # the driver wrote error_index into the chain's payload
    health: Health | None = None
    note: str = ""
    done: bool = False
    admitted_us: float | None = None
    start_us: float | None = None
    end_us: float | None = None
    finish: list[float] = field(default_factory=list)   # completion time of each command
    stuck_at: int | None = None                          # command that never completes
    gen: int = 0                                         # bumps cancel pending events
    # what the driver wrote over its sub-commands' payloads (index -> overwrite)
    overwrites: dict[int, Overwrite] = field(default_factory=dict)
    blocked_us: float = 0.0       # how long its submit ioctl waited for a free job slot
    ctx_seq: int = 0              # its number in its context (job->seq = ctx->submitted++)
    msg_id: int = 0               # the mailbox message that carried it to the firmware
    poll_step_us: float = 0.0     # device time the host's next read of its state lets pass
    sent: bool = False            # it reached the firmware (its fence signals when it ends)
    traced_run: bool = False      # run_job traced it (harness.sim.trace_log)

    @property
    def count(self) -> int:
        return len(self.latencies)

    def completed(self, now: float) -> int:
        if self.done:
            return len(self.finish)
        if self.start_us is None:
            return 0
        return bisect.bisect_right(self.finish, now)

    def visible_state(self, now: float) -> int:
        if self.done:
            return self.state
        return RUNNING if self.start_us is not None else QUEUED


@dataclass(eq=False)
class Context:
    """A hardware context on the simulated device: its columns, the jobs in flight, and
    its timer."""

    id: int
    label: str
    start_column: int
    width: int
    name: str = ""
    inflight: deque[Job] = field(default_factory=deque)
    running: Job | None = None
    wedged: bool = False
    last_signal: float = 0.0      # last job push or completion here (drm_sched's timer)
    rearmed_at: float = 0.0       # the timer restarted after a check found no hang
    timer_pending: bool = False
    alive: bool = True
    submitted: int = 0
    completed_jobs: int = 0
    # the legacy tree's per-context copy of the last report (aie2_dump_ctx), the entry it
    # names, and whether a command has carried it since (aie2_ctx_cmd_health_data)
    health_words: tuple[int | None, ...] = ZERO_HEALTH
    timeout_run_list_id: int = 0
    health_reported: bool = False
    # the legacy tree's run queue: a context is connected (has a partition and its own
    # mailbox channel) once it has work; new contexts start disconnected (aie2_rq_add),
    # a stop disconnects it. Messages sent on its channel since it was made.
    connected: bool = False
    messages: int = 0
    # XRT configured its CUs (an xclbin's context: the shim's hwctx_kmq sends
    # DRM_AMDXDNA_HWCTX_CONFIG_CU); the legacy tree's aie2_ctx_connect then sends
    # aie2_config_cu on each new channel before any job
    cu_configured: bool = False
    # the driver's restart failed on a firmware that no longer takes contexts: the in-tree
    # and staging trees keep it without a firmware channel, the legacy tree marks it
    # CTX_STATE_DEAD (harness.model.wedge)
    dead: bool = False
    idle_checks: int = 0          # the legacy tree's idle_cnt (aie2_rq_handle_idle_ctx)
    cmd_buffers: tuple[int, ...] = ()   # its four command buffers' heap offsets

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.start_column


class Stack(FirmwareAndHeap):
    """The driver, firmware and array of one simulated NPU."""

    def __init__(self, profile: Profile, latencies: dict[str, float] | None = None,
                 clock: RealClock | VirtualClock | None = None,
                 life: DeviceLife | None = None) -> None:
        self.profile = profile
        # what outlives a trial: the driver's timeouts so far, a wedged firmware
        self.life = life if life is not None else DeviceLife()
        self.device = profile.device_model
        # the flavour's row and its build for the kernel: every rule below asks them, by
        # what they say, never by the flavour's name
        self.flavour = FLAVOURS[profile.flavour]
        self.build = driver_build(profile.flavour, profile.kernel)
        self.period_us = self.build.period_s * 1e6
        # the build's and profile's rules as the hot path asks them
        self._push_signals = self.build.signals == "push+completion"
        self._device_checks = self.build.detection == DEVICE_TWO_CHECKS
        self._health_reported = self.build.asks_health and profile.app_health
        # device time: the host's own time between its calls costs none (harness.sim.clock)
        self.clock = clock or (RealClock(host_paced=True) if profile.realtime
                               else VirtualClock())
        self._now = self.clock.now
        self.latencies = dict(latencies or {})
        self.rng = random.Random(profile.seed)
        self.log: deque[str] = deque(maxlen=500)
        self.kernel_log = KernelLog(self.flavour, self._now)
        self.contexts: list[Context] = []
        self.completed_commands = 0
        self.jobs: deque[Job] = deque(maxlen=4096)   # recent submissions, for inspection
        self._events: list[tuple[float, int, Callable, object]] = []
        self._seq = itertools.count()
        self._ids = itertools.count(1)
        self.device_signal = 0.0          # last job push or completion on the device
        self.tdr_status = _WAIT           # the periodic check's flags (aie2_tdr.c)
        self.tdr_progress = _WAIT
        self.tdr_counter = 0
        self._tick_armed = False
        self._ticks_done = 0              # periodic checks processed, counted from t=0
        self.pid = 4242
        self.trace = TraceLog(self.flavour.trace, self._now, self.pid)
        self._run_first = self.flavour.trace.run_first
        self._heap: HeapSpace | None = None
        self.keeps_heap = True            # the emulated driver keeps its own memory
        self._firmware_hangs = self.life.firmware == HANGS
        # a silent firmware's management channel went with the first message it left
        # unanswered (aie2_send_mgmt_msg_wait destroys it on -ETIME)
        self._channel_gone = self.life.firmware == SILENT
        # a driver that refuses the firmware at probe leaves no device to open: what it
        # printed is in the kernel log from the start
        self.refused = profile.probe_refusal
        self._print(self.refused)

    # -- time ---------------------------------------------------------------

    @property
    def now(self) -> float:
        return self.clock.now()

    def _at(self, t_us: float, action: Callable[[Stack, Any], None], arg: object) -> None:
        # `action` is the class's function, called with this stack: a bound method here
        # would make the stack and its pending timer a cycle, and every finished trial's
        # stack (with its last 4,096 jobs) would wait for the cyclic collector
        heapq.heappush(self._events, (t_us, next(self._seq), action, arg))

    def next_event_us(self) -> float | None:
        """When the next event is due (the emulated device sleeps until then)."""
        return self._events[0][0] if self._events else None

    def run_until(self, done: Callable[[], bool], timeout_us: float | None = None) -> bool:
        """The host waits: process events until `done()` holds; False if `timeout_us`
        passes first. Device time runs only in a wait (`harness.sim.clock`)."""
        with self.clock.running():
            return self.run_due(done, timeout_us)

    def run_due(self, done: Callable[[], bool], timeout_us: float | None = None) -> bool:
        """`run_until` on a clock that some other waiter runs (the emulated device's, which
        runs while a program's request waits): events are processed as their time comes,
        and a held clock's time stands."""
        limit = None if timeout_us is None else self._now() + timeout_us
        events = self._events
        while not done():
            next_t = events[0][0] if events else None
            if limit is not None and (next_t is None or next_t > limit):
                self.clock.advance_to(limit)
                return done()
            if next_t is None:
                if isinstance(self.clock, RealClock):
                    self.clock.block_forever()
                raise SimulatorStall("nothing is left to happen on the simulated device, yet "
                                     "the wait has no timeout: on hardware it would block "
                                     "forever")
            t_us, _, action, arg = heapq.heappop(events)
            self.clock.advance_to(t_us)
            action(self, arg)
        return True

    def run_until_done(self, job: Job) -> None:
        """`run_until(lambda: job.done)` without a call per event: a runlist's wait."""
        events = self._events
        clock = self.clock
        with clock.running():
            while not job.done:
                if not events:
                    self.run_until(lambda: job.done)        # stalls or blocks, as it says
                    return
                t_us, _, action, arg = heapq.heappop(events)
                clock.advance_to(t_us)
                action(self, arg)

    def poll(self, job: Job) -> None:
        """The host read `job`'s state and found it unfinished (pyxrt `run.state()`). On
        amdxdna that read is a plain load of the mapped command buffer (xdna-driver
        856409ca src/shim/hwq.cpp `hwq::poll_command`, reached from XRT 2.26's
        `kernel_command::get_state` through `hw_queue::poll`): no driver call, while the
        device runs on. How fast a host spins is not the simulator's to know, so each read
        lets device time pass in a step that doubles from POLL_STEP_US: a read right after
        another call sees the device where it was (RUNNING), and a loop of reads reaches
        an event T away in about log2(T / POLL_STEP_US) reads; device time still stands
        still while the host submits."""
        if job.done:
            return
        step = job.poll_step_us = job.poll_step_us * 2 if job.poll_step_us else POLL_STEP_US
        with self.clock.running():
            self.run_due(lambda: job.done, step)

    def note(self, text: str) -> None:
        self.log.append(f"{self._now() / 1000:12.3f} ms  {text}")

    # -- contexts -----------------------------------------------------------

    def create_context(self, label: str, start_column: int, width: int) -> Context:
        if start_column + width > self.device.columns:
            raise RuntimeError(f"Failed to create hardware context: the partition needs "
                               f"columns {start_column}..{start_column + width - 1}, "
                               f"{self.device.name} has {self.device.columns}")
        # other processes' contexts count against the same device-wide limits
        alive = sum(c.alive for c in self.contexts) + self.profile.held_contexts
        if self.flavour.virtual_contexts:
            if alive >= self.device.ctx_limit:
                # aie2_rq_add: the legacy tree refuses the context itself, -ENOENT
                # aie2_rq_add refuses, aie2_ctx_init and the ioctl pass -ENOENT on; the
                # context had its name (and its id, given back) before
                name = f"{self.flavour.context_prefix}.{self.pid}.{next(self._ids)}"
                self.kernel_log.err("aie2_rq_add", f"Not allow more than "
                                                   f"{self.device.ctx_limit} context(s)")
                self.kernel_log.err("aie2_ctx_init", f"Add ctx {name} failed, ret -2")
                self.kernel_log.err("amdxdna_drm_create_hwctx_ioctl",
                                    "Init ctx failed, ret -2")
                self.note(f"context refused: {self.device.ctx_limit} virtual contexts is the "
                          f"{self.flavour.called} driver's limit on {self.device.name}"
                          f"{self._held_note()}")
                raise ContextRefused(CTX_LIMIT_FAILED, errno.ENOENT)
        elif alive >= self.device.hwctx_limit:
            # The firmware refuses the context (MGMT_ERT_NOAVAIL); the driver logs it on
            # its way out and the ioctl fails with -EINVAL, which XRT's shim reports.
            # AIE2_TEMPORAL_ONLY: npu4-class firmware from protocol 6.12 (npu4_regs.c), so
            # every protocol the driver takes there; never npu1 (npu1_regs.c)
            self.kernel_log.mgmt_failure(MSG_OP_CREATE_CONTEXT, MGMT_ERT_NOAVAIL,
                                         solver=self._through_solver())
            self.note(f"context refused: {self.device.hwctx_limit} hardware contexts is the "
                      f"limit of {self.device.name}{self._held_note()}")
            raise ContextRefused(HWCTX_CREATE_FAILED, errno.EINVAL)
        elif self.life.firmware in (REFUSES, SILENT):
            # a wedged firmware: refused as over the limit (PR #1585), or never answered
            ret = self._mgmt_ret(say_refusal=False)
            self.kernel_log.mgmt_failure(MSG_OP_CREATE_CONTEXT,
                                         MGMT_ERT_NOAVAIL if ret == REFUSED else None,
                                         solver=self._through_solver(), ret=ret)
            self.note(f"context refused: the device is {self.life.state_text()}")
            raise ContextRefused(ioctl_error("CREATE_HWCTX", ret), -ret)
        buffers = self._context_buffers()
        ctx = Context(next(self._ids), label, start_column, width)
        ctx.name = f"{self.flavour.context_prefix}.{self.pid}.{ctx.id}"
        ctx.cmd_buffers = buffers
        self.contexts.append(ctx)
        self.note(f"context {ctx.id} ({label}) created, {width} columns at {start_column}")
        return ctx

    def _through_solver(self) -> bool:
        """Whether a context goes through the resource solver (so a refusal logs its two
        lines). AIE2_TEMPORAL_ONLY: npu4-class firmware from protocol 6.12 (npu4_regs.c),
        so every protocol the driver takes there; never npu1 (npu1_regs.c)."""
        return not (self.device.npu4_class and self.build.temporal_skips_solver)

    def _held_note(self) -> str:
        held = self.profile.held_contexts
        return f", {held} of them held by other processes (held-contexts:{held})" if held else ""

    def destroy_context(self, ctx: Context) -> None:
        if not ctx.alive:
            return
        ctx.alive = False
        for job in list(ctx.inflight):
            self._settle(job, ABORT, note="context destroyed")
        for offset, size in zip(ctx.cmd_buffers, CONTEXT_BUFFERS, strict=False):
            self.free_device_buffer(offset, size)
        if ctx in self.contexts:
            self.contexts.remove(ctx)
        self._dispatch()

    # -- submission (the driver) ----------------------------------------------

    def submit(self, ctx: Context, latencies: list[float], arg_bytes: list[int],
               opcodes: list[int], faults: dict[int, str], hangs: set[int],
               chained: bool) -> Job:
        """The submit ioctl: a job for the firmware, returned once the driver took it. With
        CTX_MAX_CMDS jobs of the context in flight it first waits for one to end (the
        context's job semaphore), the simulated clock running meanwhile."""
        if not ctx.alive:
            raise RuntimeError("hardware context has been destroyed")
        if self.flavour.wedge.dead_submit_errno is not None and (
                ctx.dead or (not ctx.connected and self.life.firmware in (REFUSES, SILENT))):
            self._refuse_submit(ctx)
        job = Job(next(self._seq), ctx, latencies, arg_bytes, opcodes, faults, hangs,
                  chained, self._now())
        if len(ctx.inflight) >= CTX_MAX_CMDS:
            if not self.wait_for_slot(ctx):
                raise RuntimeError("hardware context has been destroyed")
            job.blocked_us = self._now() - job.submitted_us
        self.jobs.append(job)
        job.ctx_seq = ctx.submitted
        ctx.submitted += 1
        flaky = self.profile.flaky
        if flaky and self.rng.random() < flaky:
            job.hangs = hangs | {self.rng.randrange(len(latencies))}
        self._admit(job)
        self._dispatch()
        return job

    def slot_free(self, ctx: Context) -> bool:
        """Whether a submit on `ctx` would enter at once (fewer than CTX_MAX_CMDS jobs in
        flight), or block in the ioctl."""
        return len(ctx.inflight) < CTX_MAX_CMDS

    def wait_for_slot(self, ctx: Context, timeout_us: float | None = None) -> bool:
        """Where a 5th submit waits: `down_interruptible(&hwctx->priv->job_sem)` (staging,
        mainline; the legacy tree's `down_killable`), released when a job of the context
        ends, completed or failed by the driver's timeout. False if `timeout_us` passed
        first. Nothing but a job's end frees a slot: a hang holds the caller until the
        driver's timeout fires (SimulatorStall, or blocking in realtime, if nothing is
        left to happen)."""
        self.note(f"context {ctx.id}: {len(ctx.inflight)} jobs in flight, the submit waits "
                  "in the ioctl for a slot")
        return self.run_until(lambda: len(ctx.inflight) < CTX_MAX_CMDS or not ctx.alive,
                              timeout_us) and ctx.alive

    def _admit(self, job: Job) -> None:
        """`run_job`: the job goes to the firmware (or fails here, its header NEW)."""
        ctx = job.ctx
        job.admitted_us = now = self._now()
        ctx.inflight.append(job)
        # run_job traces its job (the in-tree tree after checking for a firmware channel)
        job.traced_run = self._run_first or not ctx.dead
        if ctx.dead:
            # run_job on a context the restart left without a firmware channel returns no
            # fence (aie2_sched_job_run, !mbox_chann): the job ends at once, the command as
            # XRT wrote it (NEW)
            job.note = "the context has no firmware channel (its restart failed)"
            self.note(f"context {ctx.id}: job {job.seq} ends at once: {job.note}")
            self._end(job, NEW)
            return
        # run_job fills the chain's slots (aie2_cmdlist_fill_slot), a single command's too
        # where the build sends it as a one-slot list (force_cmdlist)
        problem = self._chain_problem(job) if job.chained or self.build.single_cmdlist \
            else None
        if problem:
            job.note = problem
            what = "chain" if job.chained else "command"
            self.note(f"context {ctx.id}: {what} {job.seq} rejected in run_job: {problem}")
            self._end(job, NEW)
            return
        # sent on the context's mailbox channel: xa_alloc_cyclic over 256 ids, MAGIC_VAL
        # 0x1D000000 in the high byte (amdxdna_mailbox.c mailbox_acquire_msgid); a new
        # channel's first message is aie2_config_cu where the context has CUs
        if not ctx.connected:
            ctx.connected = True
            ctx.messages = 1 if ctx.cu_configured else 0
        job.msg_id = MAILBOX_MAGIC | (ctx.messages % MAILBOX_IDS)
        ctx.messages += 1
        job.sent = True
        ctx.last_signal = now                   # drm_sched re-arms its timer on a push
        if self._device_checks:
            if not self._tick_armed:
                self._arm_device_check()        # the checks that ran while idle, first
        elif not ctx.timer_pending:
            self._arm_context_timer(ctx)
        if self._push_signals:
            self.device_signal = now
            self.tdr_status = _SIGNALED
        cap = self.profile.inflight_cap
        if cap is not None and not ctx.wedged:
            queued = sum(j.count - j.completed(now) for j in ctx.inflight)
            if queued > cap:
                self._wedge(ctx, f"{queued} commands queued on context {ctx.id} "
                                 f"(inflight-cap {cap})")

    def _chain_problem(self, job: Job) -> str | None:
        count = job.count
        cap = self.flavour.chain_cap
        if cap is not None and count > cap:
            return f"{count} sub-commands, the {self.flavour.called} driver caps a chain at {cap}"
        opcodes = job.opcodes
        if opcodes.count(opcodes[0]) != count:
            return "sub-commands with different opcodes in one chain"
        if opcodes[0] in PREEMPT_OPCODES and not self.device.npu4_class:
            return f"{PREEMPT_OPCODES[opcodes[0]]} needs the AIE2_PREEMPT feature (-EOPNOTSUPP)"
        sizes = job.arg_bytes
        largest = sizes[0] if sizes.count(sizes[0]) == count else max(sizes)
        # aie2_cmdlist_fill_npu_dpu, _npu_preempt and _npu_elf cap an NPU slot's arguments
        npu = opcodes[0] in (START_NPU, START_NPU_PREEMPT, START_NPU_PREEMPT_ELF)
        capped = npu and largest > MAX_SLOT_ARG_BYTES
        # an ELF slot carries one argument word (the kernel op); the others their arguments
        elf_slot = opcodes[0] == START_NPU_PREEMPT_ELF
        slot = 4 if elf_slot else largest
        if not capped and (SLOT_HEADER_BYTES + slot) * count <= MAX_CHAIN_CMDBUF_SIZE:
            return None                # the common case, decided without a Python loop
        used = 0
        for index, size in enumerate(sizes):
            if capped and size > MAX_SLOT_ARG_BYTES:
                return (f"command {index} has {size} bytes of arguments, an NPU slot "
                        f"holds {MAX_SLOT_ARG_BYTES}")
            used += SLOT_HEADER_BYTES + (4 if elf_slot else size)
            if used > MAX_CHAIN_CMDBUF_SIZE:
                return (f"{count} sub-commands need more than the "
                        f"{MAX_CHAIN_CMDBUF_SIZE}-byte chain buffer (full at command {index})")
        return None

    def _wedge(self, ctx: Context, why: str) -> None:
        ctx.wedged = True
        self.note(f"firmware wedged: {why}")
        job = ctx.running
        if job is not None and job.stuck_at is None:
            done = job.completed(self._now())
            del job.finish[done:]
            job.stuck_at = done
            job.gen += 1

    # -- the firmware and the array --------------------------------------------

    def _dispatch(self) -> None:
        contexts = self.contexts
        if len(contexts) == 1:           # nothing to share the array with
            ctx = contexts[0]
            if ctx.running is None and ctx.inflight:
                self._start(ctx.inflight[0])
            return
        # who waits is asked first: after most completions nobody does, and then the
        # columns in use need not be counted
        waiting = [c for c in contexts if c.running is None and c.inflight]
        if not waiting:
            return
        busy = 0
        for ctx in contexts:
            if ctx.running is not None:
                busy |= ctx.mask
        if len(waiting) > 1:
            waiting.sort(key=lambda c: c.inflight[0].seq)
        for ctx in waiting:
            mask = ctx.mask
            if mask & busy:
                continue
            busy |= mask
            self._start(ctx.inflight[0])

    def _start(self, job: Job) -> None:
        ctx = job.ctx
        ctx.running = job
        t = job.start_us = self._now()
        if ctx.wedged or self._firmware_hangs:
            job.stuck_at = 0
            return
        finish = job.finish
        if not job.faults and not job.hangs:
            finish.extend(itertools.accumulate(job.latencies, initial=t))
            del finish[0]
            self._at(finish[-1] if finish else t, Stack._complete, (job, job.gen))
            return
        faults, hangs = job.faults, job.hangs
        for index, latency in enumerate(job.latencies):
            if index in hangs:
                job.stuck_at = index
                return
            if index in faults:
                job.note = faults[index]
                self._at(t + FAULT_US, Stack._fault, (job, job.gen, index))
                return
            t += latency
            finish.append(t)
        self._at(t, Stack._complete, (job, job.gen))

    def _complete(self, arg: tuple[Job, int]) -> None:
        job, gen = arg
        if gen == job.gen and not job.done:
            self._settle(job, COMPLETED)
            self._refill(job.ctx)

    def _fault(self, arg: tuple[Job, int, int]) -> None:
        job, gen, index = arg
        if gen == job.gen and not job.done:
            self.note(f"context {job.ctx.id}: firmware error in command {index} of job "
                      f"{job.seq}: {job.note}")
            self._fail(job, ERROR, index)
            self._refill(job.ctx)

    def _end(self, job: Job, state: int) -> None:
        self._settle(job, state)
        self._refill(job.ctx)

    def _settle(self, job: Job, state: int, *, error_index: int = 0,
                health: Health | None = None, note: str = "") -> None:
        """Give a job its final state and free its slot, without starting anything."""
        ctx = job.ctx
        now = self._now()
        if job.start_us is not None and state != COMPLETED:
            del job.finish[job.completed(now):]
        job.state = state
        job.error_index = error_index
        # the firmware's error response carries the failing index; a timeout or an abort
        # writes it only where the build does (amdxdna_cmd_set_error, 89ff45359abb)
        job.index_written = state == ERROR or (
            state in (TIMEOUT, ABORT) and self.build.writes_timeout_index)
        job.health = health
        if note:
            job.note = note
        job.done = True
        job.end_us = now
        job.gen += 1
        self.completed_commands += len(job.finish)
        self.trace.ended(ctx.name, ctx.id, job.ctx_seq,
                         job.admitted_us if job.traced_run else None, job.sent)
        try:
            ctx.inflight.remove(job)
        except ValueError:
            pass
        if ctx.running is job:
            ctx.running = None
        if state == COMPLETED:
            ctx.completed_jobs += 1
            ctx.last_signal = now               # drm_sched re-arms its timer on completion
            self.device_signal = now
            self.tdr_status = _SIGNALED

    def _fail(self, job: Job, state: int, index: int = 0, health: Health | None = None
              ) -> None:
        """End a job in failure as the driver build does: its state, its error_index, and
        what it writes over the payload (`amdxdna_cmd_set_error`; the legacy tree writes
        only on a timeout, in `_dump_and_stop`)."""
        payload = self.build.payload
        if payload == PAYLOAD_FF or (payload == PAYLOAD_HEALTH_FF and health is None):
            job.overwrites[0] = Overwrite((), FF)
        elif payload == PAYLOAD_HEALTH_FF and health is not None:
            job.overwrites[0] = Overwrite(health.v1_words, FF)
        if job.count and not job.chained:
            index = 0
        self._settle(job, state, error_index=index if index < max(job.count, 1) else 0,
                     health=health)

    def _refill(self, ctx: Context) -> None:
        """A job ended: run what can (a submit blocked on the slot enters when its wait
        next looks)."""
        self._dispatch()

    # -- hang detection (the driver build's rule) -----------------------------------

    def _arm_device_check(self) -> None:
        """The periodic device check, armed with the first job after an idle spell."""
        self._tick_armed = True
        self._catch_up_idle_ticks()
        self._at((self._ticks_done + 1) * self.period_us, Stack._device_tick, None)

    def _arm_context_timer(self, ctx: Context) -> None:
        """drm_sched's per-context job timer, armed when a job is pushed to an idle one."""
        ctx.timer_pending = True
        self._at(max(ctx.last_signal, ctx.rearmed_at) + self.period_us, Stack._ctx_timer, ctx)

    def _ctx_timer(self, ctx: Context) -> None:
        """drm_sched's timeout work for one context."""
        ctx.timer_pending = False
        if not ctx.alive or not ctx.inflight:
            return
        now = self._now()
        deadline = max(ctx.last_signal, ctx.rearmed_at) + self.period_us
        if now < deadline:
            ctx.timer_pending = True
            self._at(deadline, Stack._ctx_timer, ctx)
            return
        if self.build.detection == JOB_TIMER_DEVICE_STAMP and \
                now < self.device_signal + self.period_us:
            # aie2_tdr_detect: something started or completed on the device lately, so
            # DRM_GPU_SCHED_STAT_NO_HANG, and drm_sched restarts the timer
            ctx.rearmed_at = now
            ctx.timer_pending = True
            self._at(now + self.period_us, Stack._ctx_timer, ctx)
            return
        self._reset_context(ctx)

    def _idle_tick(self) -> None:
        tdr = self.tdr_status
        if tdr != _WAIT:
            self.tdr_status = _WAIT
        elif self.build.idle_check_passes:
            tdr = _SIGNALED          # e.g. aie2_legacy_tdr_detect: no false positive when idle
        self.tdr_progress = tdr

    def _catch_up_idle_ticks(self) -> None:
        """The periodic check kept running while nothing was pending: apply those checks
        (two are enough to reach a fixed point; with idle contexts to swap out, three more,
        each connected context's idle count reaching RQ_CTX_IDLE_COUNT within three)."""
        due = int(self._now() // self.period_us)
        most = 5 if self.build.idle_context_skips else 2
        for _ in range(min(due - self._ticks_done, most)):
            if not self._idle_context_found():
                self._idle_tick()
        self._ticks_done = max(self._ticks_done, due)

    def _idle_context_found(self) -> bool:
        """The legacy tree's check first swaps out idle contexts (aie2_tdr_detect ->
        aie2_rq_handle_idle_ctx, part_handle_idle_ctx): a connected context with no job in
        flight counts one more idle check, one with work starts again from 0, and one that
        reaches RQ_CTX_IDLE_COUNT (3) is disconnected. A check that disconnects one declares
        no hang this time, whatever else is stuck (nor updates its progress flags), so with
        several contexts a hang can land a check late."""
        if not self.build.idle_context_skips:
            return False
        found = False
        for ctx in self.contexts:
            if not ctx.connected:
                continue
            if ctx.inflight:
                ctx.idle_checks = 0
                continue
            ctx.idle_checks += 1
            if ctx.idle_checks == RQ_CTX_IDLE_COUNT:
                ctx.idle_checks = 0
                ctx.connected, ctx.messages = False, 0     # yielded: its channel goes
                found = True
        if found:
            self.note("device check: an idle context was swapped out, so this check declares "
                      "no hang (aie2_rq_handle_idle_ctx)")
        return found

    def _device_tick(self, _: object) -> None:
        """The periodic device-wide check (aie2_tdr.c / aie2_rq_is_all_context_stuck)."""
        self._ticks_done += 1
        pending = any(c.inflight for c in self.contexts)
        tdr = self.tdr_status
        if self._idle_context_found():
            pass
        elif pending and tdr == _WAIT and self.tdr_progress == _WAIT:
            self._reset_device()
        elif pending:
            if tdr != _WAIT:
                self.tdr_status = _WAIT
            self.tdr_progress = tdr
        else:
            self._idle_tick()
        if any(c.inflight for c in self.contexts):
            self._at((self._ticks_done + 1) * self.period_us, Stack._device_tick, None)
        else:
            self._tick_armed = False

    def _health(self, ctx: Context) -> Health | None:
        """The firmware's app health report for `ctx`, when the driver asks for one and
        the firmware has the feature (`harness.model.firmware`); None otherwise. On a
        timeout the firmware leaves the run list read index at 0, on every device
        (xdna-driver test/shim_test/io_test.cpp)."""
        if not self._health_reported:
            return None
        if self.life.firmware == SILENT:
            self._health_unanswered()
            return None
        return Health(context_id=ctx.id, run_list_id=0)

    def _reset_context(self, ctx: Context) -> None:
        """drm_sched timed out `ctx`'s oldest job: stop the context, fail its jobs as the
        build does, restart it (mainline, staging on kernels >= 6.17)."""
        build = self.build
        hung = ctx.running or ctx.inflight[0]
        rest = [j for j in ctx.inflight if j is not hung]
        self._query_unanswered = False
        self.trace.timedout(ctx.name, ctx.id, hung.ctx_seq)
        self._print(build.timeout_lines)
        self._count_timeout()
        health = self._health(ctx)
        self.note(f"context {ctx.id}: {build.name} timeout, job {hung.seq} "
                  f"{build.hung_state}, {len(rest)} more {build.others_state}, context reset")
        self._fail_hung(hung, health)
        for job in rest:
            self._fail(job, self._cancelled_state(job))
        self._restart(ctx)

    def _cancelled_state(self, job: Job) -> int:
        build = self.build
        return STATES[build.others_state if job.chained else build.single_cancelled]

    def _fail_hung(self, job: Job, health: Health | None) -> None:
        build = self.build
        if health is not None:
            self.kernel_log.capture_block("aie2_set_cmd_timeout", health)
        state = STATES[build.hung_state]
        if build.timeout_needs_report and health is None:
            state = ABORT                # stopped without a report: cancelled, as the rest
        if state == ABORT and not job.chained:
            state = STATES[build.single_cancelled]
        index = health.run_list_id if health is not None and build.timeout_index \
            == "run_list_id" else 0
        self._fail(job, state, index, health if state == TIMEOUT else None)

    def _reset_device(self) -> None:
        """The periodic check found the device silent twice: every context is stopped,
        its jobs failed as the build does, and restarted (staging before 6.17, oot)."""
        build = self.build
        self.tdr_counter += 1
        self._count_timeout()
        pending = [j for c in self.contexts for j in c.inflight]
        self.note(f"device check: two silent periods, {len(pending)} jobs in flight, every "
                  f"context reset ({build.name})")
        self._print(build.check_lines)
        if build.dumps_contexts:
            # aie2_rq_dump_all and aie2_rq_stop_all walk each partition's conn_list only
            for ctx in [c for c in self.contexts if c.connected]:
                self._dump_and_stop(ctx)
            return
        for ctx in list(self.contexts):
            if ctx.inflight:
                first, *rest = list(ctx.inflight)
                self._fail_hung(first, self._health(ctx))
                for job in rest:
                    self._fail(job, self._cancelled_state(job))
            self._restart(ctx)

    def log_lines(self, lines: tuple[Printed, ...]) -> None:
        """Lines another part of the driver model printed (the emulated driver's buffers)."""
        self._print(lines)

    def _print(self, lines: tuple[Printed, ...]) -> None:
        """The build's own lines for what just happened, as its tree prints them."""
        log = self.kernel_log
        for line in lines:
            log.line(line, count=self.tdr_counter, timeout=int(self.build.period_s))

    def _dump_and_stop(self, ctx: Context) -> None:
        """aie2_dump_ctx then the stop. The dump asks for the firmware's report: with one,
        the capture block is printed and the context keeps it, with the entry it names
        (`health_data`, `timeout_run_list_id`), as not yet reported. Then every chain in
        flight ends TIMEOUT at that entry; the first command to carry the context's health
        data (`aie2_ctx_cmd_health_data`) gets it copied over that sub-command, and the
        later ones have it marked ABORT. Without a report the context keeps what it had:
        zeros (a version-0 report) until a capture filled it, and once carried, nothing
        more."""
        log = self.kernel_log
        log.err("aie2_dump_ctx", f"Dumping ctx {ctx.name}, hwctx {ctx.id}, "
                                 f"sub={ctx.submitted}, comp={ctx.completed_jobs}")
        health = self._health(ctx)       # asked after that line (aie2_ctx.c aie2_dump_ctx)
        if health is not None:
            log.capture_block("aie2_dump_ctx", health)
            ctx.health_words = health.v1_words
            ctx.timeout_run_list_id = health.run_list_id
            ctx.health_reported = False
        # pending[] is indexed by get_job_idx(seq), seq % CTX_MAX_CMDS, and walked 0..3
        for job in sorted(ctx.inflight, key=lambda j: j.ctx_seq % CTX_MAX_CMDS):
            log.err("aie2_dump_ctx", f"JOB[{job.ctx_seq % CTX_MAX_CMDS}]:")
            log.err("aie2_dump_ctx", f"\tseq: {job.ctx_seq}")
            log.err("aie2_dump_ctx", f"\top: 0x{CMD_CHAIN if job.chained else job.opcodes[0]:x}")
            log.err("aie2_dump_ctx", f"\tmsg: 0x{job.msg_id:x}")
            log.err("aie2_dump_ctx", "\tfence: unsignaled")
            log.err("aie2_dump_ctx", "\tout_fence: unsignaled")
        for job in list(ctx.inflight):
            index = ctx.timeout_run_list_id if job.chained else 0
            if job.chained and index >= job.count:
                log.warn("aie2_sched_cmdlist_resp_handler",
                         f"Invalid run_list_id {index}, command count {job.count}")
                index = 0
            carries = not ctx.health_reported
            if carries:
                job.overwrites[index] = Overwrite(ctx.health_words, None)
                ctx.health_reported = True
            self._settle(job, TIMEOUT if job.chained or carries else ABORT,
                         error_index=index, health=health if carries else None)
        # the stop disconnects it (its channel goes); work connects it again
        ctx.connected, ctx.messages = False, 0
        self._restart(ctx)

    def _restart(self, ctx: Context) -> None:
        self._stop_message(ctx)
        ctx.wedged = False
        ctx.rearmed_at = ctx.last_signal = self._now()
        if self.life.firmware in (REFUSES, SILENT) and self.flavour.wedge.restarts_at_timeout:
            self._restart_fails(ctx)
        self._refill(ctx)

    # -- latencies ---------------------------------------------------------------

    def latency_for(self, xclbin_label: str, kernel: str) -> float:
        keys = (f"{xclbin_label}/{kernel}", xclbin_label, kernel)
        for name, latency in self.profile.slow:
            if name in keys:
                return latency
        for key in keys:
            if key in self.latencies:
                return self.latencies[key]
        return DEFAULT_LATENCY_US
