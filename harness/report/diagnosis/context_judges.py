"""Who holds the hardware contexts: `resources` (the run's own demand meets a limit of the
stack) against `contention` (other clients hold or share the device).

A context refused with none left is `resources` when the run's own demand (one context per
xclbin) exceeds what the device gives (`hwctx_limit`: 6 on npu1, 16 on npu4/5/6,
`npu*_regs.c`; the legacy tree's 32 virtual contexts, 6 on npu1), and `contention` when it
does not, for then other clients held the rest. Where the demand is not known (a kernel log
alone) both stay open and the probe (who holds the NPU) decides. A context refused -EINVAL
with no line saying why (`sign_rules`: the firmware's MGMT_ERT_NOAVAIL and a request the
resource solver does not take give the same errno) supports both only weakly.
"""

from __future__ import annotations

from harness.model.drivers import JOBS_IN_FLIGHT
from harness.report.diagnosis.engine_run import EngineRunArm
from harness.report.diagnosis.findings import (
    AGAINST,
    FOR,
    STRONG,
    SUPPORT,
    WEAK,
    Evidence,
    Findings,
    rate_cite,
    ttf_cite,
)
from harness.report.diagnosis.observed import CONTEXT_EVENTS, context_refused
from harness.report.diagnosis.signs_seen import first_of as _first
from harness.report.diagnosis.signs_seen import signs
from harness.report.diagnosis.vocabulary import Cite
from harness.report.timing import PAST_TIMER

NPU1_CONTEXTS = 6              # npu1_regs.c hwctx_limit: the fewest any XDNA device gives
CONTEXTS = 16                  # npu4/5/6_regs.c hwctx_limit
# the states only the device gives a runlist it ran (harness.model.ert)
DEVICE_STATES = ("TIMEOUT", "ERROR", "ABORT")
REFUSED_UNTOLD = ("a hardware context was refused (-EINVAL: none left, or a request the "
                  "driver does not take, such as a partition wider than the device; the "
                  "files do not say which)")


def judge_resources(ev: Evidence) -> Findings:
    out = Findings()
    refused = [(a, context_refused(a)) for a in ev.arms if context_refused(a)]
    if refused:
        arm, errors = refused[0]
        out.add(FOR, STRONG, f"a hardware context was refused at set-up ({errors[0]})",
                arm.cite("trials[*].error", errors[0]))
    mailbox = [a for a in ev.arms if any(a.events.get(kind) for kind in CONTEXT_EVENTS)]
    if mailbox:
        out.add(FOR, SUPPORT, "the kernel log has a refused mailbox command (the firmware "
                "refusing a context: MGMT_ERT_NOAVAIL)",
                mailbox[0].cite("trials[*].kernel_log.events", "mailbox_failure"))
    others = [a for a in ev.arms if a.setup_failed and not context_refused(a)]
    if others:
        out.add(FOR, WEAK, f"set-up failed ({others[0].setup_errors[0]})",
                others[0].cite("trials[*].error", others[0].setup_errors[0]))
    blocked = [a for a in ev.failing if a.chains_of(max(a.failing_depths or [0]))
               > JOBS_IN_FLIGHT and a.ttf and all(k == PAST_TIMER for _, k in a.ttf)]
    if blocked and not refused:
        out.add(FOR, WEAK, f"{blocked[0].label} needs more than {JOBS_IN_FLIGHT} chains in "
                "flight and failed past the timer: its 5th submit waited for a slot",
                ttf_cite(blocked[0]))
    resources_of_demand(out, ev)
    # what the harness ran itself, it saw every context made; a program's report or a
    # table says only that its failing runlist ran and the device gave it a state
    answered = [a for a in ev.failing if a.failed]
    seen = [a for a in answered if a.line is None and not isinstance(a, EngineRunArm)]
    stated = [a for a in answered if set(a.states) & set(DEVICE_STATES)]
    if seen and not refused and not mailbox:
        out.add(AGAINST, SUPPORT, "every context was made and the device answered each "
                "runlist", rate_cite(seen[0]))
    elif stated and not refused and not mailbox:
        state = next(s for s in stated[0].states if s in DEVICE_STATES)
        told = "the table's row says" if stated[0].line is not None else \
            "the program's error names it"
        out.add(AGAINST, SUPPORT, f"the failing runlist ran on a context and the device gave "
                f"it a state ({state}, as {told}): its context was made",
                rate_cite(stated[0]))
    return out


def context_demand(ev: Evidence) -> tuple[int, int, Cite] | None:
    """The run's own demand for contexts, the device's limit, and where the demand was
    read, from the first report that refused a context and knows both."""
    for report in ev.reports:
        refused = [a for a in report.arms if context_refused(a)]
        if refused and report.contexts:
            npu = (report.stack.npu.value if report.stack.npu else "").lower()
            limit = NPU1_CONTEXTS if "npu1" in npu or "phoenix" in npu else CONTEXTS
            return report.contexts, limit, report.cite("artifacts.xclbins", f"{report.contexts} "
                                                       "xclbins, a context each")
    return None


def resources_of_demand(out: Findings, ev: Evidence) -> None:
    """What the run's own demand for contexts says of `resources` (the boundary with
    `contention`, above)."""
    demand = context_demand(ev)
    if demand is not None:
        asked, limit, cite = demand
        if asked > limit:
            out.add(FOR, STRONG, f"the run asks {asked} contexts and the device gives "
                    f"{limit}: its own demand meets the limit", cite)
        else:
            out.add(AGAINST, STRONG, f"the run asks {asked} contexts and the device gives "
                    f"{limit}: its own demand cannot use them up", cite)
        return
    if not any(context_refused(a) for a in ev.arms):
        unavailable = signs(ev, "context-unavailable")
        _first(out, FOR, SUPPORT, unavailable, "a hardware context was refused with none left "
               "(whose demand used them up the files do not say)")
        if not unavailable:
            _first(out, FOR, WEAK, signs(ev, "context-refused"), REFUSED_UNTOLD)



def judge_contention(ev: Evidence) -> Findings:
    out = Findings()
    demand = context_demand(ev)
    if demand is not None:
        asked, limit, cite = demand
        if asked <= limit:
            out.add(FOR, STRONG, f"a context was refused though the run asks {asked} and "
                    f"the device gives {limit}: other clients held the rest", cite)
            said = signs(ev, "context-unavailable")
            _first(out, FOR, SUPPORT, said, "the driver or the firmware said no context was "
                   "left to give")
            if not said:
                _first(out, FOR, WEAK, signs(ev, "context-refused"), REFUSED_UNTOLD)
    else:
        refused = signs(ev, "context-unavailable")
        _first(out, FOR, SUPPORT, refused, "a hardware context was refused with none left "
               "(whose demand used them up the files do not say)")
        if not refused:
            _first(out, FOR, WEAK, signs(ev, "context-refused"), REFUSED_UNTOLD)
    _first(out, FOR, SUPPORT, signs(ev, "other-holders"), "other processes held the NPU or "
           "the GPU's compute node during the run")
    _first(out, FOR, WEAK, signs(ev, "gpu-fault"), "the GPU's driver reported a hang or reset "
           "beside the NPU run")
    _first(out, AGAINST, SUPPORT, signs(ev, "no-other-holders"), "the probe saw no other "
           "process holding the NPU")
    return out
