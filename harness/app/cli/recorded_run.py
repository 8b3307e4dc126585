"""`capture record`'s evidence: the window around the program (or, with `--attach`, around
a program already running), the device afterwards, and the report `DIR/report.yaml` that
holds them, written for every run whether or not XRT wrote a capture.

The order is the one a maintainer needs: the machine's fingerprint before anything runs;
the kernel log and trace marked; the program (or the watch); a few seconds more for what
the driver prints after it (`--after`); `xrt-smi examine` again; the NOOP check on a fresh
context, with the kernel log around it kept apart (what the check made the driver say is
not the run's); then the report.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from harness.execution.backend import Backend
from harness.execution.capture_record import Recorded, Recording, Snapshot
from harness.execution.device_after import (
    Checked,
    device_section,
    examine,
    recovery_check,
)
from harness.execution.engine_report import RunSeen, engine_report
from harness.execution.evidence_window import EvidenceWindow, WindowLogs
from harness.formats.printable import escape_controls
from harness.probe.readers import Sources
from harness.report.model import Report, utc_now
from harness.report.timing import class_words, duration_text

REPORT_NAME = "report.yaml"


@dataclass(frozen=True)
class EvidenceSources:
    """How the evidence of one recording is taken: from the machine, or from the simulated
    driver's own folder (`machine`), what the probe found before, and what to ask after."""

    backend: Backend
    environment: dict[str, Any]
    machine: Path | None              # the simulated program's machine folder
    after_s: float
    recovery: bool

    def window(self) -> EvidenceWindow:
        if self.machine is not None:
            return EvidenceWindow.of_simulated(self.machine)
        from harness.probe.kernel_log_access import kernel_log_reader
        from harness.probe.trace_access import trace_reader
        src = Sources.live()
        facts = self.environment.get("trace_events") or {}
        return EvidenceWindow.of_machine(kernel_log_reader(src), trace_reader(src, facts),
                                         facts, simulated=self.backend.simulated)

    def trace_clock(self) -> str | None:
        """The clock tracefs stamps its events with, where it says (`trace_clock`: the one
        in brackets is in force)."""
        facts = self.environment.get("trace_events") or {}
        if self.machine is not None or not facts.get("path"):
            return None
        text = Sources.live().read(f"{facts['path']}/trace_clock") or ""
        start, end = text.find("["), text.find("]")
        return text[start + 1:end] if 0 <= start < end else None


def settle(window: EvidenceWindow, seconds: float) -> None:
    """Keep the window open `seconds` after the program's end (the driver may still print:
    a legacy context dump, a restart); a Ctrl-C ends the wait."""
    until = time.monotonic() + seconds
    try:
        while time.monotonic() < until:
            window.poll()
            time.sleep(min(0.2, max(0.0, until - time.monotonic())))
    except KeyboardInterrupt:
        click.echo("your Ctrl-C: the window closes now", err=True)


def device_after(evidence: EvidenceSources, smi_before: dict[str, Any] | None) -> dict[str, Any]:
    """xrt-smi examine again, then the NOOP check (its kernel log kept apart)."""
    backend, environment = evidence.backend, evidence.environment
    smi_after = None
    if backend.hardware and smi_before is not None:
        from harness.probe.xrt_smi import xrt_smi
        smi_after = examine(xrt_smi(Sources.live()))
    if not evidence.recovery:
        return device_section(None, smi_before, smi_after,
                              why_not="--no-recovery-check: the device was not asked")
    if evidence.machine is not None:
        from harness.sim.machine_folder import life_json
        backend.adopt_device_life(life_json(evidence.machine))
    click.echo("checking the device: one NOP run on a fresh context", err=True)
    window = evidence.window() if evidence.machine is None else None
    if window is not None:
        window.open()
    try:
        checked = recovery_check(backend, bdf=(environment.get("npu") or {}).get("bdf"),
                                 module=(environment.get("driver") or {}).get("module"))
    except KeyboardInterrupt:
        checked = Checked(None, "your Ctrl-C stopped the check")
    log = None
    if window is not None:
        from harness.logs.driver_lines import trial_entry
        logs = window.close()
        log = trial_entry(logs.kernel, (environment.get("driver") or {}).get("flavour"),
                          True, simulated=logs.simulated)
    elif checked.answer is not None and checked.answer.kernel_log:
        log = checked.answer.kernel_log
    return device_section(checked, smi_before, smi_after, kernel_log=log)


