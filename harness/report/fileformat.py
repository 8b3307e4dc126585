"""Report files on disk, of every version: their layout, and reading them a part at a time.

Schema history (bump SCHEMA in `harness.report.model` and add a line when the format
changes):
- ``xdna-runlist-harness/report/v1`` (0.1.0): one YAML document, rewritten whole
  before and after every trial.
- ``xdna-runlist-harness/report/v2`` (0.2.0): a header (everything but the trials),
  then ``journal:``, an append-only list with one entry per line: a trial's state
  (``{"trial": {"plan": NAME, ...}}``; a later entry for the same plan and index
  replaces an earlier one, so ``in-flight`` is followed by the outcome), a plan a
  search added (``plan``), a bisect step (``probe``) or a note (``note``). Each
  entry is a JSON object, which is YAML too, so the file stays one YAML document.
  Saving a trial appends a line instead of rewriting the file: the cost per trial
  does not grow with the report. `harness.report.journal` writes it.
- ``xdna-runlist-harness/report/v3`` (0.3.0): v2, with a bisect step's entry named
  ``step`` (``probe`` names the machine's fingerprint everywhere else). Readers take
  ``probe`` in either version, so a v2 report continued by this harness stays whole.
  Optional fields added within v3 (a report without them reads as before): the
  harness's source ``harness.commit``; what each run carried, ``case.workload`` and
  ``artifacts.control.workload``; ``failing_run_named`` on a runlist outcome (false: the
  device named only the chain); ``simulated`` on a trial's kernel log (its lines marked
  SIMULATED); a trial's ``trace_events``; ``xrt_smi_control``, XRT's runlist-latency
  test run once after a failed case on hardware; on the simulated stack, a trial's
  ``wedged_device`` (it began on a wedged device: its state is ``wedged``), a runlist's
  ``wedged_device``, and a trial's ``device_life`` (what the device carries to the next);
  and ``redaction``, a report written redacted (the default since 0.3:
  `harness.report.redacted_writing`), with the tag that tells a continued report the
  machine that began it.
- ``xdna-runlist-harness/report/v4`` (0.4.0): v3, with a sweep's cells journal entries
  (``{"cell": {"depth": D, "chunk": C, "plan": NAME, "counts": {...}}}``, a later entry
  for the same frame, depth and chunk replacing an earlier one), as a bisect's steps are,
  instead of a list in the header's ``sweep``: a sweep of any size then writes and
  reads a header of the same few lines, and keeps nothing of a plan once it is measured
  but its counts. Readers put the cells back in ``sweep.cells``; a v3 report's stay in
  its header.

Every reader sees one shape whatever the version: the nested document v1 was (plans
holding their trials), which `report.schema.json` describes. `harness.report.reader`
gives it in parts, so that nothing holds a report of a million trials at once; the
functions here load it as the model (`load_report`), whole (`read_document`) or as JSON
a plan at a time (`document_json`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import fields
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.formats.yamlio import dump_yaml_parts
from harness.model.errors import ReportError
from harness.model.ert import CmdState
from harness.model.results import COMPLETED_STATE, RunlistOutcome, TrialResult
from harness.report.model import (
    JOURNAL,
    JOURNALED,
    Report,
    Summary,
    brief_from_dict,
    malformed,
    outcome_dict,
    source_tag,
    trial_dict,
)

if TYPE_CHECKING:            # the reader loads when a report is read, not when one is written
    from harness.report.reader import ReportReader

# -- writing ----------------------------------------------------------------------------

def header_text(report: Report,
                shown: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> str:
    """The header of a journaled file, ending with the journal's key; its fields as `shown`
    (redacted) where given."""
    comment = "# xdna-runlist-harness report"
    if report.simulated:
        comment += f": {source_tag(report.backend)} stack, not hardware evidence"
    header = report.header_dict()
    return comment + "\n" + "".join(dump_yaml_parts(shown(header) if shown else header)) + \
        JOURNAL + "\n"


SEPARATORS = (", ", ": ")


def entry_line(kind: str, body: dict[str, Any]) -> bytes:
    return ("- " + json.dumps({kind: body}, ensure_ascii=True, separators=SEPARATORS)
            + "\n").encode("ascii")


def trial_line(plan: str, trial: TrialResult) -> bytes:
    """`entry_line("trial", {"plan": plan, **trial_dict(trial)})`, byte for byte, with each
    runlist outcome written by `outcome_json`: the trial's own fields, then its runlists
    last, as `trial_dict` orders them."""
    head = json.dumps({"trial": {"plan": plan, **trial_dict(trial, runlists=False)}},
                      ensure_ascii=True, separators=SEPARATORS)
    return ("- " + head[:-2] + ', "runlists": [' + ", ".join(map(outcome_json, trial.runlists))
            + "]}}\n").encode("ascii")


# A runlist that completed, with a device clock (the simulated stack's), is written from
# a template: a sweep saves one per runlist, and json took most of a sweep's saving. Only
# an outcome whose every other field says nothing takes it, and only plain ints and finite
# floats, whose repr is json's (tests/test_report_stream.py compares the two).
_TEMPLATED = ("index", "runs", "chains", "state", "state_code", "device_ms", "wall_ms",
              "skipped")
_UNSAID = tuple(f.name for f in fields(RunlistOutcome) if f.name not in _TEMPLATED)
_unsaid = attrgetter(*_UNSAID)
_NOTHING = (None,) * len(_UNSAID)
_COMPLETED_CODE = int(CmdState.COMPLETED)


def outcome_json(outcome: RunlistOutcome) -> str:
    """One runlist outcome as `json.dumps(outcome_dict(outcome))` writes it in a journal."""
    index, runs, chains = outcome.index, outcome.runs, outcome.chains
    device_ms, wall_ms, code = outcome.device_ms, outcome.wall_ms, outcome.state_code
    if (type(device_ms) is float and type(wall_ms) is float and type(index) is int
            and type(runs) is int and type(code) is int and code == _COMPLETED_CODE
            and outcome.state == COMPLETED_STATE and type(chains) is list
            and len(chains) == 1 and type(chains[0]) is int
            and -1e308 < device_ms < 1e308 and -1e308 < wall_ms < 1e308
            and outcome.skipped is False and _unsaid(outcome) == _NOTHING):
        return (f'{{"index": {index}, "runs": {runs}, "chains": [{chains[0]}], '
                f'"state": "COMPLETED", "state_code": {code}, "device_ms": {device_ms!r}, '
                f'"wall_ms": {wall_ms!r}}}')
    return json.dumps(outcome_dict(outcome), ensure_ascii=True, separators=SEPARATORS)


def document_json(reader: ReportReader, shown: Callable[[Any], Any] | None = None
                  ) -> Iterator[str]:
    """The nested document (each plan with its summary, as `Report.to_dict` has it) as
    ``json.dumps(document, indent=2)`` writes it, a plan at a time: a report of any size
    prints in the memory of its largest plan. `shown`: what the header and each trial are
    printed as (redacted), where given."""
    shown = shown or _as_it_is
    doc = shown(reader.document(with_trials=False))
    plans = doc.get("plans") if isinstance(doc, dict) else None
    if not isinstance(plans, list):
        yield json.dumps(doc, indent=2)
        return
    marker = "\0plans\0"
    before, after = json.dumps(dict(doc, plans=marker), indent=2).split(json.dumps(marker), 1)
    yield before
    if not plans:
        yield "[]" + after
        return
    held: dict[int, list[Any]] = {}
    done = 0
    yield "[\n"
    for entry in reader.trials():
        while done < entry.plan:             # every plan before this trial's is complete
            yield _plan_json(plans[done], held.pop(done, []), last=done == len(plans) - 1)
            done += 1
        held.setdefault(entry.plan, []).append(shown(entry.body))
    while done < len(plans):
        yield _plan_json(plans[done], held.pop(done, []), last=done == len(plans) - 1)
        done += 1
    yield "\n  ]" + after


def _as_it_is(value: Any) -> Any:
    return value


def _plan_json(plan: Any, trials: list[Any], *, last: bool) -> str:
    if isinstance(plan, dict):
        summary = Summary()
        for trial in trials:
            if isinstance(trial, dict):
                summary.add(trial)
        plan = {**{k: v for k, v in plan.items() if k != "trials"},
                "summary": summary.to_dict(), "trials": trials}
    text = "    " + json.dumps(plan, indent=2).replace("\n", "\n    ")
    return text if last else text + ",\n"


# -- the model from the file ----------------------------------------------------------------

def read_document(path: str | Path) -> Any:
    """A report file as the one nested document the schema describes, as written: neither
    checked nor converted (a v1 file is that document; a journaled file is assembled)."""
    from harness.report.reader import ReportReader
    with ReportReader(path) as reader:
        return reader.document()


def load_report(path: str | Path, *, detail: bool = True, trials: bool = True) -> Report:
    """A report of any known version; a torn last journal entry is ignored (and noted).
    Without `detail`, each trial keeps only what summaries read (`TrialResult.brief`):
    what continuing a report of a million trials needs, in flat memory. Without `trials`,
    the plans come without them (the header is all the caller reads)."""
    from harness.report.reader import ReportReader
    with ReportReader(path) as reader:
        header = reader.read_header()
        report = Report.from_dict(reader.document(with_trials=False), str(path))
        try:
            for entry in reader.trials() if trials else ():
                make = TrialResult.from_json if detail else brief_from_dict
                report.plans[entry.plan].trials.append(make(entry.body))
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            if isinstance(err, ReportError):
                raise
            raise ReportError(f"{path}: malformed report ({malformed(err)})") from None
        report.torn_line = reader.torn_line
        report.read_whole = reader.whole
        if report.schema in JOURNALED:
            report.declared = len(header.get("plans") or [])
    return report
