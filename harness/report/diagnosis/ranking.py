"""Ranking the causes: every row judged, the ones an observation contradicts never first,
and "undetermined" where the evidence does not separate the leaders (or "nothing-fails"
where no trial failed), never a guess.

A cause leads when it is supported, contradicted by nothing, scores at least
`MIN_SCORE` (one separating observation) and beats the next supported cause by
`MARGIN` (a supporting observation more).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.report.diagnosis.artefacts import Unread
from harness.report.diagnosis.causes import CAUSES, Cause, engine_of, predictions
from harness.report.diagnosis.causes import _case as case_of
from harness.report.diagnosis.deciding import deciding_experiment, noop_test, program_of
from harness.report.diagnosis.findings import (
    AGAINST,
    CONSISTENT_COMPLETIONS,
    CONTRADICTS,
    FOR,
    Evidence,
    Finding,
)
from harness.report.diagnosis.observed import HARDWARE, NOOP, Observed
from harness.report.diagnosis.sources_text import evidence_lines, sources_json, stack_lines
from harness.report.diagnosis.wedged import cited, cleared_first, wedge_findings
from harness.report.model import EMULATED, SIMULATED
from harness.report.verdict import capture_how

MIN_SCORE = 3
MARGIN = 2
NOTHING_FAILS, UNDETERMINED = "nothing-fails", "undetermined"
FIRST, CANDIDATE, NO_SUPPORT = "first", "candidate", "no support"
CONTRADICTED, NOT_TESTED = "contradicted", "not tested"


@dataclass
class Ranked:
    """One line of the ranking: a cause and what the evidence made of it, or the answer
    that stands above them (nothing-fails, undetermined)."""

    id: str
    title: str
    status: str
    score: int | None = None
    supports: list[Finding] = field(default_factory=list)
    against: list[Finding] = field(default_factory=list)
    contradictions: list[Finding] = field(default_factory=list)
    untested: str | None = None
    falsifier: str = ""
    experiment: str = ""
    predicts: dict[str, str] = field(default_factory=dict)
    why: str = ""
    leading: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "title": self.title, "status": self.status}
        if self.score is not None:
            out["score"] = self.score
        if self.why:
            out["why"] = self.why
        if self.leading:
            out["leading"] = list(self.leading)
        for name, findings in (("for", self.supports), ("against", self.against),
                               ("contradicted_by", self.contradictions)):
            if findings or self.id not in (NOTHING_FAILS, UNDETERMINED):
                out[name] = [f.to_dict() for f in findings]
        if self.untested:
            out["not_tested"] = self.untested
        if self.predicts:
            out["predicts"] = dict(self.predicts)
        if self.falsifier:
            out["falsifier"] = self.falsifier
        if self.experiment:
            out["experiment"] = self.experiment
        return out


@dataclass
class Diagnosis:
    """The ranking of one or more reports' evidence."""

    reports: list[Observed]
    entries: list[Ranked]
    unread: list[Unread] = field(default_factory=list)    # files it could not read
    wedged: list[Finding] = field(default_factory=list)   # where the device stayed wedged

    @property
    def top(self) -> Ranked:
        return self.entries[0]

    @property
    def determined(self) -> bool:
        """Whether the top entry names a cause (not undetermined, not nothing-fails)."""
        return self.top.id not in (NOTHING_FAILS, UNDETERMINED)

    def entry(self, cause: str) -> Ranked:
        return next(e for e in self.entries if e.id == cause)

    def to_json(self) -> list[dict[str, Any]]:
        sources = sources_json(self.reports, self.unread)
        if self.wedged:
            sources["wedged"] = [f.to_dict() for f in self.wedged]
        return [dict(entry.to_dict(), **(sources if i == 0 else {}))
                for i, entry in enumerate(self.entries)]


def rank(ev: Evidence) -> Diagnosis:
    """The ranking; where the device stayed wedged, that as findings of their own and the
    next experiment after what clears it (harness.report.diagnosis.wedged)."""
    diagnosis = _ranked(ev)
    diagnosis.wedged = wedge_findings(ev)
    diagnosis.top.experiment = cleared_first(diagnosis.wedged, diagnosis.top.experiment)
    return diagnosis


