"""The report's JSON Schema (`harness/data/report.schema.json`) and a checker for it.

`report check` must work with only the run-time dependencies, so this module checks
the subset of JSON Schema the file uses (type, const, enum, required, properties,
additionalProperties, items, minimum, minLength, pattern, anyOf, oneOf, $ref to $defs)
and says where each problem is: the key path and, for a YAML file, the line. The tests
check the same files with the `jsonschema` package and require both to agree.

A report is mostly long arrays of small objects of plain fields (a sweep's runlist
outcomes run to millions), so an array whose items are such objects is first checked a
column at a time (`FlatObjects`), in C-speed passes over the whole array; only an array
that fails there is walked item by item, which finds and words each problem. The column
check accepts nothing the item walk would refuse (a property test holds them to that).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

from harness.formats.yamlio import KeyPath

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "null": lambda v: v is None,
}


# The package's own data folder, read as a file (as harness.formats.known reads its
# table): importlib.resources would load its zip-file readers with every check.
SCHEMA_FILE = Path(__file__).resolve().parents[1] / "data" / "report.schema.json"


@functools.cache
def report_schema() -> dict[str, Any]:
    return json.loads(SCHEMA_FILE.read_text("utf-8"))


@dataclass(frozen=True)
class SchemaProblem:
    path: KeyPath
    message: str

    def where(self) -> str:
        out = ""
        for part in self.path:
            out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
        return out or "(top level)"


# The words that constrain a value; a schema with none of them accepts anything.
_CONSTRAINING = {"anyOf", "oneOf", "const", "enum", "type", "minLength", "pattern",
                 "minimum", "required", "properties", "additionalProperties", "items"}
_SCALARS = ("string", "integer", "boolean", "null", "number")
_TYPE_ONLY = {"type", "description", "title", "$comment", "examples"}


def check(instance: Any, schema: dict[str, Any] | None = None, path: KeyPath = (),
          root: dict[str, Any] | None = None) -> list[SchemaProblem]:
    """Every problem of `instance` against `schema` (default: the report schema); `path` is
    where the instance sits in its document, `root` the schema its $refs point into."""
    schema = schema or report_schema()
    root = root or schema
    if type(instance) is dict:
        flat = _flat_items(root, _resolve(root, schema))
        if flat is not None and flat.accepts_one(instance):
            return []             # a trial of plain fields: what the walk would accept
    problems: list[SchemaProblem] = []
    _check(instance, schema, root, path, problems)
    return problems


def trial_schema(root: dict[str, Any] | None = None) -> dict[str, Any]:
    """The schema of one trial: the items of ``plans[*].trials``. A journaled report's
    trials are checked one at a time against it, the rest of the document without them."""
    root = root or report_schema()
    plan = _resolve(root, _resolve(root, root["properties"]["plans"])["items"])
    trials = _resolve(root, plan["properties"]["trials"])
    assert trials.keys() <= _TYPE_ONLY | {"items"}, "trials must be a plain array to be " \
        "checked a trial at a time"
    return _resolve(root, trials["items"])


_PYTHON_TYPES: dict[str, set[type]] = {
    "object": {dict}, "array": {list}, "string": {str}, "boolean": {bool}, "integer": {int},
    "number": {int, float}, "null": {type(None)}}
_PLAIN_WORDS = {"type", "enum", "const", "minimum", "description", "title", "$comment",
                "examples"}


@dataclass(frozen=True)
class _Column:
    """What a property of a flat object asks of its values, in a form whole columns are
    checked against; `walk` when only the item walk can tell."""

    types: frozenset[type] | None = None
    enum: frozenset[Any] | None = None
    minimum: float | None = None
    items: _Column | None = None          # an array of plain values: its items' rule
    walk: dict[str, Any] | None = None


def _column(root: dict[str, Any], schema: dict[str, Any]) -> _Column:
    schema = _resolve(root, schema)
    if schema.keys() <= _PLAIN_WORDS | {"items"}:
        kind = schema.get("type")
        types: frozenset[type] | None = None
        if kind is not None:
            names = kind if isinstance(kind, list) else [kind]
            types = frozenset[type]().union(*(_PYTHON_TYPES[n] for n in names))
        items = None
        if "items" in schema:
            items = _column(root, schema["items"])
            if types != {list} or items.walk is not None or items.items is not None:
                return _Column(walk=schema)
        numeric = types is not None and types <= {int, float}
        if "minimum" in schema and not numeric:
            return _Column(walk=schema)
        try:
            enum = frozenset(schema["enum"]) if "enum" in schema else (
                frozenset([schema["const"]]) if "const" in schema else None)
        except TypeError:                  # an unhashable choice: leave it to the walk
            return _Column(walk=schema)
        return _Column(types, enum, schema.get("minimum"), items)
    return _Column(walk=schema)


class FlatObjects:
    """An array's item schema that is an object of plain fields, checked column-wise."""

    def __init__(self, root: dict[str, Any], schema: dict[str, Any]) -> None:
        self.root = root
        self.required = frozenset(schema.get("required", ()))
        extra = schema.get("additionalProperties", True)
        self.allowed = frozenset(schema.get("properties", {})) if extra is False else None
        self.columns = {key: _column(root, rule)
                        for key, rule in schema.get("properties", {}).items()}

    @staticmethod
    def of(root: dict[str, Any], schema: dict[str, Any]) -> FlatObjects | None:
        if schema.get("type") != "object" or not schema.keys() <= \
                _TYPE_ONLY | {"required", "properties", "additionalProperties"} or \
                schema.get("additionalProperties", True) not in (True, False):
            return None
        return FlatObjects(root, schema)

    def accepts(self, items: list[Any]) -> bool:
        """True only if the item walk would find no problem in `items`; False when it may
        (the walk then decides, and says what and where)."""
        if not items:
            return True
        if set(map(type, items)) != {dict}:
            return False
        shapes = set(map(tuple, items))
        keys: set[str] = set()
        for shape in shapes:
            present = frozenset(shape)
            if not self.required <= present or \
                    (self.allowed is not None and not present <= self.allowed):
                return False
            keys |= present
        # one shape (the harness writes every outcome's keys in one order): every column
        # in one pass, each item's values in its keys' order
        columns = dict(zip(next(iter(shapes)), zip(*map(dict.values, items), strict=True),
                           strict=True)) if len(shapes) == 1 else None
        for key in keys:
            rule = self.columns.get(key)
            if rule is None:
                continue                   # an extra key no rule constrains
            values: Sequence[Any] = columns[key] if columns is not None else \
                [item[key] for item in items if key in item]
            if not self._column_ok(rule, values):
                return False
        return True

    def accepts_one(self, item: dict[str, Any]) -> bool:
        """`accepts([item])` for one object (a trial, checked as it is read), a field at
        a time instead of a column at a time."""
        keys = item.keys()
        if not self.required <= keys or (self.allowed is not None and
                                          not keys <= self.allowed):
            return False
        columns = self.columns
        for key, value in item.items():
            rule = columns.get(key)
            if rule is None:
                continue                   # an extra key no rule constrains
            if rule.walk is not None:
                if check(value, rule.walk, root=self.root):
                    return False
                continue
            if rule.types is not None and type(value) not in rule.types:
                return False
            if (rule.enum is not None or rule.minimum is not None or rule.items is not None) \
                    and not self._column_ok(rule, [value]):
                return False
        return True

    def _column_ok(self, rule: _Column, values: Sequence[Any]) -> bool:
        if rule.walk is not None:
            return all(not check(v, rule.walk, root=self.root) for v in values)
        if rule.types is not None and not set(map(type, values)) <= rule.types:
            return False
        if rule.enum is not None:
            try:
                if not set(values) <= rule.enum:
                    return False
            except TypeError:
                return False
        if rule.minimum is not None and values:
            lowest = min(values)
            if isinstance(lowest, float) and math.isnan(lowest) or lowest < rule.minimum:
                return False
        if rule.items is not None:
            return self._column_ok(rule.items, list(chain.from_iterable(values)))
        return True


