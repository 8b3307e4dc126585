"""A recorded program's output as it comes: its first and last lines, every error line in
it recognised (`harness.logs.error_lines`: FastFlowLM's JSON error and ``[ERROR]`` line,
XRT's runlist and command failures, a C++ terminate, a Python traceback, the shim's failed
ioctls), and when each arrived, in seconds from the program's start.

Memory stays bounded whatever the program prints: the lines are read in windows of
`WINDOW` lines kept twice over, and an error is recognised in the window it starts in (an
error spans fewer lines than a window: a traceback's frames are read up to 400 lines,
`error_lines`), so one that straddles two windows is read whole.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from harness.logs.error_lines import MAX_LINE, ErrorLine, find_error_lines, plain

HEAD_LINES = 60                 # the program's first lines, kept
TAIL_LINES = 200                # and its last
MAX_ERRORS = 20
WINDOW = 500                    # lines an error is looked for in at once (twice over)


@dataclass(frozen=True)
class SeenError:
    """An error the program printed: what `find_error_lines` made of it, the line as it
    was printed (its first), and when it arrived (seconds from the program's start)."""

    error: ErrorLine
    text: str
    at_s: float

    def to_json(self) -> dict[str, Any]:
        found = self.error
        out: dict[str, Any] = {"line": found.line, "carrier": found.carrier,
                               "message": found.message, "at_s": round(self.at_s, 3)}
        if found.end != found.line:
            out["end"] = found.end
        for name in ("xrt", "state", "exception", "ioctl", "errno"):
            value = getattr(found, name)
            if value is not None:
                out[name] = value
        return out


@dataclass
class ProgramOutput:
    """The lines a program printed, as they come (`add`), and what was made of them."""

    head: list[str] = field(default_factory=list)
    tail: deque[tuple[int, str]] = field(default_factory=lambda: deque(maxlen=TAIL_LINES))
    errors: list[SeenError] = field(default_factory=list)
    lines: int = 0
    errors_past_cap: int = 0
    _window: list[tuple[float, str]] = field(default_factory=list)
    _window_start: int = 1        # the number of the window's first line

    def add(self, line: str, at_s: float) -> None:
        """One line the program printed, `at_s` seconds after it started."""
        text = plain(line)[:MAX_LINE]
        self.lines += 1
        if len(self.head) < HEAD_LINES:
            self.head.append(text)
        self.tail.append((self.lines, text))
        self._window.append((at_s, text))
        if len(self._window) >= 2 * WINDOW:
            self._read(upto=WINDOW)

    def finish(self) -> None:
        """The program is done: what is left of the window is read."""
        self._read(upto=len(self._window))

    def _read(self, upto: int) -> None:
        """The errors that start in the window's first `upto` lines; those lines dropped."""
        texts = [text for _, text in self._window]
        cut = upto                  # an error read here is dropped whole, its end too
        for found in find_error_lines(texts):
            first = found.line - 1
            if first >= upto:
                break
            cut = max(cut, found.end)
            if len(self.errors) >= MAX_ERRORS:
                self.errors_past_cap += 1
                continue
            shifted = ErrorLine(found.line + self._window_start - 1,
                                found.end + self._window_start - 1, found.carrier,
                                found.message, found.xrt, found.state, found.exception,
                                found.ioctl, found.errno)
            self.errors.append(SeenError(shifted, texts[first], self._window[first][0]))
        del self._window[:cut]
        self._window_start += cut

    def shown(self) -> tuple[list[str], int]:
        """The lines a report keeps: the first and the last, and how many between were not
        kept."""
        if self.lines <= HEAD_LINES + TAIL_LINES:
            kept = self.head + [text for number, text in self.tail if number > len(self.head)]
            return kept, 0
        return self.head + [text for _, text in self.tail], \
            self.lines - HEAD_LINES - TAIL_LINES

    def to_json(self) -> dict[str, Any]:
        lines, omitted = self.shown()
        out: dict[str, Any] = {"lines": lines, "total": self.lines}
        if omitted:
            out["omitted"] = omitted
            out["omitted_after"] = HEAD_LINES
        return out

    def errors_json(self) -> list[dict[str, Any]]:
        return [seen.to_json() for seen in self.errors]
