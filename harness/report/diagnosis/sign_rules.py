"""How a line of evidence becomes signs of the vocabulary (`vocabulary.SIGNS`), in one
place for reports and artefacts alike: a driver line's event (`harness.logs.driver_lines`)
and an error a program printed (`harness.logs.error_lines`).

The meaning of an errno follows the XDNA shim and the driver: a context create refused
(CREATE_HWCTX: -ENOENT past the legacy tree's virtual context limit, -ENODEV where the
resource solver finds no free partition, -EBUSY or -ENOSPC where the columns are taken:
none left; -EINVAL says less, for every status the firmware refuses a command with becomes
-EINVAL (staging aie.c aie_send_mgmt_msg_wait: its MGMT_ERT_NOAVAIL, none left, as much as
any other) and so does a request the solver will not take (aie2_solver.c sanity_check: a
partition wider than the device, a QoS it cannot meet), so only the kernel log's status
tells them apart), a submit refused -EIO (only the legacy tree gives it, on a context it
could not connect to the firmware: src/driver/amdxdna aie2_ctx_runqueue.c part_ctx_start
marks it CTX_STATE_DEAD on any failed connect, its first one included, and
aie2_rq_submit_enter refuses every submit on it; a wedge only where a hang came before),
a buffer the driver could
not allocate or map (CREATE_BO, SYNC_BO; -ENOMEM, -EFAULT), an ioctl the driver gives root
only (-EACCES, -EPERM on an open node: DRM_ROOT_ONLY in amdxdna's ioctl table), a node
the process may not open (-EACCES, -EPERM on open). Older shims printed the errno
positive (``err=13``): its sign is read, never its printing. A locked mapping the kernel
refuses with -EAGAIN is past the process's memlock limit (Linux mm/mmap.c do_mmap:
``mlock_future_ok`` fails for MAP_LOCKED, flag 0x2000, which the shim's heap and host
buffers map with).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
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
    "device_heap_failed": "device-heap-refused",
    "context_refused": "context-unavailable", "partition_refused": "wrong-columns",
    "hypervisor_refused": "hypervisor", "hardware_init_failed": "driver-probe-failed",
    "context_init_failed": "context-unavailable",
    "restart_failed": "restart-failed", "context_connect_failed": "restart-failed",
    "context_dead": "restart-failed", "mailbox_timeout": "mailbox-error",
    "reset_skipped": "firmware-recovery", "heap_exists": "device-heap-refused",
    "unsupported_path": "unsupported-path",
}
EACCES, EPERM, ENOENT, EAGAIN, EIO, ENOSPC = -13, -1, -2, -11, -5, -28
# a context create refused with these says none was left (the module docstring)
NONE_LEFT = (-2, -19, -16, -28)          # ENOENT, ENODEV, EBUSY, ENOSPC
MAP_LOCKED = 0x2000             # Linux uapi asm-generic/mman.h
_MMAP = re.compile(r"\bmmap\((?:.*\bflags=(?P<flags>\d{1,10}))?")
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
# a hardware context the driver would not create, in XRT's words (pcie/linux/shim.cpp
# "Failed to create hardware context") or a shim's on another OS ("Failed to create context
# ..."), with no ioctl named
_CONTEXT_TEXT = re.compile(r"[Ff]ailed to create (?:a |the )?(?:hw |hardware )?context\b")
# a client that could not reach a server, or lost it: libcurl's CURLE_COULDNT_CONNECT text
# ("Couldn't connect to server", "Could not connect to server" from curl 7.85), glibc's
# strerror of ECONNREFUSED and ECONNRESET, the Python HTTP clients' own (urllib3 "Failed to
# establish a new connection", http.client/httpx "Server disconnected", openai "Connection
# error.")
_UNREACHABLE = re.compile(r"Could(?:n't| not) connect to server|Connection refused|"
                          r"Connection reset by peer|Failed to establish a new connection|"
                          r"Server disconnected|RemoteDisconnected|APIConnectionError|"
                          r"Failed to connect to \S+ port \d{1,5}")
# FastFlowLM's own checks (ROCm/FastFlowLM src/src/main.cpp sanity_check_npu_stack)
_FLM_TEXT: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("no-device", re.compile(r"No (?:AMD )?NPU device found|No XDNA2 NPU hardware detected")),
    ("firmware-too-old", re.compile(r"NPU firmware version on \S+ is incompatible")),
    ("memlock-low", re.compile(r"Memlock limit is too low")),
    ("wrong-columns", re.compile(r"does not have enough columns")),
    ("permission-denied", re.compile(r"[Pp]ermission denied")),
)


# A wedge in an ordered run of signs (harness.report.diagnosis.wedged): its own signs, and
# the driver's timeout lines whose restart it is; a dead context (a submit refused -EIO) is
# the wedge's only after a timeout (else its first connect failed: no hang, no wedge)
WEDGE_KINDS = ("restart-failed", "device-wedged")
DEAD_KINDS = ("context-dead",)
WEDGE_OWN = WEDGE_KINDS + DEAD_KINDS
TIMEOUT_KINDS = ("driver-timeout",)
# a hardware context refused (`_context_sign`): a set-up's failure, where no command ran yet
CONTEXT_KINDS = ("context-unavailable", "context-refused")


def ordering_kind(kind: str, facts: dict[str, Any]) -> str:
    """The kind a sign counts as where a wedge is placed in its file: XRT's TIMEOUT (a
    chain the driver timed out: xrt_kernel.cpp reads it from the packet the driver marked)
    counts as the driver's timeout line does."""
    if kind in ("runlist-failed", "unexpected-state") and facts.get("state") == "TIMEOUT":
        return TIMEOUT_KINDS[0]
    return kind


