"""Kernels, runs and runlists of the simulated pyxrt: XRT's own rules.

From `kernel_impl`, `run_impl` and `runlist_impl` in Xilinx/XRT `xrt_kernel.cpp`
(STACK.md 2, read at every tag `harness.sim.releases` names), as `harness.sim.rules`
lists:

- `execute()` resets every member run's packet to NEW and submits chains of 24; the
  driver writes state only into the chain packets. `wait()` waits on the last chain,
  then gives run ``error_index + 24 x chain`` of the first chain not COMPLETED that
  chain's state, marks every later run ABORT (earlier runs stay NEW) and raises the
  release's message, told from the failing run's own packet (`amend_aie_error_message`).
  After a successful runlist every member run still reads NEW.
- XRT encodes a run's payload once (`initialize_command`, then `set_arg` per argument)
  and never again: what the driver wrote over it after a failure (0xFF, health data) is
  submitted again with the run, until `set_arg` rewrites the words of an argument; the
  instruction address of an ERT_START_NPU payload no call rewrites.
- `add()` does not compare the run's hardware context with the list's (the header says
  it throws; the source does not check). A run may sit in one runlist at a time up to
  2.21 ("Run object already associated with a runlist"), in several from 2.23 (PR
  #9750). A member run cannot be started by itself.
- `kernel(...)` calls set each argument as a buffer, else as an int, and swallow what
  fails (an index beyond the kernel's arguments included), then start.
- Kernels: `kernel(hwctx, name)` from an xclbin context; `ext.kernel(hwctx, module,
  name)` with a control-code ELF (ERT_START_NPU); `ext.kernel(hwctx, name)` from a
  context made of full ELFs (ERT_START_NPU_PREEMPT_ELF when the ELF carries a PDI),
  refused on an xclbin context from 2.21.75 (`check_and_get_hw_context`).
"""

from __future__ import annotations

import sys
import types
import warnings
from typing import Any

from harness.formats.txn import TxnError, carries_work, check_stream
from harness.model.firmware import NOT_MODELLED
from harness.sim.binding import (
    TIMEOUT_VALUE,
    _ctx_stack,
    as_state,
    as_xrt_raises,
    bo,
    device,
    ert_cmd_state,
    hw_context,
    module,
    not_initialized,
    release,
    uuid,
)
from harness.sim.pybind import (
    INT,
    SIZE_T,
    UINT,
    Gated,
    NoMatch,
    Overload,
    Overloads,
    PybindEnum,
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
    ELF_IDENTITY,
    ELF_NOT_MODULE,
    FULL_ELF_CHECK,
    SCRATCHPAD,
    V1_HEALTH,
    XrtRelease,
)
from harness.sim.stack import (
    FF,
    REJECTED,
    START_CU,
    START_NPU,
    START_NPU_PREEMPT,
    START_NPU_PREEMPT_ELF,
    Context,
    Job,
    Overwrite,
    Stack,
)

NEW, COMPLETED, ABORT, TIMEOUT = 1, 4, 6, TIMEOUT_VALUE
# what XRT throws (std::runtime_error, a RuntimeError through pyxrt) when run.wait() or
# wait2() finds the command's packet below COMPLETED after the shim's wait returned
# (hw_queue.cpp qds_device::wait at 202520.2.20.197, 2.21.75, 202610.2.23.244, 963c58ee)
UNEXPECTED_STATE = "qds_device::wait() unexpected command state"
HEALTH_V0_FIELDS = ("txn_op_idx", "ctx_pc", "fatal_error_type",
                    "fatal_error_exception_type", "fatal_error_exception_pc",
                    "fatal_error_app_module")
ARG_BYTES = {"int": 4, "char": 1, "void": 0}
cu_access_mode = make_enum("cu_access_mode", {"exclusive": 0, "shared": 1, "none": 2})
_MISSING: Any = type("_Missing", (), {"__repr__": lambda self: "<missing>"})()
NOT_FULL_ELF = ("Invalid API called for xrt::kernel creation, xrt::hw_context passed is not "
                "created using full ELF")
NOT_XCLBIN = ("Invalid API called for xrt::kernel creation, xrt::hw_context passed is not "
              "created using XCLBIN")
MODULE_IS_FULL = ("Invalid API called for xrt::kernel creation, xrt::module passed is "
                  "created using full ELF")


def _int_range_message(index: int, size: int) -> str:
    # libstdc++'s std::vector::at text, which pybind11 passes on as IndexError
    return (f"vector::_M_range_check: __n (which is {index % (1 << 64)}) >= this->size() "
            f"(which is {size})")


def _check_full_elf_flow(ctx: hw_context, full: bool) -> None:
    """kernel_impl's check_and_get_hw_context, from 2.21.75."""
    if not release().has(FULL_ELF_CHECK):
        return
    from_elf = bool(ctx._elfs)
    if full and not from_elf:
        raise RuntimeError(NOT_FULL_ELF)
    if not full and from_elf:
        raise RuntimeError(NOT_XCLBIN)


# -- kernels ----------------------------------------------------------------------------

