"""The simulated amdxdna driver and NPU firmware: a discrete-event model.

Each rule below is a fact of STACK.md 4 (driver) or a labelled hypothesis of
the profile (`harness.sim.profiles`):

- 4 jobs in flight per hardware context (`CTX_MAX_CMDS`); further submissions
  wait in user space (XRT's shim queue) and enter as slots free up.
- A chain's sub-commands are packed into one 4 KiB buffer, one
  `cmd_chain_slot_npu` each: a 52-byte header plus the command's argument bytes
  (`aie2_cmdlist_fill_npu_cf` for ERT_START_CU, `_fill_npu_dpu` for ERT_START_NPU,
  which also refuses more than 104 bytes of arguments); the out-of-tree flavour
  also caps a chain at 64; all sub-commands share one opcode. A chain breaking
  these rules fails in `run_job`, after the submit succeeded, and its header
  stays NEW.
- The firmware runs each context's jobs in order, one sub-command after the
  other, each taking its kernel's latency; contexts whose partitions overlap
  time-share the array (a job holds its columns until it ends).
- A firmware error in a sub-command ends the chain ERROR with `error_index`
  at it. A hang is caught by the flavour's rule: staging, no sub-command
  progress on the context for 2 s, faulting job TIMEOUT with health data and
  the rest of the context ABORT; mainline, no job completion for 60 s, all
  ABORT; out-of-tree, a device-wide watchdog every 2 s that fires on the second
  silent check, first pending TIMEOUT and the rest of the device ABORT. On
  PCI 17f0 devices the firmware leaves `error_index` at 0 on timeouts.
- After a timeout the context is reset and later submissions run.

Time is a virtual clock: a job's sub-command completion times are computed
when it starts, so a healthy job costs one event however long it is, and a
60 s timeout costs no wall time. In realtime mode the same events are
reached by sleeping. (One module on purpose: the driver's rules and the
firmware share the event queue and each job's timeline.)
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.drivers import FLAVOURS
from harness.ert import CmdState
from harness.sim.clock import RealClock, VirtualClock
from harness.sim.profiles import Profile

CTX_MAX_CMDS = 4
MAX_CHAIN_CMDBUF_SIZE = 4096
SLOT_HEADER_BYTES = 52
MAX_SLOT_ARG_BYTES = 104
OOT_CHAIN_CAP = 64
STAGING_TDR_US = FLAVOURS["staging"].seconds() * 1e6
MAINLINE_TIMEOUT_US = FLAVOURS["mainline"].seconds() * 1e6
OOT_TICK_US = FLAVOURS["oot"].default * FLAVOURS["oot"].unit_s * 1e6   # one silent check
DEFAULT_LATENCY_US = 50.0
# Firmware dispatch cost of a sub-command that fails validation before running.
FAULT_US = 5.0

START_CU, CMD_CHAIN, START_NPU = 0, 19, 20
NO_TXN_OP = 0xFFFFFFFF

NEW, QUEUED, RUNNING = int(CmdState.NEW), int(CmdState.QUEUED), int(CmdState.RUNNING)
COMPLETED, ERROR = int(CmdState.COMPLETED), int(CmdState.ERROR)
ABORT, TIMEOUT = int(CmdState.ABORT), int(CmdState.TIMEOUT)


class SimulatorStall(RuntimeError):
    """A wait that could only end on hardware by blocking forever (virtual clock only)."""


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
    health: dict[str, int] | None = None
    note: str = ""
    done: bool = False
    admitted_us: float | None = None
    start_us: float | None = None
    end_us: float | None = None
    finish: list[float] = field(default_factory=list)   # completion time of each command
    stuck_at: int | None = None                          # command that never completes
    gen: int = 0                                         # bumps cancel pending events

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
    id: int
    label: str
    start_column: int
    width: int
    inflight: deque[Job] = field(default_factory=deque)
    backlog: deque[Job] = field(default_factory=deque)
    running: Job | None = None
    wedged: bool = False
    busy_since: float = 0.0
    last_completion: float = 0.0
    last_job_end: float = 0.0
    watchdog_pending: bool = False
    alive: bool = True

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.start_column


class Stack:
    """The driver, firmware and array of one simulated NPU."""

    def __init__(self, profile: Profile, latencies: dict[str, float] | None = None) -> None:
        self.profile = profile
        self.device = profile.device_model
        self.clock = RealClock() if profile.realtime else VirtualClock()
        self._now = self.clock.now
        self.latencies = dict(latencies or {})
        self.rng = random.Random(profile.seed)
        self.log: deque[str] = deque(maxlen=500)
        self.contexts: list[Context] = []
        self.completed_commands = 0
        self.jobs: deque[Job] = deque(maxlen=4096)   # recent submissions, for inspection
        self._events: list[tuple[float, int, Callable, object]] = []
        self._seq = itertools.count()
        self._ids = itertools.count(1)
        self._oot_armed = False
        self._oot_last: tuple[int, bool] | None = None

    # -- time ---------------------------------------------------------------

    @property
    def now(self) -> float:
        return self.clock.now()

    def _at(self, t_us: float, action: Callable, arg: object) -> None:
        heapq.heappush(self._events, (t_us, next(self._seq), action, arg))

    def run_until(self, done: Callable[[], bool], timeout_us: float | None = None) -> bool:
        """Process events until `done()` holds; False if `timeout_us` passes first."""
        limit = None if timeout_us is None else self._now() + timeout_us
        events = self._events
        while not done():
            next_t = events[0][0] if events else None
            if limit is not None and (next_t is None or next_t > limit):
                self.clock.advance_to(limit)
                return done()
            if next_t is None:
                if self.clock.realtime:
                    self.clock.block_forever()
                raise SimulatorStall("nothing is left to happen on the simulated device, yet "
                                     "the wait has no timeout: on hardware it would block "
                                     "forever")
            t_us, _, action, arg = heapq.heappop(events)
            self.clock.advance_to(t_us)
            action(arg)
        return True

    def run_until_done(self, job: Job) -> None:
        """`run_until(lambda: job.done)` without a call per event: a runlist's wait."""
        events = self._events
        clock = self.clock
        while not job.done:
            if not events:
                self.run_until(lambda: job.done)        # stalls or blocks, as it says
                return
            t_us, _, action, arg = heapq.heappop(events)
            clock.advance_to(t_us)
            action(arg)

    def note(self, text: str) -> None:
        self.log.append(f"{self._now() / 1000:12.3f} ms  {text}")

    # -- contexts -----------------------------------------------------------

    def create_context(self, label: str, start_column: int, width: int) -> Context:
        if start_column + width > self.device.columns:
            raise RuntimeError(f"Failed to create hardware context: the partition needs "
                               f"columns {start_column}..{start_column + width - 1}, "
                               f"{self.device.name} has {self.device.columns}")
        ctx = Context(next(self._ids), label, start_column, width)
        self.contexts.append(ctx)
        self.note(f"context {ctx.id} ({label}) created, {width} columns at {start_column}")
        return ctx

    def destroy_context(self, ctx: Context) -> None:
        if not ctx.alive:
            return
        ctx.alive = False
        for job in list(ctx.inflight) + list(ctx.backlog):
            self._settle(job, ABORT, note="context destroyed")
        if ctx in self.contexts:
            self.contexts.remove(ctx)
        self._dispatch()

    # -- submission (the driver) ----------------------------------------------

    def submit(self, ctx: Context, latencies: list[float], arg_bytes: list[int],
               opcodes: list[int], faults: dict[int, str], hangs: set[int], *,
               chained: bool) -> Job:
        if not ctx.alive:
            raise RuntimeError("hardware context has been destroyed")
        job = Job(next(self._seq), ctx, latencies, arg_bytes, opcodes, faults, hangs,
                  chained, self._now())
        self.jobs.append(job)
        if self.profile.flaky and self.rng.random() < self.profile.flaky:
            job.hangs = hangs | {self.rng.randrange(len(latencies))}
        if len(ctx.inflight) < CTX_MAX_CMDS:
            self._admit(job)
            self._dispatch()
        else:
            ctx.backlog.append(job)
        return job

    def _admit(self, job: Job) -> None:
        ctx = job.ctx
        job.admitted_us = now = self._now()
        if not ctx.inflight:
            ctx.busy_since = now
        ctx.inflight.append(job)
        problem = self._chain_problem(job) if job.chained else None
        if problem:
            job.note = problem
            self.note(f"context {ctx.id}: chain {job.seq} rejected in run_job: {problem}")
            self._end(job, NEW)
            return
        self._arm_watchdog(ctx)
        cap = self.profile.inflight_cap
        if cap is not None and not ctx.wedged:
            queued = sum(j.count - j.completed(self._now()) for j in ctx.inflight)
            if queued > cap:
                self._wedge(ctx, f"{queued} commands queued on context {ctx.id} "
                                 f"(inflight-cap {cap})")

    def _chain_problem(self, job: Job) -> str | None:
        count = job.count
        if self.profile.flavour == "oot" and count > OOT_CHAIN_CAP:
            return f"{count} sub-commands, the out-of-tree driver caps a chain at 64"
        opcodes = job.opcodes
        if opcodes.count(opcodes[0]) != count:
            return "sub-commands with different opcodes in one chain"
        sizes = job.arg_bytes
        largest = sizes[0] if sizes.count(sizes[0]) == count else max(sizes)
        capped = opcodes[0] == START_NPU and largest > MAX_SLOT_ARG_BYTES
        if not capped and (SLOT_HEADER_BYTES + largest) * count <= MAX_CHAIN_CMDBUF_SIZE:
            return None                # the common case, decided without a Python loop
        used = 0
        for index, size in enumerate(sizes):
            if capped and size > MAX_SLOT_ARG_BYTES:
                return (f"command {index} has {size} bytes of arguments, an ERT_START_NPU "
                        f"slot holds {MAX_SLOT_ARG_BYTES}")
            used += SLOT_HEADER_BYTES + size
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
        busy = 0
        for ctx in self.contexts:
            if ctx.running is not None:
                busy |= ctx.mask
        waiting = [c for c in self.contexts if c.running is None and c.inflight]
        if not waiting:
            return
        waiting.sort(key=lambda c: c.inflight[0].seq)
        for ctx in waiting:
            if ctx.mask & busy:
                continue
            busy |= ctx.mask
            self._start(ctx.inflight[0])

    def _start(self, job: Job) -> None:
        ctx = job.ctx
        ctx.running = job
        t = job.start_us = self._now()
        if ctx.wedged:
            job.stuck_at = 0
            return
        finish = job.finish
        if not job.faults and not job.hangs:
            finish.extend(itertools.accumulate(job.latencies, initial=t))
            del finish[0]
            self._at(finish[-1] if finish else t, self._complete, (job, job.gen))
            return
        faults, hangs = job.faults, job.hangs
        for index, latency in enumerate(job.latencies):
            if index in hangs:
                job.stuck_at = index
                return
            if index in faults:
                job.note = faults[index]
                self._at(t + FAULT_US, self._fault, (job, job.gen, index))
                return
            t += latency
            finish.append(t)
        self._at(t, self._complete, (job, job.gen))

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
            self._end(job, ERROR, error_index=index)

    def _end(self, job: Job, state: int, *, error_index: int = 0,
             health: dict[str, int] | None = None, note: str = "") -> None:
        self._settle(job, state, error_index=error_index, health=health, note=note)
        self._refill(job.ctx)

    def _settle(self, job: Job, state: int, *, error_index: int = 0,
                health: dict[str, int] | None = None, note: str = "") -> None:
        """Give a job its final state and free its slot, without starting anything."""
        ctx = job.ctx
        now = self._now()
        if job.start_us is not None and state != COMPLETED:
            del job.finish[job.completed(now):]
        job.state = state
        job.error_index = error_index
        job.health = health
        if note:
            job.note = note
        job.done = True
        job.end_us = now
        job.gen += 1
        self.completed_commands += len(job.finish)
        try:
            ctx.inflight.remove(job)
        except ValueError:
            if job in ctx.backlog:
                ctx.backlog.remove(job)
        if ctx.running is job:
            ctx.running = None
        if job.finish:
            ctx.last_completion = max(ctx.last_completion, job.finish[-1])
        ctx.last_job_end = now

    def _refill(self, ctx: Context) -> None:
        """Move queued user-space submissions into free driver slots, then run what can."""
        while ctx.alive and ctx.backlog and len(ctx.inflight) < CTX_MAX_CMDS:
            self._admit(ctx.backlog.popleft())
        if not ctx.inflight:
            ctx.busy_since = self._now()
        self._dispatch()

    # -- hang detection (the driver's timeout rules) -----------------------------

    def _arm_watchdog(self, ctx: Context) -> None:
        flavour = self.profile.flavour
        if flavour == "oot":
            if not self._oot_armed:
                self._oot_armed = True
                tick = (self._now() // OOT_TICK_US + 1) * OOT_TICK_US
                self._at(tick, self._oot_tick, None)
            return
        if not ctx.watchdog_pending:
            ctx.watchdog_pending = True
            self._at(self._watchdog_deadline(ctx), self._watchdog, ctx)

    def _last_progress(self, ctx: Context) -> float:
        if self.profile.flavour == "mainline":
            # drm_sched re-arms its timer when a job completes: job-level progress.
            return max(ctx.busy_since, ctx.last_job_end)
        last = max(ctx.busy_since, ctx.last_completion)
        job = ctx.running
        if job is not None:
            done = job.completed(self._now())
            if done:
                last = max(last, job.finish[done - 1])
            last = max(last, job.start_us)
        return last

    def _watchdog_deadline(self, ctx: Context) -> float:
        limit = MAINLINE_TIMEOUT_US if self.profile.flavour == "mainline" else STAGING_TDR_US
        return self._last_progress(ctx) + limit

    def _watchdog(self, ctx: Context) -> None:
        ctx.watchdog_pending = False
        if not ctx.alive or not ctx.inflight:
            return
        deadline = self._watchdog_deadline(ctx)
        if self._now() < deadline:
            ctx.watchdog_pending = True
            self._at(deadline, self._watchdog, ctx)
            return
        if self.profile.flavour == "mainline":
            self._timeout_context(ctx, fault_state=ABORT, health=False)
        else:
            self._timeout_context(ctx, fault_state=TIMEOUT, health=True)

    def _progress_count(self) -> int:
        running = sum(c.running.completed(self._now()) for c in self.contexts
                      if c.running is not None)
        return self.completed_commands + running

    def _oot_tick(self, _: object) -> None:
        busy = any(c.inflight for c in self.contexts)
        if not busy:
            self._oot_armed = False
            self._oot_last = None
            return
        state = (self._progress_count(), busy)
        if self._oot_last is not None and self._oot_last[0] == state[0] and self._oot_last[1]:
            self._oot_last = None
            self._timeout_device()
        else:
            self._oot_last = state
        if any(c.inflight for c in self.contexts):
            self._at(self._now() + OOT_TICK_US, self._oot_tick, None)
        else:
            self._oot_armed = False
            self._oot_last = None

    def _fault_index(self, job: Job) -> int:
        # STACK.md 4: NPU4-class firmware leaves the runlist index at 0 on a timeout.
        if self.device.npu4_class:
            return 0
        return job.completed(self._now())

    def _timeout_context(self, ctx: Context, *, fault_state: int, health: bool) -> None:
        faulting = ctx.running or ctx.inflight[0]
        rest = [j for j in ctx.inflight if j is not faulting]
        self.note(f"context {ctx.id}: {self.profile.flavour} timeout, job {faulting.seq} "
                  f"{CmdState(fault_state).name}, {len(rest)} more ABORT, context reset")
        report = _health() if health else None
        # The driver writes error_index only with a TIMEOUT; an ABORT chain keeps the 0
        # XRT initialised it with, blaming its first run.
        index = self._fault_index(faulting) if fault_state == TIMEOUT else 0
        self._settle(faulting, fault_state, error_index=index, health=report)
        for job in rest:
            self._settle(job, ABORT)
        ctx.wedged = False
        self._refill(ctx)

    def _timeout_device(self) -> None:
        pending = [j for c in self.contexts for j in c.inflight]
        first = min(pending, key=lambda j: j.seq)
        self.note(f"device watchdog: two silent checks, job {first.seq} TIMEOUT, "
                  f"{len(pending) - 1} more ABORT, every context reset")
        self._settle(first, TIMEOUT, error_index=self._fault_index(first))
        for job in pending:
            if job is not first:
                self._settle(job, ABORT)
        for ctx in list(self.contexts):
            ctx.wedged = False
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


def _health() -> dict[str, int]:
    # The staging driver's app-health report after a hang: the firmware does not
    # know the op (UINT_MAX), and the simulator has no program counter to give.
    return {"txn_op_idx": NO_TXN_OP, "ctx_pc": 0, "fatal_error_type": 0,
            "fatal_error_exception_type": 0, "fatal_error_exception_pc": 0,
            "fatal_error_app_module": 0}
