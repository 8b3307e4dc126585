"""The simulated NPU's life beyond one trial: how many times the driver's timer fired on it,
whether its firmware has stopped working as it should (a wedge, `wedge:N`; a firmware that
stopped answering, `firmware-dead:N`).

Every trial of the simulated backend gets a fresh `Stack` (no contexts, time zero), as a
machine's driver restarts a context after a hang; what a restart cannot clear lives here,
is handed from one trial's stack to the next (through a worker too, as JSON), and ends only
with a reboot (a new life). What each tree does with a wedged firmware, and where that was
read, is `harness.model.wedge`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

# what the firmware does: works; refuses every context (the wedge PR #1585 saw); takes
# contexts but completes nothing; answers no mailbox message at all
WORKS, REFUSES, HANGS, SILENT = "works", "refuses", "hangs", "silent"


@dataclass
class DeviceLife:
    """What the simulated NPU carries from trial to trial (see the module's note)."""

    timeouts: int = 0              # the driver's timer fired (a context or device reset)
    firmware: str = WORKS
    since: str = ""                # how it got there, in words, for reports
    power_cycles: int = 0          # staging's aie2_hw_reset power-cycled it back

    @property
    def wedged(self) -> bool:
        return self.firmware != WORKS

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> DeviceLife:
        return cls(**data) if data else cls()

    def state_text(self) -> str:
        """The device's state in words (what a report marks its later runs with)."""
        return {REFUSES: "wedged: the firmware refuses every context, the driver's own "
                         "restart included",
                HANGS: "wedged: the firmware takes contexts but completes no command",
                SILENT: "wedged: the firmware answers no mailbox message"}.get(
                    self.firmware, "working")
