"""The amdxdna driver's user interface as the XDNA shim uses it: ioctl numbers, argument
layouts and the values they carry.

Written from the driver's documented uapi (amd/xdna-driver `include/uapi/drm/
amdxdna_accel.h`, and the shim's own copy `src/include/uapi/drm_local/amdxdna_accel.h`
at the commit the shim is built from), the DRM core's (`include/uapi/drm/drm.h`) and
XRT's command packet format (`xrt/detail/ert.h`): numbers and field orders only. Where
the shim's copy differs from the driver's, both are answered: WAIT_CMD is `_IOW` in
the driver's header and `_IOWR` in the shim's (the same number, 9).
"""

from __future__ import annotations

import struct

# -- ioctl numbers (asm-generic ioctl.h: dir << 30 | size << 16 | type << 8 | nr) --------

_WRITE, _READ = 1, 2
DRM_TYPE = ord("d")
COMMAND_BASE = 0x40


def ioc(direction: int, nr: int, size: int) -> int:
    return (direction << 30) | (size << 16) | (DRM_TYPE << 8) | nr


def iowr(nr: int, size: int) -> int:
    return ioc(_READ | _WRITE, nr, size)


def ioc_nr(cmd: int) -> int:
    return cmd & 0xFF


def ioc_type(cmd: int) -> int:
    return (cmd >> 8) & 0xFF


def ioc_size(cmd: int) -> int:
    return (cmd >> 16) & 0x3FFF


# amdxdna's own ioctls, by number after DRM_COMMAND_BASE
CREATE_HWCTX, DESTROY_HWCTX, CONFIG_HWCTX, CREATE_BO, GET_BO_INFO, SYNC_BO, EXEC_CMD, \
    GET_INFO, SET_STATE, WAIT_CMD, GET_ARRAY = range(COMMAND_BASE, COMMAND_BASE + 11)
# the DRM core's, by number
VERSION, GEM_CLOSE = 0x00, 0x09
PRIME_HANDLE_TO_FD, PRIME_FD_TO_HANDLE = 0x2D, 0x2E
SYNCOBJ_CREATE, SYNCOBJ_DESTROY, SYNCOBJ_HANDLE_TO_FD, SYNCOBJ_FD_TO_HANDLE, SYNCOBJ_WAIT, \
    SYNCOBJ_RESET, SYNCOBJ_SIGNAL = range(0xBF, 0xC6)
SYNCOBJ_TIMELINE_WAIT, SYNCOBJ_QUERY, SYNCOBJ_TRANSFER, SYNCOBJ_TIMELINE_SIGNAL = \
    0xCA, 0xCB, 0xCC, 0xCD

NAMES = {
    CREATE_HWCTX: "CREATE_HWCTX", DESTROY_HWCTX: "DESTROY_HWCTX",
    CONFIG_HWCTX: "CONFIG_HWCTX", CREATE_BO: "CREATE_BO", GET_BO_INFO: "GET_BO_INFO",
    SYNC_BO: "SYNC_BO", EXEC_CMD: "EXEC_CMD", GET_INFO: "GET_INFO", SET_STATE: "SET_STATE",
    WAIT_CMD: "WAIT_CMD", GET_ARRAY: "GET_ARRAY", VERSION: "VERSION", GEM_CLOSE: "GEM_CLOSE",
    PRIME_HANDLE_TO_FD: "PRIME_HANDLE_TO_FD", PRIME_FD_TO_HANDLE: "PRIME_FD_TO_HANDLE",
    SYNCOBJ_CREATE: "SYNCOBJ_CREATE", SYNCOBJ_DESTROY: "SYNCOBJ_DESTROY",
    SYNCOBJ_HANDLE_TO_FD: "SYNCOBJ_HANDLE_TO_FD", SYNCOBJ_FD_TO_HANDLE: "SYNCOBJ_FD_TO_HANDLE",
    SYNCOBJ_WAIT: "SYNCOBJ_WAIT", SYNCOBJ_RESET: "SYNCOBJ_RESET",
    SYNCOBJ_SIGNAL: "SYNCOBJ_SIGNAL", SYNCOBJ_TIMELINE_WAIT: "SYNCOBJ_TIMELINE_WAIT",
    SYNCOBJ_QUERY: "SYNCOBJ_QUERY", SYNCOBJ_TRANSFER: "SYNCOBJ_TRANSFER",
    SYNCOBJ_TIMELINE_SIGNAL: "SYNCOBJ_TIMELINE_SIGNAL",
}

# -- argument layouts (x86-64, little-endian, natural alignment) --------------------------

