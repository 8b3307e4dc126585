"""Where a path a redacted report recorded lies on this machine.

A report written redacted names its case, xclbins and libraries with placeholders where
the path held a private name (`/home/<user-1>/packs/attn.xclbin`, `/data/proj_<user-1>/`,
`~/cases/x.yaml` for root's home). Continuing it (`run --resume`, a search's `--replay`)
and bundling it must still find those files here. No record of the names is kept, so a
path is found as a person would find it: a folder whose name holds a placeholder is
looked for among the entries of the folder above it that fit the rest of its name, and
the caller keeps the one candidate whose sha256 is the one the report recorded, so a
candidate is never trusted for its name alone.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from harness.report.placeholders import PLACEHOLDER

MAX_CANDIDATES = 64
MAX_ENTRIES = 4096            # entries of one folder looked through for a name that fits


def on_this_machine(recorded: str) -> list[str]:
    """The paths `recorded` may stand for here: itself first, then each path made of
    existing entries that fit its placeholders (a leading `~` as /root, which redaction
    writes for it); at most MAX_CANDIDATES."""
    found = [recorded]
    path = "/root" + recorded[1:] if recorded.startswith("~/") else recorded
    if path != recorded:
        found.append(path)
    if PLACEHOLDER.search(path) and os.path.isabs(path):
        found += [str(p) for p in _fitting(Path(path))]
    return list(dict.fromkeys(found))[:MAX_CANDIDATES]


def fits(recorded: str, name: str) -> bool:
    """Whether the name `name` (of a file or folder here) is one `recorded` (a name as a
    redacted report holds it) may stand for: itself, or its placeholders standing for any
    name."""
    return recorded == name or (PLACEHOLDER.search(recorded) is not None
                                and _shape(recorded).match(name) is not None)


def _shape(part: str) -> re.Pattern[str]:
    return re.compile("".join(".+" if piece is None else re.escape(piece)
                              for piece in _pieces(part)) + r"\Z", re.DOTALL)


def _fitting(path: Path) -> list[Path]:
    """The existing paths whose every part fits `path`'s, its placeholders standing for
    any name."""
    bases = [Path(path.parts[0])]
    for part in path.parts[1:]:
        if not PLACEHOLDER.search(part):
            bases = [base / part for base in bases]
            continue
        shape = _shape(part)
        bases = [base / name for base in bases for name in _entries(base)
                 if shape.match(name)][:MAX_CANDIDATES]
        if not bases:
            return []
    return [base for base in bases if base.exists()]


def _pieces(part: str) -> list[str | None]:
    """A name's fixed pieces, and None where a placeholder stands."""
    out: list[str | None] = []
    at = 0
    for match in PLACEHOLDER.finditer(part):
        out += [part[at:match.start()], None]
        at = match.end()
    return [*out, part[at:]]


def _entries(folder: Path) -> list[str]:
    try:
        with os.scandir(folder) as listing:
            return [entry.name for _, entry in zip(range(MAX_ENTRIES), listing, strict=False)]
    except OSError:
        return []
