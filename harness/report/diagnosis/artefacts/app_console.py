"""An application's console: the error lines no other parser took (FastFlowLM's
``[ERROR]`` or JSON error inside another program's output, for one) and how the program
ended when it crashed: the shell's ``Segmentation fault (core dumped)``, ``Aborted``,
``Killed``, ``Bus error``, ``Illegal instruction``, ``Floating point exception`` (bash
`siglist.c`; zsh prints them in lower case after ``zsh:``), CPython's ``Fatal Python
error: ...``, a Rust program's ``thread 'main' panicked at`` (its default panic hook), and
xrt-capture's ``Application exited with code N``; a program's own ``ERROR: ...`` line (its
own words for a failure, read as one); a tool that found no NPU
(``No NPU device found``, amdgpu_top's ``There are no the XDNA NPU devices found.``), and a
client that could not reach its server (`sign_rules.signs_of_text`: curl's, glibc's and the
Python clients' own texts).
"""

from __future__ import annotations

import re

from harness.logs.error_lines import find_error_lines
from harness.report.diagnosis.artefacts.artefact_text import ArtefactText, Claim
from harness.report.diagnosis.sign_rules import signs_of_error, signs_of_text
from harness.report.diagnosis.vocabulary import Observed

KIND = "app-console"
_CRASH = re.compile(r"^(?:.*\s)?(?:Segmentation fault|Aborted|Bus error|Illegal instruction|"
                    r"Floating point exception|Killed)(?: \(core dumped\))?(?:\s.*)?$|"
                    r"^zsh: (?:segmentation fault|abort|bus error|illegal hardware "
                    r"instruction|floating point exception|killed)\b|^Fatal Python error: |"
                    r"\(core dumped\)|^thread '[^']{0,80}' panicked at ")
_EXITED = re.compile(r"^Application exited with code (?P<code>-?\d{1,4})$")
_NO_NPU = re.compile(r"\b[Nn]o (?:the )?(?:AMD )?(?:XDNA\d? )?NPU devices? (?:was )?(?:found|"
                     r"present|detected)")
MAX_SHORT = 200                  # a longer line is output, not a program's last words
# a program's own report of an error, on a line of its own (``ERROR: ...``, ``Error: ...``,
# ``error: ...``, a test's ``TEST FAILED``): a failure, whatever it names
_OWN_ERROR = re.compile(r"^(?:ERROR|Error|error|FATAL|Fatal): \S|^TEST FAILED\b")


def parse(text: ArtefactText, free: set[int], observed: Observed) -> Claim | None:
    claim = Claim("an application's console")
    for error in find_error_lines(text.lines):
        if all(i in free for i in range(error.line - 1, error.end)):
            claim.lines |= set(range(error.line - 1, error.end))
            for kind, facts in signs_of_error(error):
                observed.sign(kind, text.cite(error.line - 1), **facts)
    for index in sorted(free - claim.lines):
        line = text.lines[index].strip()
        exited = _EXITED.match(line)
        if exited and int(exited["code"]) != 0:
            claim.lines.add(index)
            observed.sign("app-crash", text.cite(index), code=int(exited["code"]))
        elif _CRASH.search(line) and len(line) < MAX_SHORT:
            claim.lines.add(index)
            observed.sign("app-crash", text.cite(index))
        elif _NO_NPU.search(line) and len(line) < MAX_SHORT:
            claim.lines.add(index)
            observed.sign("no-device", text.cite(index))
        elif _OWN_ERROR.match(line) and len(line) < MAX_SHORT:
            claim.lines.add(index)
            observed.sign("exception", text.cite(index), carrier="app")
        else:
            for kind, facts in signs_of_text(line):
                claim.lines.add(index)
                observed.sign(kind, text.cite(index), **facts)
    return claim if claim.lines else None
