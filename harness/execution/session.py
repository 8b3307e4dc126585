"""One trial of a plan, driven through the pyxrt API (real or simulated, same code).

Per trial, as FastFlowLM does: open the device, register every xclbin of the
case and create one hw_context per xclbin (all contexts live), create the
kernels, allocate the instruction buffer (cacheable, `group_id(1)`) and the
data buffers (host_only, `group_id(3..)`), write the instruction stream
(the one-NOOP TXN sized to the partition, or the case's insts.bin; ninstr in
32-bit words), then for each chunk of the plan build a runlist in the runlist
context, execute it, wait, and classify what the stack answered.

Everything is created afresh per trial and dropped at its end, so a context
a hang poisoned is not reused (but not while XRT's capture records: below); and every
runlist gets run objects of its own, since
after a failure the driver may have written over a run's payload (0xFF, health data)
and XRT never re-encodes a payload (STACK.md 4).
"""

from __future__ import annotations

import functools
import gc
import os
import time
from collections.abc import Callable
from pathlib import Path
from time import perf_counter
from typing import Any

from harness.execution.backend import Backend
from harness.formats.elf_writer import control_code_file
from harness.formats.regular import read_regular
from harness.formats.txn import (
    DEV_GEN_AIE2P,
    DEV_GEN_NPU1,
    nop_stream,
    word_count,
    work_stream,
)
from harness.formats.xclbin import read_xclbin_cached
from harness.model.ert import (
    NO_STATE_IN_MESSAGE,
    STATE_IN_MESSAGE,
    CmdState,
    LocatedFailure,
    locate_failure,
    parse_xrt_error,
    run_named,
    state_from_pyxrt,
)
from harness.model.results import (
    COMPLETED_STATE,
    ELF_FLOW,
    FULL_ELF,
    CommandSpec,
    RunlistOutcome,
    TrialResult,
    TrialSpec,
    TrialStatus,
    chain_split,
)
from harness.probe.xrt_config import xrt_config

NOP = "nop"
STAND_IN_WORK = "stand-in-work"    # harness.sources.case.STAND_IN_WORK
COMPLETED_CODE = int(CmdState.COMPLETED)

# XRT's capture (capture.cpp `frames`, 2.26) keys its records of buffers, contexts,
# kernels, runs and runlists by the object's address and keeps them to the process's end,
# a buffer's with its host pointer. An object freed while it records and a new one at the
# same address are taken for each other: the next frame dumps the freed buffer's memory (a
# segfault: `xrt-capture -- reproduce_ert_timeout --no-isolate` died so, XRT 2.26 over the
# emulated driver) or the save fails (`could not save replay script: map::at`, a runlist
# taken for a freed one). Nothing may be freed while it records, and a runlist holds its
# context, of which the driver gives 16: so while it records, the trials of one workload
# share one set of contexts, kernels and buffers (restored before each trial), and every
# runlist and run is kept to the process's end.
_SHARED_WHILE_CAPTURED: dict[str, _Loaded] = {}
_runlists_executed = 0             # XRT's frames in this process: the harness starts no run


def xrt_records() -> bool:
    """Whether XRT's capture records what this process does now: on, and fewer frames
    taken than it takes (capture.h `is_enabled`)."""
    frames = xrt_config().capture_frames
    return frames > 0 and _runlists_executed < frames


def _dev_gen(xrt: Any, dev: Any) -> int:
    # npu1 (Phoenix) is AIE2 (3); every XDNA 2 part is AIE2P (4).
    try:
        name = str(dev.get_info(xrt.xrt_info_device.name)).lower()
    except Exception:
        return DEV_GEN_AIE2P
    return DEV_GEN_NPU1 if "npu1" in name or "phoenix" in name else DEV_GEN_AIE2P


