"""A report written to disk redacted, as its render and bundle are (issue 54): users attach
the YAML itself to public issues, so the host name, machine id, user, home folders,
serials, addresses and secrets never reach the file unless the run was asked not to
redact (`--no-redact`).

The writer redacts at the one boundary where the report becomes bytes: the header when
it is (re)written, and each journal entry as it is appended, learning first what that
entry gives away (`Redactor.learn_trial`). What the run holds in memory stays as it was;
what it reads back from the file is the redacted text. A journal line with nothing to
replace is written as it was made (one scan, `Redactor.untouched`).

A continued report keeps its placeholders: this machine's names are learned first, so on
the machine that began the report they take the placeholders they took then, and every
new name is numbered after the highest the file already holds. Whether this is that
machine is told by a keyed hash of its machine id and the run's id (`redaction.machine`),
as machine-id(5) asks an application to identify a machine: the report holds no machine
id, and two reports of one machine do not share the tag.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from harness.model.errors import RedactionFault
from harness.report.model import mapping
from harness.report.placeholders import garbled
from harness.report.redact import Redactor, machine_tag

SECTION = "redaction"
_PLACED = re.compile(rb"<(hostname|domain|user|machine-id|serial|uuid|mac|ip|email|token|wwn|"
                     rb"ssid)(?:-(\d{1,9}))?>")
_BLOCK = 1 << 20
# what a key naming a serial holds (harness.report.redact SERIAL_KEY), lowercased
_SERIAL_KEYS = (b"serial", b"service_tag", b"asset_tag")


class WriteRedaction:
    """How one report file is redacted as it is written."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor

    @classmethod
    def for_new(cls, header: dict[str, Any]) -> WriteRedaction:
        """For a report about to be written first: this machine's names, then the header's."""
        redactor = Redactor.of_this_machine()
        redactor.learn(header)
        return cls(redactor)

    @classmethod
    def for_continued(cls, path: Path, header: dict[str, Any]) -> WriteRedaction:
        """For a redacted report that goes on: its placeholders kept (this machine's names
        as they were, where this is the machine that began it), new ones after them."""
        recorded = mapping(header.get(SECTION)).get("machine")
        same = recorded is not None and recorded == machine_tag(str(header.get("run_id")))
        redactor = Redactor()
        numbers = placeholder_numbers(path)
        if same:
            redactor.learn_machine()
            redactor.continue_numbering(numbers)
        else:
            # another machine's names: numbered after every placeholder of the first's
            redactor.continue_numbering(numbers)
            redactor.learn_machine()
        redactor.learn(header)
        return cls(redactor)

    def header(self, header: dict[str, Any]) -> dict[str, Any]:
        """The header as the file holds it; refused (a bug of the redaction, never a user's)
        where a placeholder would stand in the harness's own fields."""
        shown = self.redactor.data(header)
        problems = garbled(shown)
        if problems:
            raise RedactionFault(f"the redacted report would be garbled ({problems[0]}); "
                                 "this is a bug of the harness's redaction: please report "
                                 "it, and run with --no-redact meanwhile")
        return shown

    def line(self, line: bytes) -> bytes:
        """One journal line (`- {json}\\n`) as the file holds it."""
        raw = line[2:]
        redactor = self.redactor
        entry = None
        low = raw.lower()
        if any(key in low for key in _SERIAL_KEYS):
            # a serial under a key of the entry's own: learned from the entry parsed
            entry = json.loads(raw)
            if "trial" in entry:
                redactor.learn_trial(mapping(entry["trial"]), raw)
            else:
                redactor.learn_raw(raw, low)
                redactor.learn_serials(entry)
        else:
            redactor.learn_raw(raw, low)
        if redactor.untouched(raw, low):
            return line
        entry = entry if entry is not None else json.loads(raw)
        from harness.report.fileformat import entry_line
        shown = redactor.data(entry)
        kind = next(iter(shown))
        return entry_line(kind, shown[kind])

    def journal(self, lines: bytes) -> bytes:
        return b"".join(self.line(line) for line in lines.splitlines(keepends=True))


def placeholder_numbers(path: Path) -> dict[str, int]:
    """The highest number of each kind of placeholder a file holds (`<hostname>` counts 1),
    read a block at a time."""
    numbers: dict[str, int] = {}
    tail = b""
    try:
        with open(path, "rb") as source:
            while block := source.read(_BLOCK):
                window = tail + block
                for match in _PLACED.finditer(window):
                    kind = match.group(1).decode()
                    number = int(match.group(2) or 1)
                    numbers[kind] = max(numbers.get(kind, 0), number)
                tail = window[-32:]
    except OSError:
        pass
    return numbers
