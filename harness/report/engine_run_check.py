"""What `report check` holds a recorded run's report (`capture record`) to beyond its
schema: no line of the simulated stack without its SIMULATED mark (a line copied out of it
must never pass for a machine's), a time to failure whose class is what its time makes of
the report's driver timer, and a verdict that says the run failed exactly when its section
shows a failure."""

from __future__ import annotations

from typing import Any

from harness.logs.kernel_log import SIMULATED_MARK
from harness.report.engine_run_verdict import failed
from harness.report.header import read_timers
from harness.report.model import is_simulated, mapping
from harness.report.timing import classify

SECTION = "engine_run"


def problems(doc: dict[str, Any]) -> list[str]:
    """Each inconsistency of `doc`'s `engine_run` (none for any other report)."""
    run = mapping(doc.get(SECTION))
    if not run:
        return []
    found = []
    if is_simulated(mapping(doc.get("backend"))):
        for where, lines in ((f"{SECTION}.kernel_log.lines", mapping(run.get("kernel_log"))),
                             (f"{SECTION}.trace_events.lines",
                              mapping(run.get("trace_events"))),
                             (f"{SECTION}.device_after.kernel_log.lines",
                              mapping(mapping(run.get("device_after")).get("kernel_log")))):
            bare = [line for line in lines.get("lines") or []
                    if not str(line).startswith(SIMULATED_MARK + " ")]
            if bare:
                found.append(f"{where}: {len(bare)} line(s) of a simulated run without the "
                             f"{SIMULATED_MARK} mark (the first: {str(bare[0])[:80]!r})")
    ttf = mapping(run.get("time_to_failure"))
    timers = read_timers(doc.get("timers"))
    if isinstance(ttf.get("ms"), (int, float)) and timers is not None:
        told = classify(float(ttf["ms"]), timers)
        if ttf.get("class") != told:
            found.append(f"{SECTION}.time_to_failure.class: {ttf.get('class')!r}, but "
                         f"{ttf['ms']} ms against the report's driver timer is {told!r}")
    verdict = mapping(doc.get("verdict"))
    if "reproduced" in verdict and verdict["reproduced"] != failed(run):
        found.append(f"verdict.reproduced: {verdict['reproduced']}, but the run's section "
                     + ("shows a failure" if failed(run) else "shows none"))
    return found