class _Loaded:
    """The device, contexts, kernels and buffers of one trial."""

    def __init__(self, xrt: Any, spec: TrialSpec) -> None:
        self.xrt = xrt
        self.spec = spec
        self.made: list[tuple[Any, int, bytes | None]] = []   # each buffer, as first filled
        self.kept: list[tuple[Any, list[Any]]] | None = None   # runlists kept, if any
        self.dev = xrt.device(0)
        self.contexts: dict[str, Any] = {}
        columns = 0
        for role, path in spec.xclbins.items():
            if role in spec.programs:
                continue
            # register_xclbin returns the uuid in every release (pyxrt.cpp)
            self.contexts[role] = _context(xrt, self.dev,
                                           self.dev.register_xclbin(xrt.xclbin(path)),
                                           spec.context_cfg.get(role))
            if role == spec.runlist_context:
                part = read_xclbin_cached(path).partition
                columns = part.column_width if part else 4
        for role, paths in spec.programs.items():
            # a context made from full ELFs: the first makes it, add_config adds the rest
            elfs = [xrt.elf(path) for path in paths]
            ctx = self.contexts[role] = xrt.hw_context(self.dev, elfs[0])
            for more in elfs[1:]:
                ctx.add_config(more)
            if role == spec.runlist_context:
                columns = xrt.program(elfs[0]).get_partition_size()
        self.ctx = self.contexts[spec.runlist_context]
        self.columns, self.dev_gen = columns, _dev_gen(xrt, self.dev)
        self._kernels: dict[tuple[str, str, str | None], Any] = {}
        self._modules: dict[str, Any] = {}
        self.named: dict[str, Any] = {}          # the recipe's or capture's buffers
        # (kernel, [(argument index, value), ...]) for each command
        self.commands: list[tuple[Any, list[tuple[int, Any]]]] = [
            self._command(cmd) for cmd in spec.per_layer]
        shapes = tuple(tuple(index for index, _ in args) for _, args in self.commands)
        self._builders = [_runlist_builder((shape,)) for shape in shapes]
        self._build = _runlist_builder(shapes)
        self._build_args = [item for k, args in self.commands
                            for item in (k, *(value for _, value in args))]
        self._runlist, self._run, self._order = xrt.runlist, xrt.run, spec.order

    def _kernel(self, cmd: CommandSpec) -> Any:
        xrt = self.xrt
        if cmd.flow == ELF_FLOW:
            return self._elf_kernel(cmd)
        key = (cmd.kernel, cmd.flow, None)
        if key not in self._kernels:
            # a full ELF's kernel is opened by name from the context's ELFs
            make = xrt.ext.kernel if cmd.flow == FULL_ELF else xrt.kernel
            self._kernels[key] = make(self.ctx, cmd.kernel)
        return self._kernels[key]

    def _command(self, cmd: CommandSpec) -> tuple[Any, list[tuple[int, Any]]]:
        xrt = self.xrt
        k = self._kernel(cmd)
        if cmd.args is not None:
            return k, [(index, self._named(name_or_value, k, index) if kind == "bo"
                        else name_or_value) for index, kind, name_or_value in cmd.args]
        if cmd.flow == FULL_ELF:
            # the full ELF's ABI: the buffers are the arguments, from 0
            return k, list(enumerate(self._buffer(size, xrt.bo.host_only, 0, None)
                                     for size in cmd.buffers))
        data = [self._buffer(size, xrt.bo.host_only, k.group_id(3 + i), None)
                for i, size in enumerate(cmd.buffers)]
        if cmd.flow == ELF_FLOW:
            # FastFlowLM's call: the control code comes from the module, not arguments
            return k, list(enumerate([cmd.opcode, 0, 0, *data]))
        stream = self._stream(cmd.instructions)
        instr = self._buffer(len(stream), xrt.bo.cacheable, k.group_id(1), stream)
        return k, list(enumerate([cmd.opcode, instr, word_count(stream), *data]))

    def _stream(self, instructions: str) -> bytes:
        if instructions == STAND_IN_WORK:
            return work_stream(self.columns, self.dev_gen)
        return (nop_stream(self.columns, self.dev_gen) if instructions == NOP
                else Path(instructions).read_bytes())

    def _elf_kernel(self, cmd: CommandSpec) -> Any:
        path = cmd.elf or _control_code_path(self._stream(cmd.instructions))
        key: tuple[str, str, str | None] = (cmd.kernel, ELF_FLOW, path)
        if key not in self._kernels:
            module = self._modules.get(path)
            if module is None:
                module = self._modules[path] = self.xrt.module(self.xrt.elf(path))
            self._kernels[key] = self.xrt.ext.kernel(self.ctx, module, cmd.kernel)
        return self._kernels[key]

    def _named(self, name: str, k: Any, index: int) -> Any:
        """A recipe's or capture's buffer, made on first use: with the flags and memory
        group a capture recorded for it (an instruction buffer of the TXN flow, as XRT's
        replay allocates it), else host-only in the memory group of the argument that
        first takes it, as XRT's runner does."""
        if name not in self.named:
            buffer = self.spec.buffers[name]
            content = read_regular(buffer.data, f"buffer {name}", limit=buffer.size) \
                if buffer.data else None
            xrt = self.xrt
            if buffer.memgrp and buffer.flags is not None \
                    and buffer.flags != int(xrt.bo.host_only):
                flags, group = xrt.bo.flags(buffer.flags), buffer.memgrp
            else:
                flags, group = xrt.bo.host_only, self._group(k, index)
            self.named[name] = self._buffer(buffer.size, flags, group, content)
        return self.named[name]

    @staticmethod
    def _group(k: Any, index: int) -> int:
        try:
            return k.group_id(index)
        except RuntimeError:              # a full ELF's kernel has no xclbin connectivity
            return 0

    def _buffer(self, size: int, flags: Any, group: int, content: bytes | None) -> Any:
        bo = self.xrt.bo(self.dev, size, flags, group)
        if content is not None:
            bo.write(content, 0)        # the binding takes any buffer (py::buffer)
        bo.sync(self.xrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE)
        self.made.append((bo, size, content))
        return bo

    def restore(self) -> None:
        """Every buffer as a fresh trial makes it: its content, or zeros as allocated."""
        for bo, size, content in self.made:
            bo.write(bytes(size) if content is None else content, 0)
            bo.sync(self.xrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE)

    def build_runlist(self, start: int, units: int) -> tuple[Any, list[Any]]:
        """The runlist of `units` layers (or runs, for a given order) from `start` on."""
        rl = self._runlist(self.ctx)
        order = self._order
        if order is None:
            runs: list[Any] = [None] * (units * len(self.commands))
            if self.kept is not None:
                self.kept.append((rl, runs))
            self._build(self._run, rl.add, runs, units, *self._build_args)
            return rl, runs
        runs = []
        if self.kept is not None:
            self.kept.append((rl, runs))
        for position in order[start:start + units]:
            k, args = self.commands[position]
            one = [None]
            self._builders[position](self._run, rl.add, one, 1, k,
                                     *(value for _, value in args))
            runs += one
        return rl, runs


