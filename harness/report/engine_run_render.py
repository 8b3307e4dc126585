"""A recorded run's report (`capture record`, its `engine_run` section) as `report render`
shows it, in Markdown for an issue and in plain text: what ran and how it ended, the error
lines it printed, the times, the time to failure against the driver's timer, what the
driver logged and traced over the window, XRT's capture, and the device afterwards.

Every line the simulated stack printed is marked SIMULATED (as a trial's are); times on the
simulated device's clock say so; a simulated report says so in its title already.
"""

from __future__ import annotations

from typing import Any

from harness.logs.kernel_log import mark_simulated
from harness.report.header import Timers, mappings, section
from harness.report.timing import AT_TIMER, class_words, duration_text, timer_text

MAX_LINES = 80
MAX_ERRORS = 10
SIMULATED_CLOCK = "simulated device"
TIMES = (("first_event", "first driver line or trace event"),
         ("timeout", "the driver's timeout"), ("error", "the program's first error"),
         ("end", "the program's end"), ("last_event", "last driver line or trace event"),
         ("window_closed", "the window closed"))


def stamp_text(stamp: dict[str, Any]) -> str:
    at = float(stamp.get("at_s") or 0.0)
    return f"+{at:.3f} s" + (" of simulated device time" if stamp.get("clock") ==
                             SIMULATED_CLOCK else "")


def ttf_line(ttf: dict[str, Any], timers: Timers | None) -> str:
    """The time to failure in words, against the driver's timer, or why it is not known."""
    if "ms" not in ttf:
        return f"not measured: {ttf.get('not_measured')} (the timeout: {ttf.get('timeout')})"
    clock = ("simulated device time" if ttf.get("clock") == SIMULATED_CLOCK
             else "the kernel's clock")
    kind = str(ttf.get("class"))
    timer = f" ({timer_text(timers)})" if timers is not None and kind != AT_TIMER else ""
    return (f"{duration_text(float(ttf['ms']))} on {clock}, {class_words(kind, timers)}"
            f"{timer}: from {ttf.get('from')} to {ttf.get('to')}")


def ended_text(run: dict[str, Any]) -> str:
    program = section(run.get("program"))
    if run.get("mode") == "attach":
        return f"the window closed {program.get('window') or 'when asked'}"
    said = str(program.get("ended") or "ended")
    return (f"{program['stopped']}; it {said}" if program.get("stopped") else f"it {said}")


def device_text(device: dict[str, Any]) -> str:
    if device.get("answers") is True:
        recovery = section(device.get("recovery"))
        attempts, waited = recovery.get("attempts"), recovery.get("waited_s")
        # how long the check took is its attempts and wait, not its worker's deadline
        took = (f" after {attempts} attempt{'s' if attempts != 1 else ''} over {waited:g} s"
                if isinstance(attempts, int) and isinstance(waited, (int, float)) else "")
        return f"it answered: {recovery.get('status')}{took} ({recovery.get('what')})"
    if device.get("answers") is False:
        return (f"it did not answer: it is {device.get('state')}. What clears it: "
                f"{device.get('clears')}. What does not: {device.get('does_not_clear')}")
    return f"not checked: {device.get('not_checked')}"


def capture_text(capture: dict[str, Any]) -> str | None:
    if not capture:
        return None
    if not capture.get("asked"):
        return "not asked (--no-capture)"
    if not capture.get("written"):
        return f"asked, not written: {capture.get('why_not')}"
    deepest = section(capture.get("deepest"))
    return (f"replay.json with {capture.get('frames')} frames, {capture.get('runlists')} of "
            f"them runlists, the deepest {deepest.get('frame')} of {deepest.get('runs')} runs; "
            f"{capture.get('written_by')}")


def _lines(log: dict[str, Any], simulated: bool) -> list[str]:
    shown = [str(line) for line in log.get("lines") or []]
    return [mark_simulated(line) for line in shown] if simulated else shown


def _fenced(summary: str, lines: list[str], cell: Any, longest: Any) -> list[str]:
    text = "\n".join(lines[:MAX_LINES])
    fence = "`" * max(3, longest(text) + 1)
    more = len(lines) - MAX_LINES
    return ["<details>", f"<summary>{cell(summary)}</summary>", "", f"{fence}text", text,
            fence, *(["", f"{more} more lines are in the report."] if more > 0 else []),
            "", "</details>", ""]