def write_report(report: Report, folder: Path, redact: bool) -> Path:
    from harness.report.journal import ReportFile
    report.settings["redact"] = redact
    report.finished = utc_now()
    handle = ReportFile.create(report, out=str(folder / REPORT_NAME), redact=redact)
    handle.close()
    return handle.path


def build(seen: RunSeen, evidence: EvidenceSources, settings: dict[str, Any], logs: WindowLogs,
          capture: dict[str, Any] | None, device: dict[str, Any]) -> Report:
    return engine_report(seen, evidence.backend, evidence.environment, settings, logs,
                         capture=capture, device_after=device,
                         trace_clock=evidence.trace_clock())


def summary_lines(report: Report, path: Path) -> list[str]:
    """What the console says of the recorded evidence (the report holds all of it)."""
    section = report.sections["engine_run"]
    lines = []
    log = section.get("kernel_log") or {}
    if "unreadable" in log:
        lines.append(f"kernel log: not readable ({log['unreadable']}); {log.get('fix')}")
    else:
        events = sorted({str(e.get("event")) for e in log.get("events") or []})
        lines.append(f"kernel log ({log.get('source')}): {len(log.get('lines') or [])} driver "
                     "lines in the window" + (f"; events: {', '.join(events)}" if events
                                              else ""))
    trace = section.get("trace_events") or {}
    if trace.get("recording"):
        counts = ", ".join(f"{k} {v}" for k, v in (trace.get("counts") or {}).items())
        lines.append(f"trace events ({trace.get('source')}): {counts or 'none'}")
    else:
        lines.append(f"trace events: not recorded ({trace.get('why')})"
                     + (f"; {trace['fix']}" if trace.get("fix") else ""))
    times = section.get("times") or {}
    said = [f"{name} at {_at(times[key])}" for key, name in
            (("first_event", "first driver event"), ("timeout", "the driver's timeout"),
             ("error", "the error"), ("end", "the end")) if key in times]
    if said:
        lines.append("times (from the start): " + "; ".join(said))
    ttf = section.get("time_to_failure")
    if ttf and "ms" in ttf:
        from harness.report.header import read_timers
        timers = read_timers(report.sections.get("timers"))
        lines.append(f"time to failure: {ttf_words(ttf, timers)}")
    elif ttf:
        lines.append(f"time to failure: not measured: {ttf['not_measured']}")
    lines.append(f"device afterwards: {device_words(section.get('device_after') or {})}")
    lines += [f"report: {path}", f"next: runlist-harness diagnose {path}"]
    return [escape_controls(line) for line in lines]


def _at(stamp: dict[str, Any]) -> str:
    shown = f"+{float(stamp['at_s']):.2f} s"
    return shown + (" (simulated device time)" if stamp.get("clock") == "simulated device"
                    else "")


def ttf_words(ttf: dict[str, Any], timers: Any) -> str:
    """``2.0 s on the kernel's clock, at the driver's 2 s timer (from ... to ...)``."""
    clock = ("simulated device time" if ttf.get("clock") == "simulated device"
             else "the kernel's clock")
    return (f"{duration_text(float(ttf['ms']))} on {clock}, "
            f"{class_words(str(ttf.get('class')), timers)} ({ttf.get('from')} to "
            f"{ttf.get('to')})")


def device_words(device: dict[str, Any]) -> str:
    if device.get("answers") is True:
        recovery = device.get("recovery") or {}
        return f"it answered ({recovery.get('status')}: {recovery.get('what')})"
    if device.get("answers") is False:
        return (f"it did not answer: it is {device.get('state')}. Cleared by: "
                f"{device.get('clears')}. Not cleared by: {device.get('does_not_clear')}")
    return f"not checked ({device.get('not_checked')})"


def progress_line(label: str) -> Callable[[float], None]:
    tty = sys.stderr.isatty()
    said = {"at": -10.0}

    def show(seconds: float) -> None:
        text = f"{label}: {seconds:.0f} s"
        if tty:
            click.echo(f"\r\033[K{text}", err=True, nl=False)
        elif seconds - said["at"] >= 10:
            said["at"] = seconds
            click.echo(text, err=True)
    return show


