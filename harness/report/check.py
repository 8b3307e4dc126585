"""`report check`: is a file a report this harness can trust, and if not, what is wrong
where (the line, the key path).

Every version is checked against one schema, the nested document
(`report.schema.json`). The document is read a part at a time (`ReportReader`): the
header and plans first, then each trial on its own, its problems reported on its own
journal line, so that checking costs time in proportion to the file and memory in
proportion to its largest trial. Beyond the schema: a report's `simulated` flag must
agree with where its results came from (`harness.report.model.is_simulated`), each
plan's chunks must be what its spec makes, and a finished run's verdict must be what
its trials say.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.formats.jsonread import gc_paused
from harness.formats.yamlio import KeyPath
from harness.model.errors import PlanError, ReportError
from harness.model.plan import parse_plan
from harness.model.results import COMPLETED_STATE, SETUP_FAILED, WEDGED_STATE, TrialResult
from harness.report.model import (
    JOURNAL,
    JOURNALED,
    KNOWN_SCHEMAS,
    PlanRecord,
    Report,
    brief_from_dict,
    is_emulated,
    is_simulated,
    mapping,
    runlist_states,
)
from harness.report.placeholders import garbled
from harness.report.reader import HeaderError, ReportReader, TrialEntry
from harness.report.schema import check, report_schema, trial_schema

_OK_STATES = frozenset({None, COMPLETED_STATE})     # a runlist that did not fail

if TYPE_CHECKING:
    from harness.report.verdict import Verdict

# The commands whose verdict is the judge's of their plans (searches write their own).
JUDGED = ("run", "reproduce")

TrialVisitor = Callable[[TrialEntry], None]
# given the open reader once its header and journal are read: what else sees each trial
Start = Callable[[ReportReader], TrialVisitor]


@dataclass
class ReportCheck:
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # what the file is when it is no report at all (rendering it unchecked cannot help)
    not_a_report: str | None = None

    @property
    def valid(self) -> bool:
        return not self.problems


def check_report_file(file: str, start: Start | None = None) -> ReportCheck:
    """Check one report file; what `start` returns sees each trial as it is checked (so
    that a render reads a big report once)."""
    result = ReportCheck()
    try:
        reader = ReportReader(file, strict=False)
    except ReportError as err:
        result.problems.append(str(err))
        return result
    with reader, gc_paused():           # a report's trials make no cycles to collect
        try:
            _check(reader, result, start)
        except HeaderError as err:
            result.problems.append(f"line {err.line}: {err.detail}" if err.line
                                   else err.detail)
        except ReportError as err:          # not UTF-8 text: nothing more can be read
            result.problems.append(str(err))
    return result


def what_it_is(header: Any) -> str | None:
    """What a document is when it is no report of any version the harness knows (said in
    the error), or None for one that claims to be a report."""
    if header is None:
        return "an empty file (no YAML document)"
    if isinstance(header, list):
        return f"a YAML list of {len(header)} item(s), not a mapping"
    if not isinstance(header, dict):
        return f"a single YAML {type(header).__name__}, not a mapping"
    if header.get("schema") in KNOWN_SCHEMAS:
        return None
    if "case" in header and ("decode" in header or "xclbins" in header):
        return "a case file (it has `case:`): run it with `runlist-harness run`"
    if "resources" in header and "execution" in header:
        return "an XRT run recipe (it has `resources:` and `execution:`)"
    return None          # a mapping: perhaps a report whose header was damaged (--no-check)


def _check(reader: ReportReader, result: ReportCheck, start: Start | None) -> None:
    header = reader.read_header(with_lines=True)
    kind = what_it_is(header)
    if kind is not None:
        result.not_a_report = kind
        result.problems.append(f"not a report: it is {kind}")
        return
    if header.get("schema") not in KNOWN_SCHEMAS:
        result.problems.append(f"unknown report schema {header.get('schema')!r}; this harness "
                               f"checks {', '.join(KNOWN_SCHEMAS)}")
        return
    plans = header.get("plans")
    declarations_only = isinstance(plans, list) and any(
        isinstance(plan, dict) and "trials" not in plan for plan in plans)
    if header["schema"] in JOURNALED and not reader.journal_found and declarations_only:
        # a header's plans are declarations, their trials in the journal below it; a
        # document with trials nested in its plans is whole without one
        result.problems.append(f"line {reader.header_lines}: no '{JOURNAL}' line: a "
                               f"{header['schema']} file always has one; this one was cut "
                               "short in its header, and its journal is lost")
        return
    reader.index()
    result.notes += reader.notes
    misplaced = reader.misplaced
    if misplaced is not None:
        result.problems += [p.text() for p in reader.problems] + [misplaced.text()]
        return
    doc = reader.document(with_trials=False)
    # What else sees the trials reads only a report that checks: what it makes of one
    # that does not is dropped with the report; on one that does, its failure is a bug.
    visitor_error: Exception | None = None
    also = None
    try:
        also = start(reader) if start is not None else None
    except Exception as err:
        visitor_error = err
    entry_lines = _journal_lines(reader)
    found = [_located(p.where(), p.message, _line_of(p.path, entry_lines, reader.lines))
             for p in check(doc)]
    found += garbled(doc)
    root = report_schema()
    rule = trial_schema(root)
    counted: dict[int, int] = {}
    highest: dict[int, tuple[int, int | None]] = {}     # each plan's largest trial index
    briefs: dict[int, list[TrialResult]] = {}
    alike: dict[tuple[Any, str], TrialResult] = {}
    judged = doc.get("command") in JUDGED and doc.get("finished")
    for entry in reader.trials():
        ordinal = counted.get(entry.plan, 0)
        counted[entry.plan] = ordinal + 1
        path = ("plans", entry.plan, "trials", ordinal)
        problems = check(entry.body, rule, path, root)
        found += [_located(p.where(), p.message,
                           entry.line or _line_of(p.path, {}, reader.lines)) for p in problems]
        if not problems:
            line = entry.line or _line_of(path, {}, reader.lines)
            found += [_located(_where(path), text, line) for text in _status(entry.body)]
            index = entry.body.get("index")
            if index > highest.get(entry.plan, (-1, None))[0]:
                highest[entry.plan] = (index, line)
        if judged and not problems and not found:
            # the verdict reads only each trial's status and state: one object for each
            # pair, however many trials share it, so a run of any size checks in flat memory
            brief = brief_from_dict(entry.body)
            brief = alike.setdefault((brief.status, brief.state), brief)
            briefs.setdefault(entry.plan, []).append(brief)
        if also is not None and visitor_error is None:
            try:
                also(entry)
            except Exception as err:
                visitor_error = err
    found += _counts(doc, counted, highest)
    result.problems += [p.text() for p in reader.problems]
    if reader.misplaced is not None:
        result.problems.append(reader.misplaced.text())
    result.problems += found
    if not result.problems:
        result.problems += _consistency(doc, briefs)
        from harness.report.engine_run_check import problems as engine_run_problems
        result.problems += engine_run_problems(doc)
    backend = doc.get("backend")
    if isinstance(backend, dict) and isinstance(backend.get("simulated"), bool) and \
            backend["simulated"] != is_simulated(backend):
        result.problems.append(
            f"line {reader.lines.get(('backend', 'simulated'), '?')}: backend.simulated: "
            f"{backend['simulated']} contradicts backend.kind {backend.get('kind')!r}"
            + (" with a stand-in pyxrt" if backend.get("stand_in") else "")
            + (" over the emulated driver" if is_emulated(backend) else "")
            + ": results of the " + ("emulated driver" if is_emulated(backend)
                                      else "simulated stack")
            + " are never hardware evidence")
    # (read_environment's `emulator`, without the header's typed sections: check types none)
    emulator = mapping(doc.get("environment")).get("emulator")
    if emulator and isinstance(backend, dict) and not is_emulated(backend):
        result.problems.append(
            f"line {reader.lines.get(('backend',), '?')}: backend does not say 'emulated', "
            f"but the run's environment does (environment.emulator: profile "
            f"{emulator.get('profile') if isinstance(emulator, dict) else '?'}): results "
            "of the emulated driver are never hardware evidence")
    case = doc.get("case")
    captured = case.get("captured") if isinstance(case, dict) else None
    wrong = None
    if isinstance(captured, dict):       # a captured frame's report only: its reader then
        from harness.formats.capture_origin import contradicted_claim
        wrong = contradicted_claim(captured)
    if wrong:
        result.problems.append(f"line {reader.lines.get(('case', 'captured'), '?')}: {wrong}")
    if visitor_error is not None and not result.problems:
        raise visitor_error


def _where(path: tuple) -> str:
    return ".".join(str(part) if isinstance(part, str) else f"[{part}]" for part in path
                    ).replace(".[", "[")


def _status(trial: dict[str, Any]) -> list[str]:
    """What a trial's status and state say against its runlists' states: completed means
    every runlist completed, failed that one did not (or the set-up failed), and the state
    is the first failing runlist's, or the status."""
    runlists = trial.get("runlists") or []
    states = runlist_states(trial)        # a column at a time: a sweep's run to thousands
    if states is not None and _OK_STATES.issuperset(states):
        failing: list[Any] = []
    else:
        failing = [r.get("state") for r in runlists
                   if isinstance(r, dict) and r.get("state") not in (None, COMPLETED_STATE)]
    status = trial.get("status")
    problems = []
    if status == "completed" and failing:
        problems.append(f"status completed, but a runlist ended {failing[0]}")
    if status == "failed" and not failing and not trial.get("error"):
        problems.append("status failed, but every runlist completed and no error is recorded")
    told = failing[0] if failing else (COMPLETED_STATE if status == "completed" else
                                       SETUP_FAILED if status == "failed" else status)
    if trial.get("wedged_device"):
        told = WEDGED_STATE             # it began on a wedged device: it says nothing
    # earlier reports wrote a set-up failure's state as its status, "failed"
    if "state" in trial and trial["state"] != told and \
            (told, trial["state"]) != (SETUP_FAILED, "failed"):
        problems.append(f"state {trial['state']!r}, but its status and runlists say {told!r}")
    return problems + _chained(runlists)


