"""Scratch folders a run makes in a shared place (the system's temporary folder, /dev/shm)
and removes at its end, and what a killed run left there.

A run killed with SIGKILL removes nothing: an emulator's run folder (the device's
buffers: hundreds of MB in /dev/shm), a bundle's scratch copy of a report, a run's worker
folder. Each such folder names the processes using it in an `owners` file; the next run
that makes one of the same kind removes those whose owners are all gone, and only its
own user's (real folders, never links).
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

OWNERS = "owners"
UNCLAIMED_S = 3600.0         # a folder with no owners file yet: between mkdtemp and writing it


def process_exists(pid: int) -> bool:
    """Whether any process has this pid now (signal 0 only asks; someone else's process
    answers EPERM, and exists all the same). A zombie (ended, not yet reaped: in a
    container whose first process reaps nothing it stays so) does not count."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            state = stat_file.read().rpartition(b")")[2].split()[:1]
    except OSError:
        return True
    return state != [b"Z"]


def make_owned(prefix: str, parent: Path | None = None, owners: tuple[int, ...] = ()) -> Path:
    """A new folder (mode 0700) named `prefix`..., whose owners are this process and
    `owners`; what killed runs left under the same prefix is removed first."""
    sweep_abandoned(prefix, parent)
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    set_owners(folder, os.getpid(), *owners)
    return folder


def set_owners(folder: Path, *pids: int) -> None:
    """Who uses `folder`: it is left alone while any of them lives."""
    temp = folder / f".{OWNERS}.new"
    temp.write_text(" ".join(map(str, pids)) + "\n")
    os.replace(temp, folder / OWNERS)


def sweep_abandoned(prefix: str, parent: Path | None = None) -> list[Path]:
    """Remove the folders `prefix`* under `parent` (the temporary folder by default) that
    are this user's and whose owners are all gone. One without its owners file is left
    alone unless it is an hour old."""
    removed = []
    for folder in Path(parent or tempfile.gettempdir()).glob(prefix + "*"):
        try:
            st = folder.lstat()
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
                continue
            owners = folder / OWNERS
            if owners.is_file():
                pids = [int(p) for p in owners.read_text().split()]
                if any(process_exists(pid) for pid in pids):
                    continue
            elif time.time() - st.st_mtime < UNCLAIMED_S:
                continue
        except (OSError, ValueError):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed
