"""Which `xdna_job` trace events each driver tree emits for a job, and how it prints them
(`harness.logs.trace_events` reads them from tracefs; the simulated driver writes them).

- in-tree (Linux 7.0/7.1 as amd/xdna-driver 234824b1 and f13c7f41 import it, `aie2_ctx.c`;
  `TRACE_SYSTEM amdxdna`): "sent to device" at the end of `aie2_sched_job_run` (not
  traced where it returns early: no firmware channel), "signaled fence" when the job ends
  (`aie2_sched_notify`), "job free" (`aie2_sched_job_free`), "job timedout"
  (`aie2_sched_job_timedout`), printed ``fence=(context:C, seqno:S), NAME seq#:N TEXT``.
- staging (856409ca `aie2_ctx.c`, its include/trace/events/amdxdna.h): "job run" first in
  `aie2_sched_job_run` and "job free", with ``, op=N`` (DEFAULT_IO, 0); a job's send and
  completion are `xdna_job_queue` events, and a timeout traces nothing.
- legacy (856409ca `src/driver/amdxdna/aie2_ctx.c`, `TRACE_SYSTEM amdxdna_trace`): "job
  run" first in `aie2_sched_job_run`, "signaling fence" and "job free", with ``, op=N``
  (OP_USER, 0).

The other events (`amdxdna_debug_point`, the mailbox's, `xdna_job_queue`) are not
played.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TraceTree:
    """A tree's `xdna_job` events for a job: its trace system, the text run_job traces and
    whether it traces it before checking the context has a firmware channel, the texts when
    the job's fence signals and when the job times out (None: no such xdna_job event), and
    whether the line ends with ``, op=N``."""

    system: str
    run: str
    run_first: bool
    fence: str | None
    timedout: str | None
    with_op: bool
    source: str


FREE = "job free"
IN_TREE = TraceTree("amdxdna", "sent to device", False, "signaled fence", "job timedout",
                    False, "amd/xdna-driver 234824b1 and f13c7f41 drivers/accel/amdxdna/"
                    "aie2_ctx.c trace_xdna_job, include/trace/events/amdxdna.h (f13c7f41)")
STAGING = TraceTree("amdxdna", "job run", True, None, None, True,
                    "amd/xdna-driver 856409ca drivers/accel/amdxdna/aie2_ctx.c "
                    "trace_xdna_job, include/trace/events/amdxdna.h")
LEGACY = TraceTree("amdxdna_trace", "job run", True, "signaling fence", None, True,
                   "amd/xdna-driver 856409ca src/driver/amdxdna/aie2_ctx.c trace_xdna_job, "
                   "amdxdna_trace.h")
