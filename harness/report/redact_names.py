"""Where a learned name (a user, a host, a machine id, a serial) is replaced in text.

A name is replaced wherever it stands inside a token, whatever joins it to the rest:
`quill5_jupyter`, `/data/proj_quill5/`, `brisk-otter-77_vm`, `r_quill5.yaml`,
`zelda9-jupyter`, `QUILL5-box`, `myQuill5`. Each end of it must meet a join: the start or
end of the text, anything but a letter or a digit (`_`, `-`, `.`, `/`, a space), a letter
against a digit (`quill5x`, `2alice`), or a change of case into a capital (`aliceBox`,
`myAlice`). Two letters in one case (`malice`, `alicebox`) or two digits (`1987654321`
for the serial `987654321`) are one word or one number, not a name and its neighbour:
that is the rule for short and common names, which would otherwise be found inside
ordinary words. A name all of hexadecimal digits inside a longer run of them (a sha256,
a commit, a UUID) is part of that identity, not the name. Names that are words of the
harness writes (`harness.report.harness_words`) are replaced only where they stand
as names (a home folder, `~name`, `name@host`, `user=name`).

A host name takes the dotted labels after it (its domain: `box.lab.example.com` is one
name) up to a file's suffix (`r_box.yaml` keeps `.yaml`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

# suffixes of the files the harness writes and reads: a host's domain stops before one
FILE_SUFFIXES = frozenset({"yaml", "yml", "json", "md", "txt", "log", "gz", "tgz", "tar",
                           "recipes", "bundle", "xclbin", "elf", "bin", "sh", "csv", "html"})
HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
HEX_RUN = 16                 # a run of hex digits this long is an identity, not a name
NOTHING = r"(?!)"


def fold(name: str) -> str:
    return name.casefold()


def name_pattern(name: str) -> str:
    """A name as a lowercase pattern (matched in lowercased text, or ignoring case), Unicode
    case folding included (`ß`/`ss`, which a case-blind match alone does not join)."""
    folded, out, at = fold(name), [], 0
    while at < len(folded):
        if folded.startswith("ss", at):
            out.append("(?:ss|ß|ẞ)")
            at += 2
        else:
            out.append(re.escape(folded[at]))
            at += 1
    return "".join(out)


def joins(text: str, left: int, right: int) -> bool:
    """Whether text[left] and text[right] (either may lie outside the text) are two
    things joined, not one word or one number running on."""
    if left < 0 or right >= len(text):
        return True
    before, after = text[left], text[right]
    if before.isalpha() and after.isalpha():
        return before.islower() and after.isupper()          # camelCase
    return not (before.isdigit() and after.isdigit())


def inside_hex_run(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] is all hex digits and part of a longer run of them of at
    least HEX_RUN (a hash holds any short hex name by chance)."""
    if any(c not in HEX_DIGITS for c in text[start:end]):
        return False
    left, right = start, end
    while left > 0 and text[left - 1] in HEX_DIGITS:
        left -= 1
    while right < len(text) and text[right] in HEX_DIGITS:
        right += 1
    return right - left >= HEX_RUN and (left, right) != (start, end)


class NameMatcher:
    """The learned names as patterns: `literals` (folded name -> placeholder), the
    `positional` ones replaced only where they stand as names, and the `hosts`, which
    take their domain with them."""

    def __init__(self, literals: dict[str, str], positional: Iterable[str],
                 hosts: Iterable[str]) -> None:
        self.literals = literals
        self.positional = frozenset(positional)
        self.hosts = frozenset(hosts)
        names = sorted(literals, key=len, reverse=True)
        anywhere = "|".join(name_pattern(n) for n in names if n not in self.positional)
        self.word = re.compile(rf"({anywhere or NOTHING})((?:\.[A-Za-z0-9-]+)*)",
                               re.IGNORECASE)
        placed = "|".join(name_pattern(n) for n in names if n in self.positional) or NOTHING
        self.placed = re.compile(
            r"(~|@|//|\b(?:user(?:name)?|login|owner|logname|sudo_user|host(?:name)?)"
            rf"\s*[=:]\s*[\"']?)({placed})(?![\w-])|"
            rf"(?<![\w.-])({placed})(?=@[\w-])", re.IGNORECASE)
        # searched in the lowercased text (a name's pattern is lowercase)
        self.every = [name_pattern(n) for n in names]
        self.seen = re.compile("|".join(self.every) or NOTHING)

    def replace(self, value: str, structured: bool) -> str:
        """The names replaced where they stand joined to the rest (but in the harness's own
        fields), and the positional ones where they stand as names."""
        if not structured:
            value = self.word.sub(self._joined, value)
        if self.positional:
            value = self.placed.sub(self._placed, value)
        return value

    def _joined(self, match: re.Match[str]) -> str:
        text, start, end = match.string, match.start(1), match.end(1)
        if not (joins(text, start - 1, start) and joins(text, end - 1, end)) or \
                inside_hex_run(text, start, end):
            return _unchanged_name(match, self._joined)
        name, domain = fold(match.group(1)), match.group(2)
        if name not in self.hosts:
            return self.literals[name] + domain
        labels = domain.split(".")[1:]
        kept = next((i for i, label in enumerate(labels) if label.lower() in FILE_SUFFIXES),
                    len(labels))
        # a host name takes its domain with it ("box.lab.example.com" is one name)
        return self.literals[name] + "".join(f".{label}" for label in labels[kept:])

    def _placed(self, match: re.Match[str]) -> str:
        if match.group(2) is not None:
            return match.group(1) + self.literals[fold(match.group(2))]
        return self.literals[fold(match.group(3))]


def _unchanged_name(match: re.Match[str], again: Callable[[re.Match[str]], str]) -> str:
    """A name found where it is no name (inside a word): itself, and the dotted labels the
    match took after it searched again (`malice.quill5` still holds a name)."""
    domain = match.group(2)
    if not domain:
        return match.group(1)
    pattern = match.re
    return match.group(1) + pattern.sub(again, domain)
