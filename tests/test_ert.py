"""Command states: STACK.md 2 (ert_cmd_state table) and 3 (pyxrt enum lacks RUNNING)."""

from __future__ import annotations

import enum

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.model.ert import (
    CmdState,
    locate_failure,
    parse_xrt_error,
    state_from_name,
    state_from_pyxrt,
)

TABLE = {"NEW": 1, "QUEUED": 2, "RUNNING": 3, "COMPLETED": 4, "ERROR": 5, "ABORT": 6,
         "SUBMITTED": 7, "TIMEOUT": 8, "NORESPONSE": 9, "SKERROR": 10, "SKCRASHED": 11}


def test_table_matches_ert_h():
    assert {s.name: s.value for s in CmdState} == TABLE


def test_unknown_value_is_kept_not_raised():
    state = CmdState(42)
    assert state.name == "unknown (42)" and state.name not in CmdState.__members__
    assert state.value == 42
    assert state_from_name("unknown (42)") == 42


class FakePyxrtState(enum.Enum):
    """Like pybind11's enum: members have .value/.name, are not ints, no RUNNING."""

    ERT_CMD_STATE_NEW = 1
    ERT_CMD_STATE_COMPLETED = 4
    ERT_CMD_STATE_TIMEOUT = 8


def test_from_pyxrt_enum_uses_value():
    assert state_from_pyxrt(FakePyxrtState.ERT_CMD_STATE_TIMEOUT) is CmdState.TIMEOUT
    assert state_from_pyxrt(3) is CmdState.RUNNING   # the binding cannot name it, ints can
    assert state_from_pyxrt("ERT_CMD_STATE_ABORT") is CmdState.ABORT


def test_from_pyxrt_rejects_garbage_with_valueerror():
    with pytest.raises(ValueError):
        state_from_pyxrt(object())


def test_parse_runlist_message_with_health_lines():
    msg = ("runlist failed execution (ERT_CMD_STATE_TIMEOUT)\n"
           "Kernel Instance: MLIR_AIE\n"
           "txn_op_idx = 0xFFFFFFFF\n"
           "ctx_pc           = 0x28B060AD\n"
           "fatal_error_type = 0x00000000\n")
    failure = parse_xrt_error(msg)
    assert failure.state is CmdState.TIMEOUT
    assert failure.headline == "runlist failed execution (ERT_CMD_STATE_TIMEOUT)"
    assert failure.kernel_instance == "MLIR_AIE"
    assert failure.health == {"txn_op_idx": 0xFFFFFFFF, "ctx_pc": 0x28B060AD,
                              "fatal_error_type": 0}


def test_parse_messages_without_or_with_unknown_state():
    assert parse_xrt_error("something else broke").state is None
    odd = parse_xrt_error("runlist failed execution (ERT_CMD_STATE_FROZEN)")
    assert odd.state is None and odd.state_text == "unknown (ERT_CMD_STATE_FROZEN)"


@given(st.text())
def test_parse_never_raises(text):
    parse_xrt_error(text)


@given(st.integers(min_value=-2**31, max_value=2**31))
def test_any_int_converts(value):
    assert CmdState(value).value == value


# -- locating XRT's failing run from member states (STACK.md 2, runlist_impl::wait) ------

@st.composite
def failed_runlists(draw):
    """A failed runlist as XRT leaves it: the chain that failed, its state and error_index
    as the driver writes them (only ERROR and TIMEOUT carry an index), the member states."""
    size = draw(st.sampled_from([24, 24, 24, 2, 5]))
    runs = draw(st.integers(1, 120))
    chains = (runs + size - 1) // size
    chain = draw(st.integers(0, chains - 1))
    in_chain = min(size, runs - chain * size)
    state = draw(st.sampled_from([CmdState.TIMEOUT, CmdState.ERROR, CmdState.ABORT,
                                  CmdState.NEW]))
    index = draw(st.integers(0, in_chain - 1)) if state in (CmdState.TIMEOUT,
                                                            CmdState.ERROR) else 0
    failing = chain * size + index
    states = [CmdState.NEW] * failing + [state] + [CmdState.ABORT] * (runs - failing - 1)
    return size, states, failing, state


@given(failed_runlists(), st.booleans())
def test_locate_failure_finds_xrts_failing_run(case, state_in_message):
    size, states, failing, state = case
    located = locate_failure(states, state if state_in_message else None, size)
    if size > 1 or state_in_message or state != CmdState.NEW:
        assert (located.index, located.state) == (failing, state)


def test_locate_failure_reads_the_new_runs_before_the_failing_one():
    states = [CmdState.NEW] * 24 + [CmdState.TIMEOUT] + [CmdState.ABORT] * 17
    located = locate_failure(states, None, 24)          # XRT 2.20: no state in the message
    assert (located.index, located.state) == (24, CmdState.TIMEOUT)
    assert located.how == "the first member run neither NEW nor COMPLETED"
    located = locate_failure([CmdState.NEW] * 42, None, 24)
    assert located.index == 41 and located.state == CmdState.NEW
