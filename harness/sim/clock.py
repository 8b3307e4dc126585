"""Clocks for the simulated stack: virtual (free) or real time (waits really block)."""

from __future__ import annotations

import time

# Sleep in slices so Ctrl-C and a parent's kill land promptly during a long real wait.
_SLICE_S = 0.05


class VirtualClock:
    """Simulated time that moves only when the model jumps to its next event."""

    realtime = False

    def __init__(self) -> None:
        self._now_us = 0.0

    def now(self) -> float:
        return self._now_us

    def advance_to(self, t_us: float) -> None:
        if t_us > self._now_us:
            self._now_us = t_us


class RealClock:
    """Simulated time that follows the wall clock: reaching a time means sleeping until it.
    At a `rate` above 1 it runs that many times faster (the emulator's --clock-rate)."""

    realtime = True

    def __init__(self, rate: float = 1.0) -> None:
        self._origin = time.monotonic()
        self.rate = rate

    def now(self) -> float:
        return (time.monotonic() - self._origin) * 1e6 * self.rate

    def advance_to(self, t_us: float) -> None:
        while True:
            left = (t_us - self.now()) / 1e6 / self.rate
            if left <= 0:
                return
            time.sleep(min(left, _SLICE_S))

    def block_forever(self) -> None:
        while True:
            time.sleep(_SLICE_S)
