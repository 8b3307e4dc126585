"""The pyxrt objects of the simulated stack: enums, xclbin, device, hw_context, buffers, ELF.

Same names, constructors and failure types as Xilinx/XRT's binding
(`src/python/pybind11/src/pyxrt.cpp`, STACK.md 3): pybind11-style enums that
equal only themselves (`ert_cmd_state` has no RUNNING member, yet a running
command still reports value 3), `xclbin(path)` raising RuntimeError on a
corrupt file, buffers whose device copy changes only on `sync`.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import XclbinError
from harness.sim import control
from harness.sim.stack import Context, Stack
from harness.xclbin import read_xclbin_cached

XCL_BO_FLAGS_NONE = 0


# -- pybind11-style enums ---------------------------------------------------------

class PybindEnum:
    """Like a pybind11 `py::enum_` value: any int, `.name`/`.value`, equal only to
    values of the same enum (never to plain ints), `???` for unnamed values."""

    __slots__ = ("_value",)
    _names: dict[int, str] = {}
    __members__: dict[str, Any] = {}

    def __init__(self, value: int) -> None:
        self._value = int(value)

    @property
    def value(self) -> int:
        return self._value

    @property
    def name(self) -> str:
        return self._names.get(self._value, "???")

    def __int__(self) -> int:
        return self._value

    __index__ = __int__

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._value == self._value

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._value))

    def __repr__(self) -> str:
        return f"<{type(self).__name__}.{self.name}: {self._value}>"

    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


def make_enum(name: str, members: dict[str, int]) -> type[PybindEnum]:
    cls = type(name, (PybindEnum,), {"__slots__": (),
                                      "_names": {v: k for k, v in members.items()}})
    for key, value in members.items():
        setattr(cls, key, cls(value))
    cls.__members__ = {key: getattr(cls, key) for key in members}
    return cls


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
    "name": 5, "nodma": 6, "offline": 7})

TIMEOUT_VALUE = 8
BDF = "0000:c7:00.1"


def enumerate_devices() -> int:
    return 1


def as_state(value: int) -> PybindEnum:
    return ert_cmd_state(value)


# -- xclbin, uuid, device, hw_context ----------------------------------------------

class uuid:
    def __init__(self, text: str) -> None:
        self._text = str(text)

    def to_string(self) -> str:
        return self._text


class xclbin:
    class xclbinkernel:
        def __init__(self, name: str, nargs: int) -> None:
            self._name, self._nargs = name, nargs

        def get_name(self) -> str:
            return self._name

        def get_num_args(self) -> int:
            return self._nargs

    class xclbinmem:
        def __init__(self, bank) -> None:
            self._bank = bank

        def get_tag(self) -> str:
            return self._bank.tag

        def get_base_address(self) -> int:
            return self._bank.base_address

        def get_size_kb(self) -> int:
            return self._bank.size_kb

        def get_used(self) -> bool:
            return self._bank.used

        def get_index(self) -> int:
            return self._bank.index

    def __init__(self, path: str) -> None:
        try:
            self._meta = read_xclbin_cached(path)
        except XclbinError as err:
            raise RuntimeError(str(err)) from None
        self._path = str(path)

    def get_uuid(self) -> uuid:
        return uuid(self._meta.uuid)

    def get_kernels(self) -> list[xclbin.xclbinkernel]:
        return [xclbin.xclbinkernel(k.name, len(k.args)) for k in self._meta.kernels]

    def get_xsa_name(self) -> str:
        return self._meta.vbnv

    def get_mems(self) -> list[xclbin.xclbinmem]:
        return [xclbin.xclbinmem(bank) for bank in self._meta.mem_topology]


class device:
    def __init__(self, index: int | str | None = None) -> None:
        self._stack: Stack | None = None
        self._registered: dict[str, xclbin] = {}
        if index is None:
            return
        if index not in (0, BDF):
            raise RuntimeError(f"No such device '{index}' (the simulated stack has one NPU, "
                               f"index 0, {BDF})")
        self._stack = control.current()

    def _open(self) -> Stack:
        if self._stack is None:
            raise RuntimeError("device object is not initialized")
        return self._stack

    def register_xclbin(self, x: xclbin) -> None:
        self._open()
        self._registered[x._meta.uuid] = x

    def load_xclbin(self, x: xclbin | str) -> uuid:
        raise RuntimeError("load_xclbin is not supported on this device; use "
                           "register_xclbin() and hw_context()")

    def get_xclbin_uuid(self) -> uuid:
        return uuid("00000000-0000-0000-0000-000000000000")

    def get_info(self, key: PybindEnum) -> str:
        model = self._open().device
        if key == xrt_info_device.bdf:
            return BDF
        if key == xrt_info_device.name:
            return f"RyzenAI-{self._open().profile.device} ({model.name}, simulated)"
        return "NA"


class hw_context:
    def __init__(self, dev: device | None = None, xuid: uuid | None = None) -> None:
        self._ctx: Context | None = None
        if dev is None:
            return
        stack = dev._open()
        x = dev._registered.get(xuid.to_string()) if xuid is not None else None
        if x is None:
            raise RuntimeError(f"No xclbin with uuid {xuid.to_string() if xuid else None} "
                               "is registered with this device")
        part = x._meta.partition
        start = part.start_columns[0] if part and part.start_columns else 0
        width = part.column_width if part else stack.device.columns
        self._stack = stack
        self._xclbin = x
        self._label = _stem(x._path)
        self._ctx = stack.create_context(self._label, start, width)

    def __del__(self) -> None:
        ctx = getattr(self, "_ctx", None)
        if ctx is not None:
            try:
                self._stack.destroy_context(ctx)
            except Exception:
                pass


def _stem(path: str) -> str:
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name[:-len(".xclbin")] if name.endswith(".xclbin") else name


# -- buffers ---------------------------------------------------------------------------

_bo_serial = itertools.count(1)
_next_address = itertools.count(0x4000_0000, 0x1000)


class bo:
    flags = make_enum("flags", {"normal": 0, "cacheable": 1 << 24, "device_only": 1 << 28,
                            "host_only": 1 << 29, "p2p": 1 << 30, "svm": 1 << 27})
    normal = flags.normal
    cacheable = flags.cacheable
    device_only = flags.device_only
    host_only = flags.host_only
    p2p = flags.p2p
    svm = flags.svm

    def __init__(self, dev: device, size: int, flags: PybindEnum | int, group: int) -> None:
        dev._open()
        if int(size) <= 0:
            raise RuntimeError(f"Failed to allocate buffer object of size {size}")
        self._size = int(size)
        self._flags = int(flags)
        self._group = int(group)
        self._host = bytearray(self._size)
        self._device = bytes(self._size)
        self._serial = next(_bo_serial)
        self._version = 0
        self._address = next(_next_address)
        for _ in range((self._size - 1) // 0x1000):
            next(_next_address)

    def write(self, data: Any, seek: int) -> None:
        raw = memoryview(data).cast("B")
        if seek < 0 or seek + len(raw) > self._size:
            raise RuntimeError(f"bo::write: {len(raw)} bytes at offset {seek} exceed the "
                               f"buffer size {self._size}")
        self._host[seek:seek + len(raw)] = raw

    def read(self, size: int, skip: int) -> np.ndarray:
        if skip < 0 or skip + size > self._size:
            raise RuntimeError(f"bo::read: {size} bytes at offset {skip} exceed the buffer "
                               f"size {self._size}")
        return np.frombuffer(bytes(self._host[skip:skip + size]), dtype=np.int8).copy()

    def sync(self, direction: PybindEnum, size: int | None = None,
             offset: int = 0) -> None:
        end = self._size if size is None else offset + size
        if int(direction) == 0:      # host -> device: what the firmware will read
            self._device = self._device[:offset] + bytes(self._host[offset:end]) \
                + self._device[end:]
            self._version += 1
        else:
            self._host[offset:end] = self._device[offset:end]

    def map(self) -> memoryview:
        return memoryview(self._host)

    def size(self) -> int:
        return self._size

    def address(self) -> int:
        return self._address


# -- ELF path (FastFlowLM's (3, 0, 0, bo...) calls) -----------------------------------

class elf:
    def __init__(self, source: str | bytes, size: int | None = None) -> None:
        if isinstance(source, (bytes, bytearray)):
            data = bytes(source)
        else:
            try:
                data = Path(source).read_bytes()
            except OSError as err:
                raise RuntimeError(f"cannot open ELF {source}: {err.strerror}") from None
        if bytes(data[:4]) != b"\x7fELF":
            raise RuntimeError("not a valid ELF file")
        self._data = bytes(data)


class module:
    def __init__(self, source: elf, *rest: Any) -> None:
        if not isinstance(source, elf):
            raise TypeError("module(): incompatible constructor arguments")
        self._elf = source


