"""Which files of an existing export folder (a report's REPORT.recipes/) the export wrote,
so that --force replaces them and nothing a user put beside them.

An export's README names every other file it wrote with its size and sha256
(`recipe_export._readme`); a file is the export's when the README lists it and its bytes
still hash to what the README says. A file the README names as not included (an xclbin
the user was asked to copy in) is the user's copy, and so is anything else: the folder is
then refused, not emptied (`harness.formats.owned_folder`).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from harness.formats.owned_folder import clear_owned, foreign
from harness.formats.regular import read_regular
from harness.model.errors import BadInput, HarnessError

README = "README.md"
MARK = "Written by xdna-runlist-harness from "
# a file line of the README's Files section: - `name` (N bytes, sha256 HEX)
_LISTED = re.compile(r"^- `([^`/]+)` \((\d+) bytes, sha256 ([0-9a-f]{64})\)$", re.MULTILINE)


def listing_line(name: str, data: bytes) -> str:
    """A file's line in the README's Files section."""
    return f"- `{name}` ({len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()})"


def relisted(readme: str, shipped: dict[str, tuple[str, bytes]]) -> str:
    """The README with the lines of the files in `shipped` (listed name -> the name and
    bytes it is shipped under, redacted) saying what is shipped."""
    def one(match: re.Match[str]) -> str:
        found = shipped.get(match.group(1))
        return match.group(0) if found is None else listing_line(*found)
    return _LISTED.sub(one, readme)
MAX_README = 4 << 20
KIND = "the recipes an export wrote"


def listed_files(folder: Path, *, strict: bool = True) -> dict[str, tuple[int, str]] | None:
    """The files the export's README lists (name -> size, sha256), or None when the
    folder has no README an export wrote (`strict`: none with words of a user's among its
    list either)."""
    readme = folder / README
    if readme.is_symlink() or not readme.is_file():
        return None
    try:
        text = read_regular(readme, "README", limit=MAX_README).decode("utf-8", "replace")
    except (HarnessError, OSError):
        return None
    if not text.startswith("# ") or MARK not in text.split("\n", 3)[2]:
        return None
    files, section = text.partition("\n## Files\n")[::2]
    if not section:
        return None
    listed = {m.group(1): (int(m.group(2)), m.group(3)) for m in _LISTED.finditer(section)}
    # a README with a line of its own after the list has a user's words in it
    own = [line for line in section.splitlines()
           if line and not _LISTED.match(line) and "**not included**" not in line]
    return None if own and strict else listed


def _owner(folder: Path):
    listed = listed_files(folder)

    def owns(path: Path) -> bool:
        if listed is None:
            return False
        if path.name == README:
            return True
        size_and_hash = listed.get(path.name)
        if size_and_hash is None or path.stat().st_size != size_and_hash[0]:
            return False
        digest = hashlib.sha256()
        with open(path, "rb") as data:
            while block := data.read(1 << 20):
                digest.update(block)
        return digest.hexdigest() == size_and_hash[1]
    return owns


def refusal(folder: Path, what: str) -> str | None:
    """Why --force must not replace the export folder `folder`, or None."""
    if not folder.is_symlink() and listed_files(folder) is None:
        return (f"{what} {folder} has no {README} as an export writes it (none, or one with "
                f"words of its own), so the harness cannot tell its files from yours; "
                f"--force replaces only {KIND} and removes nothing else: move what you keep "
                "out (or remove the folder yourself), or choose another path")
    return foreign(folder, _owner(folder), what=what, kind=KIND)


def clear_export(folder: Path, what: str) -> None:
    """Remove an export folder that holds only what the export wrote, else refuse."""
    why = refusal(folder, what)
    if why:
        raise BadInput(why)
    clear_owned(folder, _owner(folder), what=what, kind=KIND)
