"""A recorded run (`capture record`'s report, its `engine_run` section), read into the
diagnosis's vocabulary as the artefacts it holds would be read one by one: the program's
error lines and the driver's lines as signs (`sign_rules`, the same rules the artefact
parsers use), the driver's "job timedout" trace events, a program the kernel ended by a
signal, and one arm for the engine's own run (its commands, as deep as its capture's
deepest runlist where XRT captured it, failed or completed once, with its time to
failure where the trace gave the submit).

What the check afterwards made the driver print is read too (a restart that failed is
the driver's account of the device); its own error is not a sign of the run, but what it
found is: a device that answered it (no wedge, whatever the text implied) or one it found
wedged. Within each kernel log the lines from where a wedge begins are the wedge's, as in
a trial's log (`sign_rules.signs_of_events`). With
`--attach`, the server the window watched holds the NPU by design: the probe's "other
holders" that are only that server are not read as contention. The capture, where XRT
wrote one, is the report's own folder: the next experiment replays it
(`reproduce_ert_timeout --capture DIR`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.logs.error_lines import ErrorLine
from harness.model.results import COMPLETED_STATE
from harness.report.diagnosis.sign_rules import signs_of_error, signs_of_events
from harness.report.diagnosis.vocabulary import WORK, Arm, Cite, Observed, quote
from harness.report.header import mappings, section

SECTION = "engine_run"
MAX_LINES = 2000
# the errors that say a command failed on the device (harness.logs.error_lines)
DEVICE_FAILURES = ("runlist-failed", "command-failed", "unexpected-state")
TIMER_EVENTS = ("tdr_timeout", "no_progress", "timeout_capture", "context_dump",
                "timing_out_job")


def observe_engine_run(observed: Observed, run: dict[str, Any]) -> None:
    """Fill `observed` (a report's) from its `engine_run` section."""
    observed.case, observed.case_kind, observed.layers = "CASE", "engine-run", None
    capture = section(run.get("capture"))
    if capture.get("written"):
        folder = str(Path(observed.file).parent)
        observed.capture = folder
        observed.case, observed.case_kind = folder, "capture"
    errors = list(mappings(run.get("errors")))
    for index, error in enumerate(errors):
        found = _error_line(error)
        for kind, facts in signs_of_error(found):
            observed.sign(kind, observed.cite(f"{SECTION}.errors[{index}]",
                                              quote(found.message)), **facts)
    log = section(run.get("kernel_log"))
    device = section(run.get("device_after"))
    timeouts = _events(observed, log, section(device.get("kernel_log")))
    _device_after(observed, device)
    trace = section(run.get("trace_events"))
    timed_out = trace.get("timed_out")
    timed_out = timed_out if isinstance(timed_out, int) else 0
    program = section(run.get("program"))
    if program.get("signal") and not program.get("stopped"):
        observed.sign("app-crash", observed.cite(f"{SECTION}.program.signal",
                                                 program["signal"]), signal=program["signal"])
    if run.get("mode") == "attach":
        _server_is_no_other_holder(observed, section(run.get("server")))
    _arm(observed, run, capture, errors, timeouts + timed_out)
    texts = [(f"{SECTION}.errors[{i}].message", str(e.get("message"))) for i, e in
             enumerate(errors)]
    texts += [(f"{SECTION}.kernel_log.lines", str(line)) for line in log.get("lines") or []]
    room = MAX_LINES - len(observed.lines)
    observed.lines += [(name, None, text) for name, text in texts[:max(room, 0)]]


def _error_line(error: dict[str, Any]) -> ErrorLine:
    errno = error.get("errno")
    return ErrorLine(int(error.get("line") or 1), int(error.get("end") or error.get("line")
                                                      or 1),
                     str(error.get("carrier")), str(error.get("message") or ""),
                     error.get("xrt"), error.get("state"), error.get("exception"),
                     error.get("ioctl"), errno if isinstance(errno, int) else None)


def _events(observed: Observed, log: dict[str, Any], after: dict[str, Any]) -> int:
    """Signs of the driver's events over the run (`log`) and then the check after it
    (`after`), read in that order: from where a wedge begins, only its own lines; how many
    of the run's say its timer fired."""
    during = list(mappings(log.get("events")))
    ordered = during + list(mappings(after.get("events")))
    timeouts = 0
    for event, found in signs_of_events(ordered):
        position = next(i for i, e in enumerate(ordered) if e is event)
        where = "kernel_log" if position < len(during) else "device_after.kernel_log"
        timeouts += position < len(during) and event.get("event") in TIMER_EVENTS
        for kind, facts in found:
            observed.sign(kind, observed.cite(f"{SECTION}.{where}.events", event.get("event")),
                          **facts)
    return timeouts


def _device_after(observed: Observed, device: dict[str, Any]) -> None:
    """What the recovery check after the run found (harness.execution.device_after)."""
    state = quote(str(device.get("state") or ""))
    if device.get("answers") is True:
        observed.sign("device-answered", observed.cite(f"{SECTION}.device_after.state", state))
    elif device.get("answers") is False and device.get("wedged"):
        observed.sign("device-wedged", observed.cite(f"{SECTION}.device_after.state", state))


def _server_is_no_other_holder(observed: Observed, server: dict[str, Any]) -> None:
    watched = {p.get("pid") for p in mappings(server.get("processes"))}
    holders = {u.get("pid") for u in mappings(server.get("npu_holders"))}
    if watched and holders <= watched:
        observed.signs = [s for s in observed.signs if s.kind != "other-holders"]


def _arm(observed: Observed, run: dict[str, Any], capture: dict[str, Any],
         errors: list[dict[str, Any]], timeouts: int) -> None:
    """The engine's own run as one arm: failed on the device (an error naming a command's
    failure, or the driver's timeout), or completed (it exited 0 with no error)."""
    deepest = section(capture.get("deepest")).get("runs")
    runs = [deepest] if isinstance(deepest, int) and deepest > 0 else []
    arm = EngineRunArm(file=observed.file, position=0, name="engine", label="the engine's run",
                       workload=WORK, stand_in=False, group=f"{observed.file}#engine",
                       runs=runs)
    device = [e for e in errors if e.get("xrt") in DEVICE_FAILURES]
    program = section(run.get("program"))
    if device or timeouts:
        named = next((i for i, e in enumerate(errors) if e in device and e.get("state")), None)
        state = str(errors[named]["state"]) if named is not None else \
            "TIMEOUT" if timeouts else "failed"
        arm.state_from = f"errors[{named}].state" if named is not None else \
            "kernel_log.events" if timeouts else f"errors[{errors.index(device[0])}]"
        arm.failed, arm.states[state] = 1, 1
        arm.events["tdr_timeout"] += timeouts
        arm.failing_depths = list(runs)
        ttf = section(run.get("time_to_failure"))
        if isinstance(ttf.get("ms"), (int, float)) and ttf.get("class"):
            arm.ttf.append((float(ttf["ms"]), str(ttf["class"])))
    elif run.get("mode") == "command" and program.get("exit_status") == 0 and not errors:
        arm.completed, arm.states[COMPLETED_STATE] = 1, 1
    else:
        return
    observed.arms.append(arm)


@dataclass
class EngineRunArm(Arm):
    """The engine's own run: one arm whose facts are fields of the report's `engine_run`
    section, not of a plan's trials, and are cited where they are."""

    state_from: str = "errors"

    @property
    def where(self) -> str:
        return SECTION

    def cite(self, what: str, value: Any) -> Cite:
        field = self.state_from if what == "summary.by_state" else \
            what.removeprefix("trials[*].")
        return Cite(self.file, f"{SECTION}.{field}", str(value))
