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
    """The trace buffer one simulated driver writes: a record per job when it ends (`ended`,
    one append on the per-job path: its run, fence and free events are read off it when the
    buffer is printed) and one per timeout (`timedout`); `text()` prints the buffer. A job
    still in flight when the buffer is read is not in it yet."""

    def __init__(self, tree: TraceTree, now: Callable[[], float], pid: int) -> None:
        self.tree = tree
        self.now = now
        self.pid = pid
        # (run at, ended at, sent, context, context id, seq); run at None: no run event;
        # ended at None: a "job timedout" record at `run at`
        self.records: deque[tuple[float | None, float | None, bool, str, int, int]] = \
            deque(maxlen=MAX_EVENTS)

    def ended(self, context: str, context_id: int, seq: int, run_at: float | None,
              sent: bool) -> None:
        """Job `seq` of `context` ended now: run (traced) at `run_at`, sent to the firmware
        or not (its fence signals only then)."""
        self.records.append((run_at, self.now(), sent, context, context_id, seq))

    def timedout(self, context: str, context_id: int, seq: int) -> None:
        if self.tree.timedout is not None:
            self.records.append((self.now(), None, False, context, context_id, seq))

    def timed_out(self) -> int:
        """How many "job timedout" events the buffer holds."""
        return sum(record[1] is None for record in self.records)

    def events(self) -> list[tuple[float, str, str, int, int]]:
        """Every event, in time order: (time, text, context, context id, seq)."""
        tree = self.tree
        out: list[tuple[float, int, str, str, int, int]] = []
        for order, (run_at, end, sent, context, context_id, seq) in enumerate(self.records):
            if end is None:
                out.append((run_at or 0.0, order, str(tree.timedout), context, context_id, seq))
                continue
            if run_at is not None:
                out.append((run_at, order, tree.run, context, context_id, seq))
            if sent and tree.fence is not None:
                out.append((end, order, tree.fence, context, context_id, seq))
            out.append((end, order, FREE, context, context_id, seq))
        out.sort(key=lambda event: (event[0], event[1]))
        return [(t, what, context, context_id, seq) for t, _, what, context, context_id, seq
                in out]

    def text(self, keep: int | None = None) -> str:
        """The buffer as `cat trace` prints it: a header, then a line per event (`keep`:
        only the first and last keep/2, which is all a report keeps of a trial)."""
        events = self.events()
        if keep is not None and len(events) > keep:
            events = events[:keep // 2] + events[len(events) - (keep - keep // 2):]
        lines = ["# tracer: nop", "#"]
        op = ", op=0" if self.tree.with_op else ""
        for t, what, context, context_id, seq in events:
            us = int(BOOT_US + t)
            stamp = f"{us // 1_000_000}.{us % 1_000_000:06d}"
            lines.append(f"       {TASK}-{self.pid} [000] ..... {stamp}: xdna_job: "
                         f"fence=(context:{FENCE_CONTEXT_BASE + 2 * context_id + 1}, "
                         f"seqno:{seq + 1}), {context} seq#:{seq} {what}{op}")
        return "\n".join(lines) + "\n"
