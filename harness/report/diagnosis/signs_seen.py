"""The signs the causes read: every file's signs of some kinds, save those a wedged device
gave (`wedged.after_wedge`: what a device answered once it stayed wedged is the wedge's, no
evidence of a cause of its own), and the one way a judge adds the first of them."""

from __future__ import annotations

from harness.report.diagnosis.findings import Evidence, Findings
from harness.report.diagnosis.vocabulary import Sign
from harness.report.diagnosis.wedged import after_wedge, first_wedge_line


def signs(ev: Evidence, *kinds: str) -> list[Sign]:
    found = []
    for report in ev.reports:
        wanted = [s for s in report.signs if s.kind in kinds]
        if wanted:
            begins = first_wedge_line(report)
            found += [s for s in wanted if not after_wedge(begins, s)]
    return found


def first_of(out: Findings, kind: str, weight: int, found: list[Sign], text: str) -> None:
    """One finding for the first of `found` (with how many lines there were)."""
    if found:
        out.add(kind, weight, text + (f" ({len(found)} lines)" if len(found) > 1 else ""),
                found[0].cite)
