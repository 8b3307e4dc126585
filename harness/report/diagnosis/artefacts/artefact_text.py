"""A plain artefact's text as the parsers read it, and what each parser claims of it.

A file is read whole up to `MAX_BYTES` (what is past it is said, never silently dropped),
decoded as UTF-8 with undecodable bytes replaced, split into lines with ANSI colour codes
removed (FastFlowLM prints its errors in red). A file with NUL bytes is not text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.logs.error_lines import plain
from harness.report.diagnosis.vocabulary import Cite, quote

MAX_BYTES = 8 << 20
MAX_LINES = 200_000


@dataclass(frozen=True)
class ArtefactText:
    """A file's lines (index 0 is line 1) and whether it was cut."""

    file: str
    lines: list[str]
    cut: str | None = None          # why not all of it was read

    def cite(self, index: int, what: str = "line") -> Cite:
        return Cite(self.file, what, quote(self.lines[index]), index + 1)


@dataclass
class Claim:
    """What a parser read a file's lines as (``kernel log (dmesg -T)``) and which lines
    it took (indices); a parser's notes say what it could not read in them, and why."""

    read_as: str
    lines: set[int] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)


def load_text(path: str | Path) -> ArtefactText | str:
    """The file's text, or why it is not text a parser can read."""
    file = str(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as err:
        return f"cannot be read ({err.strerror})"
    if not data.strip():
        return "it is empty"
    if b"\x00" in data[:65536]:
        return "it is not text (it holds NUL bytes: a binary file)"
    cut = None
    if len(data) > MAX_BYTES:
        data = data[:MAX_BYTES]
        cut = f"only its first {MAX_BYTES >> 20} MiB were read"
    lines = data.decode("utf-8", "replace").split("\n")
    if len(lines) > MAX_LINES:
        lines = lines[:MAX_LINES]
        cut = f"only its first {MAX_LINES} lines were read"
    return ArtefactText(file, [plain(line) for line in lines], cut)
