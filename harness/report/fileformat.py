"""Report files on disk, of every version: their layout, and reading them.

Schema history (bump SCHEMA and add a line when the format changes):
- ``xdna-runlist-harness/report/v1`` (0.1.0): one YAML document, rewritten whole
  before and after every trial.
- ``xdna-runlist-harness/report/v2`` (0.2.0): a header (everything but the trials),
  then ``journal:``, an append-only list with one entry per line: a trial's state
  (``{"trial": {"plan": NAME, ...}}``; a later entry for the same plan and index
  replaces an earlier one, so ``in-flight`` is followed by the outcome), a plan a
  search added (``plan``), a bisect probe (``probe``) or a note (``note``). Each
  entry is a JSON object, which is YAML too, so the file stays one YAML document.
  Saving a trial appends a line instead of rewriting the file: the cost per trial
  does not grow with the report. `harness.report.journal` writes it.

Readers see one shape whatever the version: `assemble` turns a v2 file into the
nested document v1 was (plans holding their trials), which `report.schema.json`
describes and `render`, `compare` and `--json` use.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.formats.jsonread import JsonShapeError, loads
from harness.formats.yamlio import (
    AliasError,
    DuplicateKeyError,
    NestingError,
    dump_yaml,
    load_yaml_text,
)
from harness.model.errors import ReportError
from harness.report.model import ENTRY_KINDS, JOURNAL, SCHEMA, Report

# -- the v2 file: header and journal -------------------------------------------------------

@dataclass
class ReportText:
    """A report file split into its parts."""

    header: str
    header_lines: int                      # lines before the journal's entries
    entries: list[tuple[int, str]]         # (1-based line, the entry's text)
    torn_line: int | None = None           # a last line without its newline
    # Not in the harness's layout (a YAML tool rewrote it: keys sorted, entries in block
    # style, a comment added): read as one YAML document instead, more slowly.
    whole: bool = False
    journal_found: bool = True             # the "journal:" line (a v2 file always has it)


REWRITTEN_NOTE = ("a YAML tool rewrote this report (its journal is no longer one JSON line "
                  "per entry): it was read as one YAML document, more slowly; the harness's "
                  "next write to it restores its own layout")


def split(text: str) -> ReportText:
    """The header and the journal entries (v2); a file without a journal (v1) is all
    header; a file in neither layout is marked `whole`."""
    parts = _split(text)
    if any(not body.startswith("- {") for _, body in parts.entries):
        return ReportText(text, text.count("\n"), [], whole=True)
    return parts


def whole_document(text: str) -> tuple[Any, list[tuple[int, Any]]]:
    """A rewritten report read as one document: its header keys, and its journal's entries
    (with no line of their own: a YAML tool may have spread each over many)."""
    document = load_yaml_text(text)
    if not isinstance(document, dict):
        return document, []
    journal = document.get(JOURNAL[:-1])
    header = {k: v for k, v in document.items() if k != JOURNAL[:-1]}
    return header, [(0, entry) for entry in journal] if isinstance(journal, list) else []


def _split(text: str) -> ReportText:
    at = text.find("\n" + JOURNAL + "\n")
    if at < 0:
        if text.endswith("\n" + JOURNAL):
            return ReportText(text[:len(text) - len(JOURNAL)], text.count("\n"), [])
        return ReportText(text, text.count("\n"), [], journal_found=False)
    header = text[:at + 1]
    first = header.count("\n") + 2
    body = text[at + len(JOURNAL) + 2:]
    lines = body.split("\n")
    torn = None
    if lines and lines[-1] == "":
        lines.pop()
    elif lines:
        torn = first + len(lines) - 1        # no newline after the last entry: cut short
        lines.pop()
    return ReportText(header, first - 1, [(first + i, line) for i, line in enumerate(lines)],
                      torn)


def parse_entry(line: str) -> Any:
    """One journal line: ``- {...}``, read as JSON (what the harness writes) or as YAML."""
    if not line.startswith("- "):
        raise ValueError("a journal entry starts with '- '")
    body = line[2:]
    try:
        return loads(body)
    except JsonShapeError:
        raise
    except ValueError:
        return load_yaml_text(body)


def entry_kind(entry: Any) -> str | None:
    if isinstance(entry, dict) and len(entry) == 1:
        kind = next(iter(entry))
        if kind in ENTRY_KINDS and isinstance(entry[kind], dict):
            return kind
    return None


def assemble(header: Any, entries: list[tuple[int, Any]]
             ) -> tuple[dict[str, Any], dict[tuple, int]]:
    """The nested document a v2 file stands for, and the journal line each part came from
    (keyed by its path in the document). Raises ValueError for an entry that cannot be
    placed, naming its line."""
    if not isinstance(header, dict):
        raise ValueError("the header is not a mapping")
    doc = dict(header)
    doc.pop(JOURNAL[:-1], None)
    plans = [dict(p, trials=[]) if isinstance(p, dict) else p
             for p in (header.get("plans") or [])]
    doc["plans"] = plans
    if isinstance(doc.get("bisect"), dict):
        doc["bisect"] = dict(doc["bisect"], log=list(doc["bisect"].get("log") or []))
    by_name = {p.get("name"): p for p in plans if isinstance(p, dict)}
    lines: dict[tuple, int] = {}
    trials: dict[tuple[Any, Any], tuple[int | None, Any]] = {}
    for plan in header.get("plans") or []:     # a nested document keeps trials in its plans
        if isinstance(plan, dict) and isinstance(plan.get("trials"), list):
            for position, trial in enumerate(plan["trials"]):
                index = trial.get("index") if isinstance(trial, dict) else None
                trials[(plan.get("name"), index if index is not None else f"#{position}")] = \
                    (None, trial)
    for line, entry in entries:
        kind = entry_kind(entry)
        if kind is None:
            raise ValueError(f"line {line}: a journal entry is one of "
                             f"{', '.join(ENTRY_KINDS)} holding a mapping")
        body = entry[kind]
        if kind == "plan":
            if body.get("name") not in by_name:
                record = dict(body, trials=[])
                plans.append(record)
                by_name[body.get("name")] = record
                lines[("plans", len(plans) - 1)] = line
        elif kind == "trial":
            name, index = body.get("plan"), body.get("index")
            if name not in by_name:
                raise ValueError(f"line {line}: the trial names plan {name!r}, which the report "
                                 "does not declare")
            trials[(name, index)] = (line, {k: v for k, v in body.items() if k != "plan"})
        elif kind == "probe":
            log = doc.setdefault("bisect", {}).setdefault("log", [])
            log.append(body)
            lines[("bisect", "log", len(log) - 1)] = line
        else:
            doc.setdefault("notes", []).append(body)
    order = {id(p): i for i, p in enumerate(plans)}
    for (name, _), (line, body) in sorted(trials.items(),
                                          key=lambda kv: (str(kv[0][0]), _index(kv[0][1]))):
        plan = by_name[name]
        plan["trials"].append(body)
        if line is not None:
            lines[("plans", order[id(plan)], "trials", len(plan["trials"]) - 1)] = line
    return doc, lines


def read_document(path: str | Path) -> dict[str, Any]:
    """A report file as the one nested document the schema describes, as written: neither
    checked nor converted (a v1 file is that document; a v2 file is assembled)."""
    text = read_report_text(path)
    parts = split(text)
    if parts.whole:
        header, entries = whole_document(text)
    else:
        header = load_yaml_text(parts.header)
        entries = [(line, parse_entry(body)) for line, body in parts.entries]
    if isinstance(header, dict) and header.get("schema") == SCHEMA:
        return assemble(header, entries)[0]
    return header


def _index(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def read_report_text(path: str | Path) -> str:
    try:
        return Path(path).read_text("utf-8")
    except IsADirectoryError:
        raise ReportError(f"{path} is a folder, not a report") from None
    except OSError as err:
        raise ReportError(f"cannot read report {path}: {err.strerror}") from None
    except UnicodeDecodeError:
        raise ReportError(f"{path}: not UTF-8 text") from None


def load_report(path: str | Path) -> Report:
    """A report of any known version; a torn last journal entry is ignored (and noted)."""
    text = read_report_text(path)
    parts = split(text)
    try:
        header, entries = whole_document(text) if parts.whole else \
            (load_yaml_text(parts.header), [])
        for line, body in parts.entries:
            try:
                entries.append((line, parse_entry(body)))
            except JsonShapeError as err:
                raise ReportError(f"{path}:{line}: journal entry {err}") from None
    except (yaml.YAMLError, ValueError) as err:
        mark = getattr(err, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        problem = getattr(err, "problem", None) or err
        if isinstance(err, (AliasError, DuplicateKeyError, NestingError)):
            raise ReportError(f"{path}:{err.line}: {err}") from None
        raise ReportError(f"{path}{line}: not valid YAML ({problem})") from None
    if entries or (isinstance(header, dict) and header.get("schema") == SCHEMA):
        try:
            data, _ = assemble(header, entries)
        except ValueError as err:
            raise ReportError(f"{path}: {err}") from None
    else:
        data = header
    report = Report.from_dict(data, str(path))
    report.torn_line = parts.torn_line
    report.read_whole = parts.whole
    if report.schema == SCHEMA:
        report.declared = len(header.get("plans") or [])
    return report


def header_text(report: Report) -> str:
    """The header of a v2 file, ending with the journal's key."""
    comment = "# xdna-runlist-harness report"
    if report.simulated:
        comment += ": SIMULATED stack, not hardware evidence"
    return comment + "\n" + dump_yaml(report.header_dict()) + JOURNAL + "\n"


def entry_line(kind: str, body: dict[str, Any]) -> bytes:
    return ("- " + json.dumps({kind: body}, ensure_ascii=True, separators=(", ", ": "))
            + "\n").encode("ascii")