def markdown(run: dict[str, Any], timers: Timers | None, simulated: bool, *,
             cell: Any, table: Any, longest: Any) -> list[str]:
    """The section as Markdown (`cell`, `table`, `longest`: the render's own helpers)."""
    lines = ["### The run the harness recorded", ""]
    rows = [["mode", "an attached window beside a running program"
             if run.get("mode") == "attach" else "a program the harness ran"]]
    if run.get("command"):
        rows.append(["command", " ".join(map(str, run["command"]))])
    rows += [["evidence from", str(run.get("evidence_from"))],
             ["how it ended", ended_text(run)]]
    captured = capture_text(section(run.get("capture")))
    if captured:
        rows.append(["XRT's capture", captured])
    ttf = section(run.get("time_to_failure"))
    if ttf:
        rows.append(["time to failure", ttf_line(ttf, timers)])
    rows.append(["device afterwards", device_text(section(run.get("device_after")))])
    lines += table(["", ""], rows) + [""]
    errors = mappings(run.get("errors"))
    if errors:
        lines += ["Error lines the program printed:", ""]
        lines += table(["line", "at", "carried by", "state", "message"],
                       [[str(e.get("line")), f"+{float(e.get('at_s') or 0):.3f} s",
                         str(e.get("carrier")), str(e.get("state") or "-"),
                         str(e.get("message")).splitlines()[0][:200]]
                        for e in errors[:MAX_ERRORS]]) + [""]
    times = section(run.get("times"))
    stamps = [[name, stamp_text(times[key]), str(times[key].get("what") or "")]
              for key, name in TIMES if section(times.get(key))]
    if stamps:
        lines += ["Times, from the program's start:", ""] + table(["", "at", "what"], stamps)
        lines += ["", cell(times.get("clock")) + "."
                  + (f" {cell(times['simulated_clock'])}." if times.get("simulated_clock")
                     else ""), ""]
    log = section(run.get("kernel_log"))
    if "unreadable" in log:
        lines += [f"Kernel log: not readable ({cell(log['unreadable'])}); "
                  f"{cell(log.get('fix'))}.", ""]
    elif _lines(log, simulated):
        shown = _lines(log, simulated)
        lines += _fenced(f"Kernel log over the window ({len(shown)} amdxdna/IOMMU lines from "
                         f"{log.get('source')})", shown, cell, longest)
    else:
        lines += [f"Kernel log ({cell(log.get('source'))}): the driver printed nothing "
                  "during the window.", ""]
    trace = section(run.get("trace_events"))
    if not trace.get("recording"):
        lines += [f"Driver trace events: not recorded ({cell(trace.get('why'))})"
                  + (f"; {cell(trace['fix'])}" if trace.get("fix") else "") + ".", ""]
    elif trace.get("lines"):
        lines += _fenced(f"Driver trace events over the window (from {trace.get('source')})",
                         [str(x) for x in trace["lines"]], cell, longest)
    device_log = section(section(run.get("device_after")).get("kernel_log"))
    if _lines(device_log, simulated):
        lines += _fenced("Kernel log during the check afterwards",
                         _lines(device_log, simulated), cell, longest)
    server = section(run.get("server"))
    if server:
        lines += server_markdown(server, cell)
    return lines


def server_markdown(server: dict[str, Any], cell: Any) -> list[str]:
    named = [f"pid {p.get('pid')} {p.get('command')} " + " ".join(map(str, p.get("args") or []))
             for p in mappings(server.get("processes"))]
    lines = ["The server watched: " + ("; ".join(cell(n) for n in named) if named
                                        else cell(server.get("note") or "none seen")) + "."]
    if server.get("version"):
        lines.append(f"Its version: {cell(server['version'])} "
                     f"({cell(server.get('version_from'))}).")
    return lines + [""]


def text(run: dict[str, Any], timers: Timers | None, simulated: bool) -> list[str]:
    """The section as plain text lines."""
    lines = ["", "the run the harness recorded:"]
    if run.get("command"):
        lines.append("  command: " + " ".join(map(str, run["command"])))
    lines += [f"  evidence from: {run.get('evidence_from')}", f"  ended: {ended_text(run)}"]
    for error in mappings(run.get("errors"))[:MAX_ERRORS]:
        lines.append(f"  error (line {error.get('line')}, +{float(error.get('at_s') or 0):.3f}"
                     f" s): {str(error.get('message')).splitlines()[0][:200]}")
    times = section(run.get("times"))
    for key, name in TIMES:
        if section(times.get(key)):
            lines.append(f"  {name}: {stamp_text(times[key])}")
    ttf = section(run.get("time_to_failure"))
    if ttf:
        lines.append(f"  time to failure: {ttf_line(ttf, timers)}")
    captured = capture_text(section(run.get("capture")))
    if captured:
        lines.append(f"  XRT's capture: {captured}")
    log = section(run.get("kernel_log"))
    if "unreadable" in log:
        lines.append(f"  kernel log: not readable ({log['unreadable']}); {log.get('fix')}")
    else:
        lines.append(f"  kernel log ({log.get('source')}): {len(log.get('lines') or [])} lines")
        lines += [f"    {line}" for line in _lines(log, simulated)[:MAX_LINES]]
    trace = section(run.get("trace_events"))
    lines.append(f"  trace events: {len(trace.get('lines') or [])} lines" if
                 trace.get("recording") else f"  trace events: not recorded ({trace.get('why')})")
    lines.append(f"  device afterwards: {device_text(section(run.get('device_after')))}")
    return lines
