"""The pyxrt objects of the simulated stack: enums, xclbin, device, hw_context, buffers,
ELF, program, module, graph.

Same names, constructors, overloads and failure types as Xilinx/XRT's binding
(`src/python/pybind11/src/pyxrt.cpp`) of the XRT release the profile names
(`harness.sim.releases`): an overload the release does not have is a TypeError,
a name it does not have an AttributeError. Kernels, runs and runlists, where
XRT's execution rules live, are in `harness.sim.runs`.
"""

from __future__ import annotations

import functools
import itertools
import os
import sys
import types
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from harness.formats.elf import ElfError, parse_elf
from harness.formats.xclbin import Xclbin, read_xclbin_cached
from harness.model.errors import XclbinError
from harness.model.heap import HeapRefused
from harness.sim import control
from harness.sim.driver_log import BDF
from harness.sim.firmware_faults import ContextRefused, SubmitRefused
from harness.sim.pybind import (
    SIZE_T,
    UINT,
    Gated,
    NoMatch,
    Overload,
    Overloads,
    PybindEnum,
    buffer,
    cfg_params,
    incompatible,
    instance_of,
    make_enum,
    method,
    never,
    nothing,
    text,
)
from harness.sim.releases import (
    BINDING_2_23,
    GRAPH_AIE,
    HW_CONTEXT_ELF,
    XrtRelease,
)
from harness.sim.stack import Context, Stack

T = TypeVar("T")
XCL_BO_FLAGS_NONE = 0
TIMEOUT_VALUE = 8
NO_CONFIGURATION = "ELF is missing xrt configuration info\n"
AXLF_SIZE = 496              # sizeof(struct axlf): the header and one section header


def release() -> XrtRelease:
    return control.current().profile.release


def since(feature: str):
    return lambda r: r.has(feature)


def until(feature: str):
    return lambda r: not r.has(feature)


def gated(value: Any, present) -> Gated:
    return Gated(value, present, release)


# What the driver model refuses with, its errno and lines kept for the emulated driver;
# the program is shown none of that. XRT's shim throws xrt_core::system_error (a
# std::system_error: Xilinx/XRT src/runtime_src/core/common/error.h) and pyxrt registers
# no translator of its own (src/python/pybind11/src/pyxrt.cpp, 2.20.197 to 963c58ee), so
# pybind11's default one raises a plain RuntimeError with what() as its text.
REFUSED = (HeapRefused, ContextRefused, SubmitRefused)


def as_xrt_raises(function: Callable[..., T], *args: Any) -> T:
    """`function(*args)`, a refusal of the driver model raised as the real binding raises
    it: a RuntimeError of the same text, raised outside the handler so that it carries no
    context the real one would not."""
    try:
        return function(*args)
    except REFUSED as refused:
        raised = RuntimeError(str(refused))
    raise raised


def not_initialized(what: str) -> RuntimeError:
    # The real binding dereferences an empty handle here and crashes the process; the
    # simulator says so instead (a deliberate exception, see tests/test_sim_surface.py).
    return RuntimeError(f"{what} object is not initialized (the real binding would crash "
                        "on this empty handle)")


# -- enums ----------------------------------------------------------------------------

# RUNNING (3) is deliberately absent, as in the binding.
ert_cmd_state = make_enum("ert_cmd_state", {
    "ERT_CMD_STATE_NEW": 1, "ERT_CMD_STATE_QUEUED": 2, "ERT_CMD_STATE_COMPLETED": 4,
    "ERT_CMD_STATE_ERROR": 5, "ERT_CMD_STATE_ABORT": 6, "ERT_CMD_STATE_SUBMITTED": 7,
    "ERT_CMD_STATE_TIMEOUT": 8, "ERT_CMD_STATE_NORESPONSE": 9, "ERT_CMD_STATE_SKERROR": 10,
    "ERT_CMD_STATE_SKCRASHED": 11})
xclBOSyncDirection = make_enum("xclBOSyncDirection", {
    "XCL_BO_SYNC_BO_TO_DEVICE": 0, "XCL_BO_SYNC_BO_FROM_DEVICE": 1,
    "XCL_BO_SYNC_BO_GMIO_TO_AIE": 2, "XCL_BO_SYNC_BO_AIE_TO_GMIO": 3})
xrt_info_device = make_enum("xrt_info_device", {
    "bdf": 0, "interface_uuid": 1, "kdma": 2, "max_clock_frequency_mhz": 3, "m2m": 4,
    "name": 5, "nodma": 6, "offline": 7, "electrical": 8, "thermal": 9, "mechanical": 10,
    "memory": 11, "platform": 12, "pcie_info": 13, "host": 14, "dynamic_regions": 15,
    "vmr": 16})
xrt_msg_level = make_enum("xrt_msg_level", {
    "emergency": 0, "alert": 1, "critical": 2, "error": 3, "warning": 4, "notice": 5,
    "info": 6, "debug": 7})
# .export_values(): the levels are module attributes too
emergency, alert, critical, error, warning, notice, info, debug = \
    (getattr(xrt_msg_level, n) for n in xrt_msg_level.__members__)


def as_state(value: int) -> PybindEnum:
    return ert_cmd_state(value)


def enumerate_devices() -> int:
    return 1


