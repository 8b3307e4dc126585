"""Reading the JSON documents of XRT's tools (run recipes, profiles, captures): every
error names the file and the field, e.g. ``replay.json: resources.runs[3].kernel: ...``."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

MAX_BUFFER_BYTES = 1 << 30     # one buffer, in any document that declares sizes
BIG_DOCUMENT = 1 << 20         # from here on, a document is read with the collector paused


def describe(value: Any) -> str:
    """A value as an error message shows what it got."""
    if value is None:
        return "nothing"
    if isinstance(value, str):
        return f"the string {value!r}"
    return f"{type(value).__name__} {value!r}"


@dataclass(frozen=True)
class JsonReader:
    file: str
    error: type[Exception]

    def fail(self, where: str, what: str) -> Exception:
        return self.error(f"{self.file}: {where}: {what}")

    def mapping(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"expected an object, got {describe(value)}")
        return value

    def array(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(where, f"expected an array, got {describe(value)}")
        return value

    def objects(self, value: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """Each object of an array, with where it is (``where[i]``)."""
        for i, item in enumerate(self.array(value, where)):
            at = f"{where}[{i}]"
            yield at, self.mapping(item, at)

    def text(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(where, f"expected a non-empty string, got {describe(value)}")
        if "\0" in value:
            raise self.fail(where, "a NUL character in a name (no name nor path holds one)")
        return value

    def size(self, value: Any, where: str) -> int:
        """A buffer size, within the one cap every document shares (cases, recipes,
        captures): a declared 2**64 is a bad document, not a machine to exhaust."""
        size = self.index(value, where)
        if size > MAX_BUFFER_BYTES:
            raise self.fail(where, f"{size} bytes is over the {MAX_BUFFER_BYTES >> 30} GiB a "
                                   "buffer may have here")
        return size

    def index(self, value: Any, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(where, f"expected an integer >= 0, got {describe(value)}")
        return value


class JsonShapeError(ValueError):
    """Well-formed JSON no document of ours may be: a key twice in one object, or nesting
    deeper than the interpreter can walk."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        # json.loads would keep the last silently; a reader that kept the first would see
        # another document
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise JsonShapeError(f"key {key!r} appears twice in one object")
            seen.add(key)
    return out


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while a big document is built: each collection walks
    every object alive, and building millions of them triggers one again and again, which
    makes reading a 10x larger file cost 15x. Documents make no cycles to collect."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def loads(text: str | bytes) -> Any:
    """json.loads, refusing duplicate keys and nesting past the recursion limit with
    JsonShapeError (a ValueError, as malformed JSON is), never RecursionError."""
    try:
        if len(text) < BIG_DOCUMENT:
            return json.loads(text, object_pairs_hook=_unique_keys)
        with gc_paused():
            return json.loads(text, object_pairs_hook=_unique_keys)
    except RecursionError:
        raise JsonShapeError("nested too deeply (more levels than any document of this "
                             "kind has)") from None


def parse_json(raw: bytes, file: str, error: type[Exception], hint: str = "") -> Any:
    """The document in `raw`, or `error` naming the file, the line and what is wrong."""
    try:
        return loads(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise error(f"{file}: not UTF-8 text (byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise error(f"{file}:{err.lineno}: not valid JSON ({err.msg}){hint}") from None
    except JsonShapeError as err:
        raise error(f"{file}: {err}") from None
