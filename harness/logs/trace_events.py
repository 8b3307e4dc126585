"""The amdxdna driver's trace events around a trial, read from tracefs's buffer.

An in-tree driver up to Linux 7.0 prints nothing to the kernel log when a job times out;
its trace events still record it. The events, as each tree calls them:

- in-tree (Linux 7.0, 7.1 as amd/xdna-driver 234824b1 and f13c7f41 import it; `TRACE_SYSTEM
  amdxdna`, Linux include/trace/events/amdxdna.h): `xdna_job` "sent to device"
  (aie2_sched_job_run), "signaled fence", "job free" and "job timedout"
  (aie2_sched_job_timedout), printed ``fence=(context:C, seqno:S), NAME seq#:N TEXT``;
  `amdxdna_debug_point` "job pushed", "job release" (amdxdna_ctx.c); the mailbox's
  `mbox_set_tail`, `mbox_set_head`, `mbox_irq_handle`;
- staging (amd/xdna-driver drivers/accel/amdxdna at 856409ca, its own
  include/trace/events/amdxdna.h): `xdna_job` "job run" and "job free", with ``, op=N``;
  `xdna_job_queue` "sent to device" and "job complete" (aie2_ctx.c); `amdxdna_debug_point`
  "job received", "job pushed", "job release", "job returned to user"; the mailbox's
  events and `uc_irq_handle`. No "job timedout": aie2_sched_job_timedout traces nothing;
- the legacy out-of-tree driver (`TRACE_SYSTEM amdxdna_trace`; src/driver/amdxdna/
  amdxdna_trace.h): `xdna_job` "job run", "signaling fence", "job free" (no "job
  timedout" either), many `amdxdna_debug_point`s, `__amdxdna_trace_point`, and the
  mailbox's events with `mbox_poll_handle`.

So timed-out jobs are counted (from "job timedout") only under the in-tree driver.
tracefs lists the events under `events/<system>/`; a buffer line reads
``TASK-PID [CPU] FLAGS TIMESTAMP: EVENT: TEXT``. The reader marks the newest timestamp
before a trial and keeps the driver's events after it; `trace_jobs` pairs each job's
send with its end or its "job timedout" by the fence the events print (the tree's
texts: `harness.model.trace_tree`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.model.drivers import FLAVOURS
from harness.model.trace_tree import FREE

TRACEFS = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")
SYSTEMS = ("amdxdna", "amdxdna_trace")
EVENTS = ("xdna_job", "amdxdna_debug_point", "xdna_job_queue", "mbox_set_tail",
          "mbox_set_head", "mbox_irq_handle", "mbox_rx_worker", "uc_irq_handle", "uc_wakeup",
          "mbox_poll_handle", "__amdxdna_trace_point")
MAX_READ_BYTES = 16 << 20
MAX_KEPT_LINES = 200
QUEUE_SENT, QUEUE_DONE = "sent to device", "job complete"    # staging's xdna_job_queue
_FENCE = re.compile(r"fence=\(context:(?P<context>\d+), seqno:(?P<seqno>\d+)\)")
_TAIL = re.compile(r"seq#:\d+ (?P<what>.+?)(?:, op=\d+)?\s*$")
# compiled on first use, by re's own cache: a start-up does not pay for it
_LINE = (r"^\s*(?P<task>.+?)-(?P<pid>\d+)\s+(?:\(\s*[\d-]+\)\s+)?\[(?P<cpu>\d+)\]"
         r"\s+(?:\S+\s+)?(?P<ts>\d+\.\d+):\s+(?P<event>\w+):\s?(?P<text>.*)$")


@dataclass(frozen=True)
class TraceLine:
    """One event line of the trace buffer: its timestamp, event name and text, and the line."""

    timestamp: float
    event: str
    text: str
    line: str


def parse_trace(text: str) -> list[TraceLine]:
    """The event lines of a tracefs `trace` buffer (its `#` header and others skipped)."""
    return [x for line in text.splitlines() if (x := parse_trace_line(line)) is not None]


def parse_trace_line(line: str) -> TraceLine | None:
    """One event line of a trace buffer (`cat trace`, or `trace-cmd report`'s, which prints
    the same columns), or None for a header line or any other text."""
    if not line or line.startswith("#"):
        return None
    match = re.match(_LINE, line)
    if match is None:
        return None
    return TraceLine(float(match["ts"]), match["event"], match["text"].strip(), line.strip())


@dataclass
class TraceReader:
    """The `trace` buffer of a tracefs mount: `mark` the newest event now, `read` the
    driver's events logged since."""

    buffer: Path
    events: tuple[str, ...] = EVENTS
    since: float = field(default=-1.0)

    @property
    def source(self) -> str:
        """The buffer as a path of the machine (under a fabricated root too)."""
        parts = self.buffer.parts
        at = next((i for i in range(len(parts) - 1, -1, -1) if parts[i] == "sys"), 0)
        return "/" + "/".join(parts[at:])

    def _lines(self) -> list[TraceLine]:
        with self.buffer.open("r", encoding="utf-8", errors="replace") as handle:
            return parse_trace(handle.read(MAX_READ_BYTES))

    def mark(self) -> None:
        lines = self._lines()
        self.since = max((x.timestamp for x in lines), default=-1.0)

    def read(self) -> list[TraceLine]:
        return [x for x in self._lines() if x.timestamp > self.since and x.event in self.events]