def log_message(level: PybindEnum, tag: str, message: str) -> None:
    if not isinstance(level, xrt_msg_level):
        raise incompatible("log_message", ["(arg0: pyxrt.xrt_msg_level, arg1: str, arg2: str) "
                                           "-> None"], "pyxrt", [level, tag, message])
    # XRT's default verbosity (xrt.ini Runtime.verbosity = 4) prints warning and worse.
    if level.value <= xrt_msg_level.warning.value:
        print(f"[XRT] {level.name.upper()}: {tag}: {message}", file=sys.stderr)


# -- uuid, xclbin ----------------------------------------------------------------------

class uuid:
    def __init__(self, uuid_str: str) -> None:
        if not isinstance(uuid_str, str):
            raise incompatible("__init__", ["(arg0: str)"], "pyxrt.uuid", [uuid_str],
                               constructor=True)
        self._text = uuid_str.lower()

    @method("(self: pyxrt.uuid) -> str")
    def to_string(self) -> str:
        return self._text


class xclbin:
    class xclbinip:
        def __init__(self, name: str | None = None) -> None:
            self._name = name

        @method("(self: pyxrt.xclbin.xclbinip) -> str")
        def get_name(self) -> str:
            if self._name is None:
                raise not_initialized("xclbinip")
            return self._name

    class xclbinkernel:
        def __init__(self, name: str | None = None, nargs: int = 0) -> None:
            self._name, self._nargs = name, nargs

        @method("(self: pyxrt.xclbin.xclbinkernel) -> str")
        def get_name(self) -> str:
            if self._name is None:
                raise not_initialized("xclbinkernel")
            return self._name

        @method("(self: pyxrt.xclbin.xclbinkernel) -> int")
        def get_num_args(self) -> int:
            if self._name is None:
                raise not_initialized("xclbinkernel")
            return self._nargs

    class xclbinmem:
        def __init__(self, bank=None) -> None:
            self._bank = bank

        def _b(self):
            if self._bank is None:
                raise not_initialized("xclbinmem")
            return self._bank

        @method("(self: pyxrt.xclbin.xclbinmem) -> str")
        def get_tag(self) -> str:
            return self._b().tag

        @method("(self: pyxrt.xclbin.xclbinmem) -> int")
        def get_base_address(self) -> int:
            return self._b().base_address

        @method("(self: pyxrt.xclbin.xclbinmem) -> int")
        def get_size_kb(self) -> int:
            return self._b().size_kb

        @method("(self: pyxrt.xclbin.xclbinmem) -> bool")
        def get_used(self) -> bool:
            return self._b().used

        @method("(self: pyxrt.xclbin.xclbinmem) -> int")
        def get_index(self) -> int:
            return self._b().index

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._meta: Xclbin | None = None
        self._path = ""
        _XCLBIN_NEW(self, release(), args, kwargs)

    def _load(self, path: str) -> None:
        # xrt_xclbin.cpp read_file and init_axlf say these; the harness's reader checks
        # more, in its own words
        try:
            with open(path, "rb") as file:
                head = file.read(AXLF_SIZE)
        except OSError:
            raise RuntimeError(f"Failed to open file '{path}' for reading") from None
        if len(head) < AXLF_SIZE:
            raise RuntimeError("xclbin: buffer too small to contain header")
        if not head.startswith(b"xclbin2"):
            raise RuntimeError("Invalid xclbin")
        try:
            self._meta = read_xclbin_cached(path)
        except XclbinError as err:
            raise RuntimeError(str(err)) from None
        self._path = path

    def _m(self):
        if self._meta is None:
            raise not_initialized("xclbin")
        return self._meta

    @method("(self: pyxrt.xclbin) -> pyxrt.uuid")
    def get_uuid(self) -> uuid:
        return uuid(self._m().uuid)

    @method("(self: pyxrt.xclbin) -> list[pyxrt.xclbin.xclbinkernel]")
    def get_kernels(self) -> list[xclbin.xclbinkernel]:
        return [xclbin.xclbinkernel(k.name, len(k.args)) for k in self._m().kernels]

    @method("(self: pyxrt.xclbin) -> str")
    def get_xsa_name(self) -> str:
        return self._m().vbnv

    @method("(self: pyxrt.xclbin) -> list[pyxrt.xclbin.xclbinmem]")
    def get_mems(self) -> list[xclbin.xclbinmem]:
        return [xclbin.xclbinmem(bank) for bank in self._m().mem_topology]

    @method("(self: pyxrt.xclbin) -> axlf")
    def get_axlf(self) -> Any:
        # pybind11 cannot return `const axlf*`: the type is not registered with it.
        raise TypeError("Unable to convert function return value to a Python type! The "
                        "signature was\n\t(self: pyxrt.xclbin) -> axlf")


_XCLBIN_NEW = Overloads("__init__", "xclbin", [
    Overload("()", (), nothing),
    Overload("(arg0: str)", (("filename", text),), "_load"),
    Overload("(arg0: axlf)", (("axlf_data", never),), nothing),
], constructor=True)


class xclbinip_vector(list):
    pass


class xclbinkernel_vector(list):
    pass


class xclbinmem_vector(list):
    pass


# -- device ------------------------------------------------------------------------------