CREATE_HWCTX_ARGS = struct.Struct("<QQQIIIIIIII")    # ext, ext_flags, qos_p, umq_bo,
# log_buf_bo, max_opc, num_tiles, mem_size, umq_doorbell, handle, syncobj_handle
QOS = struct.Struct("<IIIIII")       # gops, fps, dma_bandwidth, latency, frame_exec_time,
# priority (the shim's copy adds user_start_col and a pad: the driver reads these 24)
DESTROY_HWCTX_ARGS = struct.Struct("<II")            # handle, pad
CONFIG_HWCTX_ARGS = struct.Struct("<IIQII")           # handle, param_type, param_val,
# param_val_size, pad
CU_CONFIG_HEAD = struct.Struct("<H6x")                # num_cus, pad[3]
CU_CONFIG = struct.Struct("<IB3x")                    # cu_bo, cu_func, pad[3]
CREATE_BO_ARGS = struct.Struct("<QQQII")              # flags, vaddr, size, type, handle
GET_BO_INFO_ARGS = struct.Struct("<QQIIQQQ")          # ext, ext_flags, handle, pad,
# map_offset, vaddr, xdna_addr
SYNC_BO_ARGS = struct.Struct("<IIQQ")                 # handle, direction, offset, size
EXEC_CMD_ARGS = struct.Struct("<QQIIQQIIQ")           # ext, ext_flags, hwctx, type,
# cmd_handles, args, cmd_count, arg_count, seq
WAIT_CMD_ARGS = struct.Struct("<IIQ")                 # hwctx, timeout (ms), seq
INFO_ARGS = struct.Struct("<IIQ")                     # GET_INFO, SET_STATE: param,
# buffer_size, buffer
GET_ARRAY_ARGS = struct.Struct("<IIIIQ")              # param, element_size, num_element,
# pad, buffer
VERSION_ARGS = struct.Struct("<iiixxxxQQQQQQ")        # major, minor, patchlevel,
# name_len, name, date_len, date, desc_len, desc
GEM_CLOSE_ARGS = struct.Struct("<II")                 # handle, pad
PRIME_ARGS = struct.Struct("<IIi")                    # handle, flags, fd
SYNCOBJ_CREATE_ARGS = struct.Struct("<II")            # handle, flags
SYNCOBJ_HANDLE_ARGS = struct.Struct("<IIiI")          # handle, flags, fd, pad
SYNCOBJ_WAIT_ARGS = struct.Struct("<QqIIII")          # handles, timeout_nsec,
# count_handles, flags, first_signaled, pad (newer kernels append deadline_nsec)
SYNCOBJ_ARRAY_ARGS = struct.Struct("<QII")            # handles, count_handles, pad
TIMELINE_WAIT_ARGS = struct.Struct("<QQqIIII")        # handles, points, timeout_nsec,
# count_handles, flags, first_signaled, pad (newer kernels append deadline_nsec)
TIMELINE_ARRAY_ARGS = struct.Struct("<QQII")          # handles, points, count_handles,
# flags

# The argument struct each ioctl is declared with (the driver's DRM_IOCTL_DEF_DRV table,
# amdxdna_pci_drv.c, and the DRM core's drm_ioctls[], from the uapi headers): drm_ioctl
# copies in the size the caller's ioctl number encodes and zero-extends it to this one
# (Linux drivers/gpu/drm/drm_ioctl.c drm_ioctl: ksize = max(in_size, out_size, drv_size),
# memset past in_size), so a caller's shorter struct reaches the handler with its missing
# fields 0, and only the caller's own size is copied back.
DECLARED = {
    CREATE_HWCTX: CREATE_HWCTX_ARGS, DESTROY_HWCTX: DESTROY_HWCTX_ARGS,
    CONFIG_HWCTX: CONFIG_HWCTX_ARGS, CREATE_BO: CREATE_BO_ARGS, GET_BO_INFO: GET_BO_INFO_ARGS,
    SYNC_BO: SYNC_BO_ARGS, EXEC_CMD: EXEC_CMD_ARGS, GET_INFO: INFO_ARGS, SET_STATE: INFO_ARGS,
    WAIT_CMD: WAIT_CMD_ARGS, GET_ARRAY: GET_ARRAY_ARGS, VERSION: VERSION_ARGS,
    GEM_CLOSE: GEM_CLOSE_ARGS, PRIME_HANDLE_TO_FD: PRIME_ARGS, PRIME_FD_TO_HANDLE: PRIME_ARGS,
    SYNCOBJ_CREATE: SYNCOBJ_CREATE_ARGS, SYNCOBJ_DESTROY: SYNCOBJ_CREATE_ARGS,
    SYNCOBJ_HANDLE_TO_FD: SYNCOBJ_HANDLE_ARGS, SYNCOBJ_FD_TO_HANDLE: SYNCOBJ_HANDLE_ARGS,
    SYNCOBJ_WAIT: SYNCOBJ_WAIT_ARGS, SYNCOBJ_RESET: SYNCOBJ_ARRAY_ARGS,
    SYNCOBJ_SIGNAL: SYNCOBJ_ARRAY_ARGS, SYNCOBJ_TIMELINE_WAIT: TIMELINE_WAIT_ARGS,
    SYNCOBJ_QUERY: TIMELINE_ARRAY_ARGS, SYNCOBJ_TIMELINE_SIGNAL: TIMELINE_ARRAY_ARGS,
}


