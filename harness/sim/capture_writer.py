"""XRT's capture as the simulated pyxrt plays it: `replay.json` and its artefacts, written
the way XRT's own writer writes them, so that a capture's whole path (record, import,
replay, cut) runs without an NPU (STACK.md 9).

Read from Xilinx/XRT at 49612fa3 (2.26, the commit amd/xdna-driver 856409ca pins; master
the same): `src/runtime_src/core/common/runner/capture.cpp`, `capture.h`,
`detail/capture_artifacts.h`, and where XRT calls it (`XRT_REPLAY_CAPTURE` in
`api/xrt_kernel.cpp` `run_impl_debug` / `runlist_impl_debug`, `api/xrt_bo.cpp`,
`api/xrt_elf.cpp`). Rules played:

- on when `Runtime.capture_frames` is above 0 (environment or xrt.ini, as XRT reads them:
  `harness.probe.xrt_config`), and only while fewer frames than that were captured
  (`is_enabled`): every call after the last frame is not recorded, its own wait
  included. The first call recorded makes the capture folder (`Runtime.capture_output_dir`,
  default `./`); `replay.json` is written there when the process exits normally (the
  capture singleton's destructor), never on `os._exit`, a kill, a crash, or a Ctrl-C
  Python leaves unhandled (it then kills itself with SIGINT before the C library's exit);
- a frame is one `run.start()` or one `runlist.execute()` of a non-empty list; at its
  start every buffer argument of each run not synced to it since the buffer's last
  `sync(XCL_BO_SYNC_BO_TO_DEVICE)` is dumped from its host memory; a wait (`run.wait`,
  `run.wait2` and `runlist.wait` that did not throw) is added to the last frame the
  waiting thread started, naming the last frame of the run or runlist waited on;
- a buffer is recorded when first synced to the device or set; a sub-buffer syncs through
  its parent, which is recorded first (`buffer_sub::sync` in `api/xrt_bo.cpp`), and has the
  parent's flags and memory group; its `memgrp` is the group's bank, without the slot;
- records are made on first use: a run on its first `set_arg` or `runlist.add`, with its
  context (the xclbin dumped, or for a context made from full ELFs each ELF) and kernel
  (its control-code ELF dumped) before it; an ELF's bytes when it is made; names count
  from 0 per kind (`hwctx_N`, `kernel_N`, `bo_N`, `run_N`, `frame_N`);
- an int argument is recorded as the 4 bytes pyxrt passes (a C int) read as a uint64; a
  run's arguments are a list grown to the highest index set, holding 0 where nothing was
  set (recorded as constants);
- artefacts are `capture_N.bin`, numbered as written, one file for each distinct content
  (XRT dedupes by an FNV-1a hash of it; the same but for a collision); empty data has no
  file (a kernel without control code records `ctrlcode: ""`);
- `replay.json`: every object's keys sorted (nlohmann::json), two-space indent, no final
  newline; a section with nothing in it is `null`; `ini` (the xrt.ini XRT read, flat,
  `Runtime.capture*` left out) only when there is something in it; buffers record `memgrp`
  and `flags` when they have a memory group and are not host-only; a frame lists its
  runs' restored buffers by their place in the frame's own argument list (so after a
  partial re-sync XRT names the wrong buffer; a place holding a constant fails the save
  with `could not save replay script: ...` on stderr and no replay.json).

Not modelled: XRT keys its records by object address, so an object freed while capturing
and a new one at its address can be taken for each other (keep objects alive while
capturing); the simulated writer keys by object. XRT orders contexts, buffers, kernels
and runs by the address of its records; here contexts, kernels and runs by creation and
buffers by first use in a run (the importer relies on neither). Thread ids are the
threads' own, as XRT prints them (pthread_self).
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.formats.capture_origin import ORIGIN_FILE, SIMULATED, mark_capture
from harness.probe.xrt_config import XrtConfig, xrt_config

REPLAY = "replay.json"
HOST_ONLY = 1 << 29                   # XCL_BO_FLAGS_HOST_ONLY (xrt/detail/xrt_mem.h)


class _Bo:
    __slots__ = ("name", "storage", "offset", "size", "memgrp", "flags", "valid")

    def __init__(self, name: str, obj: Any) -> None:
        self.name = name
        self.storage, self.offset, self.size = obj._s(), obj._offset, obj._size
        flags = getattr(obj, "_flags", None)
        self.flags = 0 if flags is None else int(getattr(flags, "value", flags))
        # bo::get_memory_group: the bank of the group it was made in (xcl_bo_flags), not
        # the context's slot above it
        self.memgrp = int(getattr(obj, "_group", 0) or 0) & 0xFFFF
        self.valid: set[int] = set()          # runs (by record id) synced with this buffer

    def data(self) -> bytes:
        return bytes(self.storage.host[self.offset:self.offset + self.size])


@dataclass
class _Hwctx:
    name: str
    cfg: dict[str, str]
    xclbin: str | None                    # the artefact, or None for a full-ELF context
    programs: list[str]


@dataclass
class _Kernel:
    name: str
    instance: str
    hwctx: _Hwctx
    ctrlcode: str


@dataclass
class _Run:
    name: str
    hwctx: _Hwctx
    kernel: _Kernel
    args: list[Any] = field(default_factory=list)     # int (uint64) or _Bo


@dataclass
class _Runlist:
    runs: list[_Run] = field(default_factory=list)


@dataclass
class _Frame:
    name: str
    target: _Run | _Runlist
    tid: int
    args: dict[int, list[Any]] = field(default_factory=dict)   # id(run) -> uint64 | fnm
    waits: list[str] = field(default_factory=list)


class SaveFailed(Exception):
    """What makes XRT's writer give up (it prints the text and writes no replay.json)."""


