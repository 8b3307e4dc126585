"""The verdict of a recorded run's report (`capture record`): what failed, as the program,
the driver or the kernel said it (or that nothing did), its time to failure, and the device
afterwards; and whether the run failed at all, which `report check` holds the verdict to."""

from __future__ import annotations

from typing import Any

from harness.report.engine_run_render import ttf_line
from harness.report.header import Timers
from harness.report.model import mapping


def failed(section: dict[str, Any]) -> bool:
    """Whether the run failed: an error it printed, a timeout the driver named, or a
    program that did not exit with status 0."""
    program = mapping(section.get("program"))
    return bool(section.get("errors")) or bool(mapping(section.get("times")).get("timeout")) \
        or program.get("signal") is not None or program.get("exit_status") not in (None, 0)


def verdict(section: dict[str, Any], timers: Timers) -> dict[str, Any]:
    """The report's verdict: what failed (or that nothing did), its time to failure, and
    the device afterwards."""
    errors = section.get("errors") or []
    program = mapping(section.get("program"))
    times = mapping(section.get("times"))
    if errors:
        first = errors[0]
        message = str(first.get("message") or first.get("carrier")).splitlines()[0]
        answer = f"the program failed: {message}"
    elif times.get("timeout"):
        answer = f"the driver timed out during the run ({times['timeout']['what']})"
    elif program.get("signal"):
        answer = f"the program was ended by {program['signal']}"
    elif program.get("exit_status") not in (None, 0):
        answer = f"the program exited with status {program['exit_status']}"
    elif section.get("mode") == "attach":
        answer = "nothing failed in the window: no error the driver logged or traced"
    else:
        answer = "nothing failed: the program exited with status 0 and printed no error"
    reasons = []
    if program.get("ended"):
        reasons.append(f"it {program['ended']}")
    ttf = section.get("time_to_failure")
    if ttf and "ms" in ttf:
        reasons.append(f"time to failure: {ttf_line(ttf, timers)}")
    elif ttf:
        reasons.append(f"time to failure not measured: {ttf['not_measured']}")
    device = mapping(section.get("device_after"))
    if device.get("answers") is True:
        reasons.append("afterwards the device answered a NOP run on a fresh context")
    elif device.get("answers") is False:
        reasons.append(f"afterwards the device did not answer: it is {device.get('state')}; "
                       f"cleared by {device.get('clears')}")
    elif device.get("not_checked"):
        reasons.append(f"the device afterwards was not checked: {device['not_checked']}")
    return {"reproduced": failed(section), "answer": answer, "text": "\n".join(reasons)}
