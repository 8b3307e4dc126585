"""Reading a report file a part at a time (`ReportReader`): the header and the plans
first, then the trials one at a time in the document's order (each plan's, by index),
each read from the file when its turn comes. A first pass over the journal notes where
each trial's last entry lies; the trial entries the harness wrote itself are recognised
there without being parsed. `harness.report.fileformat` says what the layouts are.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.formats.jsonread import JsonShapeError, loads, loads_counted
from harness.formats.yamlio import (
    KeyPath,
    ShapeError,
    load_yaml_text,
    load_yaml_with_lines,
)
from harness.model.errors import ReportError
from harness.report.model import (
    ENTRY_KINDS,
    JOURNAL,
    JOURNALED,
    LEGACY_KINDS,
    SCHEMA_V1,
    SCHEMA_V2,
    SCHEMA_V3,
    mapping,
)

JOURNAL_KEY = JOURNAL[:-1]
REWRITTEN_NOTE = ("a YAML tool rewrote this report (its journal is no longer one JSON line "
                  "per entry): it was read as one YAML document, more slowly; the harness's "
                  "next write to it restores its own layout")
_MARK = ("\n" + JOURNAL + "\n").encode()
_BLOCK = 1 << 16                  # the header is read this much at a time
_SCAN_BLOCK = 1 << 18             # the journal, this much
_HEAD = 512                       # of a line, what its kind is told from
_FLOW_ENTRY = b"- {"               # how each journal line the harness writes begins
# A trial entry as the harness writes it (`entry_line`): the plan and index first.
_TRIAL_START = b'- {"trial": {"plan": "'
# (an index past 18 digits is no trial of ours: the line is read whole, and refused)
_TRIAL_KEY = re.compile(rb'- \{"trial": \{"plan": "((?:[^"\\\n]|\\.)*)", "index": (\d{1,18}), ')


NUL_PROBLEM = ("a NUL byte: no report holds one (the file is damaged, or is not a "
               "report)")


def yaml_problem(err: Exception) -> str:
    """What a YAML (or JSON) error says, on one line, without PyYAML's quoting of where."""
    problem = getattr(err, "problem", None) or str(err).split("\n  in ", 1)[0]
    return " ".join(str(problem).split())


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
    """What a journal entry is (v2's ``probe`` read as ``step``), or None."""
    if isinstance(entry, dict) and len(entry) == 1:
        kind = next(iter(entry))
        kind = LEGACY_KINDS.get(kind, kind)
        if kind in ENTRY_KINDS and isinstance(next(iter(entry.values())), dict):
            return kind
    return None