class kernel:
    cu_access_mode = cu_access_mode
    exclusive, shared, none = cu_access_mode.exclusive, cu_access_mode.shared, \
        cu_access_mode.none

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._module: module | None = None
        self._hwctx: hw_context | None = None
        _KERNEL_NEW(self, release(), args, kwargs)

    def _from_device(self, dev: device, xuid: uuid, name: str, mode: Any = None) -> None:
        # Every release builds a hardware context for the registered xclbin here; from 2.23
        # the binding also warns that the constructor is deprecated.
        if release().has(BINDING_2_23):
            warnings.warn("kernel(device, uuid, name[, mode]) is deprecated; use "
                          "kernel(hw_context, name) instead.", DeprecationWarning, stacklevel=4)
        self._xclbin_kernel(hw_context(dev, xuid), name)

    def _xclbin_kernel(self, ctx: hw_context, name: str) -> None:
        ctx._live()
        _check_full_elf_flow(ctx, full=False)
        if ctx._xclbin is None:
            raise RuntimeError(f"No such kernel '{name.split(':', 1)[0]}'")
        wanted, _, instance = name.partition(":")
        try:
            meta = ctx._xclbin._m().kernel(wanted)
        except Exception:
            raise RuntimeError(f"No such kernel '{wanted}'") from None
        if instance and meta.instances and instance not in meta.instances:
            raise RuntimeError(f"No compute units matching '{name}'")
        self._setup(ctx, name, meta.name, len(meta.args), meta.arg_bytes,
                    {a.index: (a.offset, a.size) for a in meta.args})

    def _setup(self, ctx: hw_context, full_name: str, name: str, nargs: int, arg_bytes: int,
               layout: dict[int, tuple[int, int]]) -> None:
        stack = _ctx_stack(ctx)
        self._hwctx = ctx
        self._name = name
        self._full_name = full_name
        self._nargs = nargs
        self._arg_bytes = arg_bytes
        self._layout = layout                 # argument -> (regmap offset, size)
        self._opcode = START_CU
        self._stack = stack
        self._latency_us = stack.latency_for(ctx._label, name)
        profile = stack.profile
        self._hang_at = frozenset(profile.hang_at)
        self._reject_at = frozenset(profile.reject_at)
        self._work_hang = profile.work_hang
        self._width = ctx._live().width
        self._dev_gen = stack.device.dev_gen
        self._fault_cache: dict[tuple, str | None] = {}
        self._work_cache: dict[tuple, bool] = {}
        self._elf: Any = None                 # the binding elf its control code comes from
        self._code: bytes | None = None
        # the memory banks each argument is connected to in the context's xclbin, which a
        # buffer set on it must be in (None: a full ELF's kernel, with no connectivity)
        x = ctx._xclbin
        self._banks: tuple[frozenset[int], ...] | None = None if x is None else tuple(
            x._m().arg_banks(name, i) for i in range(nargs))

    def _k(self) -> kernel:
        if self._hwctx is None:
            raise not_initialized("kernel")
        return self

    def _context(self) -> Context:
        """The model's context this kernel's runs are submitted to."""
        if self._hwctx is None:
            raise not_initialized("kernel")
        return self._hwctx._live()

    def group_id(self, *args: Any, **kwargs: Any) -> int:
        return _GROUP_ID(self, release(), args, kwargs)

    def _group_id(self, index: int) -> int:
        """xrt_kernel.cpp `kernel_impl::group_id`: the argument's memory bank in the low 16
        bits (0xFFFF for one connected to none), the context's slot in the next 8
        (`xcl_bo_flags`); the slot is the driver's context handle (amd/xdna-driver
        `hwctx::get_slotidx`). XRT 2.26 over the emulated driver: 65537 for the first
        context's argument 1 (bank 1), 131071 for an unconnected one, 131073 in the
        second context."""
        self._k()
        ctx = self._hwctx
        if ctx is None or ctx._xclbin is None:
            return 0
        bank = ctx._xclbin._m().group_id(self._name, index) & 0xFFFF
        return (ctx._live().id & 0xFF) << 16 | bank

    def __call__(self, *args: Any) -> run:
        r = run(self)
        for index, value in enumerate(args):
            # pyxrt.cpp: try the value as a buffer, then as an int; swallow what fails
            for attempt in (_as_bo, INT):
                try:
                    r.set_arg(index, attempt(value))
                except (NoMatch, IndexError, RuntimeError, TypeError):
                    pass
        r.start()
        return r

    def _identity(self) -> tuple[str, str, str]:
        """get_elf_identity_from_run: kernel instance, ELF file, ELF uuid; all empty when
        the run has no ELF or its ELF's uuid cannot be read (an exception XRT swallows)."""
        e = self._elf
        if e is None or e._parsed().cfg_uuid is None:
            return "", "", ""
        return self._full_name, e._path, e._parsed().cfg_uuid

    def _word1(self, r: run) -> int:
        """The payload word after the CU mask, as XRT encoded it: the instruction buffer's
        address for an NPU command, the first regmap word (argument 0) for ERT_START_CU."""
        if self._opcode != START_CU:
            return self._elf._address & FF
        value = r._args[0] if r._args else 0
        return (value.address() if isinstance(value, bo) else int(value)) & FF

    def _instructions_key(self, r: run) -> tuple | str | None:
        """What identifies this run's instructions as the device reads them (its control
        code, or its instruction buffer's synced state): a key, None for no instructions
        at all, or why argument 1 is no instruction buffer."""
        if self._code is not None:
            return ("elf", id(self._code))
        instr, ninstr = r._args[1], r._args[2]
        if instr == 0 and ninstr == 0 and not isinstance(instr, bo):
            return None       # no instruction buffer: the firmware has nothing to run
        if not isinstance(instr, bo):
            return "argument 1 is not an instruction buffer"
        return (instr._device_version(), ninstr)

    def _works(self, r: run) -> bool:
        """Whether this run's instructions carry work (anything but NOOPs), as the
        firmware reads them: what `work-hang:N` counts (cached per buffer state)."""
        key = self._instructions_key(r)
        if not isinstance(key, tuple):
            return False
        try:
            return self._work_cache[key]
        except KeyError:
            pass
        stream = self._code if self._code is not None else r._args[1]._device_bytes()
        works = carries_work(stream)
        if len(self._work_cache) > 1000:
            self._work_cache.clear()
        self._work_cache[key] = works
        return works

    def _fault(self, r: run) -> str | None:
        """What the firmware rejects in this run's instructions (cached per buffer state)."""
        key = self._instructions_key(r)
        if not isinstance(key, tuple):
            return key
        try:
            return self._fault_cache[key]
        except KeyError:
            pass
        try:
            if self._code is not None:
                check_stream(self._code, columns=self._width, dev_gen=self._dev_gen)
            else:
                instr, ninstr = r._args[1], r._args[2]
                check_stream(instr._device_bytes(), columns=self._width, dev_gen=self._dev_gen,
                             # the register holds the C int's 32 bits (-1 is 0xFFFFFFFF)
                             ninstr_words=ninstr % 2**32 if isinstance(ninstr, int) else 0)
            fault = None
        except TxnError as err:
            fault = f"invalid instruction stream: {err}"
        if len(self._fault_cache) > 1000:
            self._fault_cache.clear()
        self._fault_cache[key] = fault
        return fault


