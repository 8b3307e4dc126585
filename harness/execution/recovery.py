"""After a trial failed on hardware: does the device answer again, and if not, in what
state it is and what to do.

The driver restarts the hung context itself (staging/mainline ``aie2_sched_job_timedout``,
legacy ``aie2_tdr_work``), so a healthy device runs the next command. When it does not,
what the recovery check's own error says names the state (`device_state`), as each tree
answers a device whose firmware stopped taking contexts (`harness.model.wedge`): the
context refused by the firmware (in-tree and staging, -EINVAL, or -ENODEV/-ETIME where it
answers nothing), every submit refused -EIO (the legacy tree's dead context), the command
back at once never run (a context left without a firmware channel), or no device at all
(a probe or a reset that failed). For such a wedge the advice is a reboot
(`harness.model.wedge.REBOOT_FIX`: a module reload and a function-level reset did not clear
one in the reports, a PCI rescan cleared one once). For any other failure to answer the
sources offer reloading the module (its remove and probe re-initialise the firmware) or
removing the PCI function and rescanning the bus; the AIE2 driver has no PCI
reset_prepare/reset_done handlers (only ``aie4_pci.c`` does), so writing the function's
``reset`` file is not offered.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from harness.model.results import COMPLETED_STATE, TrialResult, TrialStatus
from harness.model.wedge import REBOOT_FIX

DELAYS_S = (0.0, 2.0, 4.0, 8.0, 16.0)      # one attempt now, then backing off: 30 s in all
NOT_RECOVERED = "not recovered"
# What the check's error says of the device, first match wins: (pattern, state, wedged).
# XRT's shim names the ioctl and the errno (src/shim/host/platform_host.cpp ioctl)
_STATES: tuple[tuple[str, str, bool], ...] = (
    (r"EXEC_CMD IOCTL failed \(err=-5\)",
     "wedged: every submit fails -EIO (the driver marked the context dead once the firmware "
     "refused its restart: the legacy tree's aie2_rq_submit_enter)", True),
    (r"CREATE_HWCTX IOCTL failed \(err=-(?:19|62)\)",
     "wedged: the firmware answers no management message (the driver's channel to it timed "
     "out and is gone), so no context can be made", True),
    (r"CREATE_HWCTX IOCTL failed \(err=-22\)",
     "wedged, or every context taken: the firmware refuses new contexts (MGMT_ERT_NOAVAIL), "
     "as it does once a device has wedged after a timeout (amd/xdna-driver PR #1585), or "
     "when other processes hold all of them", True),
    (r"ERT_CMD_STATE_NEW|unexpected command state",
     "wedged: the command came back at once, never run (the context has no firmware "
     "channel: the driver's restart after the hang failed)", True),
    (r"No such device",
     "no device: the driver is not bound to the NPU (a probe or a function-level reset that "
     "failed: the kernel log says why; on a wedged NPU an FLR left it 'not ready after FLR', "
     "1bit-MONSTER/1bit-MONSTER#1920)", True),
)


@dataclass
class Recovery:
    status: str                  # "recovered", "recovered after N s", "not recovered"
    attempts: int
    waited_s: float
    what: str                    # the command the check ran
    last_error: str | None = None
    fix: str | None = None
    state: str | None = None     # what the device is, where it did not answer

    @property
    def recovered(self) -> bool:
        return self.status != NOT_RECOVERED

    def to_json(self) -> dict[str, object]:
        return {k: v for k, v in vars(self).items() if v is not None}


def device_state(error: str | None) -> tuple[str, bool]:
    """What a device that did not answer the check is, from the check's error: its state
    in words, and whether that is a wedge (no reload clears it)."""
    text = error or ""
    for pattern, state, wedged in _STATES:
        if re.search(pattern, text):
            return state, wedged
    return f"not answering ({text or 'no error given'})", False


def check_error(answer: TrialResult) -> str | None:
    """What the check's trial answered, as a machine shows it: None where it completed,
    else the error XRT raised, else the failing runlist's message or state. Not the
    trial's own `wedged` mark (TrialResult.state), which only the simulated stack sets and
    which names no state `device_state` reads: a dead context's -EIO names the wedge."""
    if answer.status is TrialStatus.COMPLETED:
        return None
    if answer.error:
        return answer.error
    for outcome in answer.runlists:
        if outcome.state not in (None, COMPLETED_STATE):
            return outcome.message or outcome.state
    return answer.state


def recovery_fix(module: str | None, bdf: str | None) -> str:
    module = module or "amdxdna"
    pci = (f"or remove and rescan the PCI function: `echo 1 | sudo tee "
           f"/sys/bus/pci/devices/{bdf}/remove && echo 1 | sudo tee /sys/bus/pci/rescan`"
           if bdf else "or remove and rescan its PCI function (/sys/bus/pci/devices/BDF/"
           "remove, then /sys/bus/pci/rescan)")
    return (f"close every program using the NPU, reload the driver (`sudo modprobe -r "
            f"{module} && sudo modprobe {module}`), {pci}; if it still does not answer (or "
            "the reload fails with 'smu cmd 4 failed' in the kernel log), reboot")


def wedged_fix(state: str) -> str:
    """The advice for a wedged device: a reboot, not a reload or a rescan; where other
    programs may hold the contexts, closing them first."""
    others = ("close every other program using the NPU (it may hold the contexts); if none "
              "does, " if "other processes" in state else "")
    return others + REBOOT_FIX


def check_recovery(attempt: Callable[[], str | None], what: str, fix: str, *,
                   sleep: Callable[[float], None] = time.sleep,
                   clock: Callable[[], float] = time.monotonic,
                   delays: tuple[float, ...] = DELAYS_S) -> Recovery:
    """Run `attempt` (None: the device answered; else what went wrong) after each delay
    until it answers or the delays run out; one that never answers is named by its last
    error (`device_state`), and a wedge gets `wedged_fix` instead of `fix`."""
    started = clock()
    error = None
    for number, delay in enumerate(delays, 1):
        if delay:
            sleep(delay)
        error = attempt()
        if error is None:
            waited = round(clock() - started, 1)
            status = "recovered" if number == 1 else f"recovered after {waited:g} s"
            return Recovery(status, number, waited, what)
    state, wedged = device_state(error)
    return Recovery(NOT_RECOVERED, len(delays), round(clock() - started, 1), what,
                    error, wedged_fix(state) if wedged else fix, state)