class Recorder:
    """The capture of this process: XRT's `frames` singleton."""

    def __init__(self, config: XrtConfig) -> None:
        self.wanted = config.capture_frames
        self.folder = Path(config.capture_dir)
        self.ini = {k: v for k, v in config.ini.items() if "Runtime.capture" not in k}
        self.folder.mkdir(parents=True, exist_ok=True)
        self.artefacts: dict[bytes, str] = {}
        self.counts = dict.fromkeys(("hwctx", "kernel", "bo", "run", "frame", "file"), 0)
        self.bos: weakref.WeakKeyDictionary[Any, _Bo] = weakref.WeakKeyDictionary()
        self.hwctxs: weakref.WeakKeyDictionary[Any, _Hwctx] = weakref.WeakKeyDictionary()
        self.kernels: weakref.WeakKeyDictionary[Any, _Kernel] = weakref.WeakKeyDictionary()
        self.runs: weakref.WeakKeyDictionary[Any, _Run] = weakref.WeakKeyDictionary()
        self.runlists: weakref.WeakKeyDictionary[Any, _Runlist] = weakref.WeakKeyDictionary()
        self.elfs: weakref.WeakKeyDictionary[Any, bytes] = weakref.WeakKeyDictionary()
        self.all_runs: list[_Run] = []                   # every run recorded, in order
        self.frames: list[_Frame] = []
        self.last_frame: dict[int, _Frame] = {}          # thread -> the last frame it began
        self.interrupted = False

    def enabled(self) -> bool:
        return len(self.frames) < self.wanted

    def _name(self, kind: str) -> str:
        number = self.counts[kind]
        self.counts[kind] = number + 1
        return f"capture_{number}.bin" if kind == "file" else f"{kind}_{number}"

    def dump(self, data: bytes) -> str:
        """artifacts::dump: a file per distinct content, none for empty data."""
        if not data:
            return ""
        key = hashlib.sha256(data).digest()
        name = self.artefacts.get(key)
        if name is None:
            name = self.artefacts[key] = self._name("file")
            (self.folder / name).write_bytes(data)
        return name

    # -- records ------------------------------------------------------------------------

    def bo(self, obj: Any) -> _Bo:
        found = self.bos.get(obj)
        if found is None:
            found = self.bos[obj] = _Bo(self._name("bo"), obj)
        return found

    def _hwctx(self, ctx: Any) -> _Hwctx:
        found = self.hwctxs.get(ctx)
        if found is None:
            cfg = {key: str(value) for key, value in getattr(ctx, "_cfg", {}).items()}
            if ctx._elfs:            # made from full ELFs: each ELF, in the order added
                seen: list[Any] = []
                for elf, _ in ctx._elfs.values():
                    if all(elf is not other for other in seen):
                        seen.append(elf)
                programs = [self.dump(self._elf_bytes(elf)) for elf in seen]
                found = _Hwctx("", cfg, None, programs)
            else:
                found = _Hwctx("", cfg, self.dump(Path(ctx._xclbin._path).read_bytes()), [])
            found.name = self._name("hwctx")
            self.hwctxs[ctx] = found
        return found

    def _elf_bytes(self, elf: Any) -> bytes:
        try:
            return self.elfs[elf]
        except KeyError:             # an ELF made before capturing began: elfs.at throws
            raise IndexError("map::at") from None

    def _kernel(self, k: Any, hwctx: _Hwctx) -> _Kernel:
        found = self.kernels.get(k)
        if found is None:
            ctrlcode = ""
            if hwctx.xclbin is not None and k._module is not None:
                ctrlcode = self.dump(self._elf_bytes(k._elf))
            found = self.kernels[k] = _Kernel(self._name("kernel"), k._full_name, hwctx,
                                              ctrlcode)
        return found

    def run(self, r: Any) -> _Run:
        """create_run_if_new: the run, with its context and kernel recorded first."""
        found = self.runs.get(r)
        if found is None:
            k = r._kernel
            hwctx = self._hwctx(k._hwctx)
            kernel = self._kernel(k, hwctx)
            found = self.runs[r] = _Run(self._name("run"), hwctx, kernel)
            self.all_runs.append(found)
        return found

    # -- what the hooks record ------------------------------------------------------------

    def set_arg(self, r: Any, index: int, value: Any, is_buffer: bool) -> None:
        record = self.run(r)
        # a buffer's record; an int as the C int's 4 bytes pyxrt passes, read as a uint64
        value = self.bo(value) if is_buffer else int(value) % 2**32
        if index >= len(record.args):
            record.args.extend([0] * (index + 1 - len(record.args)))
        record.args[index] = value

    def add(self, rl: Any, r: Any) -> None:
        runlist = self.runlists.get(rl)
        if runlist is None:
            runlist = self.runlists[rl] = _Runlist()
        runlist.runs.append(self.run(r))

    def sync(self, obj: Any) -> None:
        """capture_sync; a sub-buffer syncs through its parent, which is recorded first
        (xrt_bo.cpp `buffer_sub::sync`)."""
        parent = getattr(obj, "_parent", None)
        if parent is not None:
            self.sync(parent)
        self.bo(obj).valid.clear()

    def start(self, target: _Run | _Runlist | None) -> None:
        if target is None:                   # m_runs.at / m_runlists.at of an unknown one
            raise IndexError("map::at")
        frame = _Frame(self._name("frame"), target, threading.get_ident())
        for run in target.runs if isinstance(target, _Runlist) else [target]:
            args = frame.args.setdefault(id(run), [])
            for arg in run.args:
                if isinstance(arg, _Bo):
                    if id(run) not in arg.valid:
                        args.append(self.dump(arg.data()))
                        arg.valid.add(id(run))
                else:
                    args.append(arg)
        self.frames.append(frame)
        self.last_frame[frame.tid] = frame

    def wait(self, target: _Run | _Runlist | None) -> None:
        if not self.frames:
            raise RuntimeError("No active frame, cannot wait")
        active = self.last_frame.get(threading.get_ident())
        if active is None:
            raise RuntimeError("No active frame for current thread, cannot wait")
        waited = next((f for f in reversed(self.frames) if target is not None
                       and f.target is target), None)
        if waited is None:
            raise RuntimeError("No frame to wait on")
        active.waits.append(waited.name)

    # -- replay.json ----------------------------------------------------------------------

    def document(self) -> dict[str, Any]:
        """save_replay_script's recipe (SaveFailed where XRT's writer throws)."""
        hwctxs = _unique(run.hwctx for run in self.all_runs)
        buffers = _unique(a for run in self.all_runs for a in run.args if isinstance(a, _Bo))
        kernels = _unique(run.kernel for run in self.all_runs)
        resources = {
            "hwctxs": [{"name": h.name, "cfg": h.cfg,
                        **({"xclbin": h.xclbin} if h.xclbin is not None
                           else {"programs": h.programs})} for h in hwctxs],
            "buffers": [_buffer(b) for b in buffers],
            "kernels": [{"name": k.name, "instance": k.instance, "hwctx": k.hwctx.name,
                         **({"ctrlcode": k.ctrlcode} if k.hwctx.xclbin is not None else {})}
                        for k in kernels],
            "runs": [{"name": run.name, "kernel": run.kernel.name,
                      "arguments": [{"bo": a.name, "argidx": i, "type": "inout"}
                                    for i, a in enumerate(run.args) if isinstance(a, _Bo)],
                      "constants": [{"value": a, "argidx": i, "type": "int"}
                                    for i, a in enumerate(run.args)
                                    if not isinstance(a, _Bo)]}
                     for run in self.all_runs]}
        execution = {"threads": [str(t) for t in sorted({f.tid for f in self.frames})],
                     "frames": [self._frame(f) for f in self.frames]}
        # insert_json_object: an empty array leaves its member null
        document: dict[str, Any] = {
            "version": "1.0",
            "resources": {key: value or None for key, value in resources.items()},
            "execution": {key: value or None for key, value in execution.items()}}
        if self.ini:
            document["ini"] = dict(self.ini)
        return document

    def _frame(self, frame: _Frame) -> dict[str, Any]:
        runs = frame.target.runs if isinstance(frame.target, _Runlist) else [frame.target]
        entries = []
        for run in runs:
            if id(run) not in frame.args:
                raise SaveFailed("map::at")
            arguments = []
            for place, value in enumerate(frame.args[id(run)]):
                if not isinstance(value, str):
                    continue
                # replay_execution_frame_arguments: the place in the frame's list is taken
                # for the run's argument index
                if place >= len(run.args):
                    raise SaveFailed(f"vector::_M_range_check: __n (which is {place}) >= "
                                     f"this->size() (which is {len(run.args)})")
                held = run.args[place]
                if not isinstance(held, _Bo):
                    raise SaveFailed("std::get: wrong index for variant")
                arguments.append({"argidx": place, "bo": held.name, "fnm": value})
            entries.append({"run": run.name, "arguments": arguments})
        return {"name": frame.name, "tid": str(frame.tid), "runs": entries,
                "waits": list(frame.waits)}

    def save(self) -> None:
        """At the process's normal exit: replay.json, or XRT's one line on why not."""
        if self.interrupted:
            return
        try:
            text = json.dumps(self.document(), indent=2, sort_keys=True, ensure_ascii=False)
        except SaveFailed as err:
            print(f"[XRT] ERROR: could not save replay script: {err}", file=sys.stderr)
            return
        try:
            (self.folder / REPLAY).write_text(text)
        except OSError:
            return                           # `if (ostr)`: a file it cannot open is skipped
        # the mark beside it (replay.json stays XRT's own format): no simulated capture
        # passes for a machine's
        from harness.sim import control
        try:
            mark_capture(self.folder, SIMULATED, control.current().profile.name)
        except OSError:
            print(f"[harness] could not mark {self.folder} as the SIMULATED stack's capture "
                  f"({ORIGIN_FILE})", file=sys.stderr)