def _unconnected(k: kernel, index: int, value: bo) -> RuntimeError:
    """xrt_kernel.cpp `validate_bo_at_index`: a buffer in a bank the argument is not
    connected to is copied into a clone in the connected one, which on the NPU has no
    device copy and no host side (xrt_bo.cpp `copy_through_host`): set_arg fails after
    XRT's two warnings (XRT 2.26 over the emulated driver)."""
    print(f"[XRT] WARNING: Kernel {k._name} has no compute units with connectivity required "
          f"for global argument at index {index}. The argument is allocated in bank "
          f"{value._bank}, the compute unit is connected to bank "
          f"{k._group_id(index)}. Allocating local copy of argument buffer in connected "
          "bank.\n[XRT] WARNING: Reverting to host copy of buffers (exec_buf: Operation not "
          "supported)", file=sys.stderr)
    return RuntimeError("No host side buffer in destination buffer: Invalid argument")


def _kernel_overloads() -> tuple[Overloads, Overloads]:
    """kernel's constructors and group_id."""
    name = ("name", text)
    the_uuid = ("uuid", instance_of(uuid))
    the_device = ("device", instance_of(device))
    return (Overloads("__init__", "kernel", [
        Overload("(device: pyxrt.device, uuid: pyxrt.uuid, name: str, mode: pyxrt.kernel."
                 "cu_access_mode)", (the_device, the_uuid, name,
                                     ("mode", instance_of(cu_access_mode))),
                 "_from_device", named=True),
        Overload("(device: pyxrt.device, uuid: pyxrt.uuid, name: str)",
                 (the_device, the_uuid, name), "_from_device", named=True),
        Overload("(hw_context: pyxrt.hw_context, name: str)",
                 (("hw_context", instance_of(hw_context)), name), "_xclbin_kernel",
                 named=True),
    ], constructor=True), Overloads("group_id", "kernel", [
        Overload("(self: pyxrt.kernel, arg0: int) -> int", (("index", INT),),
                 "_group_id"),
    ]))


_KERNEL_NEW, _GROUP_ID = _kernel_overloads()


def _as_bo(value: Any) -> bo:
    if not isinstance(value, bo):
        raise NoMatch
    return value


# -- runs --------------------------------------------------------------------------------