def trial_entry(lines: list[TraceLine], source: str, *, simulated: bool = False,
                total: int | None = None, timed_out: int | None = None) -> dict[str, Any]:
    """What a trial keeps of the trace: its driver events (the first and last when many),
    counted by event; a simulated run's marked as its kernel-log lines are. `total` and
    `timed_out`: where `lines` are already only those kept (the simulated driver prints no
    more), how many `xdna_job` events and "job timedout" ones there were in all."""
    shown = [x.line for x in lines]
    omitted = max(0, len(shown) - MAX_KEPT_LINES) if total is None else total - len(shown)
    if omitted:
        half = MAX_KEPT_LINES // 2
        shown = shown[:half] + shown[len(shown) - (MAX_KEPT_LINES - half):]
    if simulated:
        shown = [f"SIMULATED {x}" for x in shown]
    counts: dict[str, int] = {}
    for x in lines:
        counts[x.event] = counts.get(x.event, 0) + 1
    if total is not None:
        counts = {"xdna_job": total} if total else {}
    entry: dict[str, Any] = {"source": source, "lines": shown, "counts": counts}
    if omitted:
        entry["omitted"] = omitted
    if timed_out is None:
        timed_out = sum(x.event == "xdna_job" and "job timedout" in x.text for x in lines)
    if timed_out:
        entry["timed_out"] = timed_out
    if simulated:
        entry["simulated"] = True
    return entry


def _trace_starts() -> frozenset[str]:
    return frozenset({row.trace.run for row in FLAVOURS.values()} | {QUEUE_SENT})


def _trace_ends() -> frozenset[str]:
    return frozenset({text for row in FLAVOURS.values() if (text := row.trace.fence)}
                     | {FREE, QUEUE_DONE})


def _trace_timeouts() -> frozenset[str]:
    return frozenset(text for row in FLAVOURS.values() if (text := row.trace.timedout))


@dataclass(frozen=True)
class TracedJob:
    """A job the trace saw: its fence, when it was sent and when it ended (kernel seconds)."""

    key: tuple[str, str]
    sent_s: float
    ended_s: float | None


Fence = tuple[str, str]                 # (fence context, seqno), as the trace prints them


def trace_jobs(lines: list[TraceLine]) -> tuple[list[TracedJob], list[tuple[float, Fence]]]:
    """Each job the `xdna_job`/`xdna_job_queue` events show (by its fence), and each "job
    timedout" with the fence it names."""
    sent: dict[tuple[str, str], float] = {}
    ended: dict[tuple[str, str], float] = {}
    timeouts: list[tuple[float, tuple[str, str]]] = []
    starts, ends, timed = _trace_starts(), _trace_ends(), _trace_timeouts()
    for line in lines:
        fence, tail = _FENCE.search(line.text), _TAIL.search(line.text)
        if fence is None or tail is None:
            continue
        key, what = (fence["context"], fence["seqno"]), tail["what"]
        if what in starts:
            sent[key] = min(sent.get(key, line.timestamp), line.timestamp)
        elif what in ends:
            ended[key] = min(ended.get(key, line.timestamp), line.timestamp)
        elif what in timed:
            timeouts.append((line.timestamp, key))
    return ([TracedJob(key, at, ended.get(key)) for key, at in sorted(sent.items(),
                                                                key=lambda kv: kv[1])],
            timeouts)