def wedge_begins(kinds: Sequence[str]) -> int | None:
    """Where a wedge's lines begin in `kinds` (one sign kind a line, in the log's order):
    the restart after the last timeout line before the first failed restart (what the
    restart printed before it failed, the firmware refusing its context, is the wedge's
    too), or the first SMU refusal after a timeout (a reload on the wedged device); None
    where no wedge shows."""
    timed = [i for i, kind in enumerate(kinds) if kind in TIMEOUT_KINDS]
    restart = next((i for i, kind in enumerate(kinds) if kind in WEDGE_KINDS or (
        kind in DEAD_KINDS and timed and timed[0] < i)), None)
    smu = next((i for i, kind in enumerate(kinds) if kind == "smu-failed" and timed
                and i > timed[0]), None)
    if restart is not None and (smu is None or restart < smu):
        before = [i for i in timed if i < restart]
        return before[-1] + 1 if before else restart
    return smu


def signs_of_events(events: Sequence[dict[str, Any]], submitted: bool = False
                    ) -> list[tuple[dict[str, Any], Signs]]:
    """Each of a log's events (in its order) with its signs, save the events from where a
    wedge begins that are not the wedge's own: what a wedged device answered is no
    evidence of a cause of its own.

    `submitted`: the log is of a run whose commands the device took (a trial's runlists
    ran, a recorded run's command failed on the device), so its contexts were all made
    before any of its lines: a context refused in it is the driver making one again, its
    restart of the hung context (every tree's aie2_hwctx_restart after its timeout; in-tree
    7.0 logs no line of that timeout, 234824b1 aie2_ctx.c aie2_sched_job_timedout), not the
    set-up, and speaks neither for the stack's limits nor for other clients. The events
    that say nothing else are left out."""
    kinds = [next((kind for kind, _ in signs_of_event(e)), str(e.get("event"))) for e in events]
    begins = wedge_begins(kinds)
    kept = []
    for position, event in enumerate(events):
        if begins is not None and position >= begins and kinds[position] not in WEDGE_OWN:
            continue
        signs = signs_of_event(event)
        if submitted and signs:
            signs = [(kind, facts) for kind, facts in signs if kind not in CONTEXT_KINDS]
            if not signs:
                continue
        kept.append((event, signs))
    return kept