# each control code's ELF file as the first trial that needed it found it, by the code and
# where the cache is (`harness.formats.cache.cache_roots` reads these): (path, size, mtime);
# a trial after it takes the file while it stays so, and has it made again when not
_CONTROL_CODE_FILES: dict[tuple[bytes, str | None, str | None], tuple[str, int, int]] = {}


def _control_code_path(stream: bytes) -> str:
    """`control_code_file` of `stream`, looked up in the cache once per process and only
    stat'ed after (a sweep's trial spent a fifth of its time checking the cache's folders
    and comparing the file's bytes, the same every time)."""
    key = (stream, os.environ.get("XDG_CACHE_HOME"), os.environ.get("HOME"))
    known = _CONTROL_CODE_FILES.get(key)
    if known is not None:
        try:
            st = os.stat(known[0])
            if (st.st_size, st.st_mtime_ns) == known[1:]:
                return known[0]
        except OSError:
            pass
    path = str(control_code_file(stream))
    st = os.stat(path)
    _CONTROL_CODE_FILES[key] = (path, st.st_size, st.st_mtime_ns)
    return path


def _context(xrt: Any, dev: Any, xuid: Any, cfg: dict[str, int] | None) -> Any:
    """A hardware context for a registered xclbin, with the configuration a capture
    recorded for it (replay.cpp makes its contexts with theirs): pyxrt's cfg_param
    overload, from the 2.23 binding; an older binding has none and makes it without."""
    if cfg:
        try:
            return xrt.hw_context(dev, xuid, cfg)
        except TypeError:
            pass
    return xrt.hw_context(dev, xuid)


@functools.lru_cache(maxsize=64)
def _runlist_builder(shapes: tuple[tuple[int, ...], ...]) -> Callable[..., None]:
    """The loop a person writes by hand to fill a runlist, for commands whose arguments
    are set at these indices: `r = run(k0); r.set_arg(0, a0_0); ...; add(r)` per command,
    per layer, each run also kept in `runs` (sized for them) at its place. A generic loop
    over (index, value) pairs costs the harness ~15% over a hand-written host program on
    the simulated stack (benchmarks/harness_overhead.py); this one makes the same calls in
    the same order as the generic loop would."""
    count = len(shapes)
    params, body = [], []
    for c, indices in enumerate(shapes):
        params += [f"k{c}", *(f"a{c}_{i}" for i in range(len(indices)))]
        place = "layer" if count == 1 else f"base + {c}"
        body += [f"        r = make_run(k{c})",
                 *(f"        r.set_arg({index}, a{c}_{i})" for i, index in enumerate(indices)),
                 "        add(r)", f"        runs[{place}] = r"]
    head = [] if count == 1 else [f"        base = layer * {count}"]
    source = (f"def build(make_run, add, runs, layers, {', '.join(params)}):\n"
              "    for layer in range(layers):\n" + "\n".join(head + body) + "\n")
    namespace: dict[str, Any] = {}
    exec(compile(source, f"<runlist builder for {shapes}>", "exec"), namespace)
    return namespace["build"]


