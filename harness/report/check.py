"""`report validate`: is a file a report this harness can trust, and if not, what is wrong
where (the line, the key path).

Both versions are checked against one schema, the nested document
(`report.schema.json`); a v2 file's journal entries are read one line at a time and
their problems reported on their own line, so checking costs time and memory in
proportion to the file. Beyond the schema: a report's `simulated` flag must agree
with where its results came from (`harness.report.model.is_simulated`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from harness.formats.yamlio import (
    AliasError,
    DuplicateKeyError,
    KeyPath,
    NestingError,
    load_yaml_with_lines,
)
from harness.model.errors import PlanError, ReportError
from harness.model.plan import parse_plan
from harness.report.fileformat import REWRITTEN_NOTE, assemble, parse_entry, read_report_text
from harness.report.fileformat import split as split_report
from harness.report.model import JOURNAL, KNOWN_SCHEMAS, SCHEMA, Report, is_simulated
from harness.report.schema import check

# The commands whose verdict is the judge's of their plans (searches write their own).
JUDGED = ("run", "reproduce")


@dataclass
class Validation:
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    document: dict[str, Any] | None = None     # the assembled report, when it was read

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
    plans = header.get("plans")
    declarations_only = isinstance(plans, list) and any(
        isinstance(plan, dict) and "trials" not in plan for plan in plans)
    if header["schema"] == SCHEMA and not parts.journal_found and declarations_only:
        # a header's plans are declarations, their trials in the journal below it; a
        # document with trials nested in its plans is whole without one
        result.problems.append(f"line {parts.header_lines}: no '{JOURNAL}' line: a "
                               f"{SCHEMA} file always has one; this one was cut short in its "
                               "header, and its journal is lost")
        return result
    entries = []
    if parts.whole and isinstance(header.get(JOURNAL[:-1]), list):
        result.notes.append(REWRITTEN_NOTE)
        entries = [(lines.get((JOURNAL[:-1], i), 0), entry)
                   for i, entry in enumerate(header.pop(JOURNAL[:-1]))]
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
    result.document = doc
    for problem in check(doc):
        line = _line_of(problem.path, entry_lines, lines)
        result.problems.append(f"line {line}: {problem.where()}: {problem.message}" if line
                               else f"{problem.where()}: {problem.message}")
    if not result.problems:
        result.problems += _consistency(doc)
    backend = doc.get("backend")
    if isinstance(backend, dict) and isinstance(backend.get("simulated"), bool) and \
            backend["simulated"] != is_simulated(backend):
        result.problems.append(
            f"line {lines.get(('backend', 'simulated'), '?')}: backend.simulated: "
            f"{backend['simulated']} contradicts backend.kind {backend.get('kind')!r}"
            + (" with a stand-in pyxrt" if backend.get("stand_in") else "")
            + ": results of the simulated stack are never hardware evidence")
    return result


def _consistency(doc: dict[str, Any]) -> list[str]:
    """What the schema cannot see: each plan's chunks are what its spec makes, and a
    finished run's verdict is what its trials say (a journal that lost its tail, or a
    header cut short after the verdict, disagrees)."""
    problems = []
    try:
        report = Report.from_dict(doc)
    except ReportError as err:
        return [str(err)]
    for plan in report.plans:
        try:
            made = parse_plan(plan.spec, sum(plan.chunks))
        except PlanError:
            continue              # a name-only spec (a recipe's, a frame's): nothing to match
        if list(made) != list(plan.chunks):
            problems.append(f"plan {plan.name}: spec {plan.spec!r} makes chunks "
                            f"{list(made)}, the report says {list(plan.chunks)}")
    if report.finished and report.command in JUDGED:
        if report.verdict is None:
            return problems + ["finished, but without a verdict: the header was cut short"]
        from harness.report.verdict import judge
        told = judge(report.plans, report.backend).to_dict()
        if told.get("text") != report.verdict.get("text"):
            problems.append(f"the verdict ({report.verdict.get('text')!r}) is not what its "
                            f"trials say ({told.get('text')!r}): the journal lost entries, or "
                            "the header was changed")
    return problems


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
