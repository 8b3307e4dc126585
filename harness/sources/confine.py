"""Artefacts a document names stay in the document's folder.

Recipes, profiles, captures and cases name files (`ctrlcode`, `init.file`, `fnm`,
`instructions`, `programs`, `xclbin`) that the harness loads and that `export` and
`report bundle` copy into what a user sends upstream. A name that is absolute, climbs out
with `..`, or is a symlink resolving outside would have us read, and ship, a file the
document's author chose on the user's machine. Such names are refused with the name and
the folder; the user's own case may opt in with `--allow-outside-paths`, which the command
passes down with the case it loads (`allow_outside`).
"""

from __future__ import annotations

import os
from pathlib import Path

from harness.formats.elf import ElfError, read_elf


class ArtefactError(ValueError):
    """A file a document names that cannot be used: outside its folder, absent, or not the
    ELF it is named as."""


class OutsideFolder(ArtefactError):
    """An artefact path leading out of its document's folder."""


def inside(folder: Path, name: str, *, own_case: bool = False,
           allow_outside: bool = False) -> Path:
    """`name` resolved against `folder`, refused when it leads outside that folder unless
    it is the user's own case (`own_case`) and they allowed it (`allow_outside`)."""
    if "\0" in name:
        raise OutsideFolder(f"{name!r} holds a NUL byte, which no file name can")
    path = (folder / name).resolve()
    if own_case and allow_outside:
        return path
    root = folder.resolve()
    if path != root and root not in path.parents:
        how = ("is an absolute path" if os.path.isabs(name) else "climbs out with '..'"
               if ".." in Path(name).parts else "is a symlink leading")
        hint = ("; copy the file into that folder" + (", or pass --allow-outside-paths for "
                                                      "a case of your own" if own_case else ""))
        raise OutsideFolder(f"{name} {how} outside {folder}: artefacts must stay in the "
                            f"document's folder{hint}")
    return path


def artefact(folder: Path, name: str, *, elf: bool = False, required: bool = True,
             own_case: bool = False, allow_outside: bool = False) -> Path:
    """The file `name` names in `folder` (`inside`), refused when it does not exist, unless
    it is not `required` (a stand-in may take its place: its path is returned); an `elf`
    that exists is read now, as a file that is no ELF is bad input, not a device failure."""
    path = inside(folder, name, own_case=own_case, allow_outside=allow_outside)
    if not path.is_file():
        if required:
            root = folder.resolve()
            raise ArtefactError(f"{name} is not in {folder}" if root in path.parents
                                else f"{path} does not exist")
        return path
    if elf:
        try:
            read_elf(path)
        except ElfError as err:
            raise ArtefactError(str(err)) from None
    return path