class run:
    __slots__ = ("_kernel", "_banks", "_args", "_job", "_packet", "_in", "_over", "_stale",
                 "__weakref__")

    def __init__(self, k: Any = _MISSING, /) -> None:
        # Positional-only: the hot path binds without a keyword dictionary (a keyword is
        # Python's TypeError here, not pybind11's: see tests/test_sim_surface.py).
        if k.__class__ is ext_kernel or k.__class__ is kernel or isinstance(k, kernel):
            if k._hwctx is None:
                raise not_initialized("kernel")
            self._args: list[Any] = [0] * k._nargs
            self._banks = k._banks
        elif k is _MISSING:
            self._args = []
            self._banks = None
            k = None
        else:
            raise incompatible("__init__", ["pyxrt.run()", "pyxrt.run(arg0: pyxrt.kernel)"],
                               "", [k], constructor=True)
        self._kernel = k
        self._job: Job | None = None      # a start() of its own
        self._packet = NEW                # its command packet's state, as XRT left it
        self._in: _Membership | tuple[_Membership, ...] | None = None   # its runlists
        self._over: Overwrite | None = None   # what the driver wrote over its payload
        # (and `_stale`, the arguments whose words it overwrote, is set with `_over`: no
        # run reads it before, and a slot left unset costs a fresh run nothing)

    def _k(self) -> kernel:
        if self._kernel is None:
            raise not_initialized("run")
        return self._kernel

    def set_arg(self, index: Any = _MISSING, value: Any = _MISSING, /) -> None:
        # The binding checks the types and the index here, as pybind11 and run_impl do;
        # the common case is decided by class identity and the list's own index check,
        # everything else by the slow path. Positional-only, as the binding names no
        # parameter (and a keyword dictionary would cost the hot path).
        try:
            if index >= 0:
                if value.__class__ is bo:
                    banks = self._banks        # a buffer in a bank the argument takes
                    if banks is None or value._bank in banks[index]:
                        self._args[index] = value
                        return
                elif value.__class__ is int and -0x80000000 <= value <= 0x7FFFFFFF:
                    self._args[index] = value  # a non-int index or one too large raises
                    return
        except Exception:  # noqa: BLE001 - the slow path names what is wrong
            pass
        self._set_arg_slow(index, value)

    def _set_arg_slow(self, index: Any, value: Any) -> None:
        try:
            if index is _MISSING or value is _MISSING:
                raise NoMatch
            index = INT(index)
            if not isinstance(value, bo):
                value = INT(value)
        except NoMatch:
            given = [a for a in (index, value) if a is not _MISSING]
            raise incompatible("set_arg", [
                "(self: pyxrt.run, arg0: int, arg1: pyxrt.bo) -> None",
                "(self: pyxrt.run, arg0: int, arg1: int) -> None"], "pyxrt.run",
                [self, *given]) from None
        k = self._k()
        size = len(self._args)
        if not 0 <= index < size:
            raise IndexError(_int_range_message(index, size))
        if isinstance(value, bo) and k._banks is not None and \
                value._bank not in k._banks[index]:
            raise _unconnected(k, index, value)
        self._args[index] = value

    def start(self, *args: Any) -> None:
        if args:
            raise incompatible("start", ["(self: pyxrt.run) -> None"], "", [self, *args])
        k = self._k()
        if _held(self):
            raise RuntimeError("Run object belongs to a runlist and cannot be explicitly "
                               "started")
        _settle_overwrites(self._job, (self,))
        self._packet = NEW
        _touched()
        latency, arg_bytes, opcode, fault, hang = _command(self, None)
        self._job = as_xrt_raises(k._stack.submit, k._context(), [latency], [arg_bytes],
                                  [opcode], {0: fault} if fault else {},
                                  {0} if hang else set(), False)

    def wait(self, *args: Any, **kwargs: Any) -> PybindEnum:
        if not args and not kwargs:
            return self._wait(0)         # the first overload, without the dispatch
        return _RUN_WAIT(self, release(), args, kwargs)

    def _wait(self, timeout_ms: int) -> PybindEnum:
        job = self._job
        if job is None:
            return self.state()
        stack = self._k()._stack
        if timeout_ms:
            if not stack.run_until(lambda: job.done, timeout_ms * 1000.0):
                return as_state(TIMEOUT)      # the host wait expired: XRT says TIMEOUT ("bad!")
        else:
            stack.run_until_done(job)
        _settle_overwrites(job, (self,))
        if job.state < COMPLETED:
            # the driver ended the job without writing a final state (a single run the
            # reset cancels before 6fb7f2988832, a command run_job refused): hw_queue.cpp
            # qds_device::wait checks the packet once the shim's wait returns
            raise RuntimeError(UNEXPECTED_STATE)
        return self.state()

    def wait2(self, *args: Any, **kwargs: Any) -> Any:
        return _RUN_WAIT2(self, release(), args, kwargs)

    def _wait2(self) -> None:
        state = self._wait(0).value
        if state != COMPLETED:
            head = f"Command failed to complete successfully ({_state_text(state)})"
            raise RuntimeError(_amend(release(), head, state, self))

    @method("(self: pyxrt.run) -> pyxrt.ert_cmd_state")
    def state(self) -> PybindEnum:
        job = self._job
        stack = self._k()._stack
        if job is not None and stack is not None:    # a run that was started has its stack
            stack.poll(job)
            return as_state(job.visible_state(stack.now))
        return as_state(self._packet)

    def add_callback(self, *args: Any) -> None:
        # std::function and void* have no caster in the binding (no pybind11/functional.h)
        raise incompatible("add_callback", [
            "(self: pyxrt.run, arg0: pyxrt.ert_cmd_state, arg1: Callable[[capsule, pyxrt."
            "ert_cmd_state, capsule], None], arg2: capsule) -> None"], "pyxrt.run",
            [self, *args])

    @method("(self: pyxrt.run) -> pyxrt.bo")
    def _get_ctrl_scratchpad_bo(self) -> bo:
        k = self._k()
        if k._elf is None:
            raise RuntimeError("No module associated with run object")
        raise RuntimeError("the module's control code has no control scratchpad")

    get_ctrl_scratchpad_bo = Gated(_get_ctrl_scratchpad_bo, lambda r: r.has(SCRATCHPAD),
                                   release)

    # -- the payload as the driver left it --------------------------------------------

    def _word(self, index: int) -> int | None:
        """Word `index` of the payload after the header (XRT's `epkt->data[index]`); None
        for a word the simulated firmware wrote without the model knowing its value."""
        over = self._over
        if over is not None:
            if index < len(over.words):
                return over.words[index]
            if over.fill is not None:
                return over.fill
        return 1 if index == 0 else self._kernel._word1(self)   # the CU mask: CU 0

    def _overwritten(self, over: Overwrite) -> None:
        """The driver wrote `over` into this run's payload; XRT keeps it. set_arg rewrites
        an argument's words (XRT's regmap, ERT_START_CU only): the run's arguments then
        note each one set again (`_ArgsAfterOverwrite`), and once every overwritten one
        is, the run is whole."""
        if self._over is None:
            _count_overwritten(1)
        self._over = over
        k = self._kernel
        if k._opcode != START_CU:
            self._stale = None      # the instruction address: no set_arg rewrites it
            return
        covered = len(over.words) if over.fill is None else 1 << 30
        self._stale = {i for i, (offset, _) in k._layout.items()
                       if 1 + offset // 4 < covered}
        if self._stale:
            self._args = _ArgsAfterOverwrite(self, self._args)
        else:
            self._made_whole()

    def _rewritten(self, index: int) -> None:
        """Argument `index` was set again, after the driver overwrote the payload."""
        stale = self._stale
        if stale is not None:
            stale.discard(index)
            if not stale:
                self._made_whole()

    def _made_whole(self) -> None:
        self._over = self._stale = None
        self._args = list(self._args)
        _count_overwritten(-1)

    def _payload_fault(self) -> str:
        return (f"the payload still holds what the driver wrote after an earlier failure "
                f"(word 1 = 0x{self._word(1):08X}; XRT never re-encodes a payload): the "
                "simulator's firmware refuses the garbage instruction address")


_RUN_WAIT = Overloads("wait", "run", [
    Overload("(self: pyxrt.run) -> pyxrt.ert_cmd_state", (), lambda self: self._wait(0)),
    Overload("(self: pyxrt.run, arg0: int) -> pyxrt.ert_cmd_state", (("timeout_ms", UINT),),
             "_wait"),
])
_RUN_WAIT2 = Overloads("wait2", "run", [
    Overload("(self: pyxrt.run) -> None", (), "_wait2"),
    Overload("(self: pyxrt.run, arg0: std::chrono::duration<long, std::ratio<1l, "
             "1000l> >) -> std::cv_status", (("timeout", never),), "_wait2"),
])


class _ArgsAfterOverwrite(list):
    """The arguments of a run whose payload the driver overwrote: setting one (the only
    way set_arg changes them) tells the run, which counts it rewritten. Every other run
    keeps a plain list, so set_arg asks nothing more on the path that builds runlists."""

    __slots__ = ("_run",)

    def __init__(self, owner: run, args: list[Any]) -> None:
        super().__init__(args)
        self._run = owner

    def __setitem__(self, index: Any, value: Any) -> None:
        list.__setitem__(self, index, value)      # an index out of range raises first
        self._run._rewritten(index)


# How many runs have ever been overwritten and not yet made whole: while none, a chain
# needs no look at its runs' payloads.
_overwritten_runs = 0


def _count_overwritten(step: int) -> None:
    global _overwritten_runs
    _overwritten_runs += step



def _settle_overwrites(job: Job | None, runs: Any, start: int = 0) -> None:
    """Apply what the driver wrote into `job`'s sub-commands to their runs."""
    if job is None or not job.done or not job.overwrites:
        return
    for index, over in job.overwrites.items():
        if start + index < len(runs):
            runs[start + index]._overwritten(over)
    job.overwrites = {}


# Run states are computed when asked: XRT's prep_start sets every member's packet to NEW
# at each execute, but the simulator writes a packet only when something made it other
# than NEW (a failed runlist's walk, a start()). This count of such writes tells a
# runlist whether any member may need resetting.
_touches = 0


def _touched() -> None:
    global _touches
    _touches += 1


def _chain(runs: list[run], start: int, work_hang: int | None = None
           ) -> tuple[list[float], list[int], list[int], dict[int, str], set[int]]:
    """The driver's view of one chain of runs (from `start` in the runlist): per-command
    latencies, argument bytes and opcodes, the commands the firmware rejects and those
    that hang (`work_hang`: the runlist position `work-hang:N` hangs, if any). A chain of
    one kernel and one instruction stream is described at once."""
    n = len(runs)
    first = runs[0]
    k = first._kernel
    # list.count compares by identity first: a C loop, cheaper than a set or all()
    if [r._kernel for r in runs].count(k) == n and (
            not _overwritten_runs or [r._over for r in runs].count(None) == n) and (
            k._code is not None
                      or [r._args[1] for r in runs].count(first._args[1]) == n
                      and [r._args[2] for r in runs].count(first._args[2]) == n):
        fault = k._fault(first)
        latencies, arg_bytes, opcodes = [k._latency_us] * n, [k._arg_bytes] * n, \
            [k._opcode] * n
        faults = dict.fromkeys(range(n), fault) if fault is not None else {}
        hangs = {i - start for i in k._hang_at if start <= i < start + n} if k._hang_at \
            else set()
    else:
        latencies, arg_bytes, opcodes = [], [], []
        faults, hangs = {}, set()
        for offset, r in enumerate(runs):
            latency, nbytes, opcode, fault, hang = _command(r, start + offset)
            latencies.append(latency)
            arg_bytes.append(nbytes)
            opcodes.append(opcode)
            if fault is not None:
                faults[offset] = fault
            if hang:
                hangs.add(offset)
    if work_hang is not None and start <= work_hang < start + n:
        hangs.add(work_hang - start)
    for position in k._reject_at:
        if start <= position < start + n:
            faults.setdefault(position - start, REJECTED.format(position=position))
    return latencies, arg_bytes, opcodes, faults, hangs


def _work_hang_position(runs: list[run], n: int) -> int | None:
    """Where `work-hang:N` hangs a runlist: the position of its Nth run that carries
    work, or None when it holds fewer. Runs of one kernel and one instruction stream are
    told at once."""
    if len(runs) < n:
        return None
    first = runs[0]
    k = first._kernel
    if [r._kernel for r in runs].count(k) == len(runs) and (
            k._code is not None or [r._args[1] for r in runs].count(first._args[1])
            == len(runs)):
        return n - 1 if k._works(first) else None
    seen = 0
    for position, r in enumerate(runs):
        if r._kernel._works(r):
            seen += 1
            if seen == n:
                return position
    return None


def _command(r: run, position: int | None) -> tuple[float, int, int, str | None, bool]:
    k = r._kernel
    fault = r._payload_fault() if r._over is not None else k._fault(r)
    return (k._latency_us, k._arg_bytes, k._opcode, fault,
            position is not None and position in k._hang_at)


def _state_text(state: int) -> str:
    name = ert_cmd_state(state).name
    return "out of range" if name == "???" else name


def _amend(rel: XrtRelease, head: str, state: int, r: run) -> str:
    """XRT's `amend_aie_error_message` of release `rel`, told from the failing run's own
    packet: nothing unless TIMEOUT; 2.20 appends a newline and the six version-0 lines
    when the first payload word is 0; later releases tell version 1 (first word 1) in its
    own layout, version 0 in the old one, and anything else not at all."""
    if state != TIMEOUT:
        return head
    version = r._word(0)
    if not rel.has(V1_HEALTH):
        if version != 0:
            return head + "\n"
        return head + "\n" + _lines(HEALTH_V0_FIELDS, r, 1) + "\n"
    if version == 0:
        return head + "\n" + _lines(HEALTH_V0_FIELDS, r, 1) + "\n"
    if version != 1:
        return head
    out = head + "\n"
    if rel.has(ELF_IDENTITY):
        instance, filename, elf_uuid = r._kernel._identity()
        if instance:
            out += "Kernel Instance: " + instance
        if filename:
            out += "\nELF File:        " + filename
        if elf_uuid:
            out += "\nELF UUID:        " + elf_uuid
    if r._word(1) == 0:             # npu_gen: AIE2 (AIE2P too)
        lines = _lines(HEALTH_V0_FIELDS, r, 2)
        out += ("\n" if rel.has(ELF_IDENTITY) else "") + lines + "\n"
    return out


def _lines(fields: tuple[str, ...], r: run, first: int) -> str:
    """XRT's ``name = 0x%08X`` lines; a word the simulated firmware wrote without the model
    knowing its value reads "not modelled", never a made-up number."""
    out = []
    for i, name in enumerate(fields):
        word = r._word(first + i)
        out.append(f"{name} = {NOT_MODELLED}" if word is None else f"{name} = 0x{word:08X}")
    return "\n".join(out)


# -- runlists ----------------------------------------------------------------------------

class _Membership:
    """Whether a runlist is alive, for the runs it holds: a run asks this when it is
    started or added elsewhere, so a runlist's end costs nothing per run."""

    __slots__ = ("alive",)

    def __init__(self) -> None:
        self.alive = True


def _held(r: run) -> bool:
    """Whether a live runlist holds this run."""
    member = r._in
    if member is None:
        return False
    if isinstance(member, tuple):
        return any(m.alive for m in member)
    return member.alive


class runlist:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._hwctx: hw_context | None = None
        self._runs: list[run] = []
        self._jobs: list[Job] = []
        # the error_index word of each chain buffer: XRT zeroes a chain's data when it
        # makes the buffer (create_exec_buf) and reuses it on every execute
        self._chain_index: list[int] = []
        self._running = False
        self._member = _Membership()
        self._touches_seen = _touches     # members reset since (see _touched)
        self._reset_needed = False
        if len(args) == 1 and not kwargs and args[0].__class__ is hw_context:
            self._bind(args[0])          # what the dispatch below would choose, sooner
            return
        _RUNLIST_NEW(self, release(), args, kwargs)

    def _bind(self, ctx: hw_context) -> None:
        ctx._live()
        self._hwctx = ctx

    def add(self, r: Any = _MISSING, /) -> None:
        # One body for every run, in the frame the binding calls (positional-only, as
        # the binding names no parameter): runlists of thousands of runs are built here.
        if r.__class__ is not run and not isinstance(r, run):
            _RUNLIST_ADD(self, release(), [] if r is _MISSING else [r], {})
            return
        if self._hwctx is None:
            raise RuntimeError("cannot add run object to uninitialized runlist")
        if self._running:
            raise RuntimeError("runlist must be idle before adding run objects, current "
                               "state: running")
        if r._kernel is None:
            raise not_initialized("run")
        if r._job is not None:
            _settle_overwrites(r._job, (r,))
            self._reset_needed = True
        elif r._packet != NEW:
            self._reset_needed = True
        if r._in is None:
            r._in = self._member
        elif _held(r):
            if not self._release_allows_sharing():
                raise RuntimeError("Run object already associated with a runlist")
            r._in = (*(r._in if r._in.__class__ is tuple else (r._in,)), self._member)
        else:
            r._in = self._member
        self._runs.append(r)

    def _bound(self) -> hw_context:
        if self._hwctx is None:
            raise not_initialized("runlist")
        return self._hwctx

    def _stack(self) -> Stack:
        stack = self._bound()._stack
        if stack is None:
            raise not_initialized("runlist")
        return stack

    def _release_allows_sharing(self) -> bool:
        return self._stack().profile.release.has(BINDING_2_23)

    def __del__(self) -> None:
        member = getattr(self, "_member", None)
        if member is not None:
            member.alive = False          # its runs may join other runlists, or start

    def execute(self, *args: Any) -> None:
        if args:
            raise incompatible("execute", ["(self: pyxrt.runlist) -> None"], "",
                               [self, *args])
        if self._running:
            raise RuntimeError("runlist must be idle before submitting for execution, "
                               "current state: running")
        runs = self._runs
        if not runs:
            return
        stack = self._stack()
        context = self._bound()._live()
        size = stack.profile.xrt_chain
        if self._reset_needed or self._touches_seen != _touches:
            for r in runs:               # prep_start: the state only, never the payload
                _settle_overwrites(r._job, (r,))
                r._packet = NEW
                r._job = None
            self._reset_needed = False
        self._touches_seen = _touches
        jobs = []
        work_hang = runs[0]._kernel._work_hang
        hang_at = _work_hang_position(runs, work_hang) if work_hang else None
        for start in range(0, len(runs), size):
            latencies, arg_bytes, opcodes, faults, hangs = _chain(runs[start:start + size],
                                                                  start, hang_at)
            jobs.append(as_xrt_raises(stack.submit, context, latencies, arg_bytes, opcodes,
                                      faults, hangs, True))
        self._jobs = jobs
        self._running = True

    def wait(self, *args: Any, **kwargs: Any) -> Any:
        if not args and not kwargs:
            return self._wait()          # the first overload, without the dispatch
        return _RUNLIST_WAIT(self, release(), args, kwargs)

    def _wait(self) -> None:
        if not self._running:
            return
        stack = self._stack()
        last = self._jobs[-1]
        stack.run_until_done(last)
        self._running = False
        size = stack.profile.xrt_chain
        runs = self._runs
        for chain, job in enumerate(self._jobs):
            if job.overwrites:
                _settle_overwrites(job, runs, chain * size)
        held = self._chain_index
        held.extend([0] * (len(self._jobs) - len(held)))
        for chain, job in enumerate(self._jobs):
            if job.index_written:
                held[chain] = job.error_index
        for chain, job in enumerate(self._jobs):
            if job.state == COMPLETED:
                continue
            failing = chain * size + held[chain]
            _touched()
            for r in runs[failing + 1:]:
                r._packet = ABORT
            runs[failing]._packet = job.state
            rel = stack.profile.release
            head = f"runlist failed execution ({_state_text(job.state)})" \
                if rel.state_in_message else "runlist failed execution"
            raise RuntimeError(_amend(rel, head, job.state, runs[failing]))


_RUNLIST_NEW = Overloads("__init__", "runlist", [
    Overload("()", (), nothing),
    Overload("(hwctx: pyxrt.hw_context)", (("hwctx", instance_of(hw_context)),), "_bind",
             named=True),
], constructor=True)
_RUNLIST_ADD = Overloads("add", "runlist", [
    Overload("(self: pyxrt.runlist, run: pyxrt.run) -> None", (("run", instance_of(run)),),
             "add", named=True),
])
_RUNLIST_WAIT = Overloads("wait", "runlist", [
    Overload("(self: pyxrt.runlist) -> None", (), "_wait"),
    Overload("(self: pyxrt.runlist, timeout: std::chrono::duration<long, std::ratio<1l,"
             " 1000l> >) -> std::cv_status", (("timeout", never),), "_wait", named=True),
])


# -- pyxrt.ext: buffers with access modes, kernels from ELF modules ----------------------

def _ext_or(a: PybindEnum, b: PybindEnum) -> PybindEnum:
    return type(a)(a.value | b.value)


def _ext_and(a: PybindEnum, b: PybindEnum) -> PybindEnum:
    return type(a)(a.value & b.value)


ext_access_mode = make_enum("access_mode", {
    "none": 0, "read": 1, "write": 2, "read_write": 3, "local": 0, "shared": 4,
    "process": 8, "hybrid": 16}, methods={"__or__": _ext_or, "__and__": _ext_and,
                                          "__ior__": _ext_or, "__iand__": _ext_and})


class ext_bo(bo):
    def __init__(self, *args: Any, **kwargs: Any) -> None:    # noqa: D401
        self._storage = None
        self._offset = self._size = 0
        _EXT_BO_NEW(self, release(), args, kwargs)

    def _host(self, owner: Any, nbytes: int, *rest: Any) -> None:
        stack = owner._open() if isinstance(owner, device) else owner._stack
        if isinstance(owner, hw_context):
            owner._live()
        self._allocate(stack, nbytes)

    def _user_pointer(self, owner: device, pointer: Any, nbytes: int, *rest: Any) -> None:
        owner._open()
        raise RuntimeError("ext.bo: cannot map user memory from this pointer")


def _pointer(value: Any) -> Any:
    if value is None or type(value).__module__.startswith(("harness.sim", "pyxrt")):
        return value
    raise NoMatch


def _ext_bo_overloads() -> Overloads:
    """ext.bo's constructors."""
    the_device = ("device", instance_of(device))
    ctx = ("hwctx", instance_of(hw_context))
    access = ("access", instance_of(ext_access_mode))
    size = ("size", SIZE_T)
    host, user_pointer = "_host", "_user_pointer"
    return Overloads("__init__", "ext.bo", [
        Overload("(device: pyxrt.device, userptr: capsule, size: int, access: pyxrt.ext."
                 "access_mode)", (the_device, ("userptr", _pointer), size, access),
                 user_pointer, named=True),
        Overload("(device: pyxrt.device, userptr: capsule, size: int)",
                 (the_device, ("userptr", _pointer), size), user_pointer, named=True),
        Overload("(device: pyxrt.device, size: int, access: pyxrt.ext.access_mode)",
                 (the_device, size, access), host, named=True),
        Overload("(device: pyxrt.device, size: int)", (the_device, size), host, named=True),
        Overload("(device: pyxrt.device, pid: xrt::pid_type, export_handle: int)",
                 (the_device, ("pid", never), ("export_handle", INT)), host, named=True),
        Overload("(hwctx: pyxrt.hw_context, size: int, access: pyxrt.ext.access_mode)",
                 (ctx, size, access), host, named=True),
        Overload("(hwctx: pyxrt.hw_context, size: int)", (ctx, size), host, named=True),
        Overload("(hwctx: pyxrt.hw_context, pid: xrt::pid_type, export_handle: int)",
                 (ctx, ("pid", never), ("export_handle", INT)), host, named=True),
    ], constructor=True)


_EXT_BO_NEW = _ext_bo_overloads()


class ext_kernel(kernel):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._module = None
        self._hwctx = None
        _EXT_KERNEL_NEW(self, release(), args, kwargs)

    def _from_module(self, ctx: hw_context, mod: module, name: str) -> None:
        if mod._elf is None:
            raise not_initialized("module")
        ctx._live()
        if release().has(FULL_ELF_CHECK) and mod._elf._parsed().is_full:
            raise RuntimeError(MODULE_IS_FULL)
        self._xclbin_kernel(ctx, name)
        self._module = mod
        self._elf = mod._elf
        self._code = mod._elf._parsed().control_code or b""
        # get_ert_opcode (xrt_module.cpp module_elf_aie2p up to 2.21, xrt_elf.cpp
        # elf_aie_gen2 from 2.23): PDIs ERT_START_NPU_PREEMPT_ELF, preemption save and
        # restore sections ERT_START_NPU_PREEMPT, else ERT_START_NPU
        self._opcode = _elf_opcode(mod._elf._parsed())

    def _from_full_elf(self, ctx: hw_context, name: str) -> None:
        """kernel_impl(device, hwctx, name): the kernel, its arguments and control code
        come from the context's ELF; ``main:sequence`` names a sub-kernel, ``main`` the
        only one."""
        _check_full_elf_flow(ctx, full=True)
        wanted, _, sub = name.partition(":")
        found = ctx._elfs.get(wanted)
        if found is None:
            what = "ELF" if release().has(ELF_NOT_MODULE) else "module"
            raise RuntimeError(f"no {what} found with given kernel name in ctx")
        e, kernel_def = found
        if sub and sub != kernel_def.subkernel:
            raise RuntimeError(f"Unable to find group idx for given kernel: {name}")
        sizes = [8 if a.endswith("*") else ARG_BYTES.get(a, 4) for a in kernel_def.args]
        offsets = [sum(sizes[:i]) for i in range(len(sizes))]
        self._setup(ctx, name, wanted, len(sizes), sum(sizes),
                    {i: (offsets[i], sizes[i]) for i in range(len(sizes))})
        parsed = e._parsed()
        self._elf = e
        self._code = parsed.kernel_code(kernel_def)
        self._opcode = _elf_opcode(parsed)


def _elf_opcode(parsed: Any) -> int:
    """get_ert_opcode (xrt_module.cpp module_elf_aie2p up to 2.21, xrt_elf.cpp elf_aie_gen2
    from 2.23, every tag alike), one answer for the whole ELF: any .pdi section makes every
    kernel run as ERT_START_NPU_PREEMPT_ELF; preemption save and restore sections as
    ERT_START_NPU_PREEMPT; else ERT_START_NPU."""
    if parsed.has_pdi:
        return START_NPU_PREEMPT_ELF
    return START_NPU_PREEMPT if parsed.preemption == "paired" else START_NPU


_EXT_KERNEL_NEW = Overloads("__init__", "ext.kernel", [
    Overload("(hwctx: pyxrt.hw_context, module: pyxrt.module, name: str)",
             (("hwctx", instance_of(hw_context)), ("module", instance_of(module)),
              ("name", text)), "_from_module", named=True),
    Overload("(hwctx: pyxrt.hw_context, name: str)",
             (("hwctx", instance_of(hw_context)), ("name", text)), "_from_full_elf",
             named=True),
], constructor=True)

ext_bo.__name__ = ext_bo.__qualname__ = "bo"
ext_kernel.__name__ = ext_kernel.__qualname__ = "kernel"
ext_access_mode.__qualname__ = "access_mode"
for _cls in (kernel, run, runlist, cu_access_mode):
    _cls.__module__ = "pyxrt"
for _ext_cls in (ext_bo, ext_kernel, ext_access_mode):
    _ext_cls.__module__ = "pyxrt.ext"

ext = types.ModuleType("pyxrt.ext", "Extended XRT functionality.")
vars(ext).update(bo=ext_bo, kernel=ext_kernel, access_mode=ext_access_mode)
for _name in ("none", "read", "write", "read_write", "local", "shared", "process", "hybrid"):
    setattr(ext, _name, getattr(ext_access_mode, _name))
