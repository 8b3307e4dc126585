"""A device that stayed wedged, as the evidence shows it, and what that leaves of the rest.

A wedge is the state a device is left in when its firmware stops taking contexts after a
timeout (`harness.model.wedge`): every tree's restart of the hung context fails ("Create
hwctx failed", the legacy tree's "connect failed" and "fatal error": the sign
`restart-failed`), a probe after it may fail at the SMU ("smu cmd 4 failed, 0xff" after the
timeout, as amd/xdna-driver#1257 and #1193 print such a probe), and the harness's own reports
mark each trial
that began on it (`wedged_device`) and name the state its recovery check found (a trial's
`recovery.state`: the sign `device-wedged`).

What the device answered after that says nothing of the runlist, the stack's limits or its
other parts: a context refused, a probe that failed, a submit refused -EIO are the wedge's,
not a cause of their own. So every sign a file shows from its first wedge line on is left
out of the evidence (`after_wedge`) save the wedge's own, reports already keep their
wedged trials apart (`Observed.wedged`), and the answer says so as a finding and begins its
next experiment with what clears a wedge: a reboot (`harness.model.wedge.REBOOT_FIX`, the
one account of what the public reports saw clear a wedge and what they saw not clear it).

A submit refused -EIO (`context-dead`) is the legacy tree's context that did not connect
to the firmware; the tree marks it dead on any failed connect, its first one included
(src/driver/amdxdna aie2_ctx_runqueue.c part_ctx_start), so it is a wedge only after a
timeout in the same file (its reconnect after the hang failed): in a log, a timeout line or
XRT's TIMEOUT before it; in a report's fields, which keep no order, one anywhere in the
report. A check after the run that found the device answering (`device-answered`: a NOOP
run on a fresh context completed) outweighs what the text implied: no wedge then.
"""

from __future__ import annotations

from harness.model.drivers import FLAVOURS, LEGACY
from harness.model.wedge import REBOOT_FIX
from harness.report.diagnosis.findings import Evidence, Finding
from harness.report.diagnosis.sign_rules import (
    DEAD_KINDS,
    TIMEOUT_KINDS,
    WEDGE_OWN,
    ordering_kind,
    wedge_begins,
)
from harness.report.diagnosis.vocabulary import Observed, Sign, is_flavour

FIRST = "the device stayed wedged"


def _ordered(observed: Observed) -> list[Sign]:
    return sorted((s for s in observed.signs if s.cite.line is not None),
                  key=lambda s: s.cite.line or 0)


def _begins(ordered: list[Sign]) -> int | None:
    return wedge_begins([ordering_kind(s.kind, s.facts) for s in ordered])


def _answered(observed: Observed) -> bool:
    return any(s.kind == "device-answered" for s in observed.signs)


def wedge_signs(observed: Observed) -> list[Sign]:
    """The signs of one file that show the device wedged: a report's own marks, and in a
    log, from where its wedge begins, the failed restarts, the dead contexts and the SMU's
    refusals; in a report's fields, its failed restarts, and its dead contexts where it
    shows a timeout; none where a check after the run found the device answering."""
    marks = [s for s in observed.signs if s.kind == "device-wedged"]
    if _answered(observed):
        return marks
    ordered = _ordered(observed)
    begins = _begins(ordered)
    if begins is not None:
        marks += [s for s in ordered[begins:] if s.kind in WEDGE_OWN + ("smu-failed",)]
    unordered = [s for s in observed.signs if s.cite.line is None]
    timed = any(ordering_kind(s.kind, s.facts) in TIMEOUT_KINDS for s in observed.signs)
    return marks + [s for s in unordered if s.kind == "restart-failed"
                    or (s.kind in DEAD_KINDS and timed)]


def first_wedge_line(observed: Observed) -> int | None:
    if _answered(observed):
        return None
    ordered = _ordered(observed)
    begins = _begins(ordered)
    return ordered[begins].cite.line if begins is not None else None


def after_wedge(first: int | None, sign: Sign) -> bool:
    """Whether `sign` comes from a wedged device: at or after `first`, the line where its
    file's wedge begins (`first_wedge_line`), and not one of the wedge's own signs."""
    return first is not None and sign.cite.line is not None and sign.cite.line >= first \
        and sign.kind not in WEDGE_OWN


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
        text = _said(first, observed) + (f"; {later} later lines are the wedge's and left "
                                         "out of the evidence" if later else "")
        found.append(Finding("wedge", 0, text, tuple(s.cite for s in marks[:2])))
    return found


def _said(sign: Sign, observed: Observed) -> str:
    if sign.kind == "device-wedged":
        trials = sign.facts.get("trials")
        if trials:
            return (f"{FIRST}: {trials} trials began on it ({sign.facts.get('plans')}); they "
                    "are no evidence of depth, the cut or the control")
        return f"{FIRST}: the recovery check after the failure found it so"
    if sign.kind == "smu-failed":
        return (f"{FIRST}: the SMU refused the power-off after the timeout, as it does on "
                "a reload of a wedged NPU")
    if sign.kind in DEAD_KINDS:
        flavour = observed.stack.flavour
        other = "" if flavour is None or is_flavour(flavour, dkms=True, tree=LEGACY) else (
            f" (only the legacy tree refuses a submit so; this file shows the "
            f"{FLAVOURS[flavour].called if flavour in FLAVOURS else flavour} driver)")
        return (f"{FIRST}: after the timeout a submit on the context is refused -EIO, as the "
                f"legacy driver refuses every submit once it could not connect the context "
                f"again{other}")
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
