"""A host program that polls `run.state()` instead of waiting progresses on every
backend, as on hardware, and host pacing still counts a runlist's chains as submitted
together.

The fact: on amdxdna a state read is a plain load of the mapped command buffer, no
driver call. XRT 2.26 (49612fa3) src/runtime_src/core/common/api/xrt_kernel.cpp
`kernel_command::get_state` calls `hw_queue::poll`, which for a device with hardware
queues calls the shim's `poll_command`; xdna-driver 856409ca src/shim/hwq.cpp
`hwq::poll_command` reads `cmdpkt->state` from the buffer's mapping (the KMQ queue does
not override it)."""

from __future__ import annotations

import sys
import time

import pytest
from test_sim_host_script import SCRIPTS, exec_script
from test_xrt_conformance import emulate, needs_xrt, xclbin_for

from harness.emulator.emulated_driver import HOST_IDLE_S

POLLER = SCRIPTS / "polling_host.py"


@pytest.mark.parametrize("profile", ["staging", "staging,realtime"])
@pytest.mark.parametrize("pause", [(), ("0.002",)])
def test_a_polling_host_completes_on_the_simulated_stack(tmp_path, profile, pause):
    done = exec_script(tmp_path, "--profile", profile, script=POLLER, more=pause)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("ERT_CMD_STATE_COMPLETED after") == 3
    assert "runlist of 42 completed" in done.stdout


def test_polling_leaves_the_runlist_burst_simultaneous_on_the_simulated_stack(tmp_path):
    done = exec_script(tmp_path, "--profile", "staging,inflight-cap:40", script=POLLER)
    assert done.returncode == 1
    assert "ERT_CMD_STATE_COMPLETED after" in done.stdout
    assert "runlist of 42 failed: runlist failed execution (ERT_CMD_STATE_TIMEOUT)" \
        in done.stdout


@needs_xrt
@pytest.mark.parametrize("profile, ends", [
    ("staging", "runlist of 42 completed"),
    ("staging,inflight-cap:40", "runlist of 42 failed: runlist failed execution "
                                "(ERT_CMD_STATE_TIMEOUT)")])
def test_a_polling_host_progresses_under_emulation(tmp_path, profile, ends):
    """Real XRT's poll makes no driver call: the emulated device's clock runs once the host
    has made none for HOST_IDLE_S, and a runlist's chain submits (gaps of about a
    millisecond) still count as one burst."""
    done = emulate("--profile", profile, "--clock-rate", "10", "--", sys.executable,
                   str(POLLER), str(xclbin_for(tmp_path, {"xclbin": "Host/layer"})), "42")
    assert done.stdout.count("ERT_CMD_STATE_COMPLETED after") == 3, \
        done.stdout + done.stderr
    assert ends in done.stdout


def test_the_emulated_clock_runs_once_the_host_is_idle(tmp_path):
    """Held between calls, running after HOST_IDLE_S without one, held again at a call."""
    from harness.emulator.device import EmulatedDevice
    from harness.emulator.emulated_driver import EmulatedDriver
    from harness.sim.profiles import parse_profile

    driver = EmulatedDriver(EmulatedDevice(parse_profile("staging")), tmp_path)
    driver.waiting(False)
    assert driver.clock.held and 0 < driver.seconds_to_idle() <= HOST_IDLE_S
    time.sleep(HOST_IDLE_S)
    driver.waiting(False)
    assert not driver.clock.held and driver.seconds_to_idle() == 0.0
    driver.ioctl(driver.open(1), 0, b"", b"")         # any call ends the idle time
    driver.waiting(False)
    assert driver.clock.held

