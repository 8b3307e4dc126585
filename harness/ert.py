"""XRT command states (`ert_cmd_state`) and what XRT says when a runlist fails.

Values from Xilinx/XRT `src/runtime_src/core/include/xrt/detail/ert.h`
(STACK.md 2). pyxrt's enum omits RUNNING (STACK.md 3), so states coming from
the binding are converted by value, never by enum identity. A value this
table does not know is kept as ``unknown (N)`` rather than raising: a newer
XRT may add states, and a report must still record what it saw.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

XRT_PREFIX = "ERT_CMD_STATE_"


class CmdState(IntEnum):
    NEW = 1
    QUEUED = 2
    RUNNING = 3
    COMPLETED = 4
    ERROR = 5
    ABORT = 6
    SUBMITTED = 7
    TIMEOUT = 8
    NORESPONSE = 9
    SKERROR = 10
    SKCRASHED = 11

    @classmethod
    def _missing_(cls, value: object) -> CmdState | None:
        # A pseudo-member keeps the number and a readable name, so an
        # unknown state flows through reports instead of crashing them.
        if isinstance(value, int) and not isinstance(value, bool):
            member = int.__new__(cls, value)
            member._name_ = f"unknown ({value})"
            member._value_ = value
            return member
        return None

    @property
    def known(self) -> bool:
        return self._name_ in CmdState.__members__

    @property
    def xrt_name(self) -> str:
        """The name XRT prints, e.g. ``ERT_CMD_STATE_TIMEOUT``."""
        return XRT_PREFIX + self.name if self.known else self.name

    @property
    def done(self) -> bool:
        # XRT's own rule: states are not monotonic, `>= COMPLETED` means done.
        return self.value >= CmdState.COMPLETED


def state_from_int(value: int) -> CmdState:
    return CmdState(int(value))


def state_from_name(name: str) -> CmdState:
    """``TIMEOUT``, ``ERT_CMD_STATE_TIMEOUT`` or ``unknown (12)``; case-insensitive."""
    text = name.strip()
    unknown = re.fullmatch(r"unknown \((\d+)\)", text)
    if unknown:
        return CmdState(int(unknown.group(1)))
    short = text.upper()
    if short.startswith(XRT_PREFIX):
        short = short[len(XRT_PREFIX):]
    try:
        return CmdState[short]
    except KeyError:
        raise ValueError(
            f"unknown command state {name!r}; known: {', '.join(CmdState.__members__)}"
        ) from None


def state_from_pyxrt(value: Any) -> CmdState:
    """Convert what pyxrt returns (its enum, an int, or a name) to a CmdState.

    The binding's enum has no RUNNING member and its members do not compare
    equal to ints, so the conversion goes through ``.value`` or ``int()``.
    """
    if isinstance(value, CmdState):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return CmdState(value)
    raw = getattr(value, "value", None)
    if isinstance(raw, int):
        return CmdState(raw)
    if isinstance(value, str):
        return state_from_name(value)
    try:
        return CmdState(int(value))
    except (TypeError, ValueError):
        name = getattr(value, "name", None)
        if isinstance(name, str):
            return state_from_name(name)
        raise ValueError(f"cannot read a command state from {value!r}") from None


_STATE_IN_TEXT = re.compile(r"ERT_CMD_STATE_([A-Z_]+)")
_HEALTH_LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*[=:]\s*(0[xX][0-9a-fA-F]+|-?\d+)\s*$")
_KERNEL_LINE = re.compile(r"^\s*Kernel Instance\s*:\s*(\S.*?)\s*$")


@dataclass(frozen=True)
class XrtFailure:
    """What an XRT error message says: the state, the headline, health fields."""

    state: CmdState | None
    state_text: str
    headline: str
    kernel_instance: str | None = None
    health: dict[str, int] = field(default_factory=dict)

    @property
    def is_runlist(self) -> bool:
        return self.headline.startswith("runlist failed execution")


def parse_xrt_error(message: str) -> XrtFailure:
    """Parse ``runlist failed execution (ERT_CMD_STATE_TIMEOUT)`` and its health lines.

    Health lines are ``name = 0x...`` (aligned with spaces or not), as the
    staging driver's app-health report prints them. A message with no state
    gives ``state=None`` and ``state_text='no state in message'``.
    """
    lines = message.splitlines() or [""]
    headline = lines[0].strip()
    match = _STATE_IN_TEXT.search(message)
    if match is None:
        state: CmdState | None = None
        state_text = "no state in message"
    else:
        try:
            state = state_from_name(match.group(1))
            state_text = state.name
        except ValueError:
            state = None
            state_text = f"unknown ({XRT_PREFIX}{match.group(1)})"
    kernel_instance = None
    health: dict[str, int] = {}
    for line in lines[1:]:
        kernel = _KERNEL_LINE.match(line)
        if kernel:
            kernel_instance = kernel.group(1)
            continue
        pair = _HEALTH_LINE.match(line)
        if pair:
            health[pair.group(1)] = int(pair.group(2), 0)
    return XrtFailure(state, state_text, headline, kernel_instance, health)
