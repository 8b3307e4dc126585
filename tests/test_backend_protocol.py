"""The backend is one small protocol with an implementation per stack: each answers for its
own stack, and nothing in the module branches on which one it is."""

from __future__ import annotations

import inspect
import re
import types

import pytest

from harness.execution import backend as backends
from harness.execution.backend import Backend, HardwareBackend, SimulatedBackend, choose_backend
from harness.model.ert import NO_STATE_IN_MESSAGE


def test_the_protocol_is_abstract_and_both_stacks_implement_it():
    with pytest.raises(TypeError):
        Backend(types.ModuleType("pyxrt"))        # type: ignore[abstract]
    for implementation in (HardwareBackend, SimulatedBackend):
        assert not inspect.isabstract(implementation)


def test_the_simulated_stack_answers_from_its_profile():
    sim = choose_backend("sim", "mainline,kernel:6.16,firmware:1.0.0.63,xrt:2.20")
    assert isinstance(sim, SimulatedBackend) and sim.kind == "sim"
    assert not sim.hardware and sim.simulated
    assert sim.driver_timeout_s() == 60.0
    assert sim.xrt_release()["message_form"] == NO_STATE_IN_MESSAGE
    report = sim.as_report()
    assert report["kind"] == "sim" and report["driver"]["kernel"] == "6.16"
    sim.adopt_environment({"driver": {"flavour": "oot"}})      # the profile decides
    assert sim.driver_timeout_s() == 60.0


def test_the_hardware_path_answers_from_the_probe():
    hardware = HardwareBackend(types.ModuleType("pyxrt"))
    assert hardware.kind == "xrt" and hardware.hardware and not hardware.simulated
    assert hardware.driver_timeout_s() == 60.0                   # unknown: the slowest rule
    hardware.adopt_environment({"driver": {"flavour": "staging", "timeout_setting": "5000"},
                                "xrt": {"pyxrt": {"xrt_version": "2.20.0"}},
                                "npu_firmware": {"app_health": False}})
    assert hardware.driver_timeout_s() == 5.0
    assert hardware.firmware_reports_health() is False
    assert hardware.xrt_release()["message_form"] == NO_STATE_IN_MESSAGE
    hardware.prepare_trial(7)
    assert hardware.device_clock() is None and hardware.simulated_kernel_log(True) is None
    assert "profile" not in hardware.as_report()


def test_no_method_asks_which_stack_it_is():
    assert re.search(r"self\.hardware\b", inspect.getsource(backends)) is None
