"""Which stack wrote a capture folder: a machine's XRT, the SIMULATED stack's writer, or
real XRT over the EMULATED device.

replay.json itself stays as XRT writes it (the simulator's matches XRT 2.26's byte for
byte), so the mark is a file beside it, `harness-origin.json`, which XRT's replay never
reads (it opens replay.json and the artefacts replay.json names). A folder without the
mark is taken as a machine's XRT's: the harness cannot tell otherwise, and says what it
takes it for.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.formats.regular import read_regular
from harness.formats.yamlio import write_atomic
from harness.model.errors import BadInput

ORIGIN_FILE = "harness-origin.json"
MAX_MARK_BYTES = 64 << 10
MACHINE = "XRT"
SIMULATED = "SIMULATED"
EMULATED = "EMULATED"


@dataclass(frozen=True)
class CaptureOrigin:
    stack: str                    # MACHINE (no mark), SIMULATED or EMULATED
    profile: str | None = None    # the simulated or emulated stack's profile

    @property
    def marked(self) -> bool:
        return self.stack != MACHINE

    def captured_by(self) -> str:
        """How a report says who captured the commands."""
        if self.stack == SIMULATED:
            return "as the SIMULATED stack captured them"
        if self.stack == EMULATED:
            return "as real XRT captured them over the EMULATED device"
        return "as XRT captured them"


def mark_capture(folder: Path, stack: str, profile: str | None) -> None:
    """Mark `folder` as written by `stack` (SIMULATED or EMULATED), with its profile."""
    text = json.dumps({"written_by": stack, "profile": profile,
                       "note": "written by xdna-runlist-harness beside an XRT capture: "
                               "the capture is not a machine's"}, indent=2) + "\n"
    write_atomic(folder / ORIGIN_FILE, text)


def capture_origin(folder: Path) -> CaptureOrigin:
    """The folder's mark (none: a machine's XRT)."""
    path = folder / ORIGIN_FILE
    if not os.path.lexists(path):
        return CaptureOrigin(MACHINE)
    # a plain file of a few lines: a FIFO or /dev/zero in its place is refused, not read
    raw = read_regular(path, "capture's mark", limit=MAX_MARK_BYTES).decode("utf-8", "replace")
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    stack = data.get("written_by") if isinstance(data, dict) else None
    if stack not in (SIMULATED, EMULATED):
        raise BadInput(f"{path}: not a capture's mark (expected written_by SIMULATED or "
                       "EMULATED); remove the file if the capture is a machine's")
    profile = data.get("profile")
    return CaptureOrigin(stack, profile if isinstance(profile, str) else None)


def contradicted_claim(captured: dict[str, Any]) -> str | None:
    """What is wrong with a report's record of a capture (its case's `captured`) that says
    a machine's XRT wrote it (`written_by` XRT, or absent as before the mark existed) while
    the folder, still here with the same replay.json, is marked otherwise; None where the
    claim holds or cannot be told (the folder gone, or its replay.json another)."""
    claimed = captured.get("written_by") or MACHINE
    folder = captured.get("folder")
    if claimed != MACHINE or not isinstance(folder, str) or not folder:
        return None
    try:
        origin = capture_origin(Path(folder))
        if not origin.marked:
            return None
        digest = hashlib.sha256((Path(folder) / "replay.json").read_bytes()).hexdigest()
    except (BadInput, OSError):
        return None
    if digest != captured.get("replay_sha256"):
        return None
    return (f"case.captured says the capture is a machine's XRT's, but {folder}'s "
            f"{ORIGIN_FILE} says {origin.stack} (profile {origin.profile or '?'}) wrote it: "
            "a simulated or emulated capture is never a machine's")
