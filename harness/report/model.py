"""Per-run YAML reports: the model and loading, of every version.

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

import datetime as dt
import json
import secrets
from dataclasses import dataclass, field
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
from harness.model.plan import plan_label
from harness.model.results import RunlistOutcome, TrialResult, counts_text

SCHEMA_V1 = "xdna-runlist-harness/report/v1"
SCHEMA = "xdna-runlist-harness/report/v2"
KNOWN_SCHEMAS = (SCHEMA_V1, SCHEMA)
JOURNAL = "journal:"
ENTRY_KINDS = ("trial", "plan", "probe", "note")
HEADER_KEYS = ("schema", "run_id", "created", "finished", "command", "harness", "backend",
               "environment", "artifacts", "case", "settings", "plans", "verdict")


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def is_simulated(backend: dict[str, Any]) -> bool:
    """Where results came from, decided in one place: the simulated stack, or the hardware
    path with the simulator standing in for pyxrt. The stored `simulated` flag must agree
    (`report validate` checks it)."""
    return backend.get("kind") == "sim" or bool(backend.get("stand_in"))


@dataclass
class PlanRecord:
    name: str
    spec: str
    chunks: list[int]
    expect: str | None = None
    trials: list[TrialResult] = field(default_factory=list)
    control: str | None = None       # a control plan: what it runs instead of the case
    frame: str | None = None         # a capture's frame it cuts, if not the case's own

    @property
    def label(self) -> str:
        return plan_label(self.name, self.chunks)

    def finished(self) -> list[TrialResult]:
        return [t for t in self.trials if t.status.finished]

    def summary(self) -> dict[str, Any]:
        by_state: dict[str, int] = {}
        by_status: dict[str, int] = {}
        for trial in self.trials:
            by_status[trial.status.value] = by_status.get(trial.status.value, 0) + 1
            if trial.status.finished:
                by_state[trial.state] = by_state.get(trial.state, 0) + 1
        return {"trials": len(self.finished()), "by_state": by_state, "by_status": by_status}

    def counts_text(self) -> str:
        """``TIMEOUT 3/3`` or ``COMPLETED 2/3, TIMEOUT 1/3``; ``no finished trials``."""
        by_state = self.summary()["by_state"]
        return counts_text(by_state) if by_state else "no finished trials"

    def declaration(self) -> dict[str, Any]:
        out = {"name": self.name, "spec": self.spec, "chunks": list(self.chunks),
               "expect": self.expect}
        if self.control:
            out["control"] = self.control
        if self.frame:
            out["frame"] = self.frame
        return out

    def to_dict(self) -> dict[str, Any]:
        return {**self.declaration(), "summary": self.summary(),
                "trials": [trial_dict(t) for t in self.trials]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlanRecord:
        trials = [trial_from_dict(raw) for raw in data.get("trials") or []]
        return cls(data["name"], str(data["spec"]), list(data["chunks"]), data.get("expect"),
                   trials, data.get("control"), data.get("frame"))


def trial_dict(trial: TrialResult) -> dict[str, Any]:
    """A trial as reports keep it. Fields that say nothing (None, a runlist not skipped) are
    left out: sweeps write thousands of runlist outcomes, and a reader loses nothing."""
    out = {k: v for k, v in trial.to_json().items() if v is not None and k != "runlists"}
    out["state"] = trial.state
    out["runlists"] = [{k: v for k, v in r.items() if v is not None
                        and not (k == "skipped" and v is False)}
                       for r in trial.to_json()["runlists"]]
    return out


def trial_from_dict(raw: dict[str, Any]) -> TrialResult:
    fields = dict(raw)
    fields.pop("state", None)            # derived; written for readers, recomputed here
    fields.pop("plan", None)             # a v2 journal entry names its plan
    fields["runlists"] = [RunlistOutcome(**r) for r in fields.get("runlists") or []]
    return TrialResult(**fields)


@dataclass
class Report:
    command: str
    harness: dict[str, Any]
    backend: dict[str, Any]
    case: dict[str, Any]
    settings: dict[str, Any]
    environment: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, Any] = field(default_factory=dict)
    plans: list[PlanRecord] = field(default_factory=list)
    verdict: dict[str, Any] | None = None
    sections: dict[str, Any] = field(default_factory=dict)   # bisect, sweep, server, ...
    run_id: str = field(default_factory=lambda: secrets.token_hex(6))
    created: str = field(default_factory=utc_now)
    finished: str | None = None
    schema: str = SCHEMA
    declared: int | None = None          # how many plans the header declares (the rest: journal)
    notes: list[dict[str, Any]] = field(default_factory=list)
    torn_line: int | None = None         # a last journal line cut short by a kill, ignored
    read_whole: bool = False             # rewritten by a YAML tool: see REWRITTEN_NOTE

    @property
    def simulated(self) -> bool:
        return is_simulated(self.backend)

    def plan(self, name: str) -> PlanRecord:
        for plan in self.plans:
            if plan.name == name:
                return plan
        raise KeyError(name)

    def header_dict(self) -> dict[str, Any]:
        """What the header of a v2 file holds: everything but the journal's entries."""
        declared = self.plans if self.declared is None else self.plans[:self.declared]
        out: dict[str, Any] = {
            "schema": SCHEMA, "run_id": self.run_id, "created": self.created,
            "finished": self.finished, "command": self.command, "harness": self.harness,
            "backend": self.backend, "environment": self.environment,
            "artifacts": self.artifacts, "case": self.case, "settings": self.settings,
            "plans": [p.declaration() for p in declared], "verdict": self.verdict,
        }
        for name, section in self.sections.items():
            out[name] = {k: v for k, v in section.items() if k != "log"} \
                if name == "bisect" else section
        return out

    def to_dict(self) -> dict[str, Any]:
        """The whole report as one nested document (plans holding their trials)."""
        out: dict[str, Any] = {
            "schema": self.schema, "run_id": self.run_id, "created": self.created,
            "finished": self.finished, "command": self.command, "harness": self.harness,
            "backend": self.backend, "environment": self.environment,
            "artifacts": self.artifacts, "case": self.case, "settings": self.settings,
            "plans": [p.to_dict() for p in self.plans], "verdict": self.verdict,
        }
        out.update(self.sections)
        if self.notes:
            out["notes"] = list(self.notes)
        return out

    @classmethod
    def from_dict(cls, data: Any, where: str = "report") -> Report:
        if not isinstance(data, dict):
            raise ReportError(f"{where}: not a report (expected a mapping at the top)")
        schema = data.get("schema")
        if schema not in KNOWN_SCHEMAS:
            raise ReportError(f"{where}: unknown report schema {schema!r}; this harness "
                              f"reads {', '.join(KNOWN_SCHEMAS)} (a newer harness may have "
                              "written it)")
        try:
            return cls(
                command=data["command"], harness=data["harness"], backend=data["backend"],
                case=data["case"], settings=data["settings"],
                environment=data.get("environment") or {},
                artifacts=data.get("artifacts") or {},
                plans=[PlanRecord.from_dict(p) for p in data.get("plans") or []],
                verdict=data.get("verdict"),
                sections={k: v for k, v in data.items()
                          if k not in HEADER_KEYS and k not in ("notes", JOURNAL[:-1])},
                run_id=str(data["run_id"]), created=str(data["created"]),
                finished=data.get("finished"), schema=schema,
                notes=list(data.get("notes") or []))
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise ReportError(f"{where}: malformed report ({type(err).__name__}: {err})") \
                from None


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
