"""What a report's readers use of its trials (render, compare, bundle), gathered in one
pass over them, so that no reader holds a report of a million trials at once.

A `Digest` sees each trial once (`add`) and keeps what is small: each plan's counts,
the distinct failing rows, how failing runs were located, the first failing trial
whole, and the trials themselves only while they are few enough to embed in an issue.
`view` then gives all of it redacted (or not): what `render` lays out.

Redaction learns identities from the report as it goes (a serial number in a trial's
free-form fields), so nothing is redacted before the pass ends: pieces are kept as
written, and `view` redacts them all with everything learned.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import IO, Any

from harness.formats.jsonread import gc_paused
from harness.formats.yamlio import dump_yaml
from harness.logs.kernel_log import mark_simulated
from harness.model.plan import cut_text, plan_label
from harness.model.results import COMPLETED_STATE
from harness.report.evidence import FAILED
from harness.report.failing import run_cells, unnamed
from harness.report.header import ReportHeader, read_header
from harness.report.model import Summary, is_simulated, model_word, runlist_states
from harness.report.reader import ReportReader, TrialEntry
from harness.report.redact import Redactor

MAX_BODY = 65_536              # GitHub refuses issue bodies and comments over this
KEEP_CHARS = 4 * MAX_BODY      # trials kept for embedding, as written (redaction may shrink)
MESSAGE_CUT = 160              # a message's first line, as a failing row shows it
MAX_ROWS = 5_000               # distinct failing rows kept; those beyond are only counted
_OK_STATES = frozenset({None, COMPLETED_STATE})
_NOT_ANSWERED = ("deadline", "crashed")
# trials the harness stopped (Ctrl-C, SIGTERM) or that were running when it died: neither
# an answer nor a failure, so never a failing row and never counted as one
_STOPPED = ("interrupted", "in-flight")
MAX_STOPPED = 20               # stopped trials named; those beyond are only counted


MAX_TTF = 1_000                # times to failure a plan keeps for its summary


@dataclass
class PlanDigest:
    declaration: Any
    trials: int = 0
    counts: Summary = field(default_factory=Summary)
    # failing trials' times to failure (harness.report.timing)
    ttfs: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.label = _label(self.declaration)

    @property
    def name(self) -> str:
        return str(self.declaration.get("name")) if isinstance(self.declaration, dict) else ""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass
class FailingRow:
    """One distinct failure: a plan's trials that failed alike (the cells are as written;
    `message` is the whole first line, cut only once redacted)."""

    cells: list[str]
    message: str
    trials: list[int] = field(default_factory=list)


class Digest:
    """One pass over a report's trials (`add`), then `view`."""

    def __init__(self, document: dict[str, Any], *, kernel_log: bool = False,
                 learn_everywhere: bool = False) -> None:
        self.document = document                 # the report without its trials
        found = document.get("plans")
        plans = found if isinstance(found, list) else []
        self.plans = [PlanDigest({k: v for k, v in p.items() if k != "trials"}
                                 if isinstance(p, dict) else p) for p in plans]
        self.redactor = Redactor()
        self.redactor.learn(document)
        # trials that were not checked may hold keys anywhere: look everywhere for serials
        self.learn_everywhere = learn_everywhere
        self.failing: dict[tuple, FailingRow] = {}
        self.rows_beyond = 0
        self.stopped: list[tuple[str, int, str]] = []     # plan label, trial number, status
        self.stopped_count = 0
        self.unnamed = False          # a failing row whose run the device did not name
        backend = document.get("backend")
        self.simulated = is_simulated(backend) if isinstance(backend, dict) else False
        self.model_word = model_word(backend) if isinstance(backend, dict) else ""
        self.located: list[str] = []
        self.failed = 0
        self.failed_plans: list[str] = []
        self.first_failed: tuple[str, dict[str, Any]] | None = None
        self.first_with_lines: tuple[str, dict[str, Any]] | None = None
        self.total = 0
        self.kept: list[tuple[int, dict[str, Any]]] | None = []
        self._kept_chars = 0
        self._logs = 0
        # the bundle's kernel-log.txt, spilled to a temp file once it is big; closed by close
        self.kernel_log: IO[str] | None = tempfile.SpooledTemporaryFile(  # noqa: SIM115
            max_size=8 << 20, mode="w+", encoding="utf-8") if kernel_log else None

    @classmethod
    def of_document(cls, document: dict[str, Any], **options: Any) -> Digest:
        """The digest of a report already in memory (a small one, or a test's)."""
        found = document.get("plans")
        plans = found if isinstance(found, list) else []
        shell = dict(document, plans=[dict(p, trials=[]) if isinstance(p, dict) else p
                                      for p in plans])
        digest = cls(shell, **options)
        for position, plan in enumerate(plans):
            trials = plan.get("trials") if isinstance(plan, dict) else None
            for trial in trials if isinstance(trials, list) else []:
                digest.add(TrialEntry(position, trial, None))
        return digest

    @classmethod
    def of_reader(cls, reader: ReportReader, **options: Any) -> Digest:
        digest = cls(reader.document(with_trials=False), **options)
        with gc_paused():                # a report's trials make no cycles to collect
            for entry in reader.trials():
                digest.add(entry)
        return digest

    def close(self) -> None:
        if self.kernel_log is not None:
            self.kernel_log.close()

    # -- one trial ----------------------------------------------------------------------

    def add(self, entry: TrialEntry) -> None:
        trial = entry.body
        if not isinstance(trial, dict) or entry.plan >= len(self.plans):
            return
        plan = self.plans[entry.plan]
        self.total += 1
        plan.trials += 1
        states = runlist_states(trial)
        plan.counts.add(trial, states)
        status = str(trial.get("status"))
        runlists = trial.get("runlists")
        ttf = trial.get("time_to_failure")
        if isinstance(ttf, dict) and isinstance(ttf.get("ms"), (int, float)) \
                and len(plan.ttfs) < MAX_TTF:
            plan.ttfs.append(ttf)
        self._learn(trial, entry.raw)
        label = plan.label
        # trials are numbered from 1 wherever they are shown, as the console counts them
        number = (int(trial.get("index") or 0) if _is_int(trial.get("index")) else 0) + 1
        if status in _NOT_ANSWERED:
            self._row([label, "-", "-", "-", "-", status, "-"], _first_line(trial.get("error")),
                      number)
        elif status in _STOPPED:
            self.stopped_count += 1
            if len(self.stopped) < MAX_STOPPED:
                self.stopped.append((label, number, status))
        # states is None unless runlists is a list (`runlist_states`)
        if states is not None and isinstance(runlists, list) and \
                not _OK_STATES.issuperset(states):
            for outcome, state in zip(runlists, states, strict=True):
                if state in _OK_STATES:
                    continue
                chains = outcome.get("chains") or []
                if unnamed(outcome):
                    self.unnamed = True
                source = _opt(outcome.get("source"))
                self._row([label, str(outcome.get("index")),
                           f"{outcome.get('runs')} ({_cut_text(chains)})",
                           *run_cells(outcome), str(state),
                           f"{self.model_word} {source}" if self.model_word and source != "-"
                           else source],
                          _first_line(outcome.get("message")), number)
                how = outcome.get("located_by")
                if how and how not in self.located:
                    self.located.append(how)
        if status in FAILED:
            self.failed += 1
            if plan.name not in self.failed_plans:
                self.failed_plans.append(plan.name)
            if self.first_failed is None:
                self.first_failed = (plan.name, trial)
            if self.first_with_lines is None and \
                    isinstance(trial.get("kernel_log"), dict) and trial["kernel_log"].get("lines"):
                self.first_with_lines = (plan.name, trial)
        if isinstance(trial.get("kernel_log"), dict) and trial["kernel_log"]:
            if self.kernel_log is not None:
                self._log(plan.name, trial)
            self._logs += 1
        if self.kept is not None:
            # only a cap on what is held for the render to measure exactly (`render`'s
            # _yaml_for_embedding): a trial's journal line, where it has one, counted
            # twice (its YAML is 0.9-1.1 times its JSON), instead of its YAML made to count
            size = 2 * len(entry.raw) if entry.raw else len(dump_yaml([trial]))
            self._kept_chars += size
            if self._kept_chars > KEEP_CHARS:
                self.kept = None              # too many to embed: the file holds them
            else:
                self.kept.append((entry.plan, trial))

    def _learn(self, trial: dict[str, Any], raw: bytes) -> None:
        # names in free text (a home folder's, a serial number) are learned before anything
        # is written, so that the trials before the one that gave them away lose them too
        self.redactor.learn_trial(trial, raw, everywhere=self.learn_everywhere)

    def _row(self, cells: list[str], message: str, trial: int) -> None:
        key = (*cells, message[:MESSAGE_CUT])
        row = self.failing.get(key)
        if row is None:
            if len(self.failing) >= MAX_ROWS:
                self.rows_beyond += 1        # counted, not kept: a render shows 20
                return
            row = self.failing[key] = FailingRow(cells, message)
        row.trials.append(trial)

    def _log(self, plan: str, trial: dict[str, Any]) -> None:
        log = trial["kernel_log"]
        assert self.kernel_log is not None
        simulated = self.simulated
        out = ["# SIMULATED: every line below was printed by the harness's simulated "
               "driver, not by a machine"] if simulated and not self._logs else []
        out += [f"== plan {plan} trial {int(trial.get('index') or 0) + 1} "
                f"({trial.get('status')}), from {log.get('source')}"]
        if "unreadable" in log:
            out.append(f"(not readable: {log['unreadable']}; fix: {log.get('fix')})")
        lines = log.get("lines")
        if isinstance(lines, list) and lines:
            out += [mark_simulated(str(line)) for line in lines] if simulated else lines
        else:
            out.append("(the driver printed nothing)")
        if log.get("omitted"):
            out.append(f"({log['omitted']} lines between were not kept)")
        trace = trial.get("trace_events")
        if isinstance(trace, dict) and trace.get("lines"):
            out.append(f"-- the driver's trace events, from {trace.get('source')}")
            out += [str(line) for line in trace["lines"]]
        # trials apart by a blank line, as a reader skims them
        self.kernel_log.write(("\n" if self._logs else "") + "\n".join(map(str, out)) + "\n")

    # -- the result -----------------------------------------------------------------------

    def view(self, redact: bool) -> ReportView:
        """Everything gathered, redacted with all the pass learned when `redact`."""
        shown = self.redactor.data if redact else (lambda value, key="": value)
        header = dict(shown(self.document))
        found = header.get("plans")
        plans = list(found) if isinstance(found, list) else []
        header["plans"] = plans
        for position, plan in enumerate(self.plans):
            if position < len(plans) and isinstance(plans[position], dict):
                plans[position] = {k: v for k, v in plans[position].items() if k != "trials"}
                plans[position]["summary"] = plan.counts.to_dict()
        rows = []
        for row in self.failing.values():
            cells = [str(shown(c)) for c in row.cells]
            rows.append(FailingRow(cells, str(shown(row.message))[:MESSAGE_CUT],
                                   list(row.trials)))
        first = self.first_with_lines or self.first_failed
        kept = None if self.kept is None else [(p, shown(t)) for p, t in self.kept]
        return ReportView(header=header, plan_trials=[p.trials for p in self.plans],
                          plan_ttfs=[list(p.ttfs) for p in self.plans],
                          failing=rows, failing_beyond=self.rows_beyond,
                          located=[str(shown(x)) for x in self.located],
                          first_failure=(shown(first[0]), shown(first[1])) if first else None,
                          failed=self.failed, failed_plans=list(self.failed_plans),
                          total=self.total, kept=kept, stopped=list(self.stopped),
                          stopped_count=self.stopped_count, unnamed=self.unnamed)

    @property
    def has_kernel_log(self) -> bool:
        return self._logs > 0

    def kernel_log_lines(self, redact: bool) -> Iterable[str]:
        """Every trial's kept kernel-log lines, each trial under a header (bundle only)."""
        if self.kernel_log is None:
            return
        self.kernel_log.seek(0)
        for line in self.kernel_log:
            yield self.redactor.text(line) if redact else line


