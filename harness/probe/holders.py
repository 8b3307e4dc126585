"""Other processes holding the NPU or the GPU's compute node: ROCm work beside an NPU
run shares the IOMMU and memory bandwidth, and a second NPU user shares the columns."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from harness.probe.readers import Sources

WATCHED = ("/dev/accel/", "/dev/kfd")


def device_users(src: Sources, exclude: Iterable[int] = ()) -> dict[str, Any]:
    """Each process (other than `exclude`) with an open /dev/accel/* or /dev/kfd, and how
    many processes could not be inspected (other users' without privileges). Where
    neither node exists no process can hold one, and /proc is not walked."""
    if not _watched_nodes(src):
        return {"users": [], "uninspectable": 0}
    skip = set(exclude)
    proc = str(src.path("/proc"))
    users: list[dict[str, Any]] = []
    hidden = 0
    try:
        pids = sorted(int(p) for p in os.listdir(proc) if p.isdigit())
    except OSError:
        return {"users": [], "uninspectable": None}
    for pid in pids:
        if pid in skip:
            continue
        fd_dir = f"{proc}/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except PermissionError:
            hidden += 1
            continue
        except OSError:
            continue                      # gone meanwhile
        held = set()
        for fd in fds:
            try:
                target = os.readlink(f"{fd_dir}/{fd}")
            except OSError:
                continue
            if target.startswith(WATCHED):
                held.add(target)
        if held:
            comm = src.read(f"/proc/{pid}/comm")
            users.append({"pid": pid, "command": comm if comm else None,
                          "devices": sorted(held)})
    return {"users": users, "uninspectable": hidden}


def _watched_nodes(src: Sources) -> bool:
    accel = src.path("/dev/accel")
    try:
        if any(True for _ in os.scandir(accel)):
            return True
    except OSError:
        pass
    return os.path.lexists(src.path("/dev/kfd"))


def own_family() -> set[int]:
    """This process and its descendants (the isolated trial workers), from /proc's
    children lists (psutil would be a tenth of start-up for this one question)."""
    family, todo = set(), [os.getpid()]
    while todo:
        pid = todo.pop()
        if pid in family:
            continue
        family.add(pid)
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/children") as children:
                    todo += [int(child) for child in children.read().split()]
            except (OSError, ValueError):
                continue
    return family


    return True