def _ranked(ev: Evidence) -> Diagnosis:
    judged = [(cause, cause.judge(ev)) for cause in CAUSES]
    entries = [_entry(cause, findings, cause.experiment(ev), cause.falsifier_for(ev))
               for cause, findings in judged]
    leaders = sorted((e for e in entries if e.status == CANDIDATE),
                     key=lambda e: -(e.score or 0))
    order = {CANDIDATE: 0, NO_SUPPORT: 1, NOT_TESTED: 2, CONTRADICTED: 3}
    rest = sorted((e for e in entries if e.status != CANDIDATE),
                  key=lambda e: (order[e.status], -(e.score or 0)))
    ranked = leaders + rest
    if not ev.anything_failed:
        top = _nothing_shown(ev) or _too_few(ev) or _nothing_fails(ev)
        return Diagnosis(ev.reports, [top, *ranked])
    if not leaders:
        top = Ranked(UNDETERMINED, "undetermined", FIRST, why=_not_started(ev) + _unfit(entries),
                    experiment=deciding_experiment(
                        ev, [], "runlist-harness investigate on the case, for the experiments "
                                "that tell the rows apart"))
        return Diagnosis(ev.reports, [top, *ranked])
    best = leaders[0]
    second = leaders[1] if len(leaders) > 1 else None
    if (best.score or 0) < MIN_SCORE or (second is not None and
                                         (best.score or 0) - (second.score or 0) < MARGIN):
        # a third as close as the second is as open (a refused context: resources,
        # contention, a pack for another NPU)
        close = [best] + ([second] if second is not None else []) + [
            e for e in leaders[2:3] if second is not None and e.score == second.score
            and (best.score or 0) - (e.score or 0) < MARGIN]
        top = Ranked(UNDETERMINED, "undetermined", FIRST, leading=[e.id for e in close],
                    why=_not_started(ev) + ("the evidence does not separate "
                         + f"{close[0].id} (score {close[0].score}) from "
                         + " and ".join(f"{e.id} (score {e.score})" for e in close[1:])
                         if second is not None else
                         f"only weak evidence for {best.id} (score {best.score}; a lead needs "
                         f"{MIN_SCORE})"),
                    experiment=deciding_experiment(ev, [e.id for e in close],
                                                   best.experiment))
        return Diagnosis(ev.reports, [top, *ranked])
    best.status = FIRST
    return Diagnosis(ev.reports, ranked)


def _unfit(entries: list[Ranked]) -> str:
    """Why no cause leads where something failed: every cause an observation supports is
    contradicted by another, or no observation supports any."""
    if any(e.status == CONTRADICTED and e.supports for e in entries):
        return ("something failed, but no cause in the table fits it without an observation "
                "against it")
    return "something failed, but nothing in these files speaks for any cause of the table"


def _entry(cause: Cause, findings: Any, experiment: str, falsifier: str) -> Ranked:
    entry = Ranked(cause.id, cause.title, NO_SUPPORT, score=findings.score,
                  supports=findings.of(FOR), against=findings.of(AGAINST),
                  contradictions=findings.of(CONTRADICTS), untested=findings.untested,
                  falsifier=falsifier, experiment=experiment,
                  predicts=predictions(cause))
    if findings.untested:
        entry.status, entry.score = NOT_TESTED, None
    elif findings.contradicted:
        entry.status = CONTRADICTED
    elif findings.supported:
        entry.status = CANDIDATE
    return entry


def _not_started(ev: Evidence) -> str:
    """Where every failure was a refused set-up (no runlist failed): that the run could not
    start, before the rest of why the answer is open; else ""."""
    if ev.failing:
        return ""
    refused = [(a, e) for a in ev.arms for e in a.setup_errors]
    if not refused:
        return ""
    return (f"the run could not start ({len(refused)} trial" + ("s" if len(refused) != 1
                                                                  else "")
            + f" refused at set-up: {refused[0][1]}), so no runlist ran; ")


def _nothing_shown(ev: Evidence) -> Ranked | None:
    """Plain artefacts only, none of which shows a failure or a run (xrt-smi examine, a clean
    flm validate): they show the stack, and nothing to diagnose; undetermined, with what
    would show the failure. None where a file is a report or shows a run."""
    if ev.arms or any(r.kind != "artefact" for r in ev.reports):
        return None
    why = ("this file shows neither a failure nor a run: it shows the stack only (below)"
           if len(ev.reports) == 1 else f"none of these {len(ev.reports)} files shows a "
           "failure or a run: they show the stack only (below)")
    return Ranked(UNDETERMINED, "undetermined", FIRST, why=why,
                  experiment=("the failing program's own account of its failure, with the "
                              "kernel log over it: runlist-harness capture record "
                              f"--no-capture --out DIR -- {program_of(ev)}, then diagnose "
                              "DIR/report.yaml; to test the stack itself, " + noop_test(ev)))


def _too_few(ev: Evidence) -> Ranked | None:
    """Nothing failed, but too few trials answered to say that nothing fails (fewer than
    it takes to say a plan completes, as when Ctrl-C stopped the first trial): undetermined,
    with the command that finishes the run. None when enough answered."""
    answered = sum(r.answered for r in ev.reports)
    if answered >= CONSISTENT_COMPLETIONS:
        return None
    stopped = [r for r in ev.reports if r.resume]
    why = (f"too few trials answered to say anything ({answered} answered in "
           f"{_reports_text(ev)}, {CONSISTENT_COMPLETIONS} at least to say a plan "
           "completes)")
    if stopped:
        why += ("; the run stopped before its trials were done" if len(stopped) == 1 else
                f"; {len(stopped)} runs stopped before their trials were done")
        experiment = "; ".join(r.resume for r in stopped if r.resume)
    else:
        experiment = (f"runlist-harness run {case_of(ev)} --trials "
                      f"{CONSISTENT_COMPLETIONS} (each plan, enough trials to say it "
                      "completes)")
    return Ranked(UNDETERMINED, "undetermined", FIRST, why=why, experiment=experiment)


