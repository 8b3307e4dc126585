"""From what reports and artefacts observed to the causes it supports: a reading layer,
kept apart from the experiments that write reports.

`diagnose(paths)` reads harness reports (`observed`: each plan as an arm of observations,
every fact with its file and field) and plain artefacts a user already has (`artefacts`:
a kernel log, FastFlowLM's output, xrt-smi's, XRT's exception text, an outcomes table;
each recognised by its content), all into one vocabulary (`vocabulary`), judges every
cause of the table (`causes`: one row per cause, its predictions, falsifier and
separating experiment) against them (`findings`), and ranks them (`ranking`): never first
a cause an observation contradicts, "undetermined" where the leaders are not separated,
and "nothing-fails" where nothing failed. It also says what each machine's stack was and
which factors separate the failing machines from the working ones (`cohort`). Pure
functions of the files: nothing runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from harness.model.errors import BadInput
from harness.report.diagnosis.artefacts import Unread, read_artefact
from harness.report.diagnosis.causes import CAUSES, IDS
from harness.report.diagnosis.findings import Evidence
from harness.report.diagnosis.observed import Observed, observe, observe_document
from harness.report.diagnosis.ranking import (
    NOTHING_FAILS,
    UNDETERMINED,
    Diagnosis,
    rank,
    text_lines,
)

__all__ = ["CAUSES", "IDS", "NOTHING_FAILS", "UNDETERMINED", "Diagnosis", "Unread",
           "diagnose", "diagnose_observed", "observe_document", "text_lines"]
REPORT_MARK = b"schema: xdna-runlist-harness/"
MARK_WITHIN = 4096             # a report's schema line is in its first lines


def diagnose(paths: Iterable[str | Path]) -> Diagnosis:
    """Rank the causes the reports and artefacts at `paths` support. A file that cannot
    be read is named with why; when none can, the input is refused (BadInput)."""
    observed: list[Observed] = []
    unread: list[Unread] = []
    for path in paths:
        found = evidence_of(path)
        if isinstance(found, Unread):
            unread.append(found)
        else:
            observed.append(found)
    if not observed:
        raise BadInput("nothing to diagnose: " + "; ".join(f"{u.file}: {u.why}"
                                                           for u in unread)
                       + ". Give a harness report or an artefact the diagnosis reads "
                         "(docs/diagnosis.md, \"What diagnose reads\")")
    diagnosis = diagnose_observed(observed)
    diagnosis.unread = unread
    return diagnosis


def evidence_of(path: str | Path) -> Observed | Unread:
    """A harness report (its schema line says so) or a plain artefact, observed."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(MARK_WITHIN)
    except OSError as err:
        return Unread(str(path), f"cannot be read ({err.strerror})")
    if REPORT_MARK in head:
        return observe(path)
    return read_artefact(path)


def diagnose_observed(reports: list[Observed]) -> Diagnosis:
    return rank(Evidence(reports))
