"""The emulated driver's information ioctls: DRM_IOCTL_VERSION, GET_INFO, GET_ARRAY and
SET_STATE, as `xrt-smi`, the shim and the harness's probe ask them (amd/xdna-driver
`aie2_pci.c` aie2_get_info / aie2_get_array, `amdxdna_pci_drv.c`).

GET_INFO writes at most the caller's buffer and fails with EINVAL when a fixed-size
answer does not fit; GET_ARRAY returns as many entries as fit at the element size the
caller gives (the smaller of it and the driver's), and ENOSPC with the count needed when
they do not. SET_STATE is root only (DRM_ROOT_ONLY). What the emulator has no answer for
fails with EOPNOTSUPP, and the model process counts it (`emulate` reports it).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable

from harness.emulator import uapi
from harness.emulator.device import EmulatedDevice
from harness.emulator.memory import DriverError
from harness.emulator.objects import ClientFile, HwContext
from harness.emulator.replies import IoctlReply, patch

Contexts = dict[int, HwContext]
Files = dict[int, ClientFile]

PRIORITY_NORMAL = 0x200          # AMDXDNA_QOS_NORMAL_PRIORITY


def version(device: EmulatedDevice, file: ClientFile, args: bytes, extra: bytes) -> IoctlReply:
    (major, minor, patchlevel), name, date, desc = device.version()
    fields = list(uapi.VERSION_ARGS.unpack_from(args))
    fields[:3] = [major, minor, patchlevel]
    fields[3], fields[5], fields[7] = len(name), len(date), len(desc)
    return IoctlReply(0, patch(args, uapi.VERSION_ARGS, *fields), name + date + desc)


def get_info(device: EmulatedDevice, contexts: Contexts, file: ClientFile, args: bytes,
             extra: bytes) -> IoctlReply:
    param, size, pointer = uapi.INFO_ARGS.unpack_from(args)
    answers: dict[int, Callable[[], bytes]] = {
        uapi.QUERY_AIE_METADATA: device.aie_metadata,
        uapi.QUERY_AIE_VERSION: lambda: uapi.AIE_VERSION.pack(2, 0),
        uapi.QUERY_CLOCK_METADATA: device.clocks,
        uapi.QUERY_HW_CONTEXTS: lambda: legacy_contexts(contexts),
        uapi.QUERY_FIRMWARE_VERSION: device.firmware_version,
        uapi.GET_POWER_MODE: lambda: uapi.POWER_MODE.pack(0),
        uapi.GET_FORCE_PREEMPT_STATE: lambda: uapi.ATTRIBUTE_STATE.pack(0),
        uapi.GET_FRAME_BOUNDARY_PREEMPT_STATE: lambda: uapi.ATTRIBUTE_STATE.pack(0),
        uapi.QUERY_RESOURCE_INFO: device.resources,
    }
    if param not in answers:
        raise DriverError(errno.EOPNOTSUPP, f"GET_INFO param {param}")
    data = answers[param]()
    if size < len(data) and param != uapi.QUERY_HW_CONTEXTS:
        raise DriverError(errno.EINVAL, f"GET_INFO {param}: {size} bytes, needs {len(data)}")
    return IoctlReply(0, patch(args, uapi.INFO_ARGS, param, len(data), pointer), data[:size])


def set_state(file: ClientFile, args: bytes, extra: bytes) -> IoctlReply:
    if os.geteuid() != 0:
        raise DriverError(errno.EACCES, "SET_STATE is DRM_ROOT_ONLY")
    raise DriverError(errno.EOPNOTSUPP, f"SET_STATE param {uapi.INFO_ARGS.unpack_from(args)[0]}")


def get_array(contexts: Contexts, files: Files, file: ClientFile, args: bytes, extra: bytes
              ) -> IoctlReply:
    param, element, count, pad, pointer = uapi.GET_ARRAY_ARGS.unpack_from(args)
    if param == uapi.HW_CONTEXT_ALL:
        entries = [context_entry(ctx) for ctx in contexts.values()]
    elif param == uapi.BO_USAGE and count >= 1 and len(extra) >= 8:
        entries = [usage(files, int.from_bytes(extra[:8], "little", signed=True))]
    else:
        raise DriverError(errno.EOPNOTSUPP, f"GET_ARRAY param {param}")
    if element == 0:
        raise DriverError(errno.EINVAL, "element size 0")
    if count < len(entries):
        fields = (param, element, len(entries), pad, pointer)
        return IoctlReply(-errno.ENOSPC, patch(args, uapi.GET_ARRAY_ARGS, *fields))
    size = min(element, len(entries[0])) if entries else element
    data = b"".join(entry[:size].ljust(size, b"\0") for entry in entries)
    return IoctlReply(0, patch(args, uapi.GET_ARRAY_ARGS, param, size, len(entries), pad, pointer),
                 data)


def legacy_contexts(contexts: Contexts) -> bytes:
    """QUERY_HW_CONTEXTS: {context_id, start_col, num_col, pad, pid, submissions,
    completions, migrations, preemptions, errors} per context."""
    return b"".join(
        b"".join(v.to_bytes(4, "little") for v in (ctx.id, ctx.sim.start_column, ctx.width, 0))
        + ctx.file.pid.to_bytes(8, "little", signed=True)
        + b"".join(v.to_bytes(8, "little") for v in (ctx.sim.submitted,
                                                      ctx.sim.completed_jobs, 0, 0, 0))
        for ctx in contexts.values())


def context_entry(ctx: HwContext) -> bytes:
    sim = ctx.sim
    return uapi.HWCTX_ENTRY.pack(
        ctx.id, sim.start_column, ctx.width, ctx.id, ctx.file.pid, sim.submitted,
        sim.completed_jobs, 0, 0, 0, PRIORITY_NORMAL, ctx.file.handles.heap.size, 0,
        1 if sim.inflight else 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, b"emulated")


def usage(files: Files, pid: int) -> bytes:
    """BO_USAGE of a process: the heap counts as internal, device BOs as heap usage."""
    total = internal = heap = 0
    for file in files.values():
        if file.pid != pid:
            continue
        for buffer in file.handles.table.values():
            if buffer.kind == uapi.BO_DEV:
                heap += buffer.size
                continue
            total += buffer.size
            if buffer.kind in (uapi.BO_DEV_HEAP, uapi.BO_CMD):
                internal += buffer.size
    return uapi.BO_USAGE_ENTRY.pack(pid, total, internal, heap)