def _reports_text(ev: Evidence) -> str:
    return f"{len(ev.reports)} report" + ("s" if len(ev.reports) != 1 else "")


def _nothing_fails(ev: Evidence) -> Ranked:
    trials = sum(a.answered for a in ev.arms)
    sources = {r.source for r in ev.reports}
    noop_only = bool(ev.arms) and all(a.workload == NOOP for a in ev.arms)
    why = f"no trial failed ({trials} answered in {_reports_text(ev)})"
    stopped = [r.resume for r in ev.reports if r.resume]
    if sources & {SIMULATED, EMULATED} and all(r.documented for r in ev.reports
                                                if r.source != HARDWARE):
        decide = ("the " + "/".join(sorted(sources & {SIMULATED, EMULATED})).lower()
                  + " stack plays what the XRT and driver sources document, and nothing in "
                  "them fails these runlists; a hardware run decides: reproduce_ert_timeout "
                  "on the machine. There, NOOP runlists that fail point at depth (by their "
                  "time to failure: a limit at the driver's timer, a refusal at once); NOOPs "
                  "that complete leave the engine's own commands to run (capture them: "
                  "docs/captures.md)")
    elif sources & {SIMULATED, EMULATED}:
        injected = sorted({c for r in ev.reports for c in r.by_construction})
        decide = ("the profile's hypothesis made nothing fail in what ran ("
                  + "; ".join(injected) + ")" + ("; every run carried NOOPs" if noop_only
                                                 else ""))
    elif noop_only:
        decide = ("NOOP runlists complete on this machine: submission depth alone does not "
                  "fail here, so what fails must be in the engine's own commands; run them: "
                  + capture_how(engine_of(ev)))
    else:
        decide = ("nothing failed in these trials; a failure rarer than that needs more "
                  "trials (--trials 20)")
    if stopped:
        # what ran says nothing failed; what the run was to run is not all in
        decide += "; the run stopped before its trials were done: " + "; ".join(stopped)
    return Ranked(NOTHING_FAILS, "nothing fails", FIRST, why=why, experiment=decide)


def text_lines(diagnosis: Diagnosis) -> list[str]:
    """The diagnosis as a person reads it: where the evidence comes from, the answer with
    the observations for and against it (each with its report and field), its falsifier
    and the next experiment, then every other cause in a line."""
    lines = evidence_lines(diagnosis.reports, diagnosis.unread)
    top = diagnosis.top
    if top.id in (NOTHING_FAILS, UNDETERMINED):
        lines.append(f"diagnosis: {top.id}: {top.why}")
        lines += cited(diagnosis.wedged)
        if top.leading:
            lines.append("  leading: " + ", ".join(top.leading))
        lines.append(f"  {'what would decide' if top.id == NOTHING_FAILS else 'next'}: "
                     f"{top.experiment}")
        rest = diagnosis.entries[1:]
    else:
        lines.append(f"diagnosis: {top.id}: {top.title} (score {top.score})")
        lines += cited(diagnosis.wedged)
        lines += _findings(top)
        lines.append(f"  falsified by: {top.falsifier}")
        lines.append(f"  next: {diagnosis_experiment(diagnosis)}")
        rest = diagnosis.entries[1:]
    if rest:
        lines.append("the other causes:")
        width = max(len(e.id) for e in rest)
        for entry in rest:
            lines.append(f"  {entry.id:<{width}}  {_summary(entry)}")
    return lines + stack_lines(diagnosis.reports)


def diagnosis_experiment(diagnosis: Diagnosis) -> str:
    return diagnosis.top.experiment


def _findings(entry: Ranked) -> list[str]:
    out = []
    for word, findings in (("for", entry.supports), ("against", entry.against),
                           ("contradicted by", entry.contradictions)):
        for finding in findings:
            cites = "; ".join(str(c) for c in finding.cites)
            out.append(f"  {word}: {finding.text}" + (f" [{cites}]" if cites else ""))
    return out


def _summary(entry: Ranked) -> str:
    if entry.status == NOT_TESTED:
        return f"not tested: {entry.untested}"
    if entry.status == CONTRADICTED:
        first = entry.contradictions[0]
        cites = "; ".join(str(c) for c in first.cites)
        return f"contradicted: {first.text}" + (f" [{cites}]" if cites else "")
    if entry.status == NO_SUPPORT:
        against = f" (against: {entry.against[0].text})" if entry.against else ""
        return f"no observation for it{against}"
    return f"{entry.status}, score {entry.score}: " + "; ".join(f.text for f in entry.supports)
