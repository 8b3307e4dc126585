"""What trials cost: device time, the time the device was held as the machine the run
describes would hold it, beside the wall time this machine took to run them.

On the simulated stack the device's clock is the model's (a trial that hangs at the
in-tree driver's 60 s timer costs 60 s of it, and microseconds of wall time); under
emulation the model's clock runs `clock_rate` times the wall clock; on hardware the two
are one. A trial the harness's deadline ended held the device until its worker was killed;
a trial whose set-up the stack refused held it as long as the refusal took.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.model.results import TrialResult, TrialStatus
from harness.report.model import is_emulated
from harness.report.timing import DEVICE


@dataclass(frozen=True)
class Clock:
    """How a run's trials are costed: on the device's clock (`DEVICE`: the simulated
    stack's) or on the wall clock, scaled by the emulator's clock rate."""

    kind: str
    rate: float = 1.0

    @classmethod
    def of(cls, kind: str, backend: dict[str, Any]) -> Clock:
        emulated = backend.get("emulated") if is_emulated(backend) else None
        rate = emulated.get("clock_rate") if isinstance(emulated, dict) else None
        return cls(kind, float(rate) if isinstance(rate, (int, float)) and rate > 0 else 1.0)

    def device_s(self, trial: TrialResult) -> float:
        """What one trial cost the device, in seconds of the clock the run describes."""
        wall = (trial.wall_ms or 0.0) / 1000.0
        if trial.status in (TrialStatus.DEADLINE, TrialStatus.CRASHED):
            # no answer: the device was held until the worker was killed or died
            held = trial.deadline_s if trial.deadline_s is not None else wall
            return max(held, wall) * (self.rate if self.kind != DEVICE else 1.0)
        if self.kind == DEVICE:
            return sum(r.device_ms or 0.0 for r in trial.runlists) / 1000.0
        return wall * self.rate


@dataclass(frozen=True)
class Spent:
    """Device time and wall time, summed over trials."""

    device_s: float
    wall_s: float

    def text(self, clock: Clock) -> str:
        on = ("the simulated clock: what these trials take on the stack the profile "
              "describes" if clock.kind == DEVICE else
              f"the emulated clock, {clock.rate:g}x the wall clock" if clock.rate != 1.0
              else "wall time on this machine")
        return (f"{self.device_s:.1f} s of device time ({on}), {self.wall_s:.1f} s of wall "
                "time")


def spent(trials: list[TrialResult], clock: Clock) -> Spent:
    finished = [t for t in trials if t.status.finished]
    return Spent(sum(clock.device_s(t) for t in finished),
                 sum((t.wall_ms or 0.0) for t in finished) / 1000.0)
