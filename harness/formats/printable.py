"""Text that came from other programs and files, made safe to show: control characters
(ESC and the rest of C0, DEL, C1) written as escapes (`\\x1b`), line ends and tabs kept.

`xrt-smi`, the kernel log, a runlist's message and a file's name are text the harness
does not choose; printed raw, an ESC sequence in them moves a terminal's cursor, rewrites
what was printed before it, or sets the window title, and pasted into an issue it is
invisible garbage.
"""

from __future__ import annotations

import re

_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def escape_controls(text: str) -> str:
    if _CONTROLS.search(text) is None:
        return text
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
