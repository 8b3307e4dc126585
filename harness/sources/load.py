"""The one way in to every source: a reference (a case name or file, an XRT run recipe,
`xrt-validate:NAME`, an XRT capture folder, or a case file that points at an imported
capture) becomes a `Case`, read by that source's own reader. The readers know nothing
of each other; only this module knows them all."""

from __future__ import annotations

import os
from pathlib import Path

from harness.model.errors import CaseError
from harness.sources.case import REPLAY, Case, decode_case, find_case, read_document
from harness.sources.recipe import is_recipe_ref, load_recipe


def load_case(ref: str | Path, recipe_profile: str | None = None, *,
              allow_outside_paths: bool = False) -> Case:
    """A case by name or file; an XRT run recipe (a .json file, or xrt-validate:NAME)
    with its profile; an XRT capture folder (or a case file `capture import` wrote).
    `allow_outside_paths`: a case file may name files outside its folder (recipes and
    captures never may)."""
    if is_recipe_ref(str(ref)):
        return load_recipe(str(ref), recipe_profile)
    path = Path(ref)
    if path.name == REPLAY or path.is_dir() and (path / REPLAY).is_file():
        from harness.sources.capture_case import folder_case
        return folder_case(path.parent if path.name == REPLAY else path)
    if path.is_dir():
        raise CaseError(no_replay(path))
    if recipe_profile is not None:
        raise CaseError(f"--recipe-profile goes with a recipe; {ref} is a case")
    found = find_case(str(ref))
    try:
        raw = found.read_bytes()
    except OSError as err:
        raise CaseError(f"cannot read case file {found}: {err.strerror}") from None
    return parse_case(raw, str(found), allow_outside_paths=allow_outside_paths)


def parse_case(raw: bytes, file: str, *, allow_outside_paths: bool = False) -> Case:
    """A case file's bytes: a decode case, or a pointer at an imported capture."""
    data, check = read_document(raw, file, allow_outside_paths=allow_outside_paths)
    if isinstance(data, dict) and "capture" in data:
        from harness.sources.capture_case import pointer_case
        return pointer_case(check, data, file, raw)
    return decode_case(check, data, file, raw)


def no_replay(folder: Path) -> str:
    """What a folder given as a case or capture is told when it holds no replay.json."""
    held = any(folder.iterdir()) if os.access(folder, os.R_OK | os.X_OK) else False
    why = (f"XRT writes {REPLAY} only when the captured program exits normally (a kill, a "
           "crash or an os._exit leaves its other files and none), so this capture is "
           "unfinished: record it again" if held else
           "it is empty")
    return (f"{folder} is a folder without {REPLAY}, so not an XRT capture: {why} "
            f"(`runlist-harness capture record --out DIR -- PROGRAM` records one); a case is "
            "a .yaml file")
