"""How a line of evidence becomes signs of the vocabulary (`vocabulary.SIGNS`), in one
place for reports and artefacts alike: a driver line's event (`harness.logs.driver_lines`)
and an error a program printed (`harness.logs.error_lines`).

The meaning of an errno follows the XDNA shim and the driver: a context create refused
(CREATE_HWCTX: -EINVAL from the firmware's MGMT_ERT_NOAVAIL or the resource solver,
-ENOENT past the legacy tree's virtual context limit, -EBUSY), a buffer the driver could
not allocate or map (CREATE_BO, SYNC_BO; -ENOMEM, -EFAULT), a node the process may not
open (-EACCES, -EPERM).
"""

from __future__ import annotations

import re
from typing import Any

from harness.logs import error_lines as el

Signs = list[tuple[str, dict[str, Any]]]

# driver_lines' events -> sign kinds (mailbox failures are read by their status below)
EVENT_SIGNS = {
    "tdr_timeout": "driver-timeout", "no_progress": "driver-timeout",
    "timeout_capture": "driver-timeout", "context_dump": "driver-timeout",
    "timing_out_job": "driver-timeout",
    "firmware_unhealthy": "firmware-recovery", "restart_rejected": "firmware-recovery",
    "aie_error": "aie-error", "iommu_page_fault": "iommu-page-fault",
    "firmware_protocol_refused": "firmware-refused", "firmware_minor_refused":
    "firmware-refused", "firmware_protocol_check_failed": "firmware-refused",
    "firmware_request_failed": "firmware-missing", "firmware_not_alive":
    "firmware-boot-failed", "firmware_boot_failed": "firmware-boot-failed",
    "sva_failed": "sva-failed", "smu_failed": "smu-failed",
    "suspend_resume_failed": "suspend-resume-failed",
    "map_host_buffer_failed": "host-map-failed", "host_memory_failed": "host-map-failed",
    "context_refused": "context-unavailable", "partition_refused": "wrong-columns",
    "hypervisor_refused": "hypervisor", "hardware_init_failed": "driver-probe-failed",
    "context_init_failed": "context-unavailable",
    "restart_failed": "restart-failed", "context_connect_failed": "restart-failed",
    "context_dead": "restart-failed", "mailbox_timeout": "mailbox-error",
    "reset_skipped": "firmware-recovery", "heap_exists": "host-map-failed",
}
EACCES, EPERM, ENOENT = -13, -1, -2
_BUFFER_IOCTLS = ("CREATE_BO", "SYNC_BO", "GET_BO_INFO")
# the shim's own refusals of a buffer (amd/xdna-driver src/shim buffer.cpp, device.cpp)
_BUFFER_TEXT = re.compile(r"mmap_alloc|mmap_range|Heap at max size|Failed to allocate|"
                          r"bad_alloc|Cannot allocate memory", re.IGNORECASE)
# ... and its refusals of a buffer's kind or flags: the program asked for a buffer the shim
# does not make (a capture's flagless buffer: "unsupported buffer type: none flag"), which
# no amount of memory changes
_BUFFER_KIND_TEXT = re.compile(r"unsupported buffer type|Bad BO type|User pointer",
                               re.IGNORECASE)
_XCLBIN_TEXT = re.compile(r"No valid DPU kernel found in xclbin|PDI for kernel ID|"
                          r"CU name \(.*\) not found")
# FastFlowLM's own checks (ROCm/FastFlowLM src/src/main.cpp sanity_check_npu_stack)
_FLM_TEXT: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("no-device", re.compile(r"No (?:AMD )?NPU device found|No XDNA2 NPU hardware detected")),
    ("firmware-too-old", re.compile(r"NPU firmware version on \S+ is incompatible")),
    ("memlock-low", re.compile(r"Memlock limit is too low")),
    ("wrong-columns", re.compile(r"does not have enough columns")),
    ("permission-denied", re.compile(r"[Pp]ermission denied")),
)


def signs_of_event(event: dict[str, Any]) -> Signs:
    kind = str(event.get("event"))
    facts = {k: v for k, v in event.items() if k not in ("event", "usec")}
    if kind == "mailbox_failure":
        if event.get("status_name") == "MGMT_ERT_NOAVAIL":
            return [("context-unavailable", facts)]
        return [("mailbox-error", facts)]
    sign = EVENT_SIGNS.get(kind)
    return [(sign, facts)] if sign else []


def signs_of_error(error: el.ErrorLine) -> Signs:
    """What one error line says, as signs (every error is at least an exception)."""
    facts: dict[str, Any] = {"carrier": error.carrier}
    for name in ("state", "exception", "ioctl", "errno"):
        if getattr(error, name) is not None:
            facts[name] = getattr(error, name)
    said = error.xrt
    if said in (el.RUNLIST_FAILED, el.COMMAND_FAILED):
        return [("runlist-failed", dict(facts, what=said))]
    if said == el.UNEXPECTED_STATE:
        return [("unexpected-state", facts)]
    if said == el.NO_DEVICE:
        return [("no-device", facts)]
    if said == el.LIBRARY_FAILED:
        return [("plugin-missing" if "libxrt_driver" in error.message else "exception",
                 facts)]
    if said == el.IOCTL_FAILED:
        return [("ioctl-failed", facts), *_of_ioctl(error, facts)]
    if said == el.SHIM_ERROR:
        return [("shim-error", facts), *_of_shim(error, facts)]
    for kind, pattern in _FLM_TEXT:
        if pattern.search(error.message):
            return [(kind, facts)] if kind != "memlock-low" else \
                [("memlock-low", facts), ("exception", facts)]
    if _BUFFER_KIND_TEXT.search(error.message):
        return [("buffer-refused", facts)]
    if _BUFFER_TEXT.search(error.message) or error.exception == "std::bad_alloc":
        return [("buffer-alloc-failed", facts)]
    return [("exception", facts)]


def _of_ioctl(error: el.ErrorLine, facts: dict[str, Any]) -> Signs:
    ioctl, errno = error.ioctl or "", error.errno
    if errno in (EACCES, EPERM):
        return [("permission-denied", facts)]
    if "CREATE_HWCTX" in ioctl:
        return [("context-unavailable", facts)]
    if any(name in ioctl for name in _BUFFER_IOCTLS):
        return [("buffer-alloc-failed", facts)]
    return []


def _of_shim(error: el.ErrorLine, facts: dict[str, Any]) -> Signs:
    message, errno = error.message, error.errno
    if message.startswith("Open ") and errno in (EACCES, EPERM, -EACCES, -EPERM):
        return [("permission-denied", facts)]
    if message.startswith("Open ") and errno in (ENOENT, -ENOENT):
        return [("no-device", facts)]
    if _XCLBIN_TEXT.search(message):
        return [("xclbin-mismatch", facts)]
    if _BUFFER_KIND_TEXT.search(message):
        return [("buffer-refused", facts)]
    if _BUFFER_TEXT.search(message):
        return [("buffer-alloc-failed", facts)]
    return []