def _unique(items: Any) -> list[Any]:
    seen: dict[int, Any] = {}
    for item in items:
        seen.setdefault(id(item), item)
    return list(seen.values())


def _buffer(b: _Bo) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": b.name, "size": b.size, "type": "inout"}
    if b.memgrp and b.flags != HOST_ONLY:
        entry.update(memgrp=b.memgrp, flags=b.flags)
    return entry


# -- the process's capture, made on the first call recorded --------------------------------

_recorder: Recorder | None = None
_config: XrtConfig | None = None


def recorder(release_captures: Callable[[], bool]) -> Recorder | None:
    """This process's capture while it records (None once its frames are all taken, or
    when capture is off, or the XRT release played has none: `release_captures`); made,
    with its folder, on the first call, as XRT reads its settings once."""
    global _recorder, _config
    if _config is None:
        _config = xrt_config()
        if _config.capturing and not release_captures():
            _config = XrtConfig({})
    if not _config.capturing:
        return None
    if _recorder is None:
        _recorder = Recorder(_config)
        _at_normal_exit(_recorder)
    return _recorder if _recorder.enabled() else None


def _at_normal_exit(capture: Recorder) -> None:
    """Save when the interpreter exits normally. Registered where only a normal exit runs
    it: the interpreter's shutdown (threading's exit callbacks run in Py_FinalizeEx), not
    `atexit._run_exitfuncs` before an `os._exit`. A KeyboardInterrupt Python leaves
    unhandled ends the process by SIGINT after that shutdown, before the C library's
    `exit`, where XRT would write: the hook below notes it, and nothing is saved."""
    previous = sys.excepthook

    def note(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        if issubclass(kind, KeyboardInterrupt):
            capture.interrupted = True
        previous(kind, value, tb)
    sys.excepthook = note
    register: Callable[[Callable[[], None]], Any] = getattr(
        threading, "_register_atexit", None) or _atexit_register
    try:
        register(capture.save)
    except RuntimeError:             # already shutting down
        _atexit_register(capture.save)


def _atexit_register(function: Callable[[], None]) -> None:
    import atexit
    atexit.register(function)
