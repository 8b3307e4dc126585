"""What --force may remove from a folder an earlier run wrote (a capture folder, a report's
REPLAY.recipes/): the files the harness or XRT wrote there, and nothing else.

A folder on a path a user gave is theirs: they may have put notes, a thesis or a copied
xclbin beside what the harness wrote. So a folder is replaced only when every entry in it
is one its writer owns (`owns`: a regular file, not a link, recognised by its name and,
where the writer recorded one, its content); otherwise nothing is removed, and the
refusal names the first entry that is not the harness's.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from harness.model.errors import BadInput

# a folder holding more entries than this is no folder the harness wrote
MAX_ENTRIES = 100_000


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISLNK(mode):
        return "a link"
    return "a file"


def foreign_entry(folder: Path, owns: Callable[[Path], bool]) -> str | None:
    """The first entry of `folder` its writer did not write, described ("a folder notes"),
    or None when every entry is one `owns` takes for its own."""
    with os.scandir(folder) as listing:
        for count, entry in enumerate(listing):
            if count >= MAX_ENTRIES:
                return f"more than {MAX_ENTRIES} entries"
            mode = entry.stat(follow_symlinks=False).st_mode
            path = folder / entry.name
            if not stat.S_ISREG(mode) or not owns(path):
                return f"{_kind(mode)} {path}"
    return None


def clear_owned(folder: Path, owns: Callable[[Path], bool], *, what: str,
                kind: str) -> None:
    """Remove `folder` when it holds only what its writer wrote (`owns`), else refuse
    (BadInput) naming what is not: `what` is the option or path the user gave, `kind`
    what the folder is when it is the harness's ("a capture folder")."""
    refusal = foreign(folder, owns, what=what, kind=kind)
    if refusal:
        raise BadInput(refusal)
    with os.scandir(folder) as listing:
        names = [entry.name for entry in listing]
    for name in names:
        (folder / name).unlink()
    folder.rmdir()


def foreign(folder: Path, owns: Callable[[Path], bool], *, what: str, kind: str) -> str | None:
    """Why --force must not replace `folder` (it holds something its writer did not
    write, or it is a link), or None."""
    if folder.is_symlink():
        return (f"{what} {folder} is a link to a folder; --force replaces {kind} itself, "
                "never through a link: give the folder's own path")
    found = foreign_entry(folder, owns)
    if found is None:
        return None
    return (f"{what} {folder} holds {found}, which the harness did not write; --force "
            f"replaces only {kind} and removes nothing else: move it out (or remove the "
            "folder yourself), or choose another path")