def run_chunk(loaded: _Loaded, backend: Backend, index: int, layers: int,
              start: int = 0) -> RunlistOutcome:
    """Build, execute and wait for the runlist of `layers` layers from `start` on; what
    it came to."""
    return _run_chunk(loaded, index, layers, start, backend.device_clock(),
                      backend.submit_size)


def _run_chunk(loaded: _Loaded, index: int, layers: int, start: int,
               device_clock: Callable[[], float] | None, submit_size: int) -> RunlistOutcome:
    # run_trial's loop calls this once per runlist, with what the backend says fetched
    # once per trial: a sweep of one-run runlists is little else
    global _runlists_executed
    rl, runs = loaded.build_runlist(start, layers)
    device_before = device_clock() if device_clock is not None else 0.0
    errors: list[str] | None = None
    submit_failed = False
    started = perf_counter()
    try:
        rl.execute()
        _runlists_executed += 1
    except RuntimeError as err:
        # XRT: a failed submit still leaves the list running; it must be waited on.
        errors = [f"execute: {err}"]
        submit_failed = True
    try:
        rl.wait()
    except RuntimeError as err:
        errors = [*(errors or ()), str(err)]
    # what is recorded is worked out after the wait: nothing but the calls is timed
    wall_ms = round((perf_counter() - started) * 1000.0, 3)
    device_ms = None if device_clock is None else \
        round((device_clock() - device_before) / 1000.0, 3)
    count = len(runs)
    chains = [count] if 0 < count <= submit_size else chain_split(count, submit_size)
    if errors is None:
        return RunlistOutcome(index, count, chains, COMPLETED_STATE, COMPLETED_CODE,
                              device_ms=device_ms, wall_ms=wall_ms)
    outcome = RunlistOutcome(index, count, chains, device_ms=device_ms, wall_ms=wall_ms)
    _classify_failure(outcome, "\n".join(errors), runs, submit_size, submit_failed)
    return outcome


def _classify_failure(outcome: RunlistOutcome, message: str, runs: list[Any],
                      submit_size: int, submit_failed: bool) -> None:
    failure = parse_xrt_error(message)
    outcome.message = message
    outcome.health = failure.health or None
    # runlist.wait() blocks until the device answers, so a state in its error is the
    # device's (a host-side expiry would have returned, not raised).
    outcome.source = "device"
    outcome.message_form = STATE_IN_MESSAGE if failure.state is not None else \
        NO_STATE_IN_MESSAGE
    if submit_failed:
        # The runs were never sent: their NEW says nothing about a chain.
        outcome.state = failure.state.name if failure.state else "submit-failed"
        outcome.state_code = int(failure.state) if failure.state else None
        outcome.located_by = "not located: the submit failed"
        return
    read: list[CmdState] = []
    states: list[CmdState] | None = read
    for r in runs:
        try:
            read.append(state_from_pyxrt(r.state()))
        except Exception as err:  # a binding that cannot report member states
            outcome.located_by = f"not located: run.state() failed ({type(err).__name__})"
            states = None
            break
    located = (locate_failure(states, failure.state, submit_size) if states is not None
               else LocatedFailure(None, failure.state, outcome.located_by or ""))
    outcome.located_by = located.how
    if located.index is not None:
        outcome.failing_run = located.index
        outcome.failing_chain = located.index // submit_size
    if located.state is None:
        outcome.state, outcome.state_code = failure.state_text, None
    else:
        outcome.state, outcome.state_code = located.state.name, int(located.state.value)
    if located.index is not None:
        outcome.failing_run_named = run_named(outcome.state, located.index, submit_size)


# Rehearsals a fork server runs before it forks: CPython 3.11 rewrites a function's
# bytecode as it warms up (quickening after 8 calls, then specialising each instruction),
# and a child that did that itself would write, and so copy, the pages of every code
# object its trial runs, and run it at half speed (benchmarks/reproduce_wall.py).
REHEARSALS = 8


