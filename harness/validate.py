"""`report validate`: is a file a report this harness can trust, and if not, what is wrong
where (the line, the key path).

Both versions are checked against one schema, the nested document
(`report.schema.json`); a v2 file's journal entries are read one line at a time and
their problems reported on their own line, so checking costs time and memory in
proportion to the file. Beyond the schema: a report's `simulated` flag must agree
with where its results came from (`harness.report.is_simulated`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from harness.errors import ReportError
from harness.report import (
    KNOWN_SCHEMAS,
    SCHEMA,
    assemble,
    is_simulated,
    parse_entry,
    read_report_text,
)
from harness.report import split as split_report
from harness.schema import check
from harness.yamlio import (
    AliasError,
    DuplicateKeyError,
    KeyPath,
    NestingError,
    load_yaml_with_lines,
)


@dataclass
class Validation:
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.problems


def validate_file(file: str) -> Validation:
    result = Validation()
    try:
        text = read_report_text(file)
    except ReportError as err:
        result.problems.append(str(err))
        return result
    parts = split_report(text)
    try:
        header, lines = load_yaml_with_lines(parts.header)
    except (DuplicateKeyError, AliasError, NestingError) as err:
        result.problems.append(f"line {err.line}: {err}")
        return result
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        result.problems.append(f"{where}not valid YAML "
                               f"({getattr(err, 'problem', None) or err})")
        return result
    if not isinstance(header, dict):
        result.problems.append("not a report: the top level must be a mapping")
        return result
    if header.get("schema") not in KNOWN_SCHEMAS:
        result.problems.append(f"unknown report schema {header.get('schema')!r}; this harness "
                               f"validates {', '.join(KNOWN_SCHEMAS)}")
        return result
    entries = []
    for line, body in parts.entries:
        try:
            entries.append((line, parse_entry(body)))
        except (ValueError, yaml.YAMLError) as err:
            result.problems.append(f"line {line}: not a journal entry ({err})")
    if parts.torn_line is not None:
        result.notes.append(f"line {parts.torn_line}: the last journal entry was cut short "
                            "(the harness was stopped while writing it); it is ignored")
    try:
        doc, entry_lines = assemble(header, entries) if header["schema"] == SCHEMA \
            else (header, {})
    except ValueError as err:
        result.problems.append(str(err))
        return result
    for problem in check(doc):
        line = _line_of(problem.path, entry_lines, lines)
        result.problems.append(f"line {line}: {problem.where()}: {problem.message}" if line
                               else f"{problem.where()}: {problem.message}")
    backend = doc.get("backend")
    if isinstance(backend, dict) and isinstance(backend.get("simulated"), bool) and \
            backend["simulated"] != is_simulated(backend):
        result.problems.append(
            f"line {lines.get(('backend', 'simulated'), '?')}: backend.simulated: "
            f"{backend['simulated']} contradicts backend.kind {backend.get('kind')!r}"
            + (" with a stand-in pyxrt" if backend.get("stand_in") else "")
            + ": results of the simulated stack are never hardware evidence")
    return result


def _line_of(path: KeyPath, entry_lines: dict[tuple, int], lines: dict[KeyPath, int]
             ) -> int | None:
    probe = path
    while probe:
        if probe in entry_lines:
            return entry_lines[probe]
        if probe in lines:
            return lines[probe]
        probe = probe[:-1]
    return None
