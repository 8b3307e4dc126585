"""Per-run reports: the model every reader and writer shares.

A `Report` is one invocation: its header (what ran, where, on what) and its plans, each
with its trials (`PlanRecord`). `harness.report.fileformat` says how it lies on disk
and reads it; `harness.report.journal` writes it while a run goes on.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import methodcaller
from pathlib import Path
from typing import Any

from harness.model.errors import ReportError
from harness.model.plan import plan_label
from harness.model.results import (
    BRIEF_FIELDS,
    COMPLETED_STATE,
    FINISHED,
    HEAVY_FIELDS,
    TRIAL_FIELDS,
    BriefTrial,
    RunlistOutcome,
    TrialResult,
    counts_text,
)

# The versions and what changed between them: harness.report.fileformat.
SCHEMA_V1 = "xdna-runlist-harness/report/v1"
SCHEMA_V2 = "xdna-runlist-harness/report/v2"
SCHEMA_V3 = "xdna-runlist-harness/report/v3"
SCHEMA = "xdna-runlist-harness/report/v4"
KNOWN_SCHEMAS = (SCHEMA_V1, SCHEMA_V2, SCHEMA_V3, SCHEMA)
JOURNALED = (SCHEMA_V2, SCHEMA_V3, SCHEMA)   # a header, then a journal of one entry per line
JOURNAL = "journal:"
ENTRY_KINDS = ("trial", "plan", "step", "note", "cell")
# A header section's part that the journal holds instead, an entry a line: a bisect's
# steps (`step`), and from v4 a sweep's cells (`cell`).
JOURNALED_PARTS = {"bisect": "log", "sweep": "cells"}
LEGACY_KINDS = {"probe": "step"}        # v2's name for a bisect step
HEADER_KEYS = ("schema", "run_id", "created", "finished", "command", "harness", "backend",
               "environment", "artifacts", "case", "settings", "plans", "verdict")


# a plan whose runs carry the simulator's stand-in work stream (harness.formats.txn
# work_stream) instead of the case's control code: the simulated stack only
STAND_IN = "stand-in"


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def is_simulated(backend: dict[str, Any]) -> bool:
    """Where results came from, decided in one place: the simulated stack, the hardware
    path with the simulator standing in for pyxrt, or real XRT over the emulated driver
    (`runlist-harness emulate`). The stored `simulated` flag must agree (`report validate`
    checks it)."""
    return backend.get("kind") == "sim" or bool(backend.get("stand_in")) or \
        is_emulated(backend)


def is_emulated(backend: dict[str, Any]) -> bool:
    """Real pyxrt and XRT answered, over the harness's emulated driver."""
    return bool(backend.get("emulated"))


# the words a model's results are labelled with, wherever they are shown
SIMULATED, EMULATED = "SIMULATED", "EMULATED"


def mapping(value: Any) -> dict[str, Any]:
    """A section of a report as a mapping: a report any tool may have edited can hold
    anything there, and what validates must still render."""
    return value if isinstance(value, dict) else {}


def source_tag(backend: dict[str, Any]) -> str:
    """How titles, banners, verdicts, the provenance table and the diagnosis name a model's
    results: ``EMULATED`` (real XRT, emulated driver) or ``SIMULATED``. The one place these
    words are chosen (`source_label` adds the profile)."""
    return EMULATED if is_emulated(backend) else SIMULATED


def continue_command(command: str | None, path: str | Path) -> str:
    """How to go on with a stopped run, by the command that wrote its report."""
    if command == "bisect":
        return f"runlist-harness bisect --replay {path}"
    if command == "sweep":
        return f"runlist-harness sweep --replay {path}"
    if command == "investigate":
        return f"runlist-harness investigate --resume {path}"
    return f"runlist-harness run --resume {path}"


def source_label(backend: dict[str, Any]) -> str:
    """The label a model's results carry wherever they are shown (verdicts, compare's
    columns, a sweep's plot): ``SIMULATED, profile P`` or ``EMULATED, profile P``; "" for
    hardware. Every such label comes from here, so none can drop."""
    if not is_simulated(backend):
        return ""
    profile = played_profile(backend)
    return f"{source_tag(backend)}, profile {profile}" if profile else source_tag(backend)


def model_word(backend: dict[str, Any]) -> str:
    """How an answer's source is qualified wherever it is copied to: ``emulated`` (the
    model behind real XRT), ``simulated``, or nothing for hardware."""
    if is_emulated(backend):
        return "emulated"
    return "simulated" if is_simulated(backend) else ""


def played_profile(backend: dict[str, Any]) -> str | None:
    """The simulated profile a report's results come from: the simulated backend's, or
    the one the simulator standing in for pyxrt played on the hardware path."""
    return backend.get("profile") or backend.get("stand_in_profile")


