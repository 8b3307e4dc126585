"""The `xdna_job` trace events the simulated driver emits, as its tree emits them
(`harness.model.trace_tree`), kept as tracefs's `trace` buffer prints them so that the
harness reads them with the reader it uses on a machine (`harness.logs.trace_events`).

Jobs are recorded as they happen in a few words each (a tuple), and printed only when the
buffer is read: a sweep's trials pay an append per job event, not a formatted line. The
task, CPU and clock are impossible ones (as `harness.sim.driver_log`'s address and
clock are), so that a simulated line copied out of a report cannot pass for a machine's,
and every line a report keeps of a simulated run is marked SIMULATED.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from harness.model.trace_tree import FREE, TraceTree
from harness.sim.driver_log import BOOT_US

TASK = "simulated"                 # no kernel thread is called so
MAX_EVENTS = 4096
# drm_sched's fence contexts are allocated per entity, two at a time (scheduled, finished);
# the simulated ones start where no machine's would have got to this soon after boot
FENCE_CONTEXT_BASE = 9_000_000


class TraceLog:
    """The trace buffer one simulated driver writes: `job(...)` records an event,
    `text()` prints the buffer."""

    def __init__(self, tree: TraceTree, now: Callable[[], float], pid: int) -> None:
        self.tree = tree
        self.now = now
        self.pid = pid
        self.events: deque[tuple[float, str, str, int, int]] = deque(maxlen=MAX_EVENTS)

    def job(self, what: str, context: str, context_id: int, seq: int) -> None:
        """An `xdna_job` event: `what` one of the tree's texts, for the job `seq` of the
        context named `context`."""
        self.events.append((self.now(), what, context, context_id, seq))

    def run(self, context: str, context_id: int, seq: int) -> None:
        self.job(self.tree.run, context, context_id, seq)

    def fence(self, context: str, context_id: int, seq: int) -> None:
        if self.tree.fence is not None:
            self.job(self.tree.fence, context, context_id, seq)

    def free(self, context: str, context_id: int, seq: int) -> None:
        self.job(FREE, context, context_id, seq)

    def timedout(self, context: str, context_id: int, seq: int) -> None:
        if self.tree.timedout is not None:
            self.job(self.tree.timedout, context, context_id, seq)

    def text(self) -> str:
        """The buffer as `cat trace` prints it: a header, then a line per event."""
        lines = ["# tracer: nop", "#"]
        op = ", op=0" if self.tree.with_op else ""
        for t, what, context, context_id, seq in self.events:
            us = int(BOOT_US + t)
            stamp = f"{us // 1_000_000}.{us % 1_000_000:06d}"
            lines.append(f"       {TASK}-{self.pid} [000] ..... {stamp}: xdna_job: "
                         f"fence=(context:{FENCE_CONTEXT_BASE + 2 * context_id + 1}, "
                         f"seqno:{seq + 1}), {context} seq#:{seq} {what}{op}")
        return "\n".join(lines) + "\n"
