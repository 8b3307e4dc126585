"""Per-run YAML reports: the model, loading (versioned) and incremental atomic saving.

Schema history (bump SCHEMA and add a line when the format changes):
- ``xdna-runlist-harness/report/v1`` (0.1.0): first version.

A report is written before the first trial and again before and after each
one, atomically, so a killed harness or a hung machine leaves a valid file in
which the trial that was running is marked ``in-flight``.
"""

from __future__ import annotations

import datetime as dt
import secrets
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.errors import ReportError
from harness.plan import plan_label
from harness.results import TrialResult, counts_text
from harness.yamlio import dump_yaml, load_yaml_text, write_atomic

SCHEMA = "xdna-runlist-harness/report/v1"
KNOWN_SCHEMAS = (SCHEMA,)


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class PlanRecord:
    name: str
    spec: str
    chunks: list[int]
    expect: str | None = None
    trials: list[TrialResult] = field(default_factory=list)

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

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "spec": self.spec, "chunks": list(self.chunks),
                "expect": self.expect, "summary": self.summary(),
                "trials": [_trial_dict(t) for t in self.trials]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlanRecord:
        trials = []
        for raw in data.get("trials") or []:
            fields = dict(raw)
            fields.pop("state", None)        # derived; written for readers, recomputed here
            trials.append(TrialResult.from_json(fields))
        return cls(data["name"], str(data["spec"]), list(data["chunks"]), data.get("expect"),
                   trials)


def _trial_dict(trial: TrialResult) -> dict[str, Any]:
    # Fields that say nothing (None, or a runlist not skipped) are left out: sweeps write
    # thousands of runlist outcomes, and a reader loses nothing.
    out = {k: v for k, v in trial.to_json().items() if v is not None and k != "runlists"}
    out["state"] = trial.state
    out["runlists"] = [{k: v for k, v in asdict(r).items()
                        if v is not None and not (k == "skipped" and v is False)}
                       for r in trial.runlists]
    return out


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

    @property
    def simulated(self) -> bool:
        return bool(self.backend.get("simulated"))

    def plan(self, name: str) -> PlanRecord:
        for plan in self.plans:
            if plan.name == name:
                return plan
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema": self.schema, "run_id": self.run_id, "created": self.created,
            "finished": self.finished, "command": self.command, "harness": self.harness,
            "backend": self.backend, "environment": self.environment,
            "artifacts": self.artifacts, "case": self.case, "settings": self.settings,
            "plans": [p.to_dict() for p in self.plans], "verdict": self.verdict,
        }
        out.update(self.sections)
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
        known = {"schema", "run_id", "created", "finished", "command", "harness", "backend",
                 "environment", "artifacts", "case", "settings", "plans", "verdict"}
        try:
            return cls(
                command=data["command"], harness=data["harness"], backend=data["backend"],
                case=data["case"], settings=data["settings"],
                environment=data.get("environment") or {},
                artifacts=data.get("artifacts") or {},
                plans=[PlanRecord.from_dict(p) for p in data.get("plans") or []],
                verdict=data.get("verdict"),
                sections={k: v for k, v in data.items() if k not in known},
                run_id=str(data["run_id"]), created=str(data["created"]),
                finished=data.get("finished"), schema=schema)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise ReportError(f"{where}: malformed report ({type(err).__name__}: {err})") \
                from None


def load_report(path: str | Path) -> Report:
    try:
        text = Path(path).read_text("utf-8")
    except OSError as err:
        raise ReportError(f"cannot read report {path}: {err.strerror}") from None
    except UnicodeDecodeError:
        raise ReportError(f"{path}: not UTF-8 text") from None
    try:
        data = load_yaml_text(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        raise ReportError(f"{path}{line}: not valid YAML ({getattr(err, 'problem', err)})") \
            from None
    return Report.from_dict(data, str(path))


class ReportFile:
    """A report on disk, rewritten atomically after every change.

    `min_interval_s` lets fast in-process simulated runs (thousands of trials of
    microseconds each) skip rewrites closer together than that; trials on hardware
    or in workers keep it at 0, so every in-flight entry reaches the disk.
    """

    def __init__(self, path: Path, report: Report, min_interval_s: float = 0.0) -> None:
        self.path = path
        self.report = report
        self.min_interval_s = min_interval_s
        self._saved_at = 0.0
        self._write_s = 0.0

    @classmethod
    def create(cls, report: Report, *, out: str | None, folder: str = "reports",
               name: str = "run", force: bool = False) -> ReportFile:
        if out:
            path = Path(out)
            if path.exists() and not force:
                raise ReportError(f"{path} exists; choose another --out or pass --force to "
                                  "replace it")
        else:
            stamp = report.created.replace("-", "").replace(":", "")
            path = Path(folder) / f"{name}-{stamp}-{report.run_id[:6]}.yaml"
        handle = cls(path, report)
        try:
            write_atomic(path, handle.text(), overwrite=force)
        except FileExistsError:
            raise ReportError(f"{path} appeared while writing; not replacing it") from None
        except OSError as err:
            raise ReportError(f"cannot write report {path}: {err.strerror}") from None
        return handle

    def text(self) -> str:
        header = "# xdna-runlist-harness report"
        if self.report.simulated:
            header += ": SIMULATED stack, not hardware evidence"
        return header + "\n" + dump_yaml(self.report.to_dict())

    def save(self, *, force: bool = False) -> None:
        now = time.monotonic()
        # Throttled saves also wait three times as long as the last write took, so a big
        # report never costs more than a fraction of the run.
        interval = max(self.min_interval_s, 3 * self._write_s) if self.min_interval_s else 0
        if not force and interval and now - self._saved_at < interval:
            return
        write_atomic(self.path, self.text())
        self._saved_at = time.monotonic()
        self._write_s = self._saved_at - now