@dataclass
class PlanRecord:
    """A plan as a report holds it: its chunks, what the case expects of it, and its
    trials."""

    name: str
    spec: str
    chunks: Sequence[int]              # a list, or a searched plan's own (harness.model.plan)
    expect: str | None = None
    trials: list[TrialResult] = field(default_factory=list)
    control: str | None = None       # a control plan: what it runs instead of the case
    frame: str | None = None         # a capture's frame it cuts, if not the case's own
    work: str | None = None          # STAND_IN: runs carry the simulator's stand-in work
    # the change of the machine in force while it ran (investigate's machine steps:
    # harness.search.machine_change): kind, label, the plan it repeats, the timer then
    changed: dict[str, Any] | None = None

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
        out: dict[str, Any] = {"name": self.name, "spec": self.spec,
                               "chunks": list(self.chunks), "expect": self.expect}
        if self.control:
            out["control"] = self.control
        if self.frame:
            out["frame"] = self.frame
        if self.work:
            out["work"] = self.work
        if self.changed:
            out["changed"] = dict(self.changed)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {**self.declaration(), "summary": self.summary(),
                "trials": [trial_dict(t) for t in self.trials]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlanRecord:
        trials = [TrialResult.from_json(raw) for raw in data.get("trials") or []]
        return cls(data["name"], str(data["spec"]), list(data["chunks"]), data.get("expect"),
                   trials, data.get("control"), data.get("frame"), data.get("work"),
                   data.get("changed"))


def trial_dict(trial: TrialResult, *, runlists: bool = True) -> dict[str, Any]:
    """A trial as reports keep it. Fields that say nothing (None, a runlist not skipped) are
    left out: sweeps write thousands of runlist outcomes, and a reader loses nothing.
    `runlists` False: all but its runlists (written last, by the caller)."""
    if isinstance(trial, BriefTrial):
        raise ValueError(f"trial {trial.index} is held in brief ({trial.runlists_in_file} "
                         "runlists are in the report file only): read it from the file")
    out = {name: value for name in TRIAL_FIELDS if (value := getattr(trial, name)) is not None}
    out["status"] = trial.status.value
    out["state"] = trial.state
    if runlists:
        out["runlists"] = [outcome_dict(r) for r in trial.runlists]
    return out


def outcome_dict(outcome: RunlistOutcome) -> dict[str, Any]:
    """A runlist outcome as reports keep it: its fields in their order, those that say
    nothing left out (`skipped` is written only when true; `failing_run_named` is said
    when false too). One pass over the object's own attributes: a sweep writes one of
    these per runlist."""
    return {k: v for k, v in vars(outcome).items()
            if v is not None and (v is not False or k != "skipped")}


_STATE = methodcaller("get", "state")
_OK_STATES = frozenset({None, COMPLETED_STATE})
_FINISHED = frozenset(status.value for status in FINISHED)


def runlist_states(trial: dict[str, Any]) -> list[Any] | None:
    """The state of each runlist of a trial as a report holds it (None: its runlists are
    not a list of mappings), read a column at a time: a sweep's trials hold millions."""
    runlists = trial.get("runlists")
    if isinstance(runlists, list) and runlists and set(map(type, runlists)) == {dict}:
        return list(map(_STATE, runlists))
    return None


def state_of(trial: dict[str, Any], states: list[Any] | None = None) -> str:
    """A trial as a report holds it, in one word, as `TrialResult.state` tells it: the
    first failing runlist's state, else COMPLETED or the trial's status (`states`: its
    `runlist_states`, when the caller has them)."""
    states = runlist_states(trial) if states is None else states
    if states and not _OK_STATES.issuperset(states):
        return str(next(s for s in states if s not in _OK_STATES))
    status = trial.get("status")
    return COMPLETED_STATE if status == "completed" else str(status)


@dataclass
class Summary:
    """A plan's counts, as `PlanRecord.summary` gives them, gathered a trial at a time."""

    by_state: dict[str, int] = field(default_factory=dict)
    by_status: dict[str, int] = field(default_factory=dict)

    def add(self, trial: dict[str, Any], states: list[Any] | None = None) -> None:
        status = str(trial.get("status"))
        self.by_status[status] = self.by_status.get(status, 0) + 1
        if status in _FINISHED:
            state = state_of(trial, states)
            self.by_state[state] = self.by_state.get(state, 0) + 1

    def to_dict(self) -> dict[str, Any]:
        finished = sum(n for status, n in self.by_status.items() if status in _FINISHED)
        return {"trials": finished, "by_state": dict(self.by_state),
                "by_status": dict(self.by_status)}


def brief_from_dict(raw: dict[str, Any]) -> TrialResult:
    """`TrialResult.from_json(raw).brief()` without making an object of every runlist outcome:
    what continuing a report of millions of them reads, a trial at a time."""
    states = runlist_states(raw)
    runlists = raw.get("runlists") or []
    failing = next((i for i, s in enumerate(states or []) if s not in _OK_STATES), None)
    kept = [RunlistOutcome(**runlists[failing])] if failing is not None else []
    heavy = any(raw.get(name) is not None for name in HEAVY_FIELDS)
    if len(runlists) == len(kept) and not heavy:
        return TrialResult.from_json(raw)
    fields = {k: raw[k] for k in BRIEF_FIELDS if k in raw}
    return BriefTrial(**fields, runlists=kept, runlists_in_file=len(runlists))


@dataclass
class Report:
    """A run's report: how it ran, on what, what it ran (plans and their trials), and the
    verdict."""

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
    # os.urandom as secrets.token_hex reads it, without secrets' imports at start-up
    run_id: str = field(default_factory=lambda: os.urandom(6).hex())
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
            part = JOURNALED_PARTS.get(name)
            out[name] = {k: v for k, v in section.items() if k != part} if part else section
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
        missing = [key for key in REQUIRED_KEYS if key not in data]
        if missing:
            raise ReportError(f"{where}: its header has no {', '.join(missing)}: the report "
                              "is cut short or was edited; a report the harness wrote has "
                              "every one (start a new run, or restore the file)")
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
            raise ReportError(f"{where}: malformed report ({malformed(err)})") from None


# the header's keys every report has (Report.from_dict reads each)
REQUIRED_KEYS = ("command", "harness", "backend", "case", "settings", "run_id", "created")


def malformed(err: Exception) -> str:
    """What a report's reader tripped on, in words (a missing key by its name)."""
    if isinstance(err, KeyError):
        return f"a part it needs is missing: {err.args[0] if err.args else err}"
    return f"{type(err).__name__}: {err}"
