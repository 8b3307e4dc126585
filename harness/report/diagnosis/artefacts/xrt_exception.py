"""XRT's exception text as a program prints it when it does not catch it: a C++
program's ``terminate called after throwing an instance of 'xrt::runlist::aie_error'``
with ``  what():  runlist failed execution (ERT_CMD_STATE_TIMEOUT)`` and XRT's health
lines after it, a Python traceback ending in pyxrt's ``RuntimeError: ...``, or XRT's
message on a line of its own (the texts are `harness.logs.error_lines`'). A program's own
message that only names a command state (``RuntimeError: dispatch state=...TIMEOUT``) is
not XRT's text: the application console reads it.
"""

from __future__ import annotations

from harness.logs.error_lines import (
    CPP_TERMINATE,
    PYTHON_EXCEPTION,
    STATE_NAMED,
    XRT_TEXT,
    find_error_lines,
)
from harness.report.diagnosis.artefacts.artefact_text import ArtefactText, Claim
from harness.report.diagnosis.sign_rules import signs_of_error
from harness.report.diagnosis.vocabulary import Observed

KIND = "xrt-exception"
_AS = {CPP_TERMINATE: "a C++ program's uncaught exception (terminate, what())",
       PYTHON_EXCEPTION: "a Python traceback (pyxrt)", XRT_TEXT: "XRT's error text"}


def parse(text: ArtefactText, free: set[int], observed: Observed) -> Claim | None:
    found = [e for e in find_error_lines(text.lines) if e.carrier in _AS
             and e.xrt != STATE_NAMED and all(i in free for i in range(e.line - 1, e.end))]
    if not found:
        return None
    carriers = sorted({e.carrier for e in found}, key=list(_AS).index)
    claim = Claim("; ".join(_AS[c] for c in carriers))
    for error in found:
        claim.lines |= set(range(error.line - 1, error.end))
        for kind, facts in signs_of_error(error):
            observed.sign(kind, text.cite(error.line - 1), **facts)
    return claim
