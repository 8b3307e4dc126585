"""The report of a recorded run (`capture record`, with or without XRT's capture, or an
`--attach` watch): a harness report of its own kind (command ``capture record``, no plans,
the `engine_run` section), built from what the recording saw.

What it holds, each from where it was read: the machine's fingerprint before the run (as
`probe` records it); the program's command line, how it ended (exit status, signal, the
harness's stop), its output's first and last lines and every error line recognised in it;
the kernel log's lines and the driver's trace events from the program's start to a few
seconds after its end (or why they could not be read, and the fix); the times on one
timeline and the time to failure against the driver's timer (`engine_timeline`); XRT's
capture when it was asked for; and the device afterwards (`device_after`).
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from typing import Any

from harness import __version__, command_argv
from harness.execution.backend import Backend
from harness.execution.engine_timeline import time_to_failure, timeline
from harness.execution.evidence_window import WindowLogs
from harness.execution.program_output import ProgramOutput
from harness.formats.git_head import harness_commit
from harness.logs.driver_lines import trial_entry
from harness.logs.kernel_log import Reading
from harness.logs.trace_events import trial_entry as trace_entry
from harness.report.engine_run_verdict import verdict
from harness.report.header import Timers, read_timers
from harness.report.model import Report, source_tag
from harness.report.timing import stack_timers

COMMAND = "capture record"
KIND = "engine-run"
SECTION = "engine_run"
NOTHING_PRINTED = "the driver printed nothing during the window"
# what the recorded program waits on is its own, not the harness's (`timers` of a run)
PROGRAM_TIMERS = {
    "xrt_wait_s": None,
    "xrt_wait": "the program's own: the harness does not see how long it waits on XRT (the "
                "driver's timer ends a hang first unless the program's wait is shorter)",
    "harness_deadline": "--deadline: the program is stopped (SIGINT, then SIGTERM and "
                        "SIGKILL) once it has run that long"}


@dataclass
class RunSeen:
    """What the recording saw of the program (or, attached, of the window)."""

    mode: str                                  # "command" or "attach"
    command: tuple[str, ...]
    started: str                               # UTC, when it started
    started_s: float                           # on this process's monotonic clock
    closed_at_s: float                         # the window's end, from the start
    output: ProgramOutput = field(default_factory=ProgramOutput)
    ended_at_s: float | None = None
    program: dict[str, Any] = field(default_factory=dict)
    server: dict[str, Any] | None = None


def engine_report(seen: RunSeen, backend: Backend, environment: dict[str, Any],
                  settings: dict[str, Any], logs: WindowLogs, *,
                  capture: dict[str, Any] | None, device_after: dict[str, Any],
                  trace_clock: str | None = None) -> Report:
    """The report, verdict and all, ready to write."""
    backend_info = backend.as_report()
    backend_info["isolation"] = True
    engine = shlex.join(seen.command) if seen.command else None
    program = seen.command[0].rsplit("/", 1)[-1] if seen.command else "attached"
    report = Report(
        command=COMMAND,
        harness={"version": __version__, "python": sys.version.split()[0],
                 "argv": command_argv(), "commit": harness_commit()},
        backend=backend_info,
        case={"name": f"{COMMAND}: {program}", "kind": KIND,
              **({"engine": engine} if engine else {})},
        settings={**settings, "isolate": True},
        environment=environment)
    report.sections["timers"] = {**stack_timers(report.header_dict()), **PROGRAM_TIMERS}
    timers = read_timers(report.sections["timers"]) or Timers()
    flavour = (environment.get("driver") or {}).get("flavour")
    kernel = trial_entry(logs.kernel, flavour, True, simulated=logs.simulated) or {}
    if kernel.get("note") and not kernel.get("lines"):
        kernel["note"] = NOTHING_PRINTED
    records = logs.kernel.records if isinstance(logs.kernel, Reading) else []
    errors = seen.output.errors_json()
    ttf = time_to_failure(records, logs.trace, timers, trace_clock=trace_clock,
                          trace_why=logs.trace_facts.get("why"))
    section: dict[str, Any] = {
        "mode": seen.mode,
        "evidence_from": _evidence_from(logs, backend),
        "started": seen.started,
        **({"command": list(seen.command)} if seen.command else {}),
        **({"program": seen.program} if seen.program else {}),
        **({"output": seen.output.to_json(), "errors": errors} if seen.mode == "command"
           else {}),
        "kernel_log": kernel,
        "trace_events": _trace(logs),
        "times": timeline(records, logs.trace, seen.started_s, ended_at_s=seen.ended_at_s,
                          closed_at_s=seen.closed_at_s, errors=errors),
        **({"time_to_failure": ttf} if ttf else {}),
        **({"capture": capture} if capture else {}),
        "device_after": device_after,
        **({"server": seen.server} if seen.server is not None else {}),
    }
    report.sections[SECTION] = section
    report.verdict = verdict(section, timers)
    return report


def _evidence_from(logs: WindowLogs, backend: Backend) -> str:
    if logs.simulated and not backend.hardware:
        return ("the SIMULATED stack: the simulated driver the program ran on printed these "
                "lines and events (not hardware evidence)")
    if logs.simulated:
        tag = source_tag(backend.as_report())
        return (f"this machine's kernel log and tracefs, beside the {tag} stack that answered "
                "the harness's own check (not hardware evidence)")
    return "this machine: its kernel log and tracefs"


def _trace(logs: WindowLogs) -> dict[str, Any]:
    if logs.trace is None:
        facts = logs.trace_facts
        out = {"recording": False, "why": str(facts.get("why") or "not recorded")}
        if facts.get("fix"):
            out["fix"] = str(facts["fix"])
        if logs.trace_error:
            out["why"] = logs.trace_error
        return out
    entry = trace_entry(logs.trace, logs.trace_source or "tracefs",
                        simulated=logs.simulated)
    if logs.trace_error:
        entry["unreadable"] = logs.trace_error
    return {"recording": True, **entry}
