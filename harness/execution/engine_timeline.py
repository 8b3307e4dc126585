"""When things happened in a recorded run, on one timeline, and the time to failure where
the kernel log or the trace events name a timeout.

The harness sees the program start and end, and each line it prints as it comes; the
kernel stamps its log records and tracefs its events with its own clock. On a machine both
are the kernel's local clock (printk's `local_clock`, tracefs's default `local`), which
keeps close to the monotonic clock this process reads, so a record is placed at its stamp
less the program's start on that clock (over a long uptime the two can drift apart: the
report says so, and intervals between the kernel's own stamps, as the time to failure is,
stay exact). The simulated driver stamps its records with the simulated device's clock
(from `harness.logs.kernel_log.SIMULATED_BOOT_US`, an uptime no machine has), which runs
only while a program waits: its events are placed in seconds of simulated device time,
apart.

Time to failure, as `reproduce` reads it, is from the submit of the command that hung to
the driver's answer. Here the submit is the driver's own trace event for the hung job
("sent to device" or "job run", as its tree traces it: `harness.model.trace_tree`), the
job that was sent before the timeout and had not ended by it (or the one "job timedout"
names), and the answer is the first timeout the log or the trace names (a TDR or
no-progress line, the firmware's timeout capture, a context dump, "job timedout"). The
time between is read against the driver's timer in force (`harness.report.timing`).
Without the driver's trace events the submit is not seen, and the report says so, with how
to record them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.logs.driver_lines import events as driver_events
from harness.logs.kernel_log import SIMULATED_BOOT_US as BOOT_US
from harness.logs.kernel_log import LogRecord
from harness.logs.trace_events import TracedJob, TraceLine, trace_jobs
from harness.report.header import Timers
from harness.report.timing import classify

MACHINE, SIMULATED_DEVICE = "machine", "simulated device"
# the driver's lines that say its timer fired (harness.logs.driver_lines events)
TIMEOUT_EVENTS = ("tdr_timeout", "no_progress", "timeout_capture", "context_dump",
                  "timing_out_job")
WHAT_LIMIT = 160
CLOCK_NOTE = ("seconds from the program's start on this machine's monotonic clock; the "
              "kernel's stamps (its local clock) are placed on it as they are, which keeps "
              "close to it but can drift apart over a long uptime")
SIMULATED_NOTE = ("the simulated driver's records are placed in seconds of simulated "
                  "device time (its clock runs only while the program waits), apart from "
                  "the program's own times")


@dataclass(frozen=True)
class Stamp:
    """One thing that happened, on its clock: seconds from the program's start (machine)
    or of simulated device time, and what it was, in a few words."""

    at_s: float
    clock: str
    what: str

    def to_json(self) -> dict[str, Any]:
        return {"at_s": round(self.at_s, 3), "clock": self.clock, "what": self.what}


def kernel_seconds(usec: int, started_s: float) -> Stamp:
    """Where a kernel stamp lies: from the program's start on this machine, or in
    simulated device time for the simulated driver's."""
    if usec >= BOOT_US:
        return Stamp((usec - BOOT_US) / 1e6, SIMULATED_DEVICE, "")
    return Stamp(usec / 1e6 - started_s, MACHINE, "")


def _placed(seconds: float, started_s: float, what: str) -> Stamp:
    usec = int(round(seconds * 1e6))
    stamp = kernel_seconds(usec, started_s)
    return Stamp(stamp.at_s, stamp.clock, _short(what))


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= WHAT_LIMIT else text[:WHAT_LIMIT - 3] + "..."


def first_timeout(records: list[LogRecord], lines: list[TraceLine]
                  ) -> tuple[float, str, tuple[str, str] | None] | None:
    """The first timeout the kernel log or the trace names: its kernel seconds, what named
    it, and the fence of the job it names (a "job timedout" event's)."""
    found: list[tuple[float, str, tuple[str, str] | None]] = []
    for event in driver_events(records):
        if event.get("event") in TIMEOUT_EVENTS and isinstance(event.get("usec"), int):
            found.append((event["usec"] / 1e6, f"kernel log: {event['event']}", None))
            break
    _, timeouts = trace_jobs(lines)
    if timeouts:
        at, key = timeouts[0]
        found.append((at, "trace: job timedout", key))
    return min(found, key=lambda item: item[0]) if found else None


