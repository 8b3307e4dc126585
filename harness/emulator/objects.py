"""What the emulated driver keeps per open file and per hardware context, and the DRM
syncobjs they signal: the state the driver, its syncobj ioctls and its information
ioctls share.

A context's completion timeline advances over every job that has ended, in sequence
order (`settle`): the driver numbers a job when it takes it (from 0 per context), writes
its end into its packets, and signals its point once every job before it has ended too.
Where a chain sits in its runlist (for `hang-at:K`, which names a run of a runlist) is not
in the driver's interface; it is read from XRT's behaviour (`chain_start`): a runlist
keeps each chain's command buffer at one index for its life and submits its chains in
order, every chain but the last full, all of them made (by `add`) before the first is
submitted. So a chain whose buffer has been seen keeps its start, and a new one continues
the previous chain submitted on its context when that one was full (`xrt-chain:N`, 24 by
default) and this one's buffer already existed when it was submitted; otherwise it starts
at 0. What the driver's interface cannot tell apart: a full runlist and a second one built
before the first was executed, executed right after it on the same context, count as one.
"""

from __future__ import annotations

import errno
import itertools
from dataclasses import dataclass, field
from pathlib import Path

from harness.emulator.kernels_by_pdi import KernelOfPdi
from harness.emulator.memory import DriverError, Handles
from harness.emulator.packets import Submission, write_back
from harness.sim.stack import Context, Job


@dataclass(eq=False)
class Syncobj:
    id: int
    value: int = 0                      # a user timeline's payload
    signaled: bool = False              # a binary syncobj's state
    context: HwContext | None = None    # a context's completion timeline
    path: Path | None = None            # its export file, once exported
    refs: int = 1

    def target(self, point: int) -> int:
        """The job sequence number a wait on `point` of a context's timeline waits for."""
        if point:
            return point
        if self.context is None:
            raise ValueError(f"syncobj {self.id} is not a context's timeline: point 0 names "
                             "no job")
        return self.context.next_seq - 1

    def reached(self, point: int) -> bool:
        ctx = self.context
        if ctx is not None:
            return ctx.done_upto > point
        return self.value >= point if point else (self.signaled or self.value > 0)

    def payload(self) -> int:
        ctx = self.context
        return max(ctx.done_upto - 1, 0) if ctx is not None else self.value


@dataclass(eq=False)
class ClientFile:
    id: int
    pid: int
    handles: Handles = field(default_factory=Handles)
    syncobjs: dict[int, Syncobj] = field(default_factory=dict)
    contexts: dict[int, HwContext] = field(default_factory=dict)
    _next_syncobj: itertools.count = field(default_factory=lambda: itertools.count(1))

    def add_syncobj(self, sync: Syncobj) -> int:
        handle = next(self._next_syncobj)
        self.syncobjs[handle] = sync
        return handle

    def syncobj(self, handle: int) -> Syncobj:
        try:
            return self.syncobjs[handle]
        except KeyError:
            raise DriverError(errno.ENOENT, f"no syncobj {handle}") from None


@dataclass(eq=False)
class HwContext:
    id: int
    file: ClientFile
    sim: Context
    width: int
    syncobj: Syncobj
    buffers: list[int]                  # heap offsets of the driver's command buffers
    cus: list[tuple[int, int]] = field(default_factory=list)
    # per CU, the kernel its PDI names among the xclbins `emulate` was given (None: unknown)
    cu_kernels: list[tuple[KernelOfPdi, ...]] = field(default_factory=list)
    next_seq: int = 0
    done_upto: int = 0                  # every job before this sequence number has ended
    by_seq: dict[int, Submission] = field(default_factory=dict)
    unsequenced: list[Submission] = field(default_factory=list)
    unwritten: list[Submission] = field(default_factory=list)
    chain_starts: dict[int, int] = field(default_factory=dict)
    last_chain: tuple[Submission, int, int] | None = None    # chain, start, newest buffer
    # the chain each chain continues (by command buffer id), and how many runs carrying
    # work each held when last submitted: what work-hang:N counts along a runlist
    continues: dict[int, int] = field(default_factory=dict)
    works_in: dict[int, int] = field(default_factory=dict)

    def settle(self) -> None:
        """Number the jobs the model admitted, write back the ones it ended, and move the
        completion timeline over every job that has ended in order."""
        while self.unsequenced:
            sub = self.unsequenced[0]
            job = _job(sub)
            if job.admitted_us is None and not job.done:
                break
            sub.seq = self.next_seq
            self.next_seq += 1
            self.by_seq[sub.seq] = sub
            self.unsequenced.pop(0)
        if self.unwritten:
            for sub in self.unwritten:
                if _job(sub).done:
                    write_back(sub)
            self.unwritten = [sub for sub in self.unwritten if not sub.written]
        while self.done_upto in self.by_seq and self.by_seq[self.done_upto].written:
            del self.by_seq[self.done_upto]
            self.done_upto += 1

    def chain_start(self, sub: Submission, full: int, newest: int) -> int:
        """Where the chain `sub` submits starts in its runlist; `newest` is the id of the
        newest buffer of the device now (ids count up as buffers are made)."""
        start = self.chain_starts.get(sub.command.id)
        if start is None:
            start = 0
            if self.last_chain is not None:
                previous, at, existing = self.last_chain
                if len(previous.members) == full and sub.command.id <= existing:
                    start = at + full
                    self.continues[sub.command.id] = previous.command.id
            self.chain_starts[sub.command.id] = start
        self.last_chain = (sub, start, newest)
        self.works_in[sub.command.id] = sum(getattr(sub, "works", ()))
        return start

    def works_before(self, sub: Submission) -> int:
        """How many runs carrying work the chains before `sub` in its runlist held (read
        after `chain_start`)."""
        count, at = 0, self.continues.get(sub.command.id)
        seen: set[int] = set()
        while at is not None and at not in seen:
            seen.add(at)
            count += self.works_in.get(at, 0)
            at = self.continues.get(at)
        return count


def _job(sub: Submission) -> Job:
    """The model's job for a submission a context queues (set before it is queued)."""
    if sub.job is None:
        raise ValueError("a queued submission has no job in the model")
    return sub.job
