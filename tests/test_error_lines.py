"""The error lines in a program's output (harness.logs.error_lines.find_error_lines), over
the texts the sources print: XRT's runlist and command failures per release
(Xilinx/XRT xrt_kernel.cpp at 2.20.197 and 202610.2.21.21: "runlist failed execution";
2.23.244 and master: with the state in parentheses; health lines after it), hw_queue.cpp's
unexpected command state (every tag), the XDNA shim's errors (amd/xdna-driver
src/shim/shim_debug.h: message, " (err=N)", then XRT's system_error ": strerror"),
libstdc++'s terminate and what(), a Python traceback, FastFlowLM's [ERROR] line (red, on
stderr: debug_utils.hpp header_print_r) and its JSON error body (rest_handler.cpp)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.logs.error_lines import (
    COMMAND_FAILED,
    CPP_TERMINATE,
    FLM_ERROR,
    FLM_JSON,
    IOCTL_FAILED,
    LIBRARY_FAILED,
    NO_DEVICE,
    PYTHON_EXCEPTION,
    RUNLIST_FAILED,
    SHIM_ERROR,
    UNEXPECTED_STATE,
    XRT_TEXT,
    find_error_lines,
)
from harness.model.ert import parse_xrt_error

RED, RESET = "\x1b[31m", "\x1b[0m"


@pytest.mark.parametrize("message, state", [
    ("runlist failed execution", None),                         # 2.20.197, 2.21.21
    ("runlist failed execution (ERT_CMD_STATE_TIMEOUT)", "TIMEOUT"),   # 2.23.244, master
    ("runlist failed execution (ERT_CMD_STATE_ERROR)", "ERROR"),
    ("runlist failed execution (ERT_CMD_STATE_NEW)", "NEW"),
])
def test_a_runlist_failure_of_each_release_is_found_with_its_state(message, state):
    (error,) = find_error_lines([message])
    assert (error.carrier, error.xrt, error.state, error.line) == (XRT_TEXT, RUNLIST_FAILED,
                                                                   state, 1)


def test_a_cpp_terminate_carries_what_and_xrt_s_health_lines():
    """libstdc++ prints the type, then what() two lines at most later; XRT's aie_error
    message is followed by its health lines (name = value), which parse_xrt_error reads."""
    text = ["loading model", "terminate called after throwing an instance of "
            "'xrt::runlist::aie_error'", "  what():  runlist failed execution "
            "(ERT_CMD_STATE_TIMEOUT)", "txn_op_idx  : 0x1f", "ctx_pc      : 0x3c0",
            "Aborted (core dumped)"]
    (error,) = find_error_lines(text)
    assert (error.line, error.end, error.carrier) == (2, 5, CPP_TERMINATE)
    assert error.exception == "xrt::runlist::aie_error" and error.state == "TIMEOUT"
    assert parse_xrt_error(error.message).health == {"txn_op_idx": 0x1F, "ctx_pc": 0x3C0}


def test_a_python_traceback_ends_in_pyxrt_s_runtime_error():
    text = ["Traceback (most recent call last):", '  File "decode.py", line 40, in <module>',
            "    runlist.wait()", "RuntimeError: qds_device::wait() unexpected command state"]
    (error,) = find_error_lines(text)
    assert (error.line, error.end, error.carrier, error.exception, error.xrt) == \
        (1, 4, PYTHON_EXCEPTION, "RuntimeError", UNEXPECTED_STATE)


def test_a_traceback_of_any_exception_is_one_error_even_without_xrt_text():
    text = ["Traceback (most recent call last):", '  File "t.py", line 1, in <module>',
            "TypeError: wait(): incompatible function arguments"]
    (error,) = find_error_lines(text)
    assert error.exception == "TypeError" and error.xrt is None


def test_fastflowlm_s_red_error_line_and_the_shim_s_ioctl_inside_it():
    line = (f"{RED}[ERROR]  Failed to load model: DRM_IOCTL_AMDXDNA_CREATE_HWCTX IOCTL "
            f"failed (err=-22): Invalid argument{RESET}")
    (error,) = find_error_lines(["[FLM]  Loading model: /m/Gemma", line])
    assert (error.line, error.carrier, error.xrt) == (2, FLM_ERROR, IOCTL_FAILED)
    assert (error.ioctl, error.errno) == ("DRM_IOCTL_AMDXDNA_CREATE_HWCTX", -22)
    assert "\x1b" not in error.message


@pytest.mark.parametrize("line", [
    '{"error":"runlist failed execution (ERT_CMD_STATE_TIMEOUT)"}',
    'data: {"error": "runlist failed execution (ERT_CMD_STATE_TIMEOUT)"}',
    json.dumps({"error": {"message": "runlist failed execution (ERT_CMD_STATE_TIMEOUT)",
                          "type": "server_error"}}),
])
def test_a_json_error_body_plain_streamed_or_openai_style(line):
    (error,) = find_error_lines([line])
    assert (error.carrier, error.state, error.xrt) == (FLM_JSON, "TIMEOUT", RUNLIST_FAILED)


@pytest.mark.parametrize("line, said, errno", [
    ("Command failed to complete successfully (ERT_CMD_STATE_ABORT)", COMMAND_FAILED, None),
    (" No such device with index '0'", NO_DEVICE, None),
    ("Failed to open library '/opt/xilinx/xrt/lib/libxrt_driver_xdna.so.2'", LIBRARY_FAILED,
     None),
    ("mmap_alloc(len=268435456) failed (err=28): No space left on device", SHIM_ERROR, 28),
    ("unsupported buffer type: none flag (err=95): Operation not supported", SHIM_ERROR, 95),
    ("DRM_IOCTL_AMDXDNA_CREATE_BO IOCTL failed (err=-12): Cannot allocate memory",
     IOCTL_FAILED, -12),
])
def test_xrt_s_and_the_shim_s_own_texts(line, said, errno):
    (error,) = find_error_lines([line])
    assert (error.xrt, error.errno) == (said, errno)


def test_lines_that_only_mention_errors_are_not_errors():
    assert find_error_lines(["[FLM]  Loading model: x", "error handling is fine here",
                             "ValueError: not from XRT", "{\"ok\": true}", "what is this"]) == []


@settings(max_examples=150)
@given(before=st.lists(st.text(max_size=60), max_size=8),
       after=st.lists(st.text(max_size=60), max_size=8),
       state=st.sampled_from(["TIMEOUT", "ERROR", "ABORT", "NEW"]))
def test_an_error_among_any_other_lines_is_found_once_where_it_is(before, after, state):
    noise = [t.replace("\n", " ").replace("\r", " ") for t in before + after]
    quiet = [t for t in noise if not find_error_lines([t])]
    lines = quiet[:len(before)] + [f"{RED}[ERROR]  runlist failed execution "
                                   f"(ERT_CMD_STATE_{state}){RESET}"] + quiet[len(before):]
    at = len(quiet[:len(before)]) + 1
    found = [e for e in find_error_lines(lines) if e.line == at]
    assert len(found) == 1 and found[0].state == state and found[0].carrier == FLM_ERROR


@settings(max_examples=150)
@given(st.lists(st.text(max_size=120), max_size=30))
def test_any_output_is_read_without_error_and_lines_stay_in_range(lines):
    for error in find_error_lines(lines):
        assert 1 <= error.line <= error.end <= len(lines)
