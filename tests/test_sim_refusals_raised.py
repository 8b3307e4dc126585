"""What a program on the simulated binding sees when the driver refuses it: exactly what the
real binding raises, a plain RuntimeError with XRT's text, and none of the model's own
facts (its errno, its kernel-log lines) on the exception.

Fact pinned: XRT's shim throws xrt_core::system_error, a std::system_error
(Xilinx/XRT src/runtime_src/core/common/error.h), and pyxrt registers no exception
translator of its own (src/python/pybind11/src/pyxrt.cpp, 2.20.197 as in
../shared/reference/xrt and 963c58ee), so pybind11's default translator raises
RuntimeError(what()) for it: the buffer the heap refuses, the context the firmware refuses,
the submit the legacy tree's dead context refuses -EIO.
"""

from __future__ import annotations

import pytest
from simkit import Rig, outcome

import harness.sim.pyxrt as pyxrt
from harness.model.heap import MIB
from harness.model.wedge import EXEC_EIO
from harness.sim import control


def plain(error: BaseException) -> None:
    """As pybind11 raises it: the builtin type itself, no attributes, no chained cause."""
    assert type(error) is RuntimeError
    assert vars(error) == {}
    assert error.__cause__ is None and error.__context__ is None


def test_a_buffer_past_the_heap_is_a_plain_runtime_error():
    control.configure("mainline")
    device = pyxrt.device(0)
    with pytest.raises(RuntimeError) as refused:
        pyxrt.bo(device, 600 * MIB, pyxrt.bo.cacheable, 0)
    plain(refused.value)
    assert str(refused.value) == ("DRM_IOCTL_AMDXDNA_CREATE_BO IOCTL failed (err=-22): "
                                  "Invalid argument")


def test_a_context_the_wedged_firmware_refuses_is_a_plain_runtime_error(tmp_path):
    rig = Rig(tmp_path, "mainline,wedge:1,hang-at:30")
    assert "TIMEOUT" in outcome(rig.runlist(42)[0])
    with pytest.raises(RuntimeError) as refused:
        rig.context("another")
    plain(refused.value)
    assert "CREATE_HWCTX IOCTL failed (err=-22)" in str(refused.value)


def test_a_submit_the_dead_legacy_context_refuses_is_a_plain_runtime_error(tmp_path):
    rig = Rig(tmp_path, "oot,wedge:1,hang-at:30")
    assert "TIMEOUT" in outcome(rig.runlist(42)[0])
    rl = rig.runlist(10)[0]
    with pytest.raises(RuntimeError) as refused:
        rl.execute()
    plain(refused.value)
    assert str(refused.value) == EXEC_EIO
    single = rig.run()
    with pytest.raises(RuntimeError) as again:
        single.start()
    plain(again.value)


def test_a_program_s_traceback_names_the_builtin_type(tmp_path):
    """`sim exec` prints the program's own traceback as Python does: its last line is the
    type the real binding raises."""
    from click.testing import CliRunner

    from harness.app.cli import main
    script = tmp_path / "big.py"
    script.write_text("import pyxrt\nd = pyxrt.device(0)\n"
                      "pyxrt.bo(d, 600 << 20, pyxrt.bo.cacheable, 0)\n")
    done = CliRunner().invoke(main, ["sim", "exec", str(script)])
    assert done.exit_code == 1
    last = done.output.strip().splitlines()[-1]
    assert last == ("RuntimeError: DRM_IOCTL_AMDXDNA_CREATE_BO IOCTL failed (err=-22): "
                    "Invalid argument")
