"""Kernels, runs and runlists of the simulated pyxrt: XRT's own rules.

From `runlist_impl` and `run_impl` in Xilinx/XRT `xrt_kernel.cpp` (STACK.md 2):
a runlist lives in one hardware context and is submitted as chains of 24
(`ERT_CMD_CHAIN`); `wait` waits on the last chain, then walks the chains to the
first that did not complete, blames run `error_index + 24 x chain`, marks every
later run ABORT and raises XRT's `runlist failed execution (ERT_CMD_STATE_<X>)`
with the health lines. Through the binding that is a plain RuntimeError, and
`wait(timeout)` is a TypeError (no chrono casters). `run.wait(ms)` returns
TIMEOUT when the host gives up. Real XRT crashes on more arguments than a
kernel declares; this raises instead, naming the kernel.
"""

from __future__ import annotations

import weakref
from typing import Any

from harness.errors import XclbinError
from harness.sim.binding import (
    TIMEOUT_VALUE,
    PybindEnum,
    as_state,
    bo,
    ert_cmd_state,
    hw_context,
    make_enum,
    module,
)
from harness.sim.stack import START_CU, START_NPU, Command, Job
from harness.txn import TxnError, check_stream

# -- kernels and runs ------------------------------------------------------------------

class kernel:
    cu_access_mode = make_enum("cu_access_mode", {"exclusive": 0, "shared": 1, "none": 2})

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

    def wait(self, timeout_ms: int = 0) -> PybindEnum:
        if self._job is None:
            return as_state(self._final or 1)
        job = self._job
        stack = self._k()._hwctx._stack
        if timeout_ms:
            if not stack.run_until(lambda: job.done, timeout_ms * 1000.0):
                return as_state(TIMEOUT_VALUE)   # the host wait expired: XRT says TIMEOUT ("bad!")
        else:
            stack.run_until(lambda: job.done)
        return self.state()

    def state(self) -> PybindEnum:
        if self._final is not None:
            return as_state(self._final)
        if self._job is None:
            return as_state(1)
        return as_state(self._job.visible_state(self._k()._hwctx._stack.now))

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
