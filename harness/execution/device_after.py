"""The device after a recorded run: does it still run a NOOP on a fresh context, what
`xrt-smi examine` says of it before and after, and, where it no longer answers, what state
it is in and what the public reports say does and does not clear it.

The check is the one a failed trial gets (`harness.execution.recovery`): one NOP run
(`nop.elf` on XRT's validate.xclbin, as `xrt-smi validate` runs it) on a context made for
it, in a worker the harness kills at a deadline (a pyxrt wait can block for ever), tried
again with a back-off on a machine (the driver restarts a hung context itself) and once on
the simulated stack (its device does not change while nothing runs). What the device is
when it does not answer is read from the check's own error (`recovery.device_state`); what
clears it comes from `harness.model.wedge`, the one account of the public reports (a wedge:
a reboot, as a reload and a function-level reset did not clear one and a PCI rescan cleared
one once; anything else: a reload or a rescan first).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from harness.execution.backend import Backend
from harness.execution.recovery import (
    DELAYS_S,
    Recovery,
    check_error,
    check_recovery,
    device_state,
    recovery_fix,
)
from harness.model.errors import BadInput, EnvironmentNotReady
from harness.model.plan import Plan
from harness.model.results import TrialResult
from harness.model.wedge import WEDGE_CLEARS, WEDGE_DOES_NOT_CLEAR

WORKING = "working: a NOP run on a fresh context completed"
OTHER_CLEARS = ("the driver's own context restart, or a module reload or a PCI remove and "
                "rescan (their remove and probe load the firmware afresh)")


@dataclass
class Checked:
    """What the check found: its outcome (None: not run, and why), and the last answer the
    device gave it (its kernel log, on the simulated stack)."""

    recovery: Recovery | None
    not_run: str | None = None
    answer: TrialResult | None = None


def recovery_check(backend: Backend, *, bdf: str | None, module: str | None
                   ) -> Checked:
    """Run the NOOP check on `backend`'s device (bounded by a deadline per attempt)."""
    from harness.execution.isolation import prepare, run_isolated
    from harness.execution.runner import RunOptions, case_programs, derive_deadline, trial_spec
    from harness.sources.depth_control import CONTROL_CASE, control_for
    from harness.sources.load import load_case
    from harness.sources.packs import resolve_pack
    control = replace(control_for(load_case(CONTROL_CASE))[0], layers=1)
    options = RunOptions(trials=1)
    try:
        pack = resolve_pack(control, simulated=not backend.hardware)
    except (EnvironmentNotReady, BadInput) as err:
        return Checked(None, f"XRT's validate.xclbin for the NOP run is not here ({err})")
    programs = case_programs(control, pack, options, simulated=not backend.hardware)
    spec = trial_spec(control, pack, "recovery", [1], 0, options, programs)
    spec.device = backend.device_life()
    deadline = derive_deadline(control, Plan("recovery", "1", (1,)), backend)
    report = backend.as_report()
    prepare(report)
    last: list[TrialResult] = []

    def attempt() -> str | None:
        answer = run_isolated(spec, report, deadline, backend.latencies)
        last[:] = [answer]
        return check_error(answer)
    # the deadline is a bound on each attempt, not the time it took (recovery.waited_s)
    what = (f"one NOP run (nop.elf on {pack_words(pack.stand_ins)}) on a fresh context, "
            f"in a worker held to a deadline of {deadline:g} s")
    delays = DELAYS_S if backend.hardware else (0.0,)
    recovery = check_recovery(attempt, what, recovery_fix(module, bdf), delays=delays)
    return Checked(recovery, answer=last[0] if last else None)


def pack_words(stand_ins: Any) -> str:
    return ("a synthesized stand-in for XRT's validate.xclbin" if stand_ins
            else "XRT's validate.xclbin")


def device_section(checked: Checked | None, smi_before: dict[str, Any] | None,
                   smi_after: dict[str, Any] | None, *, why_not: str | None = None,
                   kernel_log: dict[str, Any] | None = None) -> dict[str, Any]:
    """The report's `device_after`: whether the device answers, its state, what clears it
    where it does not, xrt-smi examine before and after, and what the driver printed
    during the check."""
    out: dict[str, Any] = {}
    recovery = checked.recovery if checked is not None else None
    if recovery is None:
        out["answers"] = None
        out["not_checked"] = why_not or (checked.not_run if checked else None) or "not run"
    else:
        out["recovery"] = recovery.to_json()
        out["answers"] = recovery.recovered
        if recovery.recovered:
            out["state"] = WORKING
        else:
            wedged = device_state(recovery.last_error)[1]
            out.update(state=recovery.state, wedged=wedged,
                       clears=WEDGE_CLEARS if wedged else OTHER_CLEARS,
                       does_not_clear=WEDGE_DOES_NOT_CLEAR if wedged else
                       "waiting: the check tried again over "
                       f"{recovery.waited_s:g} s", fix=recovery.fix)
    if kernel_log is not None:
        out["kernel_log"] = kernel_log
    smi: dict[str, Any] = {}
    for when, found in (("before", smi_before), ("after", smi_after)):
        if found is not None:
            smi[when] = found
    if smi:
        out["xrt_smi_examine"] = smi
    return out


def examine(found: dict[str, Any] | None) -> dict[str, Any] | None:
    """`xrt-smi examine` as the probe keeps it (`harness.probe.xrt_smi.xrt_smi`), or that
    it is not installed; None when it was not asked (the simulated stack)."""
    if found is None:
        return None
    if not found.get("installed"):
        return {"installed": False, **({"note": found["note"]} if "note" in found else {})}
    return found.get("examine") or {"note": "not run"}
