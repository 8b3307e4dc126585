"""A drop-in `pyxrt` backed by the simulated stack.

Host code written for Xilinx/XRT's Python binding runs against this module
unchanged (`import harness.sim.pyxrt as pyxrt`, or `runlist-harness sim exec
SCRIPT`). It answers as the XRT release the profile names (`xrt:2.20` ...
`xrt:master`, default 2.26, the #712 machine's): names a release's binding lacks are missing here
too. The objects live in `harness.sim.binding`, XRT's run and runlist rules in
`harness.sim.runs`, the driver and firmware in `harness.sim.stack`; with
`Runtime.capture_frames` set it writes XRT's capture (`harness.sim.capture_writer`).
"""

from typing import Any

from harness.probe.xrt_config import capturing
from harness.sim import binding
from harness.sim.binding import (
    XCL_BO_FLAGS_NONE,
    alert,
    bo,
    critical,
    debug,
    device,
    elf,
    emergency,
    enumerate_devices,
    error,
    ert_cmd_state,
    hw_context,
    info,
    log_message,
    module,
    notice,
    program,
    uuid,
    warning,
    xclbin,
    xclbinip_vector,
    xclbinkernel_vector,
    xclbinmem_vector,
    xclBOSyncDirection,
    xrt_info_device,
    xrt_msg_level,
)
from harness.sim.runs import ext, kernel, run, runlist

if capturing():        # XRT's capture, as XRT turns it on (harness.sim.capture_writer)
    from harness.sim.capture_hooks import install

    install()

_GATED = {"graph": binding.graph, "aie": binding.aie}


def __getattr__(name: str) -> Any:
    feature = binding.GATED_MODULE_NAMES.get(name)
    if feature is not None and binding.release().has(feature):
        return _GATED[name]
    raise AttributeError(f"module 'pyxrt' has no attribute '{name}'"
                         + (f" (not in XRT {binding.release().name}'s binding)"
                            if feature else ""))


def __dir__() -> list[str]:
    return sorted(__all__ + [n for n, f in binding.GATED_MODULE_NAMES.items()
                             if binding.release().has(f)])


__all__ = ["XCL_BO_FLAGS_NONE", "alert", "bo", "critical", "debug", "device", "elf",
           "emergency", "enumerate_devices", "ert_cmd_state", "error", "ext", "hw_context",
           "info", "kernel", "log_message", "module", "notice", "program", "run", "runlist",
           "uuid", "warning", "xclBOSyncDirection", "xclbin", "xclbinip_vector",
           "xclbinkernel_vector", "xclbinmem_vector", "xrt_info_device", "xrt_msg_level"]