class device:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._stack: Stack | None = None
        self._registered: dict[str, xclbin] = {}
        _DEVICE_NEW(self, release(), args, kwargs)

    def _open_index(self, index: int) -> None:
        stack = control.current()
        if stack.refused:
            # the driver refused the firmware at probe: XRT finds no device at all
            # (system_linux.cpp get_pcidev, its leading space included, at every tag)
            raise RuntimeError(f" No such device with index '{index}'")
        if index != 0:
            raise RuntimeError(f"No such device index '{index}' (the simulated stack has one "
                               f"NPU, index 0, {BDF})")
        self._stack = stack

    def _open_bdf(self, bdf: str) -> None:
        stack = control.current()
        if bdf != BDF or stack.refused:
            raise RuntimeError(f"No such device '{bdf}' (the simulated NPU is {BDF}"
                               + (", and its driver refused the firmware at probe)"
                                  if stack.refused else ")"))
        self._stack = stack

    def _open(self) -> Stack:
        if self._stack is None:
            raise not_initialized("device")
        return self._stack

    def register_xclbin(self, *args: Any, **kwargs: Any) -> uuid:
        return _REGISTER_XCLBIN(self, release(), args, kwargs)

    def _register(self, x: xclbin) -> uuid:
        self._open()
        meta = x._m()
        self._registered[meta.uuid] = x
        return uuid(meta.uuid)

    def load_xclbin(self, *args: Any, **kwargs: Any) -> uuid:
        return _LOAD_XCLBIN(self, release(), args, kwargs)

    def _refuse_load(self, _: Any) -> uuid:
        if release().has(BINDING_2_23):
            import warnings
            warnings.warn("pyxrt.device.load_xclbin() is deprecated; use "
                          "pyxrt.hw_context(device, xclbin) or pyxrt.hw_context(device, "
                          "xclbin_path) instead", DeprecationWarning, stacklevel=4)
        self._open()
        # Not XRT's text: the NPU shim has no legacy xclbin download.
        raise RuntimeError("load_xclbin: this NPU loads no xclbin through the legacy path; "
                           "use register_xclbin() and hw_context()")

    @method("(self: pyxrt.device) -> pyxrt.uuid")
    def get_xclbin_uuid(self) -> uuid:
        self._open()
        return uuid("00000000-0000-0000-0000-000000000000")

    def get_info(self, *args: Any, **kwargs: Any) -> str:
        return _GET_INFO(self, release(), args, kwargs)

    def _info(self, key: PybindEnum) -> str:
        stack = self._open()
        model = stack.device
        answers = {"bdf": BDF, "name": f"RyzenAI-{stack.profile.device} ({model.name}, "
                                       "simulated)",
                   "offline": "0", "nodma": "0", "m2m": "0", "kdma": "0",
                   "max_clock_frequency_mhz": "0",
                   "interface_uuid": "00000000-0000-0000-0000-000000000000"}
        return answers.get(key.name, "{}")


_DEVICE_NEW = Overloads("__init__", "device", [
    Overload("()", (), nothing),
    Overload("(index: int)", (("index", UINT),), "_open_index", named=True),
    Overload("(bdf: str)", (("bdf", text),), "_open_bdf", named=True),
], constructor=True)
_REGISTER_XCLBIN = Overloads("register_xclbin", "device", [
    Overload("(self: pyxrt.device, xclbin: pyxrt.xclbin) -> pyxrt.uuid",
             (("xclbin", instance_of(xclbin)),), "_register", named=True),
])
_LOAD_XCLBIN = Overloads("load_xclbin", "device", [
    Overload("(self: pyxrt.device, xclbin_path: str) -> pyxrt.uuid",
             (("xclbin_path", text),), "_refuse_load", named=True),
    Overload("(self: pyxrt.device, xclbin: pyxrt.xclbin) -> pyxrt.uuid",
             (("xclbin", instance_of(xclbin)),), "_refuse_load", named=True),
])
_GET_INFO = Overloads("get_info", "device", [
    Overload("(self: pyxrt.device, arg0: pyxrt.xrt_info_device) -> str",
             (("key", instance_of(xrt_info_device)),), "_info"),
])


# -- hardware contexts ------------------------------------------------------------------

hw_access_mode = make_enum("access_mode", {"exclusive": 0, "shared": 1})


def _device_param(name: str = "device") -> tuple[str, Any]:
    return name, instance_of(device)


