"""From what reports observed to the causes it supports: a reading layer, kept apart from
the experiments that write reports.

`diagnose(paths)` reads one or more reports (`observed`: each plan as an arm of
observations, every fact with its file and field), judges every cause of the table
(`causes`: one row per cause, its predictions, falsifier and separating experiment)
against them (`findings`), and ranks them (`ranking`): never first a cause an
observation contradicts, "undetermined" where the leaders are not separated, and
"nothing-fails" where no trial failed. Pure functions of the reports: nothing runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

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

__all__ = ["CAUSES", "IDS", "NOTHING_FAILS", "UNDETERMINED", "Diagnosis", "diagnose",
           "diagnose_observed", "observe_document", "text_lines"]


def diagnose(paths: Iterable[str | Path]) -> Diagnosis:
    """Rank the causes the reports at `paths` support."""
    return diagnose_observed([observe(path) for path in paths])


def diagnose_observed(reports: list[Observed]) -> Diagnosis:
    return rank(Evidence(reports))
