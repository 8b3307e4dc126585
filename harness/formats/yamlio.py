"""YAML in and out: safe loading (with line numbers when asked) and atomic writes.

Files a user gives us and reports we write are precious: writes go to a
temporary file in the same folder, are fsynced, then renamed over the target,
so a crash leaves either the old file or the new one, never half of one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from harness.formats.output_paths import make_parent
from harness.model.text_enum import TextEnum

_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
class _PlainDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Never writes anchors and aliases (an object met twice is written out twice): the
    harness refuses them when it reads, so it must not write them either."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


_PlainDumper.add_multi_representer(
    TextEnum, lambda dumper, data: dumper.represent_str(data.value))
_SafeDumper = _PlainDumper

# A path into a document: mapping keys and sequence indices.
KeyPath = tuple[Any, ...]


class ShapeError(ValueError):
    """Well-formed YAML no case or report may be; `line` is where (1-based)."""

    line: int


class DuplicateKeyError(ShapeError):
    def __init__(self, key: Any, line: int) -> None:
        super().__init__(f"key {key!r} appears twice (second time on line {line})")
        self.key = key
        self.line = line


class AliasError(ShapeError):
    """Cases and reports never need YAML anchors and aliases, and a few nested ones
    expand into billions of nodes for whatever walks the document: they are refused."""

    def __init__(self, line: int) -> None:
        super().__init__(f"YAML anchors and aliases are not allowed here (an alias on line "
                         f"{line}); write the value out")
        self.line = line


class NestingError(ShapeError):
    """Deeper than any case or report nests: PyYAML's C composer recurses on the machine
    stack, so such a document would crash the interpreter rather than raise."""

    def __init__(self, line: int) -> None:
        super().__init__(f"nested more than {MAX_DEPTH} levels deep; no case or report "
                         "nests so deep")
        self.line = line


class ComplexKeyError(ShapeError):
    """A mapping key that is itself a list or a mapping (`? [a, b]`): keys are names."""

    def __init__(self, line: int) -> None:
        super().__init__(f"a mapping key on line {line} is a list or a mapping; keys are "
                         "names")
        self.line = line


class NumberTooLongError(ShapeError):
    """An integer written with more digits than any count, size or index the harness
    takes (Python itself refuses to read one of 4,300 digits)."""

    def __init__(self, line: int, digits: int) -> None:
        super().__init__(f"a number of {digits} digits on line {line}: past any value the "
                         f"harness can use (at most {MAX_DIGITS} digits)")
        self.line = line


MAX_DEPTH = 200
MAX_DIGITS = 40


def _bounded_int(loader: Any, node: yaml.ScalarNode) -> int:
    digits = sum(c.isalnum() for c in str(node.value)) - str(node.value).lower().count("x")
    if digits > MAX_DIGITS:
        raise NumberTooLongError(node.start_mark.line + 1, digits)
    return yaml.constructor.SafeConstructor.construct_yaml_int(loader, node)


class _SafeLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    """The safe loader, with integers bounded (`NumberTooLongError`)."""


_SafeLoader.add_constructor("tag:yaml.org,2002:int", _bounded_int)


def _refuse_deep_nesting(text: str) -> None:
    # Each level of nesting costs at least one flow bracket, or one more column on a line
    # (indentation, "- ", "? "), so a text whose brackets and longest line are few cannot
    # be deep; only others are walked, as parser events, which never recurse.
    longest = max(map(len, text.splitlines()), default=0)
    if longest + text.count("[") + text.count("{") < MAX_DEPTH:
        return
    depth = 0
    for event in yaml.parse(text, Loader=_SafeLoader):
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise NestingError(event.start_mark.line + 1)
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1


def _compose(text: str) -> tuple[Any, yaml.Node | None]:
    _refuse_deep_nesting(text)
    loader = _SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is not None:
            _refuse_aliases(node)
    except BaseException:
        loader.dispose()
        raise
    return loader, node


def _refuse_aliases(root: yaml.Node) -> None:
    # An alias makes the composer hand out the same node twice; seeing a node again is
    # seeing an alias. One pass over the nodes, whatever the aliases would expand to; a
    # key that is a list or a mapping is refused on the way (`ComplexKeyError`).
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            raise AliasError(node.start_mark.line + 1)
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if not isinstance(key, yaml.ScalarNode):
                    raise ComplexKeyError(key.start_mark.line + 1)
                stack += (key, value)
        elif isinstance(node, yaml.SequenceNode):
            stack += node.value


def load_yaml_text(text: str) -> Any:
    """Safe-load YAML (the C loader when PyYAML has one; never an unsafe loader); aliases
    are refused (`AliasError`)."""
    loader, node = _compose(text)
    try:
        return None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()


def load_yaml_with_lines(text: str) -> tuple[Any, dict[KeyPath, int]]:
    """Safe-load YAML and map every key path to its 1-based line.

    Raises `yaml.YAMLError` for bad syntax, `DuplicateKeyError` for a key given twice
    (PyYAML would silently keep the last one) and `AliasError` for an alias.
    """
    loader, node = _compose(text)
    try:
        if node is None:
            return None, {}
        lines: dict[KeyPath, int] = {}
        _walk(loader, node, lines)
        return loader.construct_document(node), lines
    finally:
        loader.dispose()


def _walk(loader: Any, root: yaml.Node, lines: dict[KeyPath, int]) -> None:
    # Iterative, so a deeply nested document cannot exhaust Python's stack.
    stack: list[tuple[yaml.Node, KeyPath]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    raise ComplexKeyError(key_node.start_mark.line + 1)
                key = loader.construct_object(key_node, deep=True)
                duplicate = key in seen
                seen.add(key)
                if duplicate:
                    raise DuplicateKeyError(key, key_node.start_mark.line + 1)
                lines[path + (key,)] = key_node.start_mark.line + 1
                stack.append((value_node, path + (key,)))
        elif isinstance(node, yaml.SequenceNode):
            stack += [(item, path + (index,)) for index, item in enumerate(node.value)]


def dump_yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_SafeDumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=100)


def dump_yaml_within(data: dict[str, Any], limit: int) -> tuple[str, bool]:
    """What `dump_yaml` gives for a mapping, dumped a key (and a list item) at a time and
    stopped once past `limit` characters; True when it is all there. Block YAML at the top
    is its keys' dumps one after another, and a list's its items', so the part is exactly
    the whole's beginning, made without dumping all of a big document."""
    if not data:
        return dump_yaml(data), True
    parts: list[str] = []
    size = 0
    for key, value in data.items():
        if size > limit:
            return "".join(parts), False
        items = value if isinstance(value, list) and len(value) > 1 else None
        if items is not None and dump_yaml({key: items[:2]}) != \
                dump_yaml({key: items[:1]}) + dump_yaml(items[1:2]):
            items = None                 # a key YAML indents its list under: dumped whole
        parts.append(dump_yaml({key: items[:1] if items else value}))
        size += len(parts[-1])
        for item in (items or [])[1:]:
            if size > limit:
                return "".join(parts), False
            parts.append(dump_yaml([item]))
            size += len(parts[-1])
    return "".join(parts), True