def _fingerprint(backend: Backend) -> dict[str, Any]:
    """The machine before the run, as `probe` (and every run's report) records it."""
    from harness.execution.environment import collect_environment
    click.echo("probing the machine", err=True)
    environment = collect_environment(backend)
    backend.adopt_environment(environment)
    return environment


def record_program(backend: Backend, job: Recording, folder: Path, settings: dict[str, Any],
                   *, machine: Path | None, redact: bool, progress: Callable[[Snapshot], None],
                   capture: Callable[[Recorded], dict[str, Any]]
                   ) -> tuple[Recorded, Report, Path]:
    """Record `job`: the fingerprint, the window around it, the device after, the report
    (`capture` makes its capture section from how the program ended)."""
    from harness.execution.capture_record import record
    environment = _fingerprint(backend)
    evidence = EvidenceSources(backend, environment, machine, float(settings["after_s"]),
                        bool(settings["recovery_check"]))
    window = evidence.window()
    started, started_s = utc_now(), time.monotonic()
    window.open()
    ended = record(job, progress, lambda line: click.echo("  | " + escape_controls(line),
                                                          err=True),
                   tick=window.poll, started=started_s)
    if not ended.interrupted:
        settle(window, evidence.after_s)
    logs = window.close()
    closed_at = time.monotonic() - started_s
    seen = RunSeen("command", job.command, started, started_s, closed_at, ended.output,
                   ended.ended_at_s, ended.program())
    device = device_after(evidence, _smi(environment)) if not ended.interrupted else \
        device_section(None, _smi(environment), None,
                       why_not="your Ctrl-C stopped the recording before it")
    report = build(seen, evidence, settings, logs, capture(ended), device)
    return ended, report, write_report(report, folder, redact)


def record_attached(backend: Backend, folder: Path, settings: dict[str, Any],
                    seconds: float | None, url: str | None, redact: bool) -> None:
    """`--attach`: the window beside a program already running, the device after, the
    report; the server named where it can be seen."""
    from harness.execution.attached import server_section, watch
    from harness.model.errors import EnvironmentNotReady, Interrupted
    environment = _fingerprint(backend)
    evidence = EvidenceSources(backend, environment, None, float(settings["after_s"]),
                        bool(settings["recovery_check"]))
    window = evidence.window()
    src = Sources.live()
    server = server_section(src, environment, (lambda: _server_version(url)) if url else None,
                            url)
    click.echo(f"{backend.describe()}\nwatching this machine's kernel log and trace events "
               + (f"for {seconds:g} s" if seconds else "until Ctrl-C"))
    for process in server["processes"]:
        click.echo(escape_controls(f"server: pid {process['pid']} {process['command']} "
                                   + " ".join(process["args"])))
    if server.get("note"):
        click.echo(f"server: {server['note']}")
    started, started_s = utc_now(), time.monotonic()
    window.open()
    how, interrupted = watch(seconds, window.poll, progress_line("watching"))
    if sys.stderr.isatty():
        click.echo("\r\033[K", err=True, nl=False)
    logs = window.close()
    closed_at = time.monotonic() - started_s
    seen = RunSeen("attach", (), started, started_s, closed_at, server=server,
                   program={"window": how})
    device = device_after(evidence, _smi(environment))
    report = build(seen, evidence, settings, logs, None, device)
    path = write_report(report, folder, redact)
    click.echo(f"window closed {how}")
    for line in summary_lines(report, path):
        click.echo(line)
    answers = report.sections["engine_run"]["device_after"].get("answers")
    if answers is False:
        raise EnvironmentNotReady(f"the NPU did not answer after the window; the evidence is "
                                  f"in {path}")
    if interrupted:         # the window's end, yet a Ctrl-C: 130, as every command exits
        raise Interrupted(f"the window closed {how}; the evidence is in {path}")


def _smi(environment: dict[str, Any]) -> dict[str, Any] | None:
    return examine(environment.get("xrt_smi")) if "xrt_smi" in environment else None


def _server_version(url: str | None) -> str | None:
    """FastFlowLM's `/api/version` at `url` (None: no answer, or no version in it)."""
    if not url:
        return None
    from harness.serve.client import FlmClient
    reply = FlmClient(url, 5.0, None).get("/api/version", 5.0)
    body = reply.body if isinstance(reply.body, dict) else {}
    version = body.get("version")
    return str(version)[:200] if version is not None else None
