"""What `flm serve`, `flm run` and `flm validate` print on the console.

FastFlowLM prints ``[HEADER]  message`` (`header_print` and its coloured variants in
ROCm/FastFlowLM `src/include/utils/debug_utils.hpp`: the header in brackets, two spaces,
the message (one, where a web page showing the paste collapsed them); `header_print_r` in
red on stderr). `flm validate` (`sanity_check_npu_stack`,
`src/src/main.cpp`) prints ``[Linux]  Kernel: <release>`` (``Kernel Version:`` in its
first releases), ``[Linux]  NPU: /dev/accel/accel0 with 8 columns`` (earlier ``Found AMD
NPU at``), ``[Linux]  NPU FW Version: 1.1.2.64``, ``[Linux]  amdxdna version: 0.6`` (the
driver's DRM version), ``[Linux]  Memlock Limit: infinity`` (or ``N MB``, ``set to
infinity``, ``raised to N MB``), and its refusals as ``[ERROR]  ...``; a failed ioctl is
``[ERROR]  Error code: -1 on /dev/accel/accelN`` followed by perror's ``Failed to get
firmware version: <strerror>``. `flm serve`/`flm run` print ``[FLM]  Loading model:
<folder>``, ``FLM v<version>`` for `--version`, and errors as ``[ERROR]  Failed to load
model: <what()>`` or ``Error: <what()>``, and ``[FLM]  Stopping server...`` when `flm
serve` leaves its serve loop (told to exit: `main.cpp` before a0306cd, 2026-03). Only the
last part of a model folder is kept (the rest is the user's path, `/` or Windows' `\\`).
"""

from __future__ import annotations

import re

from harness.logs.error_lines import FLM_ERROR, find_error_lines
from harness.report.diagnosis.artefacts.artefact_text import ArtefactText, Claim
from harness.report.diagnosis.sign_rules import signs_of_error
from harness.report.diagnosis.vocabulary import Fact, Observed

KIND = "flm-output"
MEMLOCK_NEEDED_MB = 100          # flm validate raises a limit below 100 MiB (main.cpp)
# two spaces as FastFlowLM prints it, or one where a thread's page collapsed them
_HEADER = re.compile(r"^\s*\[(?P<header>FLM|Linux|Windows|ERROR|Error|error|Warning|WARNING|"
                     r"warning|info)\]  ?(?P<message>\S.*)$")
_OWN = ("FLM", "Linux", "Windows")
_VERSION = re.compile(r"^\s*FLM v(?P<version>\d[\w.\-]*)\s*$|^\s*\{\s*\"version\":\s*\""
                      r"(?P<json>\d[\w.\-]*)\"\s*\}\s*$")
_PERROR = re.compile(r"^Failed to get (?:firmware version|kernel version|memlock limit): "
                     r"(?P<why>.+)$")
_PLAIN_ERROR = re.compile(r"^Error: (?P<what>.+)$")
_FACTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("kernel", re.compile(r"^Kernel(?: Version)?: (?P<v>\S+)")),
    ("firmware", re.compile(r"^NPU FW Version: (?P<v>\d[\d.]*)")),
    ("driver", re.compile(r"^amdxdna version: (?P<v>\d+\.\d+)")),
    ("model", re.compile(r"^Loading model: (?P<v>.+?)\s*$")),
)
_NPU = re.compile(r"^NPU: (?P<node>/dev/accel/accel\d+) with (?P<cols>\d+) columns|"
                  r"^Found AMD NPU at (?P<found>/dev/accel/accel\d+)")
_MEMLOCK = re.compile(r"^Memlock Limit: (?P<mb>\d+) MB")
_STOPPING = re.compile(r"^Stopping server\.\.\.$")
_FOLDERS = re.compile(r"[\\/]")


def parse(text: ArtefactText, free: set[int], observed: Observed) -> Claim | None:
    headed = {i: m for i in sorted(free) if (m := _HEADER.match(text.lines[i]))}
    versions = {i: m for i in sorted(free) if (m := _VERSION.match(text.lines[i]))}
    if not versions and not any(m["header"] in _OWN for m in headed.values()):
        return None
    claim = Claim("FastFlowLM output (flm serve, run or validate)",
                  set(headed) | set(versions))
    stack = observed.stack
    for index, match in versions.items():
        stack.set("flm", match["version"] or match["json"], text.cite(index))
    for index, match in headed.items():
        message, cite = match["message"].strip(), text.cite(index)
        for factor, pattern in _FACTS:
            fact = pattern.match(message)
            if fact:
                value = _FOLDERS.split(fact["v"].rstrip("/\\"))[-1] if factor == "model" \
                    else ("DRM " + fact["v"] if factor == "driver" else fact["v"])
                stack.set(factor, value, cite)
        npu = _NPU.match(message)
        if npu and stack.npu is None:
            stack.npu = Fact(f"{npu['cols']} columns" if npu["cols"] else "present", cite)
        if match["header"] == "FLM" and _STOPPING.match(message):
            observed.sign("server-stopped", cite)
        memlock = _MEMLOCK.match(message)
        if memlock and int(memlock["mb"]) < MEMLOCK_NEEDED_MB:
            observed.sign("memlock-low", cite, limit_mb=int(memlock["mb"]))
        if index + 1 < len(text.lines) and index + 1 in free:
            why = _PERROR.match(text.lines[index + 1].strip())
            if why:
                claim.lines.add(index + 1)
                kind = "permission-denied" if "ermission denied" in why["why"] else "exception"
                observed.sign(kind, text.cite(index + 1), reason=why["why"])
    for error in find_error_lines(text.lines):
        if error.line - 1 in claim.lines and error.carrier == FLM_ERROR:
            for kind, facts in signs_of_error(error):
                observed.sign(kind, text.cite(error.line - 1), **facts)
    for index in sorted(free - claim.lines):
        plain_error = _PLAIN_ERROR.match(text.lines[index].strip())
        if plain_error:
            claim.lines.add(index)
            for error in find_error_lines([plain_error["what"]]):
                for kind, facts in signs_of_error(error):
                    observed.sign(kind, text.cite(index), **facts)
            if not find_error_lines([plain_error["what"]]):
                observed.sign("exception", text.cite(index), carrier="flm")
    return claim
