"""A device that stayed wedged, as the evidence shows it, and what that leaves of the rest.

A wedge is the state a device is left in when its firmware stops taking contexts after a
timeout (`harness.model.wedge`): every tree's restart of the hung context fails ("Create
hwctx failed", the legacy tree's "connect failed" and "fatal error": the sign
`restart-failed`), a reload on it is refused by the SMU ("smu cmd 4 failed, 0xff" after the
timeout: amd/xdna-driver#1257 and #1193), and the harness's own reports mark each trial
that began on it (`wedged_device`) and name the state its recovery check found (a trial's
`recovery.state`: the sign `device-wedged`).

What the device answered after that says nothing of the runlist, the stack's limits or its
other parts: a context refused, a probe that failed, a submit refused -EIO are the wedge's,
not a cause of their own. So every sign a file shows from its first wedge line on is left
out of the evidence (`after_wedge`) save the wedge's own, reports already keep their
wedged trials apart (`Observed.wedged`), and the answer says so as a finding and begins its
next experiment with what clears a wedge: a reboot (`REBOOT_FIX`: a module reload or a PCI
remove and rescan runs the SMU power-off the wedged firmware refuses, and public reports saw
neither clear it).
"""

from __future__ import annotations

from harness.model.wedge import REBOOT_FIX
from harness.report.diagnosis.findings import Evidence, Finding
from harness.report.diagnosis.sign_rules import WEDGE_KINDS, wedge_begins
from harness.report.diagnosis.vocabulary import Observed, Sign

FIRST = "the device stayed wedged"


def _ordered(observed: Observed) -> list[Sign]:
    return sorted((s for s in observed.signs if s.cite.line is not None),
                  key=lambda s: s.cite.line or 0)


def wedge_signs(observed: Observed) -> list[Sign]:
    """The signs of one file that show the device wedged: a report's own marks, and in a
    log, from where its wedge begins, the failed restarts and the SMU's refusals."""
    marks = [s for s in observed.signs if s.kind == "device-wedged"]
    ordered = _ordered(observed)
    begins = wedge_begins([s.kind for s in ordered])
    if begins is not None:
        marks += [s for s in ordered[begins:] if s.kind in WEDGE_KINDS + ("smu-failed",)]
    return marks + [s for s in observed.signs if s.kind == "restart-failed"
                    and s.cite.line is None]


def first_wedge_line(observed: Observed) -> int | None:
    ordered = _ordered(observed)
    begins = wedge_begins([s.kind for s in ordered])
    return ordered[begins].cite.line if begins is not None else None


def after_wedge(first: int | None, sign: Sign) -> bool:
    """Whether `sign` comes from a wedged device: at or after `first`, the line where its
    file's wedge begins (`first_wedge_line`), and not one of the wedge's own signs."""
    return first is not None and sign.cite.line is not None and sign.cite.line >= first \
        and sign.kind not in WEDGE_KINDS


def wedge_findings(ev: Evidence) -> list[Finding]:
    """What the evidence shows of a wedge, one finding a file, each citing where."""
    found = []
    for observed in ev.reports:
        marks = wedge_signs(observed)
        if not marks:
            continue
        first = marks[0]
        begins = first_wedge_line(observed)
        later = sum(1 for s in observed.signs if after_wedge(begins, s))
        text = _said(first) + (f"; {later} later lines are the wedge's and left out of the "
                               "evidence" if later else "")
        found.append(Finding("wedge", 0, text, tuple(s.cite for s in marks[:2])))
    return found


def _said(sign: Sign) -> str:
    if sign.kind == "device-wedged":
        trials = sign.facts.get("trials")
        if trials:
            return (f"{FIRST}: {trials} trials began on it ({sign.facts.get('plans')}); they "
                    "are no evidence of depth, the cut or the control")
        return f"{FIRST}: the recovery check after the failed trial found it so"
    if sign.kind == "smu-failed":
        return (f"{FIRST}: the SMU refused the power-off after the timeout, as it does on "
                "a reload of a wedged NPU")
    if sign.facts.get("ioctl"):
        return (f"{FIRST}: every submit on the context is refused -EIO, as the legacy "
                "driver refuses it once its restart after a hang failed")
    return (f"{FIRST}: the driver could not bring the context back after the hang (its "
            "restart failed)")


def cleared_first(findings: list[Finding], experiment: str) -> str:
    """The next experiment, after what clears a wedge where one shows."""
    if not findings:
        return experiment
    return f"first {REBOOT_FIX}; then {experiment}"


def cited(findings: list[Finding]) -> list[str]:
    """The findings as lines of text, their citations after them."""
    return [f"  wedged: {f.text}" + (" [" + "; ".join(str(c) for c in f.cites) + "]"
                                     if f.cites else "") for f in findings]