def _chained(runlists: list[Any]) -> list[str]:
    """XRT cuts a runlist's runs into its chains (`chain_split`): the chains add up to the
    runs, and a runlist whose do not (runs 10^30 in chains 24+18) was not run so."""
    problems = []
    for at, runlist in enumerate(runlists):
        runs, chains = mapping(runlist).get("runs"), mapping(runlist).get("chains")
        if isinstance(runs, int) and isinstance(chains, list) and \
                all(isinstance(c, int) for c in chains) and sum(chains) != runs:
            shown = runs if len(str(runs)) <= 12 else f"a number of {len(str(runs))} digits"
            problems.append(f"runlists[{at}]: runs is {shown}, but its chains "
                            f"{'+'.join(map(str, chains)) or '(none)'} add up to {sum(chains)}")
    return problems


def _counts(doc: dict[str, Any], counted: dict[int, int],
            highest: dict[int, tuple[int, int | None]]) -> list[str]:
    """Each plan's trials are numbered 0..N-1, N what it holds (an index past that was
    written by no harness); a run holds no more trials per plan than it asked for."""
    problems = []
    found = doc.get("plans")
    plans = found if isinstance(found, list) else []
    settings = doc.get("settings")
    asked = settings.get("trials") if isinstance(settings, dict) and \
        doc.get("command") in JUDGED else None
    for position, (index, line) in sorted(highest.items()):
        held = counted.get(position, 0)
        name = plans[position].get("name") if position < len(plans) and \
            isinstance(plans[position], dict) else position
        if index >= held:
            problems.append(_located(f"plans[{position}].trials", f"trial index "
                                     f"{_number(index)} is past the {held} trial(s) plan "
                                     f"{name} holds (they are numbered from 0)", line))
        if isinstance(asked, int) and not isinstance(asked, bool) and held > asked:
            problems.append(f"plans[{position}].trials: plan {name} holds {held} trials, "
                            f"past the {asked} the run asks for (settings.trials)")
    return problems


