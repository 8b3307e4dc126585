"""`xrt-smi validate`, as XRT prints it.

Xilinx/XRT `src/runtime_src/core/tools/xbutil2/SubCmdValidate.cpp` (2.20 to master):
``Validate Device           : [BDF]`` with ``    Platform              : <name>`` (and
Power Mode ...), each test as ``Test N [BDF]     : <name>`` followed by its log lines
``    Details|Warning(s)|Error(s)   : <text>`` (continuation lines indented without a
label), ``    Test Status           : [PASSED|FAILED|SKIPPED]`` (``[PASSED WITH
WARNINGS]``), then ``Validation failed`` or ``Validation completed``. The deep-runlist
tests are `runlist-latency` and `runlist-throughput` (`cmd-chain-latency` and
`cmd-chain-throughput` before: one runlist of 1000 NOP runs, STACK.md 8); a failure
of those is XRT's own deep runlist failing on that machine.
"""

from __future__ import annotations

import re

from harness.logs.error_lines import find_error_lines
from harness.report.diagnosis.artefacts.artefact_text import ArtefactText, Claim
from harness.report.diagnosis.sign_rules import signs_of_error
from harness.report.diagnosis.vocabulary import Fact, Observed

KIND = "xrt-smi-validate"
RUNLIST_TESTS = ("runlist-latency", "runlist-throughput", "cmd-chain-latency",
                 "cmd-chain-throughput")
_DEVICE = re.compile(r"^Validate Device\s*: \[(?P<bdf>[^\]]+)\]")
_PLATFORM = re.compile(r"^\s+Platform\s*: (?P<name>.+?)\s*$")
_DEVICE_ROW = re.compile(r"^\s{4}(?:SC Version|Platform ID|Power Mode|Estimated Power)\s*: ")
_TEST = re.compile(r"^Test \d{1,3} \[[^\]]*\]\s*: (?P<name>\S+)")
_LOG = re.compile(r"^\s{4}(?P<label>Details|Warning\(s\)|Error\(s\)|Description|Xclbin|"
                  r"Testcase|DPU-Sequence|Benchmarks)?\s*:?\s+(?P<text>.*)$")
_STATUS = re.compile(r"^\s+Test Status\s*: \[(?P<status>PASSED|FAILED|SKIPPED)"
                     r"(?: WITH WARNINGS)?\]")
_END = re.compile(r"^Validation (?:failed|completed)")


def parse(text: ArtefactText, free: set[int], observed: Observed) -> Claim | None:
    order = sorted(free)
    if not any(_TEST.match(text.lines[i]) or _DEVICE.match(text.lines[i]) for i in order) \
            or not any(_STATUS.match(text.lines[i]) for i in order):
        return None
    claim = Claim("xrt-smi validate")
    test: str | None = None
    errors: list[tuple[int, str]] = []       # the current test's Error(s) lines
    label = ""
    for index in order:
        line = text.lines[index]
        if _DEVICE.match(line) or _END.match(line) or set(line.strip()) == {"-"}:
            claim.lines.add(index)
            test = None
            continue
        if _DEVICE_ROW.match(line) and test is None:
            claim.lines.add(index)
            continue
        platform = _PLATFORM.match(line)
        if platform and test is None:
            claim.lines.add(index)
            if observed.stack.npu is None:
                observed.stack.npu = Fact(platform["name"], text.cite(index))
            continue
        named = _TEST.match(line)
        if named:
            test, errors, label = named["name"], [], ""
            claim.lines.add(index)
            continue
        status = _STATUS.match(line)
        if status and test is not None:
            claim.lines.add(index)
            _status(text, index, test, status["status"], observed)
            _errors(text, errors, observed)
            test = None
            continue
        log = _LOG.match(line) if test is not None else None
        if log:
            claim.lines.add(index)
            if log["label"] == "Error(s)" or (not log["label"] and label == "Error(s)"
                                               and errors):
                # XRT wraps a log line at 60 characters: a continuation joins its line
                if log["label"]:
                    errors.append((index, log["text"]))
                else:
                    errors[-1] = (errors[-1][0], f"{errors[-1][1]} {log['text']}")
            label = log["label"] or label
    return claim if claim.lines else None


def _status(text: ArtefactText, index: int, test: str, status: str,
            observed: Observed) -> None:
    deep = test in RUNLIST_TESTS
    if status == "FAILED":
        observed.sign("runlist-test-failed" if deep else "validate-failed",
                      text.cite(index, test), test=test)
    elif status == "PASSED":
        observed.sign("runlist-test-passed" if deep else "validate-passed",
                      text.cite(index, test), test=test)


def _errors(text: ArtefactText, lines: list[tuple[int, str]], observed: Observed) -> None:
    """What a failed test's Error(s) lines say, as signs."""
    for index, body in lines:
        for error in find_error_lines([body]):
            for kind, facts in signs_of_error(error):
                observed.sign(kind, text.cite(index), **facts)