def warm(spec: TrialSpec, backend: Backend, rehearsals: int = REHEARSALS) -> None:
    """Load what a trial of `spec` loads (xclbins, ELFs, kernels, buffers) on a throw-away
    simulated device, then run its runlists `rehearsals` times on throw-away devices of
    the documented stack below the profile (`prepare_rehearsal`: no hypothesis plays, no
    real-time clock waits), so a fork server's children start with every cache filled and
    the trial's code warmed. Never on hardware: the server must not open the device. No
    trial's outcome depends on it: each trial gets a fresh device of its own profile."""
    global _runlists_executed
    if backend.hardware:
        return
    backend.prepare_trial(spec.seed, spec.device)
    _Loaded(backend.xrt, spec)
    rehearse = getattr(backend, "prepare_rehearsal", None)
    if rehearse is None:
        return
    executed = _runlists_executed            # XRT's frames count the trials' own only
    try:
        for _ in range(rehearsals):
            rehearse()
            loaded = _Loaded(backend.xrt, spec)
            start = 0
            for index, units in enumerate(spec.chunks):
                _run_chunk(loaded, index, units, start, backend.device_clock(),
                           backend.submit_size)
                start += units
            del loaded
    finally:
        _runlists_executed = executed


def _loaded(xrt: Any, spec: TrialSpec) -> _Loaded:
    """A trial's device objects: its own, or while XRT's capture records, those its
    workload shares (restored as a fresh trial finds them)."""
    if not xrt_records():
        return _Loaded(xrt, spec)
    key = repr((id(xrt), spec.xclbins, spec.programs, spec.runlist_context,
                spec.context_cfg, spec.per_layer, spec.buffers, spec.order))
    shared = _SHARED_WHILE_CAPTURED.get(key)
    if shared is None:
        shared = _Loaded(xrt, spec)
        shared.kept = []
        _SHARED_WHILE_CAPTURED[key] = shared
    else:
        shared.restore()
    return shared


def run_trial(spec: TrialSpec, backend: Backend) -> TrialResult:
    """Run every chunk of one trial; never raises for what the stack does."""
    result = TrialResult(spec.trial, TrialStatus.COMPLETED, seed=spec.seed)
    started = time.perf_counter()
    backend.prepare_trial(spec.seed, spec.device)
    # a trial that begins on a wedged device is marked so (the simulated stack knows it)
    result.wedged_device = backend.wedged_device()
    loaded = None
    # The cyclic collector pauses for the trial: what a trial makes is freed by reference
    # counts (tests/test_hot_path.py holds that it leaves no cycle behind), and collections
    # every 700 objects, walking what the run holds, were a sweep's only other work.
    collecting = gc.isenabled()
    gc.disable()
    try:
        loaded = _loaded(backend.xrt, spec)
        failed = False
        start = 0
        per_unit, submit_size = spec.runs_per_unit, backend.submit_size
        device_clock = backend.device_clock()
        outcomes = result.runlists
        for index, units in enumerate(spec.chunks):
            start += units
            if failed and not spec.continue_after_failure:
                runs = units * per_unit
                outcomes.append(RunlistOutcome(index, runs, chain_split(runs, submit_size),
                                               skipped=True))
                continue
            on_wedged = backend.wedged_device() is not None
            outcome = _run_chunk(loaded, index, units, start - units, device_clock,
                                 submit_size)
            if on_wedged:
                outcome.wedged_device = True
            outcomes.append(outcome)
            if outcome.state != COMPLETED_STATE:
                failed = True
                result.status = TrialStatus.FAILED
    except RuntimeError as err:
        # XRT refused the set-up (e.g. no hardware context): the stack failed, not us.
        result.status = TrialStatus.FAILED
        result.error = f"set-up failed: {err}"
    finally:
        del loaded
        if collecting:
            gc.enable()
        if backend.hardware:
            # Release every context and buffer now, even any held by a reference cycle,
            # so the next trial does not start beside what a hang may have poisoned.
            gc.collect()
    result.wall_ms = round((time.perf_counter() - started) * 1000.0, 3)
    unfinished = result.status is not TrialStatus.COMPLETED
    result.kernel_log = backend.simulated_kernel_log(unfinished)
    result.trace_events = backend.simulated_trace(unfinished)
    result.device_life = backend.device_life()
    return result