def _number(value: int) -> str:
    return str(value) if value.bit_length() <= 64 else \
        f"of about {int(value.bit_length() * 0.30103) + 1} digits"


def _journal_lines(reader: ReportReader) -> dict[tuple, int]:
    """The journal line each part of the document came from, by its path."""
    lines: dict[tuple, int] = {}
    for position in range(len(reader.plans)):
        line = reader.plan_line(position)
        if line:
            lines[("plans", position)] = line
    for number, (line, _) in enumerate(reader.steps):
        if line:
            lines[("bisect", "log", number)] = line
    for number, (line, _) in enumerate(reader.cells.values()):
        lines[("sweep", "cells", number)] = line
    return lines


def _located(where: str, message: str, line: int | None) -> str:
    return f"line {line}: {where}: {message}" if line else f"{where}: {message}"


def _consistency(doc: dict[str, Any], briefs: dict[int, list[TrialResult]]) -> list[str]:
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
        from harness.report.verdict import report_verdict
        for position, plan in enumerate(report.plans):
            plan.trials = briefs.get(position, [])
        told = report_verdict(report)
        if not _verdict_agrees(report.verdict, told, report.plans):
            said = report.verdict.get("answer") or report.verdict.get("text")
            problems.append(f"the verdict ({said!r}) is not what its trials say "
                            f"({told.answer!r}): the journal lost entries, or the header "
                            "was changed")
    return problems


def _verdict_agrees(stored: dict[str, Any], told: Verdict, plans: list[PlanRecord]) -> bool:
    """A verdict with an answer must be the judge's word for word; one written before
    verdicts had an answer (its wording since changed) must agree on whether the failure
    reproduced and on each plan's counts."""
    if "answer" in stored:
        return bool(stored.get("answer") == told.answer and stored.get("text") == told.text)
    text = str(stored.get("text") or "")
    return stored.get("reproduced") == told.reproduced and \
        all(f"{p.label}: {p.counts_text()}" in text for p in plans)


def _line_of(path: KeyPath, entry_lines: dict[tuple, int], lines: dict[KeyPath, int]
             ) -> int | None:
    prefix = path
    while prefix:
        if prefix in entry_lines:
            return entry_lines[prefix]
        if prefix in lines:
            return lines[prefix]
        prefix = prefix[:-1]
    return None
