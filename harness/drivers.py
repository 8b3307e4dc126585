"""The amdxdna driver flavours and their timeout rules, in one table (STACK.md 4).

The probe names the loaded flavour, the simulator plays its rule, and trial
deadlines allow for its worst case: all three read this table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

UNREADABLE = "unreadable"


@dataclass(frozen=True)
class Flavour:
    name: str
    rule: str                   # what it does about a hang, in words
    parameter: str | None       # the module parameter that sets the timeout, if any
    default: float              # that parameter's default (its unit: see `seconds`)
    unit_s: float               # seconds per unit of the parameter
    silent_checks: int          # how many timeout periods pass before a hang is declared

    def seconds(self, setting: float | None = None) -> float:
        """The longest the driver takes to notice a hang, for this parameter setting."""
        return (setting if setting is not None else self.default) * self.unit_s \
            * self.silent_checks


FLAVOURS = {f.name: f for f in (
    Flavour("mainline", "drm_sched 60 s job timeout, not tunable; a hung job and the rest of "
                        "its context end ABORT, never TIMEOUT", None, 60.0, 1.0, 1),
    Flavour("staging", "a job with no progress for tdr_timeout_ms (default 2000 ms) times out: "
                       "the faulting job ends TIMEOUT with health data, the rest of the context "
                       "ABORT", "tdr_timeout_ms", 2000.0, 0.001, 1),
    Flavour("oot", "device-wide watchdog, timeout_in_sec (default 2) and two silent checks "
                   "(2-4 s): the first pending job ends TIMEOUT, the rest ABORT",
            "timeout_in_sec", 2.0, 1.0, 2),
)}
SLOWEST = FLAVOURS["mainline"]


def timeout_seconds(facts: dict[str, Any]) -> float | None:
    """How long the probed driver takes, at most, to notice a hang (None: flavour unknown)."""
    flavour = FLAVOURS.get(facts.get("flavour") or "")
    if flavour is None:
        return None
    setting = facts.get("timeout_setting")
    try:
        value = float(setting) if setting not in (None, UNREADABLE) else None
    except ValueError:
        value = None
    return flavour.seconds(value)
