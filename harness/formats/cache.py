"""The harness's cache folder: the emulator's compiled library, stand-in xclbins and ELFs,
XRT's validate artefacts, fault logs.

What is kept there is loaded later (the library runs as code in every program `emulate`
starts), so the folder is one only the running user can change: owned by the effective
user, mode 0700, reached through folders no other user can rename or replace (each owned
by that user or by root, and not writable by others unless sticky, as /tmp is). That is
``$XDG_CACHE_HOME/xdna-runlist-harness`` (``~/.cache`` by default) when it qualifies, else
``xdna-runlist-harness-<uid>`` in the system's temporary folder, made by this user; there
is no shared fallback. Under ``sudo -E`` root's cache is never the user's folder (owned by
the user), so root builds its own.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from harness.model.errors import EnvironmentNotReady

NAME = "xdna-runlist-harness"


class NotPrivate(Exception):
    """A folder another user could change (or that is not a folder at all)."""


def _safe_parent(st: os.stat_result, uid: int) -> bool:
    """A folder on the way to the cache: nobody but `uid` (or root) can replace what is in
    it. A sticky folder (/tmp) lets others add entries, never rename ours."""
    if st.st_uid not in (uid, 0):
        return False
    return not st.st_mode & 0o022 or bool(st.st_mode & stat.S_ISVTX)


def _check_chain(existing: Path, uid: int) -> None:
    """Every folder from `existing` (resolved) up to / is safe for `uid`."""
    for folder in (existing, *existing.parents):
        st = os.lstat(folder)
        if not stat.S_ISDIR(st.st_mode):
            raise NotPrivate(f"{folder} is not a folder")
        if not _safe_parent(st, uid):
            raise NotPrivate(f"{folder} belongs to uid {st.st_uid} with mode "
                             f"{stat.S_IMODE(st.st_mode):04o}: another user could replace "
                             "what is in it")


def private_folder(path: Path) -> Path:
    """`path` (its real location) as a folder only this user can change, made (mode 0700)
    where missing; NotPrivate when another user owns or could replace it."""
    uid = os.geteuid()
    real = Path(os.path.realpath(path))
    existing = real
    while not existing.exists():
        existing = existing.parent
    missing = real.relative_to(existing).parts
    # judged before anything is made: root under `sudo -E` must not leave a folder of its
    # own in the user's home
    if missing:
        _check_chain(existing, uid)
    else:
        _check_chain(existing.parent, uid)
        _own(existing, uid)
    folder = existing
    for part in missing:
        folder = folder / part
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        _own(folder, uid)
    return real


def _own(folder: Path, uid: int) -> None:
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode):
        raise NotPrivate(f"{folder} is not a folder")
    if st.st_uid != uid:
        raise NotPrivate(f"{folder} belongs to uid {st.st_uid}, not to this user ({uid})")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(folder, 0o700)            # ours: what others could do is closed now


def trusted_file(path: Path) -> bool:
    """A file of the cache that may be used as it is: a regular file (not a link) this
    user owns that nobody else can write."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022


def cache_roots() -> list[Path]:
    """Where the cache may be, in order of preference."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return [Path(base) / NAME, Path(tempfile.gettempdir()) / f"{NAME}-{os.geteuid()}"]


def cache_dir(*parts: str) -> Path:
    """A folder of the cache (`parts` under its root), made when missing; only this user
    can change it or anything on the way to it."""
    refused = []
    for root in cache_roots():
        try:
            private_folder(root)
            return private_folder(root.joinpath(*parts))
        except (OSError, NotPrivate) as err:
            refused.append(f"{root}: {err.strerror if isinstance(err, OSError) else err}")
    raise EnvironmentNotReady(
        "no private cache folder: " + "; ".join(refused) + ". Set XDG_CACHE_HOME to a "
        "folder of your own that no other user can write")