def time_to_failure(records: list[LogRecord], lines: list[TraceLine] | None,
                    timers: Timers, *, trace_clock: str | None = None,
                    trace_why: str | None = None) -> dict[str, Any] | None:
    """From the hung job's submit to the first timeout, against the driver's timer; None
    where neither the log nor the trace names a timeout. `trace_clock`: the trace buffer's
    clock where tracefs says it (a clock other than `local` is not the kernel log's);
    `trace_why`: why the trace events were not recorded, where they were not."""
    timeout = first_timeout(records, lines or [])
    if timeout is None:
        return None
    at, named, key = timeout
    simulated = at * 1e6 >= BOOT_US
    clock = SIMULATED_DEVICE if simulated else "kernel"
    jobs, _ = trace_jobs(lines or [])
    mixed = named.startswith("kernel log") and trace_clock not in (None, "local")
    hung = _hung(jobs, at, key) if not mixed else None
    if hung is None:
        why = ("the driver's trace events were not recorded, so the submit of the job that "
               "hung is not seen" + (f" ({trace_why})" if trace_why else "")
               if lines is None else
               f"the trace buffer runs on the {trace_clock} clock, not the kernel log's "
               "(local)" if mixed else
               "the trace events hold no job sent before the timeout that had not ended")
        return {"not_measured": why, "timeout": named, "clock": clock}
    ms = (at - hung.sent_s) * 1000.0
    return {"ms": round(ms, 3), "clock": clock,
            "from": f"trace: job sent (fence context {hung.key[0]}, seqno {hung.key[1]})",
            "to": named, "class": classify(ms, timers)}


def _hung(jobs: list[TracedJob], at: float, key: tuple[str, str] | None) -> TracedJob | None:
    if key is not None:
        named = next((job for job in jobs if job.key == key), None)
        if named is not None:
            return named
    # a job freed at the timeout's own instant was ended by it (its context's reset)
    pending = [job for job in jobs if job.sent_s <= at and
               (job.ended_s is None or job.ended_s >= at)]
    return pending[0] if pending else None


def timeline(records: list[LogRecord], lines: list[TraceLine] | None, started_s: float,
             *, ended_at_s: float | None, closed_at_s: float,
             errors: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's times: the first and last kernel-log record or trace event of the
    window, the first timeout named, the first error, the program's end and the window's."""
    stamps = [_placed(r.usec / 1e6, started_s, f"kernel log: {r.text}") for r in records]
    stamps += [_placed(x.timestamp, started_s, f"trace: {x.event}: {x.text}")
               for x in lines or []]
    out: dict[str, Any] = {"clock": CLOCK_NOTE}
    if any(s.clock == SIMULATED_DEVICE for s in stamps):
        out["simulated_clock"] = SIMULATED_NOTE
    if stamps:
        by_time = sorted(stamps, key=lambda s: (s.clock != MACHINE, s.at_s))
        out["first_event"] = by_time[0].to_json()
        out["last_event"] = max(by_time, key=lambda s: (s.clock == by_time[0].clock,
                                                       s.at_s)).to_json()
    timeout = first_timeout(records, lines or [])
    if timeout is not None:
        out["timeout"] = _placed(timeout[0], started_s, timeout[1]).to_json()
    if errors:
        first = errors[0]
        out["error"] = {"at_s": first["at_s"], "clock": MACHINE, "line": first["line"],
                        "what": _short(str(first["message"]).splitlines()[0]
                                       if first["message"] else first["carrier"])}
    if ended_at_s is not None:
        out["end"] = {"at_s": round(ended_at_s, 3), "clock": MACHINE}
    out["window_closed"] = {"at_s": round(closed_at_s, 3), "clock": MACHINE}
    return out
