"""A drop-in `pyxrt` backed by the simulated stack.

Host code written for Xilinx/XRT's Python binding runs against this module
unchanged (`import harness.sim.pyxrt as pyxrt`, or `runlist-harness sim exec
SCRIPT`). The objects live in `harness.sim.binding`, XRT's run and runlist
rules in `harness.sim.runs`, the driver and firmware in `harness.sim.stack`.
"""

from harness.sim.binding import (
    BDF,
    XCL_BO_FLAGS_NONE,
    bo,
    device,
    elf,
    enumerate_devices,
    ert_cmd_state,
    hw_context,
    module,
    uuid,
    xclbin,
    xclBOSyncDirection,
    xrt_info_device,
)
from harness.sim.runs import ext, kernel, run, runlist

__all__ = ["BDF", "XCL_BO_FLAGS_NONE", "bo", "device", "elf", "enumerate_devices",
           "ert_cmd_state", "ext", "hw_context", "kernel", "module", "run", "runlist", "uuid",
           "xclBOSyncDirection", "xclbin", "xrt_info_device"]