@dataclass
class ReportView:
    """A report as its renderers read it: the header (plans with their summaries, no
    trials) and what the digest gathered from the trials."""

    header: dict[str, Any]
    plan_trials: list[int]
    failing: list[FailingRow]
    failing_beyond: int              # failing runs past the rows kept, not told apart
    located: list[str]
    first_failure: tuple[str, dict[str, Any]] | None
    failed: int
    failed_plans: list[str]
    total: int
    kept: list[tuple[int, dict[str, Any]]] | None      # None: too many to embed
    stopped: list[tuple[str, int, str]] = field(default_factory=list)  # label, number, status
    stopped_count: int = 0
    unnamed: bool = False            # some failing run is only its chain: the device named none
    plan_ttfs: list[list[dict[str, Any]]] = field(default_factory=list)   # per plan

    @cached_property
    def typed(self) -> ReportHeader:
        """The header's sections, read once for every renderer."""
        return read_header(self.header)

    def whole_document(self) -> dict[str, Any] | None:
        """The report as one nested document, when its trials were few enough to keep."""
        if self.kept is None:
            return None
        plans = [dict(p, trials=[]) if isinstance(p, dict) else p
                 for p in self.header.get("plans") or []]
        for position, trial in self.kept:
            plans[position]["trials"].append(trial)
        return dict(self.header, plans=plans)


def _label(declaration: Any) -> str:
    if not isinstance(declaration, dict):
        return str(declaration)
    return plan_label(str(declaration.get("name")), declaration.get("chunks") or [])


def _cut_text(chains: Any) -> str:
    return cut_text(chains if isinstance(chains, list) else [])


def _opt(value: Any) -> str:
    return "-" if value is None else str(value)


def _first_line(text: Any) -> str:
    """A message's first line, whole (a row shows it cut, once redacted)."""
    if not isinstance(text, str) or not text.strip():
        return "-"
    return text.strip().splitlines()[0]
