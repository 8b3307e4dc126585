"""What a command prints that gets pasted into an issue, redacted as a render is.

`diagnose` and `investigate` print diagnoses, the reports' paths, the steps taken and
lines quoted back from what they read (kernel logs, xrt-smi's output, an engine's error
text): all of it goes through one `Pasted` at the output layer, so that a line a reader
of artefacts adds later is redacted without its author doing anything. `Pasted` learns
what a render learns: this machine's names, and each report's (its header: host, user,
serials, home folders) or, for a plain artefact file, the names its text gives away;
`pasteable` is the same for one text. `--no-redact` makes it print everything as it is.

A line that is a command for the user to run (`report: PATH`, `diagnose: runlist-harness
diagnose PATH`, `next: runlist-harness run --resume PATH`) names the files they gave and
the report they got as they are called (`own`): a placeholder in it would name a file
that does not exist, and a shell reads `<user-1>` as a redirection. Everything else, the
evidence, is redacted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.formats.regular import read_regular
from harness.model.errors import HarnessError
from harness.report.redact import Redactor

# an artefact file is read this far for the names it gives away (a kernel log is smaller)
MAX_LEARNED_BYTES = 16 << 20
# a line that tells the user what to run or open: where a report is, the next command
COMMAND_LINE = re.compile(r"\s*(?:report|diagnose|next|bundle|run|then):\s|"
                          r".*\b(?:runlist-harness|reproduce_ert_timeout) ")


class Pasted:
    """One command's printed output, redacted with one set of placeholders (the same value
    gets the same placeholder in every line), or as it is when not `redact`."""

    def __init__(self, redact: bool = True, files: Iterable[str | Path] = ()) -> None:
        self.redact = redact
        self.redactor = Redactor()
        self.own: list[str] = []          # the user's own paths, as commands name them
        if redact:
            self.redactor.learn_machine()
            for file in files:
                self.learn_file(file)
                self.keep_in_commands(file)

    def keep_in_commands(self, path: str | Path) -> None:
        """Name `path` (a file the user gave, a report this command wrote) as it is in the
        lines that are commands for them."""
        if str(path) not in self.own:
            self.own.append(str(path))

    def learn_file(self, path: str | Path) -> None:
        """The names a file given to the command gives away: a report's header, else the
        text of an artefact (a kernel log, xrt-smi's output, an error). A file that cannot
        be read teaches nothing: the command says why it cannot read it."""
        if not self.redact:
            return
        from harness.report.reader import ReportReader
        try:
            with ReportReader(path) as reader:
                self.learn_document(reader.document(with_trials=False))
            return
        except (HarnessError, OSError, ValueError, TypeError):
            pass
        try:
            raw = read_regular(path, "file", limit=MAX_LEARNED_BYTES)
        except HarnessError:
            return
        self.redactor.learn_text(raw.decode("utf-8", "replace"))

    def learn_document(self, document: Any) -> None:
        """The names a report's document (or a part of one) gives away."""
        if self.redact:
            self.redactor.learn(document)

    def text(self, text: str) -> str:
        """`text` as it may be pasted: every line redacted, names it gives away included,
        but the user's own paths in a command for them."""
        if not self.redact or not text:
            return text
        self.redactor.learn_text(text)
        return "\n".join(self._line(line) for line in text.split("\n"))

    def _line(self, line: str) -> str:
        shown = self.redactor.text(line)
        if shown == line or not self.own or not COMMAND_LINE.match(line):
            return shown
        # longest first: a path that holds another is put back whole
        for path in sorted(self.own, key=len, reverse=True):
            redacted = self.redactor.text(path)
            if redacted != path:
                shown = shown.replace(redacted, path)
        return shown

    def data(self, data: Any) -> Any:
        """JSON-able `data` as it may be pasted (`--json`)."""
        if not self.redact:
            return data
        self.redactor.learn_strings(data)
        self.redactor.learn_serials(data)
        return self.redactor.data(data)


def pasteable(text: str, *, files: Iterable[str | Path] = (), redact: bool = True) -> str:
    """One text (a line quoted back from an artefact, say) as it may be pasted: redacted
    with what this machine and `files` give away."""
    return Pasted(redact, files).text(text)