class hw_context:
    access_mode = gated(hw_access_mode, since(BINDING_2_23))
    exclusive = gated(hw_access_mode.exclusive, since(BINDING_2_23))
    shared = gated(hw_access_mode.shared, since(BINDING_2_23))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._ctx: Context | None = None
        self._device: device | None = None
        self._xclbin: xclbin | None = None
        self._elfs: dict[str, tuple[elf, Any]] = {}   # kernel name -> (ELF, ElfKernel)
        self._partition = 0
        self._mode = hw_access_mode.shared
        self._cfg: dict[str, int] = {}
        _HW_CONTEXT_NEW(self, release(), args, kwargs)

    def _from_uuid(self, dev: device, xuid: uuid, option: Any = None) -> None:
        stack = dev._open()
        x = dev._registered.get(xuid.to_string())
        if x is None:
            raise RuntimeError(f"No xclbin with uuid {xuid.to_string()} is registered with "
                               "this device; call device.register_xclbin(xclbin) first")
        if isinstance(option, hw_access_mode):
            self._mode = option
        elif isinstance(option, dict):
            self._cfg = dict(option)       # QoS: recorded, not modelled
        meta = x._m()
        part = meta.partition
        start = part.start_columns[0] if part and part.start_columns else 0
        width = part.column_width if part else stack.device.columns
        ctx = as_xrt_raises(stack.create_context, _stem(x._path), start, width)
        ctx.cu_configured = True          # the shim configures an xclbin's CUs (hwctx_kmq)
        self._attach(dev, x, ctx)

    def _from_xclbin(self, dev: device, x: xclbin, option: Any = None) -> None:
        self._from_uuid(dev, dev.register_xclbin(x), option)

    def _from_path(self, dev: device, path: str, option: Any = None) -> None:
        self._from_xclbin(dev, xclbin(path), option)

    def _staged(self, dev: device, cfg: dict[str, int], mode: PybindEnum) -> None:
        dev._open()
        self._device, self._mode = dev, mode

    def _from_elf(self, dev: device, e: elf) -> None:
        """hw_context_impl(device, elf): the partition size comes from the ELF's
        configuration note, so only a full ELF makes a context; its kernels are the ones
        `ext.kernel(hwctx, name)` can open."""
        self._device = dev
        self._add_config(e)

    def _attach(self, dev: device, x: xclbin | None, ctx: Context) -> None:
        self._device, self._xclbin, self._ctx = dev, x, ctx
        self._stack = dev._stack
        self._label = ctx.label

    def _live(self) -> Context:
        if self._ctx is None:
            raise not_initialized("hw_context")
        return self._ctx

    def _add_config(self, e: elf) -> None:
        if self._device is None:
            raise not_initialized("hw_context")
        columns = e._parsed().partition_size
        if columns is None:
            raise RuntimeError(NO_CONFIGURATION)
        if self._ctx is not None and self._partition != columns:
            raise RuntimeError("can not add config to ctx with different configuration\n")
        kernels = {k.name: (e, k) for k in e._parsed().kernels}
        if any(name in self._elfs for name in kernels):
            raise RuntimeError("kernel already exists, cannot use this ELF with this hw ctx\n")
        if self._ctx is None:
            stack = self._device._open()
            ctx = as_xrt_raises(stack.create_context, e._label(), 0, columns)
            self._attach(self._device, None, ctx)
            self._partition = columns
        self._elfs.update(kernels)

    def _add_config_call(self, *args: Any, **kwargs: Any) -> None:
        _ADD_CONFIG(self, release(), args, kwargs)

    @method("(self: pyxrt.hw_context) -> pyxrt.device")
    def _get_device(self) -> device:
        if self._device is None:
            raise not_initialized("hw_context")
        return self._device

    @method("(self: pyxrt.hw_context) -> pyxrt.xclbin")
    def _get_xclbin(self) -> xclbin:
        self._live()
        return self._xclbin if self._xclbin is not None else xclbin()

    @method("(self: pyxrt.hw_context) -> pyxrt.uuid")
    def _get_xclbin_uuid(self) -> uuid:
        x = self._get_xclbin()
        return x.get_uuid() if x._meta is not None else \
            uuid("00000000-0000-0000-0000-000000000000")

    @method("(self: pyxrt.hw_context) -> pyxrt.hw_context.access_mode")
    def _get_mode(self) -> PybindEnum:
        return self._mode

    add_config = gated(_add_config_call, since(BINDING_2_23))
    get_device = gated(_get_device, since(BINDING_2_23))
    get_xclbin = gated(_get_xclbin, since(BINDING_2_23))
    get_xclbin_uuid = gated(_get_xclbin_uuid, since(BINDING_2_23))
    get_mode = gated(_get_mode, since(BINDING_2_23))

    def __del__(self) -> None:
        ctx = getattr(self, "_ctx", None)
        stack = getattr(self, "_stack", None)
        if ctx is not None and stack is not None:
            try:
                stack.destroy_context(ctx)
            except Exception:
                pass


def _stem(path: str) -> str:
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name[:-len(".xclbin")] if name.endswith(".xclbin") else name


# -- buffers ---------------------------------------------------------------------------

_next_address = itertools.count(0x4000_0000, 0x1000)
_storage_ids = itertools.count(1)


