"""A path of a fabricated or copied machine's tree, looked up as that machine would."""

from __future__ import annotations

import os
from pathlib import Path

MAX_LINKS = 40                 # as the kernel's path walk allows


def within_root(root: Path, absolute: str) -> Path:
    """`absolute` looked up under `root` as if `root` were `/` (as chroot resolves it): a
    symlink's absolute target starts again at `root`, and `..` stops there, so a fabricated
    or copied tree (`HARNESS_ROOT`, `probe --root`) can never lead to a file of this machine
    outside it (`/etc/os-release -> /etc/shadow` reads the tree's own /etc/shadow, if any).
    The path returned holds no symlink that exists; past 40 links (a loop) it names
    nothing."""
    base = root.resolve()
    parts = [p for p in absolute.split("/") if p not in ("", ".")]
    resolved: list[str] = []
    links = 0
    while parts:
        part = parts.pop(0)
        if part == "..":
            if resolved:
                resolved.pop()
            continue
        candidate = base.joinpath(*resolved, part)
        if candidate.is_symlink():
            links += 1
            if links > MAX_LINKS:
                return base / ".too-many-links"
            try:
                target = os.readlink(candidate)
            except OSError:
                resolved.append(part)
                continue
            if target.startswith("/"):
                resolved = []
            parts = [p for p in target.split("/") if p not in ("", ".")] + parts
            continue
        resolved.append(part)
    return base.joinpath(*resolved)
