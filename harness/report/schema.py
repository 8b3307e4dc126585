"""The report's JSON Schema (`harness/data/report.schema.json`) and a checker for it.

`report validate` must work with only the run-time dependencies, so this
module checks the subset of JSON Schema the file uses (type, const, enum,
required, properties, additionalProperties, items, minimum, minLength,
pattern, anyOf, oneOf, $ref to $defs) and says where each problem is: the key path and,
for a YAML file, the line. The tests check the same files with the
`jsonschema` package and require both to agree.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

from harness.formats.yamlio import KeyPath

SCHEMA_V1 = "xdna-runlist-harness/report/v1"

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "null": lambda v: v is None,
}


@functools.cache
def report_schema() -> dict[str, Any]:
    text = resources.files("harness").joinpath("data/report.schema.json").read_text("utf-8")
    return json.loads(text)


@dataclass(frozen=True)
class Problem:
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


def check(instance: Any, schema: dict[str, Any] | None = None) -> list[Problem]:
    root = schema or report_schema()
    problems: list[Problem] = []
    _check(instance, root, root, (), problems)
    return problems


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
           problems: list[Problem]) -> None:
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
                found: list[Problem] = []
                _check(value, option, root, path, found)
                passing += not found
            if passing == 0 or (word == "oneOf" and passing > 1):
                problems.append(Problem(path, f"matches {passing} of the {len(schema[word])} "
                                              f"allowed forms ({word})"))
                return
    if "const" in schema and value != schema["const"]:
        problems.append(Problem(path, f"must be {schema['const']!r}, not {value!r}"))
        return
    if "enum" in schema and value not in schema["enum"]:
        problems.append(Problem(path, f"{value!r} is not one of "
                                      f"{', '.join(map(repr, schema['enum']))}"))
        return
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_TYPES[t](value) for t in types):
            problems.append(Problem(path, f"expected {' or '.join(types)}, got "
                                          f"{type(value).__name__} {value!r}"[:200]))
            return
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            problems.append(Problem(path, "must not be empty"))
        if "pattern" in schema and not re.search(schema["pattern"], value):
            problems.append(Problem(path, f"{value!r} does not match {schema['pattern']}"))
    if _TYPES["number"](value) and "minimum" in schema and value < schema["minimum"]:
        problems.append(Problem(path, f"{value} is below the minimum {schema['minimum']}"))
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                problems.append(Problem(path, f"missing required key {key!r}"))
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                _check(item, properties[key], root, path + (key,), problems)
            elif extra is False:
                problems.append(Problem(path + (key,), f"unknown key {key!r}"))
            elif isinstance(extra, dict):
                _check(item, extra, root, path + (key,), problems)
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            _check(item, schema["items"], root, path + (index,), problems)
