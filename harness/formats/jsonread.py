"""Reading the JSON documents of XRT's tools (run recipes, profiles, captures): every
error names the file and the field, e.g. ``replay.json: resources.runs[3].kernel: ...``."""

from __future__ import annotations

import codecs
import gc
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_BUFFER_BYTES = 1 << 30     # one buffer, in any document that declares sizes
MAX_C_INT = 2**31 - 1
BIG_DOCUMENT = 1 << 20         # from here on, a document is read with the collector paused


def describe(value: Any) -> str:
    """A value as an error message shows what it got (a long one by its ends)."""
    if value is None:
        return "nothing"
    if isinstance(value, int) and not isinstance(value, bool) and \
            value.bit_length() > 128:
        # str() of an int of 4,300 digits refuses; its bit length says how long it is
        return f"int of about {int(value.bit_length() * 0.30103) + 1:,} digits"
    shown = repr(value)
    if len(shown) > 80:
        shown = f"{shown[:50]}...{shown[-12:]} ({len(shown):,} characters)"
    if isinstance(value, str):
        return f"the string {shown}"
    return f"{type(value).__name__} {shown}"


TOP = "(top level)"


def kind_of(value: Any) -> str:
    """What a whole document turned out to be, without a word of it: a file that is no
    document of the kind asked for (a `.env`, a private key) may hold anything, and an
    error message is read and pasted where the file's text must not go."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "a lone true or false"
    if isinstance(value, (int, float)):
        return "a lone number"
    if isinstance(value, str):
        lines = value.count("\n") + 1
        return f"a text of {len(value):,} characters" + (f" on {lines} lines" if lines > 1
                                                          else "")
    if isinstance(value, list):
        return f"a list of {len(value):,} items"
    return f"a {type(value).__name__}"


@dataclass(frozen=True)
class JsonReader:
    """Checks of a parsed JSON document's shapes, each failure the reader's error naming
    the file and where."""

    file: str
    error: type[Exception]

    def fail(self, where: str, what: str) -> Exception:
        return self.error(f"{self.file}: {where}: {what}")

    def mapping(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, "expected an object, got " + (
                kind_of(value) if where == TOP else describe(value)))
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

    def c_int(self, value: Any, where: str) -> int:
        """A count or an index XRT's runner reads as a C int (`get<int>()`: argidx,
        iterations, runlist_threshold), as pyxrt's `set_arg` takes an argument's index."""
        index = self.index(value, where)
        if index > MAX_C_INT:
            raise self.fail(where, f"{describe(index)} is past {MAX_C_INT:,}, the largest a "
                                   "C int holds")
        return index


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
    except ValueError as err:
        raise _too_long(err) from None


def loads_counted(text: bytes, colons_at_least: Callable[[Any], int]) -> Any:
    """`loads` of a document whose colons `colons_at_least` counts from what it parsed (at
    most as many as the text holds: one a key of the objects it counts, and those in
    their strings), without a Python call per object where it can. Parsed plainly, the
    text held no key twice when that count equals its colons: each key has one colon after
    it, and each colon in a string is the string's own where no escape (``\\u``) can
    write one; a key given twice leaves its object one key short, and the count falls
    short. A text it falls short on is read again by `loads`, which says what `loads`
    says."""
    if len(text) < BIG_DOCUMENT and b"\\u" not in text:
        try:
            value = json.loads(text)
        except (RecursionError, ValueError):
            pass                          # `loads` says which, as it always did
        else:
            if colons_at_least(value) == text.count(b":"):
                return value
    return loads(text)


def _too_long(err: ValueError) -> ValueError:
    """Python reads no integer of 4,300 digits or more (its guard against slow
    conversions): such a number is a bad document, said as one; other errors as they are."""
    if isinstance(err, json.JSONDecodeError) or "integer string conversion" not in str(err):
        return err
    return JsonShapeError("a number of 4,300 digits or more: past any value the harness can "
                          "use")


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


class JsonStream:
    """One JSON document read from a file a piece at a time: the arrays a reader walks
    item by item (`array_items`) are never held whole, and every other value is read whole
    (`value`). A capture of a million runs is read so, in memory near its parts' own.

    Its values are read as `loads` reads them: duplicate keys and nesting past the
    recursion limit are `JsonShapeError`. Malformed text is `json.JSONDecodeError`, its
    line counted from the start of the file."""

    CHUNK = 1 << 20

    def __init__(self, path: str | Path) -> None:
        self._file = open(path, "rb")  # noqa: SIM115 - closed by close()
        self._decode = codecs.getincrementaldecoder("utf-8")().decode
        self._text = ""
        self._at = 0
        self._lines = 0                     # newlines before _text[0]
        self._eof = False
        self._decoder = json.JSONDecoder(object_pairs_hook=_unique_keys)
        import hashlib  # a capture's stream hashes what it reads; other readers do not
        self.digest = hashlib.sha256()       # of every byte read

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> JsonStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _fill(self, size: int = CHUNK) -> bool:
        """`size` bytes more after what is held (what was read past is let go); False at
        the end."""
        if self._eof:
            return False
        if self._at:
            self._lines += self._text.count("\n", 0, self._at)
            self._text = self._text[self._at:]
            self._at = 0
        data = self._file.read(size)
        self.digest.update(data)
        if not data:
            self._eof = True
            self._text += self._decode(b"", final=True)
            return False
        self._text += self._decode(data)
        return True

    def _error(self, message: str, at: int | None = None) -> json.JSONDecodeError:
        at = self._at if at is None else at
        err = json.JSONDecodeError(message, self._text, at)
        err.lineno = self._lines + self._text.count("\n", 0, at) + 1
        return err

    def peek(self) -> str:
        """The next character that is not white space ("" at the end)."""
        while True:
            match = _SPACE.match(self._text, self._at)
            self._at = match.end() if match else self._at
            if self._at < len(self._text) or not self._fill():
                return self._text[self._at:self._at + 1]

    def _take(self, char: str) -> None:
        if self.peek() != char:
            found = self._text[self._at:self._at + 1] or "the end"
            raise self._error(f"Expecting {char!r}, found {found!r}")
        self._at += 1

    def value(self) -> Any:
        """The next value, whole."""
        self.peek()
        more = self.CHUNK                    # doubled at each retry: a big value costs O(n)
        while True:
            try:
                value, end = self._decoder.raw_decode(self._text, self._at)
            except json.JSONDecodeError as err:
                if self._fill(more):
                    more *= 2
                    continue                 # cut off by the end of what is held
                raise self._error(err.msg, err.pos) from None
            except RecursionError:
                raise JsonShapeError("nested too deeply (more levels than any document of "
                                     "this kind has)") from None
            except ValueError as err:
                raise _too_long(err) from None
            if end == len(self._text) and not isinstance(value, (dict, list, str)) \
                    and self._fill(more):
                more *= 2
                continue                     # a number the held text may have cut short
            self._at = end
            return value

    def object_keys(self) -> Iterator[str]:
        """The keys of the object that comes next, one at a time; after each, the caller
        reads its value (`value`, `object_keys` or `array_items`) before asking for the next."""
        self._take("{")
        seen: set[str] = set()
        if self.peek() == "}":
            self._at += 1
            return
        while True:
            if self.peek() != '"':
                raise self._error("Expecting property name enclosed in double quotes")
            key = self.value()
            if key in seen:
                raise JsonShapeError(f"key {key!r} appears twice in one object")
            seen.add(key)
            self._take(":")
            yield key
            if self.peek() == ",":
                self._at += 1
                continue
            self._take("}")
            return

    def array_items(self) -> Iterator[int]:
        """The positions of the array that comes next, one at a time; after each, the
        caller reads that item before asking for the next."""
        self._take("[")
        if self.peek() == "]":
            self._at += 1
            return
        position = 0
        while True:
            yield position
            position += 1
            if self.peek() == ",":
                self._at += 1
                continue
            self._take("]")
            return

    def end(self) -> None:
        """Nothing but white space may follow the document."""
        if self.peek():
            raise self._error("Extra data")


_SPACE = re.compile(r"[ \t\n\r]*")
