"""Where the harness may put what it writes on a path a user gave (a report's --out, a
render, a bundle, an export, a capture folder): it creates at most one missing folder, the
last of the path. A path deeper into folders that do not exist is most often a slip (a
missing `~`, `/nonexistent/dir`), and making the whole tree would scatter folders where
the user never meant any (at the root, as root), so it is refused with the folder to make
first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.model.errors import BadInput


def _named(path: Path, what: str) -> str:
    return f"{what} {path}" if what else str(path)


def check_folder(folder: Path, *, path: Path | None = None, what: str = "") -> None:
    """Refuse `folder` (where `path`, as the user gave it, is written) unless it is a folder
    or can be made as one: its parent is a folder. A file where a folder must be is refused
    too, whichever it is."""
    shown = _named(path or folder, what)
    for above in (folder, *folder.parents):
        if above.is_dir():
            break
        if above.is_symlink() and not above.exists():
            raise BadInput(f"{shown}: {above} is a link to nothing, not a folder")
        if above.exists():
            raise BadInput(f"{shown}: {above} is a file, not a folder")
    if folder.is_dir() or folder.parent.is_dir():
        return
    top = next(above for above in reversed((folder, *folder.parents))
               if not above.is_dir())
    raise BadInput(f"{shown}: {top} does not exist, and the harness creates at most one "
                   f"missing folder, the last of the path ({folder.name}): run mkdir -p "
                   f"{folder.parent} first, or give a path in a folder that exists")


def make_folder(folder: Path, *, path: Path | None = None, what: str = "") -> None:
    """Create `folder` when it is the one missing folder of the path (`check_folder`)."""
    check_folder(folder, path=path, what=what)
    folder.mkdir(exist_ok=True)


def make_parent(path: Path, what: str = "") -> None:
    """Create the folder `path` is written in, when that is the one missing folder."""
    make_folder(path.parent, path=path, what=what)


@dataclass(frozen=True)
class Replaceable:
    """What --force may replace on an output path: a file of this `kind` (its first bytes
    say so), never any other file a user has there."""

    kind: str                          # "a report of the harness", as a refusal names it
    recognise: Callable[[bytes], bool]  # the file's first HEAD bytes

    HEAD = 64 << 10

    def refusal(self, path: Path, what: str) -> str | None:
        """Why --force must not replace `path`, or None when it is of this kind."""
        try:
            with open(path, "rb") as existing:
                head = existing.read(self.HEAD)
        except OSError as err:
            return f"{_named(path, what)} cannot be read ({err.strerror or err})"
        if self.recognise(head):
            return None
        return (f"{_named(path, what)} exists and is not {self.kind}; --force replaces only "
                f"{self.kind}, never another file: move it away or choose another "
                f"{what or 'path'}")
