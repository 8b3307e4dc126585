"""Plain artefacts a user already has, read into the diagnosis's vocabulary
(`harness.report.diagnosis.vocabulary`), each kind by one parser module, recognised by
its content (never by the file's name):

- `outcomes_table`: the typed outcomes table a user writes (per depth or per attempt);
- `flm_json`: FastFlowLM's JSON error body and `flm validate --json`;
- `smi_examine`, `smi_validate`: `xrt-smi examine` and `xrt-smi validate`;
- `xrt_console`: XRT's console header and messages (xrt-smi's that stopped before its
  report, or any program's);
- `flm_console`: `flm serve`, `flm run` and `flm validate` on the console;
- `trace_buffer`: the kernel's trace buffer (`cat /sys/kernel/tracing/trace`) with the
  amdxdna driver's events;
- `kernel_log_text`: `dmesg` (plain, -T, -r, -x), `journalctl -k`, bare driver lines;
- `xrt_exception`: XRT's exception text from C++ (terminate, what()) or Python;
- `app_console`: the error lines left and how an application crashed.

Every parser reads the lines no parser before it took (a console paste may hold a
kernel log, FastFlowLM's output and a traceback at once), fills the file's `Observed`
and says what it read the lines as. A file none of them recognises is not read, with why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from harness.model.drivers import FLAVOURS, KERNELS, driver_build, probed_build
from harness.report.diagnosis.artefacts import (
    app_console,
    flm_console,
    flm_json,
    kernel_log_text,
    outcomes_table,
    smi_examine,
    smi_validate,
    trace_buffer,
    xrt_console,
    xrt_exception,
)
from harness.report.diagnosis.artefacts.artefact_text import ArtefactText, load_text
from harness.report.diagnosis.vocabulary import Observed, artefact_observed
from harness.report.header import DriverTimer, Timers
from harness.report.timing import classify

PARSERS: tuple[ModuleType, ...] = (flm_json, outcomes_table, smi_examine, smi_validate,
                                   xrt_console, flm_console, trace_buffer, kernel_log_text,
                                   xrt_exception, app_console)
KINDS = tuple(parser.KIND for parser in PARSERS)
WHAT_IS_READ = ("a harness report, a kernel log (dmesg, journalctl -k), the kernel's trace "
                "buffer with amdxdna's events, FastFlowLM's "
                "output or JSON error, xrt-smi examine or validate, XRT's exception text, "
                "an application's console with XRT or FastFlowLM errors, or an outcomes "
                "table (docs/diagnosis.md)")


@dataclass(frozen=True)
class Unread:
    """A file the diagnosis could not read, and why."""

    file: str
    why: str


def read_artefact(path: str | Path) -> Observed | Unread:
    """One plain artefact, observed; or why it cannot be read."""
    text = load_text(path)
    if isinstance(text, str):
        return Unread(str(path), text)
    observed = artefact_observed(text.file)
    free = {i for i, line in enumerate(text.lines) if line.strip()}
    lines = len(free)
    for parser in PARSERS:
        claim = parser.parse(text, free, observed)
        if claim is None:
            continue
        free -= claim.lines
        taken = len(claim.lines)
        observed.read_as.append(f"{claim.read_as}: {taken} line" + ("s" if taken != 1 else "")
                                + "".join(f"; {note}" for note in claim.notes))
    if not observed.read_as:
        return Unread(text.file, f"none of its {lines} lines is {WHAT_IS_READ}")
    if free:
        # what no parser took is named, never dropped unsaid
        observed.read_as.append(f"{len(free)} line" + ("s" if len(free) != 1 else "")
                                + f" not read ({line_ranges(sorted(free))})")
    if text.cut:
        observed.read_as.append(text.cut)
    observed.lines = [("line", i + 1, line) for i, line in enumerate(text.lines)
                      if line.strip()]
    _timers(observed, text)
    return observed


def line_ranges(indices: list[int], most: int = 6) -> str:
    """0-based line indices as 1-based ranges: "line 4", "lines 1-3, 7"."""
    ranges: list[list[int]] = []
    for index in indices:
        if ranges and index == ranges[-1][1] + 1:
            ranges[-1][1] = index
        else:
            ranges.append([index, index])
    shown = [f"{a + 1}" if a == b else f"{a + 1}-{b + 1}" for a, b in ranges[:most]]
    more = ", ..." if len(ranges) > most else ""
    return ("line " if len(indices) == 1 else "lines ") + ", ".join(shown) + more


def flavour_of_drm(driver: str | None, kernel: str | None) -> str | None:
    """The flavour whose DRM version (`DriverBuild.drm_version`: staging 0.16, legacy 1.0,
    in-tree 0.x by release) a driver fact names (``DRM 0.6`` from flm validate,
    ``amdxdna_accel_driver 0.6.0`` from DRM's Initialized line), when only one has it."""
    match = re.search(r"(?:^DRM |accel_driver )(\d{1,3})\.(\d{1,3})", driver or "")
    if match is None:
        return None
    version = (int(match[1]), int(match[2]))
    series = re.match(r"\d+\.\d+", kernel or "")
    kernels = [series[0]] if series and series[0] in KERNELS else list(KERNELS)
    named = {flavour for flavour in FLAVOURS for k in kernels
             if driver_build(flavour, k).drm_version == version}
    return named.pop() if len(named) == 1 else None


def _timers(observed: Observed, text: ArtefactText) -> None:
    """The driver's timer, where the file tells the flavour and the kernel, and each
    outcome's time read against it."""
    kernel = observed.stack.value("kernel")
    observed.stack.flavour = observed.stack.flavour or flavour_of_drm(
        observed.stack.value("driver"), kernel)
    build = probed_build({"flavour": observed.stack.flavour}, kernel)
    if build is None:
        return
    observed.timers = Timers(driver=DriverTimer(
        flavour=build.flavour, kernel=build.kernel, earliest_s=build.earliest_seconds,
        latest_s=build.worst_seconds, source=f"the {build.flavour} driver on Linux {kernel}, "
                                             f"as {text.file} shows them"))
    for arm in observed.arms:
        if arm.timers is None:       # a row's own timer classified its times already
            arm.ttf = [(ms, classify(ms, observed.timers)) for ms, _ in arm.ttf]
