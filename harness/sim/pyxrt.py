"""A drop-in `pyxrt` backed by the simulated stack.

Same class names, constructors, methods and failure types as Xilinx/XRT's
binding (`src/python/pybind11/src/pyxrt.cpp`, STACK.md 3), including its
quirks: `ert_cmd_state` has no RUNNING member (a running command still
reports value 3), `runlist.wait(timeout)` raises TypeError because the
binding has no chrono casters, a failed runlist raises a plain RuntimeError
whose text is XRT's, and `run.wait(ms)` returns TIMEOUT when the host wait
expires. XRT's own rules (`runlist_impl` in `xrt_kernel.cpp`, STACK.md 2) live
here too: runlists are submitted as chains of 24, the wait is on the last
chain, and a failure is located by walking the chains.

Real XRT crashes when a kernel is given more arguments than it declares; this
module raises instead, naming the kernel.
"""

from __future__ import annotations

import itertools
import weakref
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import XclbinError
from harness.sim import control
from harness.sim.stack import START_CU, START_NPU, Command, Context, Job, Stack
from harness.txn import TxnError, check_stream
from harness.xclbin import read_xclbin_cached

XCL_BO_FLAGS_NONE = 0


# -- pybind11-style enums ---------------------------------------------------------

class _PybindEnum:
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


def _enum(name: str, members: dict[str, int]) -> type[_PybindEnum]:
    cls = type(name, (_PybindEnum,), {"__slots__": (),
                                      "_names": {v: k for k, v in members.items()}})
    for key, value in members.items():
        setattr(cls, key, cls(value))
    cls.__members__ = {key: getattr(cls, key) for key in members}
    return cls


# RUNNING (3) is deliberately absent, as in the binding.
ert_cmd_state = _enum("ert_cmd_state", {
    "ERT_CMD_STATE_NEW": 1, "ERT_CMD_STATE_QUEUED": 2, "ERT_CMD_STATE_COMPLETED": 4,
    "ERT_CMD_STATE_ERROR": 5, "ERT_CMD_STATE_ABORT": 6, "ERT_CMD_STATE_SUBMITTED": 7,
    "ERT_CMD_STATE_TIMEOUT": 8, "ERT_CMD_STATE_NORESPONSE": 9, "ERT_CMD_STATE_SKERROR": 10,
    "ERT_CMD_STATE_SKCRASHED": 11})
xclBOSyncDirection = _enum("xclBOSyncDirection", {
    "XCL_BO_SYNC_BO_TO_DEVICE": 0, "XCL_BO_SYNC_BO_FROM_DEVICE": 1,
    "XCL_BO_SYNC_BO_GMIO_TO_AIE": 2, "XCL_BO_SYNC_BO_AIE_TO_GMIO": 3})
xrt_info_device = _enum("xrt_info_device", {
    "bdf": 0, "interface_uuid": 1, "kdma": 2, "max_clock_frequency_mhz": 3, "m2m": 4,
    "name": 5, "nodma": 6, "offline": 7})

_TIMEOUT = 8
BDF = "0000:c7:00.1"


def enumerate_devices() -> int:
    return 1


