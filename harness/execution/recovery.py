"""After a trial failed on hardware: does the device answer again, and if not, what to do.

The driver restarts the hung context itself (staging/mainline ``aie2_sched_job_timedout``,
legacy ``aie2_tdr_work``), so a healthy device runs the next command. When it does not,
what the sources offer is reloading the module (its remove and probe re-initialise the
firmware) or removing the PCI function and rescanning the bus (which does the same from
the PCI side); the AIE2 driver has no PCI reset_prepare/reset_done handlers (only
``aie4_pci.c`` does), so writing the function's ``reset`` file is not offered.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

DELAYS_S = (0.0, 2.0, 4.0, 8.0, 16.0)      # one attempt now, then backing off: 30 s in all


@dataclass
class Recovery:
    status: str                  # "recovered", "recovered after N s", "not recovered"
    attempts: int
    waited_s: float
    what: str                    # the command the check ran
    last_error: str | None = None
    fix: str | None = None

    @property
    def recovered(self) -> bool:
        return self.status != "not recovered"

    def to_json(self) -> dict[str, object]:
        return {k: v for k, v in vars(self).items() if v is not None}


def recovery_fix(module: str | None, bdf: str | None) -> str:
    module = module or "amdxdna"
    pci = (f"or remove and rescan the PCI function: `echo 1 | sudo tee "
           f"/sys/bus/pci/devices/{bdf}/remove && echo 1 | sudo tee /sys/bus/pci/rescan`"
           if bdf else "or remove and rescan its PCI function (/sys/bus/pci/devices/BDF/"
           "remove, then /sys/bus/pci/rescan)")
    return (f"close every program using the NPU, reload the driver (`sudo modprobe -r "
            f"{module} && sudo modprobe {module}`), {pci}; if it still does not answer, "
            "reboot")


def check_recovery(attempt: Callable[[], str | None], what: str, fix: str, *,
                   sleep: Callable[[float], None] = time.sleep,
                   clock: Callable[[], float] = time.monotonic,
                   delays: tuple[float, ...] = DELAYS_S) -> Recovery:
    """Run `attempt` (None: the device answered; else what went wrong) after each delay
    until it answers or the delays run out."""
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
    return Recovery("not recovered", len(delays), round(clock() - started, 1), what,
                    error, fix)