def signs_of_event(event: dict[str, Any]) -> Signs:
    kind = str(event.get("event"))
    facts = {k: v for k, v in event.items() if k not in ("event", "usec")}
    if kind == "mailbox_failure":
        if event.get("status_name") == "MGMT_ERT_NOAVAIL":
            return [("context-unavailable", facts)]
        return [("mailbox-error", facts)]
    if kind in ("context_refused", "context_init_failed") and "limit" not in event:
        # "Alloc hw resource failed, ret %d" and the like: the errno says how much it knows
        rets = [event[k] for k in ("ret", "aie", "create", "hwctx", "xrs", "ctx")
                if isinstance(event.get(k), int)]
        return [(_context_sign(rets[0] if rets else None), facts)]
    sign = EVENT_SIGNS.get(kind)
    return [(sign, facts)] if sign else []


def signs_of_error(error: el.ErrorLine) -> Signs:
    """What one error line says, as signs (every error is at least an exception)."""
    facts: dict[str, Any] = {"carrier": error.carrier}
    for name in ("state", "exception", "ioctl", "errno"):
        if getattr(error, name) is not None:
            facts[name] = getattr(error, name)
    said = error.xrt
    if said in (el.RUNLIST_FAILED, el.COMMAND_FAILED, el.STATE_NAMED):
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
    if _CONTEXT_TEXT.search(error.message):
        # the words say it failed, not why: none left, or a request the driver refused
        return [("context-refused", facts)]
    if _UNREACHABLE.search(error.message):
        return [("server-unreachable", facts)]
    return [("exception", facts)]


def signs_of_text(message: str) -> Signs:
    """What a line no error carrier holds says, where it says something the vocabulary
    knows: a client that could not reach its server."""
    return [("server-unreachable", {})] if _UNREACHABLE.search(message) else []


def _negative(errno: int | None) -> int | None:
    return None if errno is None else -abs(errno)


def _of_ioctl(error: el.ErrorLine, facts: dict[str, Any]) -> Signs:
    ioctl, errno = error.ioctl or "", _negative(error.errno)
    if errno in (EACCES, EPERM):
        # an ioctl runs on a node already open: the driver gives this one to root only
        return [("ioctl-not-permitted", facts)]
    if "EXEC_CMD" in ioctl and errno == EIO:
        # the legacy tree's dead context (the module docstring): its connect failed, the
        # first one or the one after a hang
        return [("context-dead", facts)]
    if "CREATE_HWCTX" in ioctl or "CREATE_CTX" in ioctl:
        return [(_context_sign(errno), facts)]
    if "CREATE_BO" in ioctl and errno == ENOSPC:
        # only a device buffer's heap answers -ENOSPC (a full drm_mm range,
        # amdxdna_gem_heap_alloc); host-only buffers are shmem, short of memory -ENOMEM
        return [("buffer-alloc-failed", facts), ("device-heap-refused", facts)]
    if any(name in ioctl for name in _BUFFER_IOCTLS):
        return [("buffer-alloc-failed", facts)]
    return []


def _context_sign(errno: int | None) -> str:
    """A context the driver refused: none left where its errno says so (or where its line
    says so and gives none: "AIE partition not available"), else refused with the reason
    untold (the module docstring)."""
    if errno is None or _negative(errno) in NONE_LEFT:
        return "context-unavailable"
    return "context-refused"


def _of_shim(error: el.ErrorLine, facts: dict[str, Any]) -> Signs:
    message, errno = error.message, _negative(error.errno)
    if message.startswith("Open ") and errno in (EACCES, EPERM):
        return [("permission-denied", facts)]
    if message.startswith("Open ") and errno == ENOENT:
        return [("no-device", facts)]
    mapped = _MMAP.search(message)
    if mapped and errno == EAGAIN and (mapped["flags"] is None
                                       or int(mapped["flags"]) & MAP_LOCKED):
        return [("buffer-alloc-failed", facts), ("memlock-refused", facts)]
    if mapped:
        return [("buffer-alloc-failed", facts)]
    if _XCLBIN_TEXT.search(message):
        return [("xclbin-mismatch", facts)]
    if _BUFFER_KIND_TEXT.search(message):
        return [("buffer-refused", facts)]
    if _BUFFER_TEXT.search(message):
        return [("buffer-alloc-failed", facts)]
    return []