def _state(value: int) -> _PybindEnum:
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

    def get_info(self, key: _PybindEnum) -> str:
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
    flags = _enum("flags", {"normal": 0, "cacheable": 1 << 24, "device_only": 1 << 28,
                            "host_only": 1 << 29, "p2p": 1 << 30, "svm": 1 << 27})
    normal = flags.normal
    cacheable = flags.cacheable
    device_only = flags.device_only
    host_only = flags.host_only
    p2p = flags.p2p
    svm = flags.svm

    def __init__(self, dev: device, size: int, flags: _PybindEnum | int, group: int) -> None:
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

    def sync(self, direction: _PybindEnum, size: int | None = None,
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


# -- kernels and runs ------------------------------------------------------------------

class kernel:
    cu_access_mode = _enum("cu_access_mode", {"exclusive": 0, "shared": 1, "none": 2})

    def __init__(self, ctx: hw_context, name: str, *rest: Any) -> None:
        if not isinstance(ctx, hw_context):
            raise RuntimeError("kernel(device, uuid, name) needs an xclbin loaded with "
                               "load_xclbin, which this device does not support; use "
                               "kernel(hw_context, name)")
        if ctx._ctx is None:
            raise RuntimeError("hw_context object is not initialized")
        wanted = name.split(":", 1)[0]
        try:
            meta = ctx._xclbin._meta.kernel(wanted)
        except XclbinError:
            raise RuntimeError(f"No compute units matching '{name}'") from None
        self._hwctx = ctx
        self._meta = meta
        self._name = meta.name
        self._nargs = len(meta.args)
        self._arg_bytes = meta.arg_bytes
        self._elf = False
        self._opcode = START_CU
        stack = ctx._stack
        self._stack = stack
        self._latency_us = stack.latency_for(ctx._label, meta.name)
        self._hang_at = frozenset(stack.profile.hang_at)
        self._width = ctx._ctx.width
        self._dev_gen = stack.device.dev_gen

    def group_id(self, argno: int) -> int:
        return self._hwctx._xclbin._meta.group_id(self._name, argno)

    def __call__(self, *args: Any) -> run:
        if len(args) > self._nargs:
            raise RuntimeError(f"kernel {self._name} declares {self._nargs} arguments, "
                               f"{len(args)} were given (real XRT crashes here)")
        r = run(self)
        for index, value in enumerate(args):
            r.set_arg(index, value)
        r.start()
        return r


class _Ext:
    """`pyxrt.ext`: kernels built from an ELF module (ERT_START_NPU commands)."""

    class kernel(kernel):
        def __init__(self, ctx: hw_context, mod: module | str, name: str | None = None):
            if isinstance(mod, str):
                super().__init__(ctx, mod)
                return
            super().__init__(ctx, name or "")
            self._elf = True
            self._opcode = START_NPU

    bo = bo


ext = _Ext()

_fault_cache: dict[tuple, str | None] = {}


class run:
    __slots__ = ("_kernel", "_args", "_job", "_final", "_runlist", "__weakref__")

    def __init__(self, k: kernel | None = None) -> None:
        self._kernel = k
        self._args: dict[int, Any] = {}
        self._job: Job | None = None
        self._final: int | None = None
        # XRT's run_impl keeps a plain pointer to its runlist, cleared when the list dies;
        # a weak reference does the same without a run <-> runlist reference cycle.
        self._runlist: weakref.ref | None = None

    def _k(self) -> kernel:
        if self._kernel is None:
            raise RuntimeError("run object is not initialized")
        return self._kernel

    def set_arg(self, index: int, value: bo | int) -> None:
        k = self._kernel
        if k is None or not 0 <= index < k._nargs or not isinstance(value, (bo, int)):
            self._bad_arg(index, value)
        self._args[index] = value

    def _bad_arg(self, index: int, value: Any) -> None:
        k = self._k()
        if not isinstance(value, (bo, int)):
            raise TypeError("set_arg(): incompatible function arguments")
        raise RuntimeError(f"kernel {k._name} has no argument {index} (it declares "
                           f"{k._nargs}; real XRT crashes here)")

    def start(self) -> None:
        k = self._k()
        if self._runlist is not None and self._runlist() is not None:
            raise RuntimeError("Run object belongs to a runlist and cannot be explicitly "
                               "started")
        stack = k._hwctx._stack
        self._final = None
        self._job = stack.submit(k._hwctx._ctx, [self._command(None)], chained=False)

    def wait(self, timeout_ms: int = 0) -> _PybindEnum:
        if self._job is None:
            return _state(self._final or 1)
        job = self._job
        stack = self._k()._hwctx._stack
        if timeout_ms:
            if not stack.run_until(lambda: job.done, timeout_ms * 1000.0):
                return _state(_TIMEOUT)   # the host wait expired: XRT says TIMEOUT ("bad!")
        else:
            stack.run_until(lambda: job.done)
        return self.state()

    def state(self) -> _PybindEnum:
        if self._final is not None:
            return _state(self._final)
        if self._job is None:
            return _state(1)
        return _state(self._job.visible_state(self._k()._hwctx._stack.now))

    def _command(self, position: int | None) -> Command:
        k = self._kernel
        fault = None if k._elf else self._instruction_fault(k)
        hang = position is not None and position in k._hang_at
        return Command(k._latency_us, k._arg_bytes, k._opcode, k._name, fault, hang)

    def _instruction_fault(self, k: kernel) -> str | None:
        # The firmware reads the device copy of the instruction buffer: a stream that
        # was never synced to the device, or a wrong ninstr, is rejected there.
        instr, ninstr = self._args.get(1), self._args.get(2)
        if not isinstance(instr, bo):
            return "argument 1 is not an instruction buffer"
        key = (instr._serial, instr._version, ninstr, k._width, k._dev_gen)
        try:
            return _fault_cache[key]
        except KeyError:
            pass
        try:
            check_stream(instr._device, columns=k._width, dev_gen=k._dev_gen,
                         ninstr_words=ninstr if isinstance(ninstr, int) else 0)
            fault = None
        except TxnError as err:
            fault = f"invalid instruction stream: {err}"
        if len(_fault_cache) > 10_000:      # one entry per instruction buffer state
            _fault_cache.clear()
        _fault_cache[key] = fault
        return fault


# -- runlists --------------------------------------------------------------------------

class runlist:
    def __init__(self, ctx: hw_context | None = None) -> None:
        self._hwctx = ctx
        self._runs: list[run] = []
        self._jobs: list[Job] = []
        self._running = False

    def add(self, r: run) -> None:
        if self._hwctx is None:
            raise RuntimeError("cannot add run object to uninitialized runlist")
        if self._running:
            raise RuntimeError("runlist must be idle before adding run objects, current "
                               "state: running")
        if r._k()._hwctx is not self._hwctx:
            raise RuntimeError("run object's hardware context does not match the "
                               "runlist's hardware context")
        if r._runlist is not None and r._runlist() is not None:
            raise RuntimeError("Run object already associated with a runlist")
        r._runlist = weakref.ref(self)
        self._runs.append(r)

    def execute(self) -> None:
        if self._running:
            raise RuntimeError("runlist must be idle before submitting for execution, "
                               "current state: running")
        if not self._runs:
            return
        stack = self._hwctx._stack
        size = stack.profile.xrt_chain
        commands = [r._command(i) for i, r in enumerate(self._runs)]
        self._running = True
        self._jobs = [stack.submit(self._hwctx._ctx, commands[i:i + size], chained=True)
                      for i in range(0, len(commands), size)]
        for index, r in enumerate(self._runs):
            r._job = self._jobs[index // size]
            r._final = None

    def wait(self, *timeout: Any) -> None:
        if timeout:
            # pyxrt binds wait(std::chrono::milliseconds) without pybind11/chrono.h.
            raise TypeError(
                "wait(): incompatible function arguments. The following argument types "
                "are supported:\n    1. (self: pyxrt.runlist) -> None\n    2. (self: "
                "pyxrt.runlist, arg0: std::chrono::duration<long, std::ratio<1l, 1000l> >) "
                "-> std::cv_status\n\nInvoked with: <pyxrt.runlist object>, "
                + ", ".join(repr(t) for t in timeout))
        if not self._running:
            return
        stack = self._hwctx._stack
        last = self._jobs[-1]
        stack.run_until(lambda: last.done)
        self._running = False
        size = stack.profile.xrt_chain
        runidx = 0
        for job in self._jobs:
            if job.state == 4:
                for r in self._runs[runidx:runidx + size]:
                    r._final = 4
                runidx += size
                continue
            failing = min(job.error_index + runidx, len(self._runs) - 1)
            for r in self._runs[runidx:failing]:
                r._final = 4
            self._runs[failing]._final = job.state
            for r in self._runs[failing + 1:]:
                r._final = 6
            raise RuntimeError(_failure_message(job, self._runs[failing]._k()._name))


def _failure_message(job: Job, kernel_name: str) -> str:
    name = ert_cmd_state(job.state).name
    if name == "???":
        name = f"ERT_CMD_STATE_{job.state}"
    lines = [f"runlist failed execution ({name})"]
    if job.health:
        lines.append(f"Kernel Instance: {kernel_name}")
        lines += [f"{key} = 0x{value:08X}" for key, value in job.health.items()]
    return "\n".join(lines)
