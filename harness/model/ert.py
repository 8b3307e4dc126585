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

from harness.model.firmware import NOT_MODELLED

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


def state_from_name(name: str) -> CmdState:
    """``TIMEOUT``, ``ERT_CMD_STATE_TIMEOUT`` or ``unknown (12)``; case-insensitive."""
    text = name.strip()
    unknown = re.fullmatch(r"unknown \((\d{1,10})\)", text)
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


STATE_IN_MESSAGE = "state in message"
NO_STATE_IN_MESSAGE = "no state in message"


def expected_message_form(version: str | None) -> str:
    """The runlist failure message an XRT release writes, from its version (BUILD_VERSION,
    e.g. 2.21.75): the state came with PR #9408, after tag 202610.2.21.21 and in 2.21.75."""
    numbers = tuple(int(n) for n in re.findall(r"\d{1,9}", version or "")[:3])
    if len(numbers) < 3:
        return "unknown (XRT version not known)"
    if numbers < (2, 21, 22):
        return NO_STATE_IN_MESSAGE
    if numbers >= (2, 21, 75):
        return STATE_IN_MESSAGE
    return "unknown (a 2.21 build between 2.21.21 and 2.21.75)"


# compiled on first use, by re's own cache: a start-up does not pay for it
_STATE_IN_TEXT = r"ERT_CMD_STATE_([A-Z_]+)"
# a value is a number (a number past 64 bits is no health field: the line stays in the
# message as text), or "not modelled" where the simulated firmware's value is unknown
_HEALTH_LINE = (r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*[=:]\s*(0[xX][0-9a-fA-F]{1,16}|"
                r"-?\d{1,20}|" + NOT_MODELLED + r")\s*$")
# XRT master (aie_error_message_v1) names what ran before the health lines
_IDENTITY_LINE = r"^\s*(Kernel Instance|ELF File|ELF UUID)\s*:\s*(\S.*?)\s*$"


@dataclass(frozen=True)
class XrtFailure:
    """What an XRT error message says: the state, the headline, health fields."""

    state: CmdState | None
    state_text: str
    headline: str
    kernel_instance: str | None = None
    health: dict[str, int | str] = field(default_factory=dict)   # int, or NOT_MODELLED
    identity: dict[str, str] = field(default_factory=dict)   # Kernel Instance, ELF File/UUID


def parse_xrt_error(message: str) -> XrtFailure:
    """Parse ``runlist failed execution (ERT_CMD_STATE_TIMEOUT)`` and its health lines.

    Health lines are ``name = 0x...`` (aligned with spaces or not), as the
    staging driver's app-health report prints them; the simulated stack writes ``name =
    not modelled`` for a value it cannot know, kept as that text. A message with no state
    gives ``state=None`` and ``state_text='no state in message'``.
    """
    lines = message.splitlines() or [""]
    headline = lines[0].strip()
    match = re.search(_STATE_IN_TEXT, message)
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
    identity: dict[str, str] = {}
    health: dict[str, int | str] = {}
    for line in lines[1:]:
        named = re.match(_IDENTITY_LINE, line)
        if named:
            identity[named.group(1)] = named.group(2)
            continue
        pair = re.match(_HEALTH_LINE, line)
        if pair:
            value = pair.group(2)
            health[pair.group(1)] = value if value == NOT_MODELLED else int(value, 0)
    return XrtFailure(state, state_text, headline, identity.get("Kernel Instance"), health,
                      identity)


@dataclass(frozen=True)
class LocatedFailure:
    """Which member run XRT blamed for a failed runlist, as far as pyxrt lets us see."""

    index: int | None
    state: CmdState | None
    how: str


# The states a chain ends in when nothing told which of its runs failed: a hang's TIMEOUT
# or ABORT, whose index is the firmware's read index, left at 0 on a timeout (xdna-driver
# test/shim_test/io_test.cpp; mainline writes error_index 0 outright, 89ff45359abb), and a
# chain the driver never ran (NEW). A firmware ERROR's index is the failing sub-command.
UNNAMED_STATES = ("TIMEOUT", "ABORT", "NEW")


def run_named(state: str | None, failing_run: int, submit_size: int) -> bool:
    """Whether the device said which run failed: False when XRT's failing run is only the
    first run of a chain that hung (index 0) or never ran."""
    return not (state in UNNAMED_STATES and (state == "NEW" or failing_run % submit_size == 0))


def locate_failure(states: list[CmdState], message_state: CmdState | None,
                   submit_size: int) -> LocatedFailure:
    """Find XRT's failing run from the member runs' states after `runlist.wait()` raised.

    XRT (`runlist_impl::wait`, every release) leaves runs before the failing one NEW,
    gives the failing run the chain's state and marks every later run ABORT; a chain
    the driver never ran stays NEW, and so does its failing run. The driver writes
    `error_index` only for firmware errors and timeouts, so a NEW or ABORT chain
    blames its first run. Hence, with F the first run neither NEW nor COMPLETED:
    F itself, unless F reads ABORT because the failing run before it reads NEW
    (the message says NEW, or names no state and F is the second run of a chain);
    with no such run, the last run (nothing after it to mark ABORT).
    """
    first = next((i for i, s in enumerate(states) if s not in (CmdState.NEW,
                                                                 CmdState.COMPLETED)), None)
    if first is None:
        if not states:
            return LocatedFailure(None, message_state, "not located: the runlist has no runs")
        if message_state not in (None, CmdState.NEW):
            return LocatedFailure(None, message_state,
                                  f"not located: no member run reads {message_state.name}, the "
                                  "state the message names")
        return LocatedFailure(len(states) - 1, CmdState.NEW,
                              "the last run: every member reads NEW, so XRT's failing run "
                              "had a NEW chain and no later run to mark ABORT")
    seen = states[first]
    if seen == CmdState.ABORT and first > 0:
        if message_state == CmdState.NEW:
            return LocatedFailure(first - 1, CmdState.NEW,
                                  "the run before the first ABORT: the message says NEW, and "
                                  "a chain left NEW gives its failing run NEW")
        if message_state is None and first % submit_size == 1:
            return LocatedFailure(first - 1, CmdState.NEW,
                                  "the run before the first ABORT: the message names no "
                                  "state, and an ABORT chain blames its first run, so the "
                                  f"first ABORT at run {first} (second of its chain) follows "
                                  "a failing run that read NEW")
    how = "the first member run neither NEW nor COMPLETED"
    if message_state is not None and message_state != seen:
        how += f" (it reads {seen.name}; the message says {message_state.name})"
    return LocatedFailure(first, message_state or seen, how)
