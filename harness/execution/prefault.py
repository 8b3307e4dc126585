"""The pages a fork server's child will write, copied before its trial starts.

A forked child shares the server's memory until it writes a page; then the kernel copies
that page for it (copy on write). A trial's child writes some 500 of the server's pages,
mostly the reference counts of the objects it uses, and on a virtual machine each copy
costs 4 to 5 us: together, several times the whole trial run in process. So a child
notes which pages it owns before its order comes and again once its result is sent
(`snapshot`: the "exclusively mapped" bit of `/proc/self/pagemap`, Linux 4.2 and later,
which a process reads of itself), and reports those its trial came to own
(`written_since`, with the pages it was given to copy); the next spares copy them while
they wait for their order (`copy_ahead`: `madvise(MADV_POPULATE_WRITE)`, Linux 5.14 and
later), on a core the running trial does not use. No trial's work is done twice: these
are the copies the trial would make, made earlier. Where the kernel lacks either, nothing
is copied ahead and a trial pays its copies itself.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import re
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
MADV_POPULATE_WRITE = 23          # <linux/mman.h>, Linux 5.14
# pagemap's entry: bit 63 "present", bit 56 "exclusively mapped" (Documentation/admin-guide/
# mm/pagemap.rst), both in the entry's last byte (little endian): b"1" where both are set
_OWNED = bytes(0x31 if byte & 0x81 == 0x81 else 0x30 for byte in range(256))
_RUN = re.compile("1+")

# mapping start -> (mapping end, bit i set where its page i is owned)
Snapshot = dict[int, tuple[int, int]]


def writable_ranges() -> list[tuple[int, int]]:
    """This process's private writable mappings (heap, anonymous memory, libraries' data),
    as (start, end) addresses: the only memory a fork copies on write."""
    ranges = []
    with open("/proc/self/maps", "rb") as maps:
        for line in maps:
            fields = line.split(maxsplit=2)
            if len(fields) > 1 and fields[1] == b"rw-p":
                start, _, end = fields[0].partition(b"-")
                ranges.append((int(start, 16), int(end, 16)))
    return ranges


def snapshot() -> Snapshot:
    """Which pages of its private writable memory this process alone maps now (in a forked
    child: those it copied, or made); nothing where it cannot tell."""
    owned: Snapshot = {}
    try:
        with open("/proc/self/pagemap", "rb", buffering=0) as pagemap:
            for start, end in writable_ranges():
                pagemap.seek(start // PAGE * 8)
                flags = pagemap.read((end - start) // PAGE * 8)[7::8].translate(_OWNED)
                owned[start] = (end, int(flags[::-1], 2) if flags else 0)
    except OSError:                # no pagemap (not Linux, or hidden): nothing is owned
        return {}
    return owned


def written_since(before: Snapshot) -> array:
    """The pages owned now that were not at `before`, within the mappings there were then
    (what the server had: a spare can copy only those), as start, end address pairs."""
    found = array("Q")
    for start, (end, now) in snapshot().items():
        then = before.get(start)
        if then is None:
            continue
        new = now & ~then[1] & ((1 << ((min(end, then[0]) - start) // PAGE)) - 1)
        for run in _RUN.finditer(format(new, "b")[::-1]):
            found.extend((start + run.start() * PAGE, start + run.end() * PAGE))
    return found


def merged(*parts: array | None) -> array:
    """The union of some start, end address pairs, sorted, overlaps joined."""
    pairs = sorted((part[i], part[i + 1]) for part in parts if part
                   for i in range(0, len(part) - 1, 2))
    out = array("Q")
    for start, end in pairs:
        if out and start <= out[-1]:
            out[-1] = max(out[-1], end)
        else:
            out.extend((start, end))
    return out


def report(path: Path, ranges: array) -> None:
    """Write `ranges` to `path`, whole or not at all: what the next spares copy."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        with open(temporary, "wb") as out:
            ranges.tofile(out)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def read_report(path: Path) -> array | None:
    """The ranges a child last reported in `path`; None when there is none yet."""
    ranges = array("Q")
    try:
        ranges.frombytes(path.read_bytes())
    except (OSError, ValueError):
        return None
    return ranges if len(ranges) % 2 == 0 else None


@dataclass(frozen=True)
class Ahead:
    """What a fork server's spares copy: the pages of the last report (start, end pairs,
    to which the next report adds), the plan that copies them here (`copy_plan`), and
    which file it was read from (inode, mtime, size)."""

    ranges: array
    plan: array
    stamp: tuple[int, int, int]


def latest(path: Path, known: Ahead | None) -> Ahead | None:
    """The pages the last report in `path` lists, read again only when the file changed
    since `known` (a report comes once in many trials); `known` while there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return known
    stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
    if known is not None and known.stamp == stamp:
        return known
    ranges = read_report(path)
    if ranges is None:
        return known
    return Ahead(ranges, copy_plan(ranges), stamp)


@functools.cache
def libc_madvise() -> Any:
    """libc's madvise, looked up once (a fork server's children inherit it); None where
    there is none."""
    try:
        call = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    call.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    return call


def copy_plan(ranges: array) -> array:
    """`ranges` (sorted start, end pairs) cut to this process's private writable memory,
    as start, length pairs: worked out once in the fork server, whose children inherit
    its mappings, so that a spare spends its time copying, not looking up mappings."""
    plan = array("Q")
    mine = writable_ranges()
    at = 0
    for i in range(0, len(ranges) - 1, 2):
        start, end = ranges[i], ranges[i + 1]
        while at < len(mine) and mine[at][1] <= start:
            at += 1
        # from the mapping holding (or following) `start` on, up to `end`
        for low, high in mine[at:]:
            if low >= end:
                break
            first, last = max(start, low), min(end, high)
            if first < last:
                plan.extend((first, last - first))
    return plan


def copy_ahead(plan: array) -> int:
    """Make this process's own copy of every page of `plan` (`copy_plan`'s start, length
    pairs), without changing a byte; the number of pages asked for (0 where the kernel
    cannot: a trial then copies them as it writes them)."""
    madvise = libc_madvise()
    if madvise is None:
        return 0
    asked = 0
    for i in range(0, len(plan) - 1, 2):
        if madvise(plan[i], plan[i + 1], MADV_POPULATE_WRITE) != 0:
            break                          # EINVAL: a kernel before 5.14; ENOMEM: gone
        asked += plan[i + 1]
    return asked // PAGE
