"""What the diagnosis read, as its text and JSON say it: each file with where its facts
come from (a machine, the SIMULATED or EMULATED stack) and, for an artefact, what it was
read as; each file it could not read, with why; each machine's stack and the factor
table when the files come from several machines."""

from __future__ import annotations

from typing import Any

from harness.report.diagnosis.artefacts import Unread
from harness.report.diagnosis.cohort import cohort_json, cohort_lines, machines, run_factor_lines
from harness.report.diagnosis.vocabulary import FACTOR_WORDS, FACTORS, HARDWARE, Observed


def evidence_lines(reports: list[Observed], unread: list[Unread]) -> list[str]:
    lines = []
    for report in reports:
        origin = report.source if report.source != HARDWARE else "hardware"
        if report.kind == "artefact":
            origin = "" if report.source == HARDWARE else f", {report.source}: not a machine's"
            lines.append(f"read: {report.file} as " + "; ".join(report.read_as) + origin)
            continue
        note = ""
        if report.source != HARDWARE:
            note = f", profile {report.profile}: not hardware evidence"
            if report.by_construction:
                note += ("; by construction, " + "; ".join(report.by_construction)
                         + ": a diagnosis of it recovers the hypothesis, it finds nothing "
                         "about a machine")
        lines.append(f"evidence: {report.file} ({report.command}, {origin}{note})")
    for file in unread:
        lines.append(f"not read: {file.file}: {file.why}")
    return lines


def stack_lines(reports: list[Observed]) -> list[str]:
    """The machines and their factors (several machines), else the one stack the files
    show, each fact with where it was read."""
    found, unattributed = machines(reports)
    lines = cohort_lines(found, unattributed)
    if not lines and found:
        facts = found[0].facts
        if facts:
            lines.append("stack: " + "; ".join(
                f"{FACTOR_WORDS[f]} {facts[f].value} ({facts[f].cite.file}"
                + (f":{facts[f].cite.line}" if facts[f].cite.line else "") + ")"
                for f in FACTORS if f in facts))
    lines += _run_factors(reports)
    return lines


def _run_factors(reports: list[Observed]) -> list[str]:
    return run_factor_lines([a for r in reports if r.source == HARDWARE for a in r.arms])


def sources_json(reports: list[Observed], unread: list[Unread]) -> dict[str, Any]:
    """What the first entry of `--json` carries beside the answer."""
    sources = []
    for r in reports:
        entry: dict[str, Any] = {"file": r.file, "command": r.command, "source": r.source,
                                 "profile": r.profile, "by_construction": r.by_construction}
        if r.kind == "artefact":
            entry["read_as"] = list(r.read_as)
        sources.append(entry)
    found, unattributed = machines(reports)
    out: dict[str, Any] = {"reports": sources}
    if unread:
        out["not_read"] = [{"file": u.file, "why": u.why} for u in unread]
    if len(found) > 1:
        out["cohort"] = cohort_json(found, unattributed)
    confounded = _run_factors(reports)
    if confounded:                      # within one machine's outcomes, as the text says
        out["confounded"] = confounded
    return out
