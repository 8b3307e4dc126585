"""Recognise xclbins FastFlowLM shipped, by sha256.

The table (`harness/data/known_xclbins.yaml`) holds the facts of every xclbin
in FastFlowLM's `src/xclbins` at one commit: size, hashes, uuid, and every
`<pack>/<file>` name it was shipped under (one file can serve many packs).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path, PurePath

from harness.formats.yamlio import load_yaml_text


@dataclass(frozen=True)
class KnownXclbin:
    """An xclbin FastFlowLM shipped, known by its hashes, and every name it shipped under."""

    sha256: str
    size: int
    md5: str
    uuid: str
    xclbin_version: str
    kernels: tuple[str, ...]
    known_as: tuple[str, ...]

    def primary_name(self, path: str | None = None) -> str:
        """The shipped name that best matches `path` (same pack folder and file name)."""
        if path:
            p = PurePath(path)
            wanted = f"{p.parent.name}/{p.name}"
            if wanted in self.known_as:
                return wanted
            for name in self.known_as:
                if name.endswith("/" + p.name):
                    return name
        return self.known_as[0]


# The package's own data folder, read as a file: importlib.resources would cost a run's
# start-up its zip-file readers, for a package that is never imported from a zip.
TABLE = Path(__file__).resolve().parents[1] / "data" / "known_xclbins.yaml"


@functools.cache
def _text() -> str:
    return TABLE.read_text("utf-8")


@functools.cache
def _table() -> tuple[str, dict[str, KnownXclbin]]:
    raw = load_yaml_text(_text())
    files = {
        sha: KnownXclbin(sha, int(v["size"]), str(v["md5"]), str(v["uuid"]),
                         str(v["xclbin_version"]), tuple(v["kernels"]), tuple(v["known_as"]))
        for sha, v in raw["files"].items()
    }
    return str(raw["source"]), files


def lookup(sha256: str) -> KnownXclbin | None:
    wanted = sha256.lower()
    # The table is keyed by hash in plain hex: a hash absent from its text is unknown, and
    # the table is parsed (a tenth of a run's start-up) only for one that may be known.
    if wanted not in _text():
        return None
    return _table()[1].get(wanted)


def shipped_name(name: str) -> bool:
    """Whether FastFlowLM shipped a file as `name` (`Qwen3-1.7B-NPU2/layer.xclbin`): an item
    of a `known_as` list of the table's text, read without parsing the table (a case that
    names one is read at every run, most of which never need the table)."""
    return re.search(rf"^\s*- {re.escape(name)}\s*$", _text(), re.MULTILINE) is not None


def known_packs() -> set[str]:
    """The names of the packs the table's files shipped in (`Qwen3-1.7B-NPU2`), read from
    its text as `shipped_name` reads it."""
    return set(re.findall(r"^\s*- ([^/\s]+)/", _text(), re.MULTILINE))


def table_source() -> str:
    return _table()[0]