# by the item schema's identity: the report schema's own dicts, loaded once and kept
_FLAT: dict[int, tuple[dict[str, Any], FlatObjects | None]] = {}


def _flat_items(root: dict[str, Any], schema: dict[str, Any]) -> FlatObjects | None:
    held = _FLAT.get(id(schema))
    if held is None or held[0] is not schema:
        held = _FLAT[id(schema)] = (schema, FlatObjects.of(root, schema))
    return held[1]


def _resolve(root: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/"):
            raise ValueError(f"only local $refs are supported, not {ref}")
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part]
        schema = target
    return schema


def _check(value: Any, schema: dict[str, Any], root: dict[str, Any], path: KeyPath,
           problems: list[SchemaProblem]) -> None:
    if "$ref" in schema:
        schema = _resolve(root, schema)
    if not schema.keys() & _CONSTRAINING:
        return                  # {} or only descriptions: anything goes, nothing to walk
    if schema.keys() <= _TYPE_ONLY and schema.get("type") in _SCALARS and \
            _TYPES[schema["type"]](value):
        return                  # the bulk of a report: a plain scalar of the right type
    for word in ("anyOf", "oneOf"):
        if word in schema:
            passing = 0
            for option in schema[word]:
                found: list[SchemaProblem] = []
                _check(value, option, root, path, found)
                passing += not found
            if passing == 0 or (word == "oneOf" and passing > 1):
                problems.append(SchemaProblem(path, f"matches {passing} of the {len(schema[word])} "
                                              f"allowed forms ({word})"))
                return
    if "const" in schema and value != schema["const"]:
        problems.append(SchemaProblem(path, f"must be {schema['const']!r}, not {value!r}"))
        return
    if "enum" in schema and value not in schema["enum"]:
        problems.append(SchemaProblem(path, f"{value!r} is not one of "
                                      f"{', '.join(map(repr, schema['enum']))}"))
        return
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_TYPES[t](value) for t in types):
            problems.append(SchemaProblem(path, f"expected {' or '.join(types)}, got "
                                          f"{type(value).__name__} {value!r}"[:200]))
            return
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            problems.append(SchemaProblem(path, "must not be empty"))
        if "pattern" in schema and not re.search(schema["pattern"], value):
            problems.append(SchemaProblem(path, f"{value!r} does not match {schema['pattern']}"))
    if _TYPES["number"](value) and "minimum" in schema and value < schema["minimum"]:
        problems.append(SchemaProblem(path, f"{value} is below the minimum {schema['minimum']}"))
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                problems.append(SchemaProblem(path, f"missing required key {key!r}"))
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                _check(item, properties[key], root, path + (key,), problems)
            elif extra is False:
                problems.append(SchemaProblem(path + (key,), f"unknown key {key!r}"))
            elif isinstance(extra, dict):
                _check(item, extra, root, path + (key,), problems)
    if isinstance(value, list) and "items" in schema:
        items = _resolve(root, schema["items"])
        flat = _flat_items(root, items)
        if flat is not None and flat.accepts(value):
            return
        for index, item in enumerate(value):
            _check(item, items, root, path + (index,), problems)
