"""What a bundle holds while it is made: each member's bytes or the file holding them, what
is left out and why (`harness.report.bundle` writes it, `bundle_recipes` and
`engine_run_files` add to it)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

RECIPES = "recipes"
COPY_BLOCK = 1 << 20


@dataclass(frozen=True)
class LeftOut:
    """A file or folder the bundle does not ship (its name, or the path the report named),
    and why."""

    name: str
    why: str
    xclbin: bool = False          # an xclbin of the recipes: someone copies it in

    def __str__(self) -> str:
        return f"{self.name}: {self.why}"


@dataclass
class Contents:
    """What goes in: name inside the top folder -> its bytes, or a file holding them; what
    was left out and why."""

    files: dict[str, bytes | Path] = field(default_factory=dict)
    left_out: list[LeftOut] = field(default_factory=list)
    xclbins_to_copy: list[str] = field(default_factory=list)   # recipes name, nobody ships
    unfinished_command: str | None = None   # a report that did not finish: what wrote it
    buffers_left_out: int = 0     # buffers' data not shipped: they may hold the input
    buffers_shipped: int = 0      # ... and shipped, as asked

    def names(self) -> list[str]:
        """Top-level names, a folder once (``recipes/``)."""
        seen: list[str] = []
        for name in self.files:
            top = name.split("/", 1)[0] + ("/" if "/" in name else "")
            if top not in seen:
                seen.append(top)
        return seen

    def text(self, name: str) -> str:
        held = self.files[name]
        return held.read_text("utf-8") if isinstance(held, Path) else held.decode("utf-8")



def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        for block in iter(lambda: source.read(COPY_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()
