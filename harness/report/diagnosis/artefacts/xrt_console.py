"""XRT's own console output: the header its message dispatcher prints before the first
message of a process, and each message after it.

Xilinx/XRT `src/runtime_src/core/common/message.cpp` (`console_dispatch`, every tag from
2.20 to master): on the first message a process sends, stderr gets ``XRT build version:
<version>``, ``Build hash: <sha>``, ``Build date: <date>`` (``Build hash date:`` from
f8e923a4, 2026-03), ``Git branch: <branch>``, ``PID: <pid>``, ``UID: <uid>``,
``[<timestamp>]``, ``HOST: <host>`` and ``EXE: <path>``; then each message as ``[<tag>]
<SEVERITY>: <message>`` (``[XRT] ERROR: ...``, ``[xrt-smi] ERROR: ...``). A paste may carry
its own damage inside the header (``P ID:``, ``[ Sun ...]``): the header's lines are read by
their labels, in any order, after the version line.

The version line is XRT's own version (a build from source reads patch 0: 2.21.0). When the
program is xrt-smi (its ``EXE:`` line, or its command line pasted above it), the file is
xrt-smi's output that stopped before its report, read as xrt-smi's with the subcommand the
command line names (``xrt-smi validate``), or said to be unknown. The host, user and path in
the header are the user's: they are read, never quoted.
"""

from __future__ import annotations

import re

from harness.logs.error_lines import find_error_lines
from harness.report.diagnosis.artefacts.artefact_text import ArtefactText, Claim
from harness.report.diagnosis.sign_rules import signs_of_error
from harness.report.diagnosis.vocabulary import Observed

KIND = "xrt-console"
_VERSION = re.compile(r"^\s*XRT build version: (?P<version>\d[\w.\-]*)\s*$")
_HEADER = re.compile(r"^\s*(?:Build hash|Build (?:hash )?date|Git branch|P ?ID|UID|HOST|EXE)"
                     r"\s*:|^\s*\[[^\]]{0,60}\]\s*$")
_EXE = re.compile(r"^\s*EXE\s*: (?P<path>.*?)\s*$")
_HEADER_LINES = 12              # the header's eight lines after its version, and room
_MESSAGE = re.compile(r"^\s*\[(?P<tag>[\w.\- ]{1,40})\] (?P<severity>EMERGENCY|ALERT|CRITICAL|"
                      r"ERROR|WARNING|NOTICE|INFO|DEBUG): (?P<message>.*)$")
SMI = ("xrt-smi", "xbutil")
# message.cpp's severities that report a failure (xrt_core::message::severity_level)
FAILING = ("EMERGENCY", "ALERT", "CRITICAL", "ERROR")
_COMMAND = re.compile(r"(?:^|[$#>]\s+)(?:sudo\s+)?(?:\S*/)?(?P<tool>xrt-smi|xbutil)\s+"
                      r"(?P<sub>[a-z][a-z-]{1,20})\b")


def parse(text: ArtefactText, free: set[int], observed: Observed) -> Claim | None:
    order = sorted(free)
    taken: set[int] = set()
    program = None
    for index in order:
        version = _VERSION.match(text.lines[index])
        if version is None:
            continue
        taken.add(index)
        observed.stack.set("xrt", version["version"], text.cite(index))
        for after in (i for i in order if index < i <= index + _HEADER_LINES):
            if not _HEADER.match(text.lines[after]):
                break
            taken.add(after)
            exe = _EXE.match(text.lines[after])
            if exe:
                program = re.split(r"[\\/]", exe["path"])[-1] or None
    messages = {i: m for i in order if i not in taken and (m := _MESSAGE.match(text.lines[i]))}
    if not taken and not messages:
        return None
    for index, match in messages.items():
        taken.add(index)
        found = find_error_lines([match["message"]])
        for error in found:
            for kind, facts in signs_of_error(error):
                observed.sign(kind, text.cite(index), **facts)
        if not found and match["severity"] in FAILING:
            # XRT's own error in words no rule reads (a Windows status, a teardown that
            # failed): a failure all the same
            observed.sign("xrt-error", text.cite(index), tag=match["tag"],
                          severity=match["severity"])
    tool = program if program in SMI else None
    if tool is None:
        tool = next((str(m["tag"]) for m in messages.values() if m["tag"] in SMI), None)
    return Claim(_read_as(text, order, taken, tool, observed), taken)


def _read_as(text: ArtefactText, order: list[int], taken: set[int], tool: str | None,
             observed: Observed) -> str:
    """What the lines are: xrt-smi's output (its subcommand from its command line, which is
    taken too), else XRT's messages in another program's output."""
    if tool is None:
        return "XRT's messages (its header and [tag] SEVERITY lines)"
    if any(seen.startswith("xrt-smi ") for seen in observed.read_as):
        return "xrt-smi's messages from XRT"
    for index in order:
        command = _COMMAND.search(text.lines[index])
        if command and command["tool"] == tool:
            taken.add(index)
            return f"xrt-smi {command['sub']} (XRT's header and messages; no report followed)"
    return "xrt-smi (its subcommand not shown: XRT's header and messages; no report followed)"