def zero_extended(nr: int, args: bytes) -> bytes:
    """The argument struct as the handler of ioctl `nr` sees it: the caller's bytes, then
    zeros up to the declared struct's size."""
    declared = DECLARED.get(nr)
    missing = declared.size - len(args) if declared is not None else 0
    return args + bytes(missing) if missing > 0 else args


# -- values -----------------------------------------------------------------------------

BO_SHARE, BO_DEV_HEAP, BO_DEV, BO_CMD = 1, 2, 3, 4
BO_TYPES = {BO_SHARE: "SHARE", BO_DEV_HEAP: "DEV_HEAP", BO_DEV: "DEV", BO_CMD: "CMD"}
INVALID_ADDR = (1 << 64) - 1
HWCTX_CONFIG_CU, HWCTX_ASSIGN_DBG_BUF, HWCTX_REMOVE_DBG_BUF = 0, 1, 2
CMD_SUBMIT_EXEC_BUF = 0
SYNC_TO_DEVICE, SYNC_FROM_DEVICE = 0, 1
DEV_TYPE_KMQ = 0

# GET_INFO parameters
QUERY_AIE_STATUS, QUERY_AIE_METADATA, QUERY_AIE_VERSION, QUERY_CLOCK_METADATA, \
    QUERY_SENSORS, QUERY_HW_CONTEXTS = range(6)
QUERY_FIRMWARE_VERSION, GET_POWER_MODE, QUERY_TELEMETRY, GET_FORCE_PREEMPT_STATE, \
    QUERY_RESOURCE_INFO, GET_FRAME_BOUNDARY_PREEMPT_STATE = range(8, 14)
# SET_STATE parameters
SET_POWER_MODE = 0
# GET_ARRAY parameters
HW_CONTEXT_ALL, HW_CONTEXT_BY_ID, HW_LAST_ASYNC_ERR = 0, 1, 2
BO_USAGE = 6

AIE_VERSION = struct.Struct("<II")                    # major, minor
TILE_METADATA = struct.Struct("<HHHHH6x")             # row_count, row_start,
# dma_channel_count, lock_count, event_reg_count, pad[3]
AIE_METADATA = struct.Struct("<IHHII" + "HHHHH6x" * 3)   # col_size, cols, rows,
# version.major, version.minor, then core, mem and shim tile metadata
FIRMWARE_VERSION = struct.Struct("<IIII")             # major, minor, patch, build
POWER_MODE = struct.Struct("<B7x")
CLOCK = struct.Struct("<16sII")                       # name, freq_mhz, pad
RESOURCE_INFO = struct.Struct("<QQQQQ")               # clk max, tops max, task max,
# tops current, task current
ATTRIBUTE_STATE = struct.Struct("<B7x")
HWCTX_ENTRY = struct.Struct("<IIIIqQQQQQQQQIIIIIIIIIIIIII16s")   # context_id, start_col,
# num_col, hwctx_id, pid, submissions, completions, migrations, preemptions, errors,
# priority, heap_usage, suspensions, state, pasid, gops, fps, dma_bandwidth, latency,
# frame_exec_time, txn_op_idx, ctx_pc, fatal_error_type, fatal_error_exception_type,
# fatal_error_exception_pc, fatal_error_app_module, pad, name
BO_USAGE_ENTRY = struct.Struct("<qQQQ")               # pid, total, internal, heap

# -- command packets (ert.h) ----------------------------------------------------------------

ERT_START_CU, ERT_CMD_CHAIN, ERT_START_NPU, ERT_START_NPU_PREEMPT, \
    ERT_START_NPU_PREEMPT_ELF = 0, 19, 20, 21, 22
CHAIN_HEAD = struct.Struct("<IIIIII")       # command_count, submit_index, error_index,
# reserved[3]; then u64 data[] (the sub-commands' BO handles)
NPU_DATA = struct.Struct("<QII")            # instruction buffer, its size, prop count
PREEMPT_DATA = struct.Struct("<QQQIIII")    # instruction, save and restore buffers,
# their sizes, prop count


def header_fields(header: int) -> tuple[int, int, int, int]:
    """state [3:0], extra CU masks [11:10], payload word count [22:12], opcode [27:23]."""
    return header & 0xF, (header >> 10) & 0x3, (header >> 12) & 0x7FF, (header >> 23) & 0x1F


def with_state(header: int, state: int) -> int:
    return (header & ~0xF) | (state & 0xF)