def _index(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def _key(value: Any) -> Any:
    """A plan's name or a trial's index as a key: what a damaged file holds there may be
    a mapping or a list (the schema check says so; reading it must not fail first)."""
    try:
        hash(value)
    except TypeError:
        return ("unhashable", repr(value))
    return value


class HeaderError(ReportError):
    """The header is not valid YAML (or holds what the harness never writes there)."""

    def __init__(self, path: Path, line: int | None, detail: str) -> None:
        super().__init__(f"{path}:{line}: {detail}" if line else f"{path}: {detail}")
        self.line = line
        self.detail = detail


@dataclass(frozen=True)
class Problem:
    """Something wrong in a report file, and the line it is on (None: the file's whole)."""

    line: int | None
    message: str

    def text(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message


@dataclass
class TrialEntry:
    """One trial of the document: its plan's position in `ReportReader.plans`, the trial
    as the file holds it (without the journal's ``plan`` key), and where it is."""

    plan: int
    body: Any
    line: int | None                # its journal line; None: nested in the header
    raw: bytes = b""                # the journal line's JSON, as written


@dataclass(slots=True)              # one per trial of the report: kept small
class _Where:
    """Where the last version of a trial is: a journal line's byte range, or in memory."""

    line: int | None
    start: int = 0
    end: int = 0
    body: Any = None
    written: bool = True            # the harness's own JSON (else: read as parse_entry does)


@dataclass
class _Plan:
    declaration: Any
    trials: dict[Any, _Where] = field(default_factory=dict)
    line: int | None = None         # the journal line that added it


class ReportReader:
    """A report file open for reading a part at a time (see the module's doc).

    `strict` readers raise `ReportError` at the first problem, as loading does; others
    collect them in `problems` (line and message), as `report check` does, and go on
    where they can. The file is read through one descriptor, so a writer that replaces
    it meanwhile (a run finishing) does not mix two versions into one reading."""

    def __init__(self, path: str | Path, *, strict: bool = True) -> None:
        self.path = Path(path)
        self.strict = strict
        self.problems: list[Problem] = []
        self.notes: list[str] = []
        self.torn_line: int | None = None
        self.whole = False                 # a YAML tool rewrote it: read as one document
        self.journal_found = True          # the "journal:" line (a journaled file has it)
        self.header_lines = 0              # lines before the journal's first entry
        self.header: Any = None
        self.lines: dict[KeyPath, int] = {}    # the header's key paths -> their lines
        self.steps: list[tuple[int | None, dict[str, Any]]] = []
        # a sweep's cells (v4), each cell's last entry by its row and chunk: (line, cell)
        self.cells: dict[Any, tuple[int, dict[str, Any]]] = {}
        self.journal_notes: list[dict[str, Any]] = []
        self._journal_at: int | None = None
        self._plans: list[_Plan] = []
        self._by_name: dict[Any, int] = {}
        self._misplaced: Problem | None = None
        self._entries_seen: dict[str, int] = {}    # entries other than trials, as read
        self._header_read = self._indexed = False
        try:
            self._fd: int | None = os.open(self.path, os.O_RDONLY)
        except OSError as err:
            raise ReportError(f"cannot read report {path}: {err.strerror}") from None
        try:
            status = os.fstat(self._fd)
            if stat.S_ISDIR(status.st_mode):
                raise ReportError(f"{path} is a folder, not a report")
            self._size = status.st_size
            self._header_text = self._read_header()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> ReportReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self, start: int, size: int) -> bytes:
        assert self._fd is not None, "the report reader was closed"
        return os.pread(self._fd, size, start)

    def _not_utf8(self) -> ReportError:
        return ReportError(f"{self.path}: not UTF-8 text")

    def _fail(self, line: int | None, message: str, strict_text: str) -> None:
        if self.strict:
            raise ReportError(strict_text)
        self.problems.append(Problem(line, message))

    # -- the header ------------------------------------------------------------------------

    def _read_header(self) -> str:
        """The header's text, and where the journal's entries begin if there is a journal."""
        head = b""
        while len(head) < self._size:
            block = self._read(len(head), _BLOCK)
            if not block:
                break
            overlap = len(head) - min(len(head), len(_MARK))
            found = (head[overlap:] + block).find(_MARK)
            if found >= 0:
                self._journal_at = overlap + found + len(_MARK)
                head = (head + block)[:overlap + found + 1]
                break
            head += block
        try:
            text = head.decode("utf-8")
        except UnicodeDecodeError:
            raise self._not_utf8() from None
        if self._journal_at is not None:
            self.header_lines = text.count("\n") + 1
            return text
        self.header_lines = text.count("\n")
        if text.endswith("\n" + JOURNAL):
            return text[:len(text) - len(JOURNAL)]
        self.journal_found = False
        return text

    def read_header(self, *, with_lines: bool = False) -> Any:
        """The header, loaded (with each key path's line, for `report check`). A file a
        YAML tool rewrote is loaded whole here, its journal read from the document."""
        if self._header_read:
            return self.header
        text = self._header_text
        if self._journal_at is not None and not self._entries_in_flow():
            self.whole = True
            try:
                text = self._read(0, self._size).decode("utf-8")
            except UnicodeDecodeError:
                raise self._not_utf8() from None
        if "\0" in text:
            raise HeaderError(self.path, text.count("\n", 0, text.index("\0")) + 1,
                              NUL_PROBLEM)
        try:
            if with_lines:
                self.header, self.lines = load_yaml_with_lines(text)
            else:
                self.header = load_yaml_text(text)
        except ShapeError as err:
            raise HeaderError(self.path, err.line, str(err)) from None
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            raise HeaderError(self.path, mark.line + 1 if mark else None,
                              f"not valid YAML ({yaml_problem(err)})") from None
        if not self.journal_found and isinstance(self.header, dict) and \
                isinstance(self.header.get(JOURNAL_KEY), list):
            # a report a tool wrote again in another layout (flow style, JSON, CRLF line
            # ends): its journal is there, as one list in the document
            self.whole = self.journal_found = True
        self._header_read = True
        return self.header

    def _entries_in_flow(self) -> bool:
        """Whether every whole journal line starts ``- {`` (the harness's layout; a torn
        last line aside), counted a block at a time: each newline before the last one
        must be followed by ``- {``."""
        start = self._journal_at or 0
        last = self._last_newline(start)
        if last < 0:
            return True                       # no whole line: nothing to tell it by
        if self._read(start, 3) != _FLOW_ENTRY:
            return False
        pos = start
        while pos < last:
            size = min(_SCAN_BLOCK, last - pos)
            # three bytes more: what follows a newline at the block's end
            block = self._read(pos, size + len(_FLOW_ENTRY))
            if block.count(b"\n", 0, size) != block.count(b"\n" + _FLOW_ENTRY):
                return False
            pos += size
        return True

    def _last_newline(self, start: int) -> int:
        """Where the journal's last newline is (-1: none after `start`)."""
        end = self._size
        while end > start:
            size = min(_SCAN_BLOCK, end - start)
            at = self._read(end - size, size).rfind(b"\n")
            if at >= 0:
                return end - size + at
            end -= size
        return -1

    @property
    def journaled(self) -> bool:
        return isinstance(self.header, dict) and self.header.get("schema") in JOURNALED

    # -- the journal: where everything is ----------------------------------------------------

    def _journal_lines(self) -> Iterator[tuple[int, int, int, bytes]]:
        """(line number, start, end, its first bytes) of each whole journal line, read a
        block at a time; a last line without its newline (torn) is not one of them."""
        line = self.header_lines
        start = pos = self._journal_at or 0
        head = b""                          # the current line's first bytes, so far
        while pos < self._size:
            block = self._read(pos, min(_SCAN_BLOCK, self._size - pos))
            if not block:
                break
            at = 0
            while True:
                newline = block.find(b"\n", at)
                if newline < 0:
                    head += block[at:at + max(0, _HEAD - len(head))]
                    break
                head += block[at:min(newline, at + max(0, _HEAD - len(head)))]
                line += 1
                yield line, start, pos + newline, head
                start, head, at = pos + newline + 1, b"", newline + 1
            pos += len(block)
        self.torn_line = line + 1 if start < self._size else None

    def index(self) -> None:
        """Read the header's plans and the journal once, noting where each trial's last
        version lies (the trials themselves are read by `trials`)."""
        if self._indexed:
            return
        header = self.read_header()
        self._indexed = True
        if not isinstance(header, dict):
            return
        nested = []
        plans = header.get("plans")
        for plan in plans if isinstance(plans, list) else []:
            declaration = {k: v for k, v in plan.items() if k != "trials"} \
                if isinstance(plan, dict) else plan
            self._plans.append(_Plan(declaration))
            if isinstance(plan, dict):
                self._by_name[_key(plan.get("name"))] = len(self._plans) - 1
                if isinstance(plan.get("trials"), list):
                    nested.append((len(self._plans) - 1, plan["trials"]))
        for position, trials in nested:             # a nested document keeps them here
            for number, trial in enumerate(trials):
                index = trial.get("index") if isinstance(trial, dict) else None
                key = _key(index) if index is not None else f"#{number}"
                self._plans[position].trials[key] = _Where(None, body=trial)
        if isinstance(header.get("bisect"), dict):
            log = header["bisect"].get("log")
            self.steps = [(None, step) for step in log] if isinstance(log, list) else []
        if self.whole:
            self.notes.append(REWRITTEN_NOTE)
            journal = header.get(JOURNAL_KEY)
            for number, entry in enumerate(journal if isinstance(journal, list) else []):
                self._take(entry, self.lines.get((JOURNAL_KEY, number), 0), None)
        elif self._journal_at is not None:
            for line, start, end, head in self._journal_lines():
                match = _TRIAL_KEY.match(head)
                prefix = _HEAD
                while match is None and prefix < end - start and head.startswith(_TRIAL_START):
                    # a plan named at length (a 1,000-run cut is "1+1+...+1"): read on, as
                    # far as its name goes, not the whole line (its runlists follow)
                    prefix *= 8
                    match = _TRIAL_KEY.match(self._read(start, min(prefix, end - start)))
                if match is not None:
                    self._place_trial(self._name(match.group(1)), int(match.group(2)), line,
                                      _Where(line, start + 2, end))
                else:
                    self._take(self._parse(self._read(start, end - start), line, False),
                               line, (start, end))
        if self.torn_line is not None:
            self.notes.append(f"line {self.torn_line}: the last journal entry was cut short "
                              "(the harness was stopped while writing it); it is ignored")

    def _name(self, raw: bytes) -> Any:
        try:
            return json.loads(b'"' + raw + b'"') if b"\\" in raw else raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self._not_utf8() from None

    def _parse(self, raw: bytes, line: int | None, written: bool,
               colons: Callable[[Any], int] | None = None) -> Any:
        """A journal line's entry (the harness's JSON, or read as parse_entry does);
        _UNREADABLE, after saying why, when it cannot be read. `colons` counts those of an
        entry of the harness's own (`loads_counted`)."""
        if b"\0" in raw:
            self._fail(line, NUL_PROBLEM, f"{self.path}:{line}: {NUL_PROBLEM}")
            return _UNREADABLE
        try:
            if not written:
                return parse_entry(raw.decode("utf-8"))
            return loads(raw) if colons is None else loads_counted(raw, colons)
        except UnicodeDecodeError:
            raise self._not_utf8() from None
        except JsonShapeError as err:
            self._fail(line, f"not a journal entry ({err})",
                       f"{self.path}:{line}: journal entry {err}")
        except (ValueError, yaml.YAMLError) as err:
            self._fail(line, f"not a journal entry ({yaml_problem(err)})",
                       f"{self.path}:{line}: not valid YAML ({yaml_problem(err)})")
        return _UNREADABLE

    def _take(self, entry: Any, line: int, span: tuple[int, int] | None) -> None:
        """One journal entry, read whole (one the harness did not write as a trial, or
        any of a rewritten file's)."""
        if entry is _UNREADABLE:
            return
        kind = entry_kind(entry)
        if kind is None:
            self._misplace(line, f"a journal entry is one of {', '.join(ENTRY_KINDS)} "
                                 "holding a mapping")
            return
        body = next(iter(entry.values()))
        if kind not in ("trial", "cell") and not self.strict:
            seen = json.dumps(entry, sort_keys=True, default=str)
            if seen in self._entries_seen:
                self._twice(line, self._entries_seen[seen])
            else:
                self._entries_seen[seen] = line
        if kind == "plan":
            if _key(body.get("name")) not in self._by_name:
                self._plans.append(_Plan(body, line=line))
                self._by_name[_key(body.get("name"))] = len(self._plans) - 1
        elif kind == "trial":
            where = _Where(line, *span, written=False) if span else \
                _Where(line, body={k: v for k, v in body.items() if k != "plan"})
            self._place_trial(body.get("plan"), body.get("index"), line, where)
        elif kind == "step":
            self.steps.append((line, body))
        elif kind == "cell":
            # a later entry for a cell replaces an earlier one (a stopped sweep wrote
            # its grid so far, its replay the whole grid), as a trial's does
            cell = tuple(_key(body.get(part)) for part in ("frame", "depth", "chunk"))
            self.cells.pop(cell, None)
            self.cells[cell] = (line, body)
        else:
            self.journal_notes.append(body)

    def _place_trial(self, name: Any, index: Any, line: int, where: _Where) -> None:
        position = self._by_name.get(_key(name))
        if position is None:
            self._misplace(line, f"the trial names plan {name!r}, which the report does not "
                                 "declare")
            return
        trials = self._plans[position].trials
        previous = trials.get(_key(index))
        if previous is not None and not self.strict and self._same(previous, where):
            self._twice(line, previous.line)
        trials[_key(index)] = where

    def _same(self, one: _Where, other: _Where) -> bool:
        """Whether two versions of a trial are the same entry (a line given twice); lines
        of other lengths are never read to be compared."""
        if one.body is not None or other.body is not None:
            return one.body == other.body
        size = one.end - one.start
        return size == other.end - other.start and \
            self._read(one.start, size) == self._read(other.start, size)

    def _twice(self, line: int | None, first: int | None) -> None:
        self.problems.append(Problem(line, f"the same entry as line {first}: a journal line "
                                           "given twice (a copy, or a writer that ran twice)"))

    def _misplace(self, line: int, message: str) -> None:
        """An entry that cannot be put in the document: loading stops there; a check says
        so once, after every line's own problem."""
        if self.strict:
            raise ReportError(f"{self.path}: line {line}: {message}")
        if self._misplaced is None:
            self._misplaced = Problem(line, message)

    @property
    def misplaced(self) -> Problem | None:
        self.index()
        return self._misplaced

    # -- the document ----------------------------------------------------------------------

    @property
    def plans(self) -> list[Any]:
        """Every plan's declaration (the header's, then those the journal added), without
        their trials."""
        self.index()
        return [plan.declaration for plan in self._plans]

    def plan_line(self, position: int) -> int | None:
        return self._plans[position].line

    def trials(self) -> Iterator[TrialEntry]:
        """Every trial's last version, in the document's order (plan by plan, by index),
        each read from the file when its turn comes."""
        self.index()
        if not (self.journaled or self._from_journal()):
            yield from self._nested()
            return
        for position, plan in enumerate(self._plans):
            for _, where in sorted(plan.trials.items(), key=lambda item: _index(item[0])):
                if where.end == 0:
                    yield TrialEntry(position, where.body, where.line)
                    continue
                raw = self._read(where.start, where.end - where.start)
                entry = self._parse(raw, where.line, where.written, trial_colons)
                if entry is _UNREADABLE:
                    continue
                if entry_kind(entry) != "trial":
                    self._misplace(where.line or 0, "a journal entry is one of "
                                                    f"{', '.join(ENTRY_KINDS)} holding a mapping")
                    continue
                body = {k: v for k, v in entry["trial"].items() if k != "plan"}
                yield TrialEntry(position, body, where.line, raw)

    def _nested(self) -> Iterator[TrialEntry]:
        """A v1 document's trials, as its plans list them."""
        plans = self.header.get("plans") if isinstance(self.header, dict) else None
        for position, plan in enumerate(plans if isinstance(plans, list) else []):
            trials = plan.get("trials") if isinstance(plan, dict) else None
            for trial in trials if isinstance(trials, list) else []:
                yield TrialEntry(position, trial, None)

    def journal_entries(self) -> Iterator[tuple[int, bytes]]:
        """Every whole journal line's entry (the text after ``- ``), in the file's order."""
        self.read_header()
        if self.whole or self._journal_at is None:
            return
        for line, start, end, _ in self._journal_lines():
            yield line, self._read(start + 2, end - start - 2)

    def _from_journal(self) -> bool:
        """Whether anything came from a journal (a v1 header followed by entries is put
        together as a journaled one is)."""
        return any(line for line, _ in self.steps) or bool(self.journal_notes or self.cells) \
            or any(plan.line for plan in self._plans) \
            or any(w.line for plan in self._plans for w in plan.trials.values())

    def document(self, *, with_trials: bool = True) -> Any:
        """The nested document the file stands for, as written: neither checked nor
        converted. Without `with_trials`, each plan's ``trials`` is empty (`trials` gives
        them). Not a mapping at the top: the header as it is."""
        header = self.read_header()
        self.index()
        if not isinstance(header, dict):
            return header
        doc = {k: v for k, v in header.items() if k != JOURNAL_KEY}
        if not (self.journaled or self._from_journal()):
            if with_trials:
                return doc
            plans = doc.get("plans")
            if isinstance(plans, list):
                doc["plans"] = [dict(p, trials=[]) if isinstance(p, dict) else p
                                for p in plans]
            return doc
        doc["plans"] = [dict(plan.declaration, trials=[])
                        if isinstance(plan.declaration, dict) else plan.declaration
                        for plan in self._plans]
        if self.steps or isinstance(doc.get("bisect"), dict):
            found = doc.get("bisect")
            base = found if isinstance(found, dict) else {}
            doc["bisect"] = dict(base, log=[step for _, step in self.steps])
        asked = mapping(doc.get("sweep"))
        if self.cells or (asked and doc.get("command") == "sweep"
                          and doc.get("schema") not in _HEADER_CELLS):
            doc["sweep"] = dict(asked, cells=[cell for _, cell in self.cells.values()])
        if self.journal_notes:
            listed = doc.get("notes")
            kept = listed if isinstance(listed, list) else []
            doc["notes"] = list(kept) + list(self.journal_notes)
        if with_trials:
            for entry in self.trials():
                doc["plans"][entry.plan]["trials"].append(entry.body)
        return doc


def trial_colons(entry: Any) -> int:
    """The colons a trial entry's text holds at least, counted from what it parsed
    (`loads_counted`): a key of the entry, of the trial, of the mappings among its values
    and of each runlist outcome (nothing is nested in those a sweep writes by the
    million), and those in the trial's own strings (its start time has two)."""
    if type(entry) is not dict:
        return -1
    colons = len(entry)
    trial = entry.get("trial")
    if type(trial) is not dict:
        return colons
    colons += len(trial)
    for value in trial.values():
        if type(value) is str:
            colons += value.count(":")
        elif type(value) is dict:
            colons += len(value)
    runlists = trial.get("runlists")
    if type(runlists) is list:
        try:
            colons += sum(map(dict.__len__, runlists))
        except TypeError:             # not every outcome a mapping: the schema says so
            pass
    return colons


_UNREADABLE = object()
# the versions whose header holds a sweep's cells (from v4 the journal does)
_HEADER_CELLS = (SCHEMA_V1, SCHEMA_V2, SCHEMA_V3)
