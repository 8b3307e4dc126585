"""Clocks for the simulated stack: virtual (free) or real time (waits really block).

Device time is the model's own. On the virtual clock it moves only when the model jumps
to its next event, which happens only while the host waits on the device (a wait, a
submit blocked on a full context): what the host does between its calls costs no
device time. A real-time clock keeps that rule (`host_paced`): it runs while the host
waits and stands still between the host's calls, so a hypothesis that counts what is
queued on the device (`inflight-cap:N`) counts the same whether the host is a fast
program, a slow one, or XRT talking to the emulator over a socket.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

# Sleep in slices so Ctrl-C and a parent's kill land promptly during a long real wait.
_SLICE_S = 0.05
_NOTHING: AbstractContextManager[None] = nullcontext()
_RESOLUTION_S = 1e-9


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

    def running(self) -> AbstractContextManager[None]:
        """While the host waits on the device (nothing to do: this clock moves by jumps)."""
        return _NOTHING


class RealClock:
    """Simulated time that follows the wall clock: reaching a time means sleeping until it.
    At a `rate` above 1 it runs that many times faster (the emulator's --clock-rate).

    `host_paced`: the clock runs only while the host waits on the device (`running`, or
    `run_while` for a device that serves waits of its own) and stands still, at the
    time it reached, in between."""

    realtime = True

    def __init__(self, rate: float = 1.0, *, host_paced: bool = False) -> None:
        self._origin = time.monotonic()
        self.rate = rate
        self._held_us: float | None = 0.0 if host_paced else None
        self._host_paced = host_paced
        self._waiting = 0

    @property
    def held(self) -> bool:
        """Whether device time stands still now (a host-paced clock nobody waits on)."""
        return self._held_us is not None

    def now(self) -> float:
        if self._held_us is not None:
            return self._held_us
        return (time.monotonic() - self._origin) * 1e6 * self.rate

    def advance_to(self, t_us: float) -> None:
        while True:
            left = (t_us - self.now()) / 1e6 / self.rate
            if left <= _RESOLUTION_S:       # below what a sleep can add to the clock
                return
            if self._held_us is not None:
                raise RuntimeError("the device's clock stands still between the host's "
                                   "calls; only a wait runs it")
            time.sleep(min(left, _SLICE_S))

    @contextmanager
    def running(self) -> Iterator[None]:
        """Device time runs for the length of a host's wait (nested waits count once)."""
        self.run_while(True)
        try:
            yield
        finally:
            self.run_while(False)

    def run_while(self, waiting: bool) -> None:
        """A wait began (True) or ended (False)."""
        if not self._host_paced:
            return
        self._waiting += 1 if waiting else -1
        if self._waiting > 0 and self._held_us is not None:
            # go on from the time reached: the wall time since then was the host's own
            self._origin = time.monotonic() - self._held_us / 1e6 / self.rate
            self._held_us = None
        elif self._waiting <= 0 and self._held_us is None:
            self._waiting = 0
            self._held_us = self.now()

    def block_forever(self) -> None:
        while True:
            time.sleep(_SLICE_S)
