"""Text that came from other programs and files, made safe to show: control characters
(ESC and the rest of C0, DEL, C1) written as escapes (`\\x1b`), line ends and tabs kept;
and the invisible characters that reorder or hide text (`\\u202e`).

`xrt-smi`, the kernel log, a runlist's message and a file's name are text the harness
does not choose; printed raw, an ESC sequence in them moves a terminal's cursor, rewrites
what was printed before it, or sets the window title, and pasted into an issue it is
invisible garbage. Unicode's bidirectional controls (U+202A-U+202E, U+2066-U+2069, the
marks U+200E, U+200F, U+061C) make a line read in another order than it is written
(the "Trojan Source" display attack, CVE-2021-42574; Unicode UAX #9), and the zero-width
and invisible characters (U+200B-U+200D, U+2060-U+2064, U+FEFF, U+00AD, U+180E) and the
line and paragraph separators (U+2028, U+2029) hide or break a word where a reader sees
none: each is written as its escape (`\\u202e`).
"""

from __future__ import annotations

import re

_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f"
                       "\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def escape_controls(text: str) -> str:
    if _CONTROLS.search(text) is None:
        return text
    return _CONTROLS.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 and code != 0xAD else f"\\u{code:04x}"