class _Storage:
    """The memory behind a buffer and its sub-buffers: the host copy the program writes,
    and the device copy the firmware reads, which changes only on a sync to the device."""

    __slots__ = ("host", "device", "id", "version", "address")

    def __init__(self, size: int) -> None:
        self.host = bytearray(size)
        self.device = bytearray(size)
        self.id = next(_storage_ids)
        self.version = 0
        self.address = next(_next_address)
        for _ in range((size - 1) // 0x1000):
            next(_next_address)


bo_flags = make_enum("flags", {"normal": 0, "cacheable": 1 << 24, "device_only": 1 << 28,
                               "host_only": 1 << 29, "p2p": 1 << 30, "svm": 1 << 27})
_CACHEABLE, _HOST_ONLY = 1 << 24, 1 << 29


class bo:
    flags = bo_flags
    # as allocated (a sub-buffer: its parent's), for inspection and XRT's capture
    _flags: Any = None
    _group = 0
    _bank = 0                            # the memory bank of its group (xcl_bo_flags)
    _parent: bo | None = None            # a sub-buffer's
    # .export_values()
    normal, cacheable, device_only, host_only, p2p, svm = \
        (getattr(bo_flags, n) for n in bo_flags.__members__)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._storage: _Storage | None = None
        self._offset = 0
        self._size = 0
        _BO_NEW(self, release(), args, kwargs, type(self).__name__)

    def _shim_bo(self, stack: Stack, size: int, flags: Any, group: int) -> None:
        """A buffer of the XDNA shim: host-only or cacheable, nothing else
        (amd/xdna-driver 856409ca src/shim device.cpp `alloc_bo`, buffer.cpp
        `bo_flags_to_type`; XRT 2.26 over the emulated driver answered so). A cacheable one
        is a device buffer in the client's heap, which each driver tree bounds as it does
        (harness.model.heap): past it XRT raises the driver's errno."""
        if size != 0 and (flags is None or flags.value == 0):
            raise RuntimeError("unsupported buffer type: none flag (err=95): Operation not "
                               "supported")
        if size != 0 and flags.value not in (_HOST_ONLY, _CACHEABLE):
            raise RuntimeError("Bad BO type. (err=22): Invalid argument")
        if size != 0 and flags.value == _CACHEABLE:
            offset = as_xrt_raises(stack.device_buffer, size)
            # the heap range goes back when the buffer does (XRT's buffer destructor)
            weakref.finalize(self, stack.free_device_buffer, offset, size)
        self._allocate(stack, size, flags, group)

    def _allocate(self, stack: Stack, size: int, flags: Any = None, group: int = 0) -> None:
        if size == 0:
            raise RuntimeError("Failed to allocate buffer object of size 0: "
                               "Invalid argument")
        self._storage = _Storage(size)
        self._size = size
        self._flags, self._group = flags, group      # as allocated, for inspection
        self._bank = group & 0xFFFF

    def _sub_buffer(self, parent: bo, size: int, offset: int) -> None:
        storage = parent._s()
        if offset + size > parent._size:
            raise RuntimeError(f"Sub buffer of {size} bytes at offset {offset} exceeds the "
                               f"parent's {parent._size} bytes")
        self._storage, self._offset, self._size = storage, parent._offset + offset, size
        # buffer_sub: the parent's flags and memory group, and its sync goes through the
        # parent's (xrt_bo.cpp, which XRT's capture records parent first)
        self._flags, self._group, self._bank = parent._flags, parent._group, parent._bank
        self._parent = parent

    def _s(self) -> _Storage:
        if self._storage is None:
            raise not_initialized("bo")
        return self._storage

    def write(self, *args: Any, **kwargs: Any) -> None:
        _BO_WRITE(self, release(), args, kwargs)

    def _write(self, raw: memoryview, seek: int) -> None:
        storage = self._s()
        if seek + len(raw) > self._size:
            raise RuntimeError(f"bo::write: {len(raw)} bytes at offset {seek} exceed the "
                               f"buffer size {self._size}")
        start = self._offset + seek
        storage.host[start:start + len(raw)] = raw

    def read(self, *args: Any, **kwargs: Any) -> Any:
        return _BO_READ(self, release(), args, kwargs)

    def _read(self, size: int, skip: int) -> Any:
        import numpy as np  # the binding returns a numpy array; only read needs numpy
        storage = self._s()
        if skip + size > self._size:
            raise RuntimeError(f"bo::read: {size} bytes at offset {skip} exceed the buffer "
                               f"size {self._size}")
        start = self._offset + skip
        return np.frombuffer(bytes(storage.host[start:start + size]), dtype=np.int8).copy()

    def sync(self, *args: Any, **kwargs: Any) -> None:
        if len(args) == 1 and not kwargs and args[0].__class__ is xclBOSyncDirection:
            return self._sync(args[0])         # the common call, without the dispatch
        return _BO_SYNC(self, release(), args, kwargs)

    def _sync(self, direction: PybindEnum, size: int | None = None, offset: int = 0) -> None:
        size = self._size if size is None else size
        storage = self._s()
        if offset + size > self._size:
            raise RuntimeError(f"bo::sync: {size} bytes at offset {offset} exceed the buffer "
                               f"size {self._size}")
        start, end = self._offset + offset, self._offset + offset + size
        if direction.value == 0:      # host -> device: what the firmware will read
            storage.device[start:end] = storage.host[start:end]
            storage.version += 1
        else:
            storage.host[start:end] = storage.device[start:end]

    @method("(self: pyxrt.bo) -> memoryview")
    def map(self) -> memoryview:
        storage = self._s()
        return memoryview(storage.host)[self._offset:self._offset + self._size]

    @method("(self: pyxrt.bo) -> int")
    def size(self) -> int:
        self._s()
        return self._size

    @method("(self: pyxrt.bo) -> int")
    def address(self) -> int:
        return self._s().address + self._offset

    def _device_bytes(self) -> bytes:
        storage = self._s()
        return bytes(storage.device[self._offset:self._offset + self._size])

    def _device_version(self) -> tuple[int, int, int, int]:
        storage = self._s()
        return storage.id, storage.version, self._offset, self._size


def _ctx_stack(ctx: hw_context) -> Stack:
    ctx._live()
    if ctx._stack is None:
        raise not_initialized("hw_context")
    return ctx._stack


def _bo_overloads() -> tuple[Overloads, Overloads, Overloads, Overloads]:
    """bo's constructors, write, read and sync."""
    group = ("group", UINT)
    flags = ("flags", instance_of(bo_flags))
    new = since(BINDING_2_23)
    ctx = ("hwctx", instance_of(hw_context))
    direction = ("direction", instance_of(xclBOSyncDirection))
    return (Overloads("__init__", "bo", [
        Overload("(device: pyxrt.device, size: int, flags: pyxrt.bo.flags, group: int)",
                 (_device_param(), ("size", SIZE_T), flags, group),
                 lambda self, d, size, f, g: self._shim_bo(d._open(), size, f, g),
                 named=True),
        Overload("(hwctx: pyxrt.hw_context, size: int, flags: pyxrt.bo.flags, group: int)",
                 (ctx, ("size", SIZE_T), flags, group),
                 lambda self, c, size, f, g: self._shim_bo(_ctx_stack(c), size, f, g), new,
                 named=True),
        Overload("(hwctx: pyxrt.hw_context, size: int, group: int)",
                 (ctx, ("size", SIZE_T), group),
                 lambda self, c, size, g: self._shim_bo(_ctx_stack(c), size, None, g), new,
                 named=True),
        Overload("(arg0: pyxrt.bo, arg1: int, arg2: int)",
                 (("parent", instance_of(bo)), ("size", SIZE_T), ("offset", SIZE_T)),
                 "_sub_buffer"),
    ], constructor=True), Overloads("write", "bo", [
        Overload("(self: pyxrt.bo, arg0: Buffer, arg1: int) -> None",
                 (("data", buffer), ("seek", SIZE_T)), "_write"),
    ]), Overloads("read", "bo", [
        Overload("(self: pyxrt.bo, arg0: int, arg1: int) -> numpy.ndarray[numpy.int8]",
                 (("size", SIZE_T), ("skip", SIZE_T)), "_read"),
    ]), Overloads("sync", "bo", [
        Overload("(self: pyxrt.bo, arg0: pyxrt.xclBOSyncDirection, arg1: int, arg2: int) "
                 "-> None", (direction, ("size", SIZE_T), ("offset", SIZE_T)), "_sync"),
        Overload("(self: pyxrt.bo, arg0: pyxrt.xclBOSyncDirection) -> None", (direction,),
                 "_sync"),
    ]))


_BO_NEW, _BO_WRITE, _BO_READ, _BO_SYNC = _bo_overloads()


# -- ELF, program, module (FastFlowLM's (3, 0, 0, bo...) path; full ELFs) -------------------

def _capsule_bytes(capsule: Any, size: int) -> bytes:
    """The `size` bytes a PyCapsule points at, read as pybind11's `void*` caster reads the
    pointer (PyCapsule_GetPointer with the capsule's own name). A wrong pointer crashes,
    as it does in the real binding."""
    import ctypes
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    pointer = api.PyCapsule_GetPointer(capsule, api.PyCapsule_GetName(capsule))
    return ctypes.string_at(pointer, size) if pointer else b""


def _void_pointer(value: Any) -> Any:
    """pybind11's `void*` caster: None, a capsule, or an object of a bound class."""
    if value is None or type(value).__name__ == "PyCapsule" \
            or type(value).__module__.startswith(("harness.sim", "pyxrt")):
        return value
    raise NoMatch


_elf_ids = itertools.count(1)


class elf:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._elf = None
        self._path = ""
        _ELF_NEW(self, release(), args, kwargs)

    def _read(self, path: str) -> None:
        # elf_impl / load_elfio: a missing file and a malformed one say the same
        try:
            parsed = _elf_file(path)
        except (OSError, ElfError):
            raise RuntimeError(f"{path} is not found or is not a valid ELF file") from None
        self._set(parsed, path)

    def _from_pointer(self, data: Any, size: int) -> None:
        raw = _capsule_bytes(data, size) if type(data).__name__ == "PyCapsule" else b""
        try:
            parsed = parse_elf(raw, None)
        except ElfError:
            raise RuntimeError("not valid ELF data") from None
        self._set(parsed, "")

    def _set(self, parsed: Any, path: str) -> None:
        # create_elf_impl (2.23 on) takes only the AIE platforms' OS/ABI values
        if release().has(BINDING_2_23) and parsed.osabi not in (0x40, 0x45, 0x46, 0x47, 0x48,
                                                                  0x49):
            raise RuntimeError(f"ELF contains unsupported platform OS/ABI: {parsed.osabi}")
        if release().has(BINDING_2_23) and parsed.preemption == "unpaired":
            # elf_aie_gen2::initialize_save_restore_buf_map (xrt_elf.cpp, 2.23 on)
            raise RuntimeError("Invalid ELF: preempt save and restore sections are not paired")
        self._elf, self._path = parsed, path
        self._address = next(_next_address)          # where its control code would sit
        self._id = next(_elf_ids)

    def _parsed(self) -> Any:
        if self._elf is None:
            raise not_initialized("elf")
        return self._elf

    def _label(self) -> str:
        return _stem(self._path).removesuffix(".elf") if self._path else f"elf{self._id}"


def _elf_file(path: str) -> Any:
    """The ELF in file `path`, parsed again only when the file's size or time changed (every
    trial of a run opens the same control code: its parse was a tenth of a trial)."""
    st = os.stat(path)
    return _parsed_elf(path, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _parsed_elf(path: str, size: int, mtime_ns: int) -> Any:
    return parse_elf(Path(path).read_bytes(), path)   # an Elf is frozen: shared by all


_ELF_NEW = Overloads("__init__", "elf", [
    Overload("(arg0: str)", (("filename", text),), "_read"),
    Overload("(arg0: capsule, arg1: int)", (("data", _void_pointer), ("size", SIZE_T)),
             "_from_pointer"),
], constructor=True)


class program:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._e: elf | None = None
        _PROGRAM_NEW(self, release(), args, kwargs)

    def _from_elf(self, e: elf) -> None:
        self._e = e

    @method("(self: pyxrt.program) -> int")
    def get_partition_size(self) -> int:
        if self._e is None:
            raise not_initialized("program")
        columns = self._e._parsed().partition_size
        if columns is None:
            raise RuntimeError(NO_CONFIGURATION)
        return columns


_PROGRAM_NEW = Overloads("__init__", "program", [
    Overload("(arg0: pyxrt.elf)", (("elf", instance_of(elf)),), "_from_elf"),
], constructor=True)


class module:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._elf: elf | None = None
        self._hwctx: hw_context | None = None
        _MODULE_NEW(self, release(), args, kwargs)

    def _from_elf(self, e: elf) -> None:
        if e._parsed().preemption == "unpaired":
            # module_elf_aie2p::initialize_save_restore_buf (xrt_module.cpp, up to 2.21;
            # from 2.23 the elf itself refuses it)
            raise RuntimeError("Invalid elf because preempt save and restore is not paired")
        self._elf = e

    def _from_pointer(self, userptr: Any, size: int, xuid: uuid) -> None:
        raise RuntimeError("module: no control code at the given pointer")

    def _with_context(self, parent: module, ctx: hw_context) -> None:
        self._elf, self._hwctx = parent._elf, ctx

    @method("(self: pyxrt.module) -> pyxrt.hw_context")
    def get_hw_context(self) -> hw_context:
        if self._elf is None:
            raise not_initialized("module")
        return self._hwctx if self._hwctx is not None else hw_context()

    @method("(self: pyxrt.module) -> pyxrt.uuid")
    def _get_cfg_uuid(self) -> uuid:
        if self._elf is None:
            raise not_initialized("module")
        return uuid(self._elf._parsed().cfg_uuid or "00000000-0000-0000-0000-000000000000")

    get_cfg_uuid = gated(_get_cfg_uuid, until(BINDING_2_23))


_MODULE_NEW = Overloads("__init__", "module", [
    Overload("(elf: pyxrt.elf)", (("elf", instance_of(elf)),), "_from_elf", named=True),
    Overload("(arg0: capsule, arg1: int, arg2: pyxrt.uuid)",
             (("userptr", _void_pointer), ("size", SIZE_T), ("uuid", instance_of(uuid))),
             "_from_pointer", until(BINDING_2_23)),
    Overload("(arg0: pyxrt.module, arg1: pyxrt.hw_context)",
             (("parent", instance_of(module)), ("hwctx", instance_of(hw_context))),
             "_with_context", until(BINDING_2_23)),
], constructor=True)


def _hw_context_overloads() -> Overloads:
    """hw_context's constructors (made once the ELF class exists)."""
    mode = ("mode", instance_of(hw_access_mode))
    cfg = ("cfg_param", cfg_params)
    the_uuid = ("uuid", instance_of(uuid))
    the_xclbin = ("xclbin", instance_of(xclbin))
    path = ("xclbin_path", text)
    the_elf = ("elf", instance_of(elf))
    new = since(BINDING_2_23)
    return Overloads("__init__", "hw_context", [
        Overload("()", (), nothing, named=True),
        Overload("(device: pyxrt.device, uuid: pyxrt.uuid)", (_device_param(), the_uuid),
                 "_from_uuid", named=True),
        Overload("(device: pyxrt.device, uuid: pyxrt.uuid, mode: pyxrt.hw_context."
                 "access_mode)", (_device_param(), the_uuid, mode), "_from_uuid", new,
                 named=True),
        Overload("(device: pyxrt.device, uuid: pyxrt.uuid, cfg_param: dict[str, int])",
                 (_device_param(), the_uuid, cfg), "_from_uuid", new, named=True),
        Overload("(device: pyxrt.device, xclbin: pyxrt.xclbin)",
                 (_device_param(), the_xclbin), "_from_xclbin", new, named=True),
        Overload("(device: pyxrt.device, xclbin: pyxrt.xclbin, mode: pyxrt.hw_context."
                 "access_mode)", (_device_param(), the_xclbin, mode), "_from_xclbin",
                 new, named=True),
        Overload("(device: pyxrt.device, xclbin: pyxrt.xclbin, cfg_param: dict[str, int])",
                 (_device_param(), the_xclbin, cfg), "_from_xclbin", new, named=True),
        Overload("(device: pyxrt.device, xclbin_path: str)", (_device_param(), path),
                 "_from_path", new, named=True),
        Overload("(device: pyxrt.device, xclbin_path: str, mode: pyxrt.hw_context."
                 "access_mode)", (_device_param(), path, mode), "_from_path", new,
                 named=True),
        Overload("(device: pyxrt.device, xclbin_path: str, cfg_param: dict[str, int])",
                 (_device_param(), path, cfg), "_from_path", new, named=True),
        Overload("(device: pyxrt.device, cfg_param: dict[str, int], mode: pyxrt."
                 "hw_context.access_mode)", (_device_param(), cfg, mode), "_staged",
                 new, named=True),
        Overload("(device: pyxrt.device, elf: pyxrt.elf)", (_device_param(), the_elf),
                 "_from_elf", since(HW_CONTEXT_ELF), named=True),
        Overload("(device: pyxrt.device, elf: pyxrt.elf, cfg_param: dict[str, int], mode: "
                 "pyxrt.hw_context.access_mode)", (_device_param(), the_elf, cfg, mode),
                 lambda self, d, e, c, m: self._from_elf(d, e), new, named=True),
    ], constructor=True)


_HW_CONTEXT_NEW = _hw_context_overloads()
_ADD_CONFIG = Overloads("add_config", "hw_context", [
    Overload("(self: pyxrt.hw_context, elf: pyxrt.elf) -> None",
             (("elf", instance_of(elf)),), "_add_config", named=True),
])


# -- graph and aie (master) ------------------------------------------------------------

graph_access_mode = make_enum("access_mode", {"exclusive": 0, "primary": 1, "shared": 2})


class graph:
    """An AIE graph. FastFlowLM's and XRT's validate xclbins carry no graph metadata, so
    opening any graph fails as XRT fails for an unknown name."""

    access_mode = graph_access_mode
    exclusive, primary, shared = (graph_access_mode.exclusive, graph_access_mode.primary,
                                  graph_access_mode.shared)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _GRAPH_NEW(self, release(), args, kwargs)

    def _open(self, ctx: hw_context, name: str, mode: Any = None) -> None:
        ctx._live()
        raise RuntimeError(f"No such graph '{name}' in the hardware context's xclbin")

    def _g(self, *args: Any, **kwargs: Any) -> Any:
        raise not_initialized("graph")

    # The binding's methods; with no graph to open they are reachable only on an empty
    # handle (a subclass, say), where the real binding would crash.
    reset = get_timestamp = gmio_bank_id = run = wait = suspend = resume = end = update = \
        read = _g


_GRAPH_NEW = Overloads("__init__", "graph", [
    Overload("(ctx: pyxrt.hw_context, name: str)",
             (("ctx", instance_of(hw_context)), ("name", text)), "_open", named=True),
    Overload("(ctx: pyxrt.hw_context, name: str, mode: pyxrt.graph.access_mode)",
             (("ctx", instance_of(hw_context)), ("name", text),
              ("mode", instance_of(graph_access_mode))), "_open", named=True),
], constructor=True)


class aie_bo(bo):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._storage = None
        self._offset = self._size = 0
        _AIE_BO_NEW(self, release(), args, kwargs)

    def sync(self, *args: Any, **kwargs: Any) -> None:   # type: ignore[override]
        _AIE_BO_SYNC(self, release(), args, kwargs)

    def _no_port(self, port: str, *rest: Any) -> None:
        self._s()
        raise RuntimeError(f"No GMIO port named '{port}' in the xclbin")


def _aie_bo_overloads() -> tuple[Overloads, Overloads]:
    """aie.bo's constructors and sync."""
    flags, group, size = ("flags", instance_of(bo_flags)), ("group", UINT), ("size", SIZE_T)
    ctx = ("ctx", instance_of(hw_context))
    sync_dir = ("direction", instance_of(xclBOSyncDirection))
    return (Overloads("__init__", "aie.bo", [
        Overload("(device: pyxrt.device, size: int, flags: pyxrt.bo.flags, group: int)",
                 (_device_param(), size, flags, group),
                 lambda self, d, n, f, g: self._allocate(d._open(), n), named=True),
        Overload("(ctx: pyxrt.hw_context, size: int, flags: pyxrt.bo.flags, group: int)",
                 (ctx, size, flags, group),
                 lambda self, c, n, f, g: self._allocate(_ctx_stack(c), n), named=True),
        Overload("(ctx: pyxrt.hw_context, size: int, group: int)", (ctx, size, group),
                 lambda self, c, n, g: self._allocate(_ctx_stack(c), n), named=True),
    ], constructor=True), Overloads("sync", "aie.bo", [
        Overload("(self: pyxrt.aie.bo, port: str, direction: pyxrt.xclBOSyncDirection, "
                 "size: int, offset: int) -> None",
                 (("port", text), sync_dir, ("size", SIZE_T), ("offset", SIZE_T)),
                 "_no_port", named=True),
        Overload("(self: pyxrt.aie.bo, port: str, direction: pyxrt.xclBOSyncDirection) -> "
                 "None", (("port", text), sync_dir), "_no_port", named=True),
    ]))


_AIE_BO_NEW, _AIE_BO_SYNC = _aie_bo_overloads()


aie_bo.__name__ = aie_bo.__qualname__ = "bo"
aie = types.ModuleType("pyxrt.aie", "AIE-specific XRT functionality.")
vars(aie).update(bo=aie_bo)

GATED_MODULE_NAMES = {"graph": GRAPH_AIE, "aie": GRAPH_AIE}


def _as_pyxrt(module_name: str, *classes: type) -> None:
    """The binding's classes live in module `pyxrt` (reprs read ``<pyxrt.device object
    at 0x...>``), its submodules' in `pyxrt.ext` and `pyxrt.aie`."""
    for cls in classes:
        cls.__module__ = module_name


_as_pyxrt("pyxrt", uuid, xclbin, xclbin.xclbinip, xclbin.xclbinkernel, xclbin.xclbinmem,
          xclbinip_vector, xclbinkernel_vector, xclbinmem_vector, device, hw_context, bo,
          elf, program, module, graph, ert_cmd_state, xclBOSyncDirection, xrt_info_device,
          xrt_msg_level, hw_access_mode, bo_flags, graph_access_mode)
_as_pyxrt("pyxrt.aie", aie_bo)