LIST_PART = 256         # items of a long list dumped at once by `dump_yaml_parts`


def dump_yaml_parts(data: dict[str, Any]) -> Iterator[str]:
    """`dump_yaml(data)` in parts, joined the same text: a key at a time and, in a mapping
    under a key, a long list `LIST_PART` items at a time. PyYAML builds a node for every
    value before it writes one, and a sweep's grid of thousands of cells took five to
    eight times the text's size that way; in parts, it takes one part's."""
    if not data:
        yield dump_yaml(data)
    for key, value in data.items():
        long = isinstance(value, dict) and any(isinstance(v, list) and len(v) > LIST_PART
                                               for v in value.values())
        if not long:
            yield dump_yaml({key: value})
            continue
        yield dump_yaml({key: {}}).replace(" {}\n", "\n", 1)
        for inner, item in value.items():
            if not (isinstance(item, list) and len(item) > LIST_PART):
                yield _indented(dump_yaml({inner: item}))
                continue
            yield _indented(dump_yaml({inner: []}).replace(" []\n", "\n", 1))
            for start in range(0, len(item), LIST_PART):
                # a block list under a key is not indented further ("key:\n- item")
                yield _indented(dump_yaml(item[start:start + LIST_PART]))


def _indented(text: str) -> str:
    # as YAML indents what it writes under a key: every line but an empty one
    return "".join(line if line == "\n" else "  " + line
                   for line in text.splitlines(keepends=True))


def write_atomic(path: str | Path, text: str | bytes, *, overwrite: bool = True) -> None:
    """Write `text` to `path` via temp file + fsync + rename (see `atomic_file`)."""
    with atomic_file(path, overwrite=overwrite) as handle:
        handle.write(text.encode("utf-8") if isinstance(text, str) else text)


@contextmanager
def atomic_file(path: str | Path, *, overwrite: bool = True) -> Iterator[BinaryIO]:
    """A binary file that becomes `path` only when the block ends without an error: it is
    written beside it under a temp name, fsynced, then renamed over it, so a crash leaves
    either the old file or the new one, never half of one.

    With ``overwrite=False`` an existing file is never replaced (`FileExistsError`), and
    the check and the rename are one step (a hard link), so a racing writer cannot be
    clobbered either.
    """
    import tempfile  # loaded to write, not by every reader of YAML
    target = Path(path)
    make_parent(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, mode_for(target))
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if overwrite:
            os.replace(tmp, target)
        else:
            os.link(tmp, target)
            os.unlink(tmp)
        tmp = ""
        fsync_dir(target.parent)
    finally:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)


def mode_for(target: Path) -> int:
    """Keep a replaced file's mode; a new file gets the usual 0666 less the umask
    (mkstemp alone would leave it 0600)."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
