"""XRT captures (STACK.md 9): what an application really submitted, read as cases.

`xrt-capture --frames N -- APP` (XRT master since 2026-06) writes `replay.json` and the
artefacts of every `run.start()` and `runlist.execute()`: a frame each. The format is
the one XRT's `capture.cpp` writes and `replay.md` describes:

- `resources.hwctxs[] {name, cfg, xclbin | programs}` (a context made from full ELFs
  lists its programs: the full-elf flow; `cfg` is the context's configuration, string
  values by key, which `replay.cpp` creates the context with),
  `resources.buffers[] {name, size, type, memgrp?, flags?}` (memgrp and flags, recorded
  for the buffers of the TXN flow that are not host-only, are what they are allocated
  with again, as `replay.cpp` `create_buffer` does),
  `resources.kernels[] {name, instance, hwctx, ctrlcode?}`,
  `resources.runs[] {name, kernel, arguments[{bo, argidx, type}],
  constants[{value, argidx, type}]}` (values recorded as uint64);
- `execution.threads[]`, `execution.frames[] {name, tid, runs[{run, arguments[{argidx,
  bo, fnm}]}], waits[]}`: a runlist frame lists all its runs; `fnm` names the data a
  buffer held when the frame started (dumped only when it changed since: the data a
  frame runs with is the latest dump at or before it); a frame waits on itself, on
  frames of its thread before it, or on a frame of another thread, which may come
  later in the file (`replay.cpp` runs each thread's frames in order and waits where
  told).

- `ini {key: value}`: the XRT settings the application ran with (`replay.cpp` sets them
  before replaying; `Runtime.capture*` left out).

A section with nothing in it is `null`: `capture.cpp` `insert_json_object` leaves the
member it created empty-handed. `capture.cpp` serialises with nlohmann::json, whose
objects keep their keys sorted: a real `replay.json` reads `execution`, `ini`,
`resources`, `version` (frames before the runs they name, `buffers` before `hwctxs`).
The file is read a run and a frame at a time in that order or any other that puts a
section's runs after its contexts, buffers and kernels (the order the tests wrote before
they wrote XRT's), what a frame names being checked once every section is in; anything
else is read whole, to the same capture and the same errors.

Every reference is checked (hwctx, kernel, run, buffer, artefact file) and what is wrong
is named with its field and file. A frame is a plan source: its runs, in order, are
what plans cut (`run --frame F --plan 21+21`).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness.formats.capture_origin import MACHINE, ORIGIN_FILE, CaptureOrigin, capture_origin
from harness.formats.jsonread import (
    JsonReader,
    JsonShapeError,
    JsonStream,
    describe,
    gc_paused,
    parse_json,
)
from harness.formats.regular import check_regular
from harness.model.errors import CaseError
from harness.sources.case import REPLAY
from harness.sources.confine import ArtefactError, artefact, inside

MAX_REPLAY_BYTES = 256 << 20


class CaptureError(CaseError):
    """A capture the harness cannot read: the field and file are named."""


@dataclass(frozen=True, slots=True)
class CapturedKernel:
    name: str
    instance: str
    hwctx: str
    ctrlcode: str | None          # absolute path


@dataclass(frozen=True, slots=True)
class Run:
    name: str
    kernel: str
    args: tuple[tuple[int, str, Any], ...]    # (argidx, "bo", buffer) / (argidx, "int", v)


@dataclass(frozen=True, slots=True)
class Frame:
    name: str
    tid: str
    runs: tuple[str, ...]
    data: tuple[tuple[str, str], ...]         # (buffer, absolute data file) dumped here
    waits: tuple[str, ...]

    @property
    def depth(self) -> int:
        return len(self.runs)


@dataclass(frozen=True, slots=True)
class Buffer:
    size: int
    flags: int | None = None
    memgrp: int | None = None


@dataclass(frozen=True)
class Capture:
    folder: Path
    sha256: str
    hwctxs: dict[str, str]                    # name -> absolute xclbin path
    buffers: dict[str, Buffer]
    kernels: dict[str, CapturedKernel]
    runs: dict[str, Run]
    threads: tuple[str, ...]
    frames: tuple[Frame, ...]
    programs: dict[str, tuple[str, ...]] = field(default_factory=dict)   # full-ELF contexts
    cfgs: dict[str, dict[str, str]] = field(default_factory=dict)       # context -> cfg
    ini: dict[str, str] = field(default_factory=dict)    # the XRT settings it ran with
    origin: CaptureOrigin = CaptureOrigin(MACHINE)       # which stack wrote it (its mark)

    def frame(self, name: str | None) -> Frame:
        """A frame by name (or by its number: 7 for frame_7); None: the deepest runlist."""
        if name is None:
            # the deepest; of equal depths the first (enumerate: frames.index is O(n) each)
            return max(enumerate(self.frames), key=lambda at: (at[1].depth, -at[0]))[1]
        wanted = f"frame_{name}" if name.isdigit() else name
        for frame in self.frames:
            if frame.name == wanted:
                return frame
        deepest = self.frame(None)
        raise CaptureError(f"{self.folder / REPLAY}: no frame {name!r} (frames frame_0 .. "
                           f"{self.frames[-1].name}; the deepest runlist is {deepest.name}, "
                           f"{deepest.depth} runs)")

    def context_of(self, frame: Frame) -> str:
        contexts = {self.kernels[self.runs[r].kernel].hwctx for r in frame.runs}
        if len(contexts) != 1:
            raise CaptureError(f"{self.folder / REPLAY}: {frame.name} runs kernels of "
                               f"{len(contexts)} hardware contexts ({', '.join(sorted(contexts))})"
                               "; a runlist belongs to one")
        return contexts.pop()

    def data_for(self, frame: Frame) -> dict[str, str]:
        """The data each buffer holds when `frame` starts: its latest dump up to it."""
        latest: dict[str, str] = {}
        for earlier in self.frames:
            latest.update(earlier.data)
            if earlier is frame:
                return latest
        return latest


def _file_in(read: JsonReader, folder: Path, name: str, where: str, *,
             elf: bool = False) -> str:
    """A file the capture names, in its folder (`artefact`)."""
    try:
        return str(artefact(folder, name, elf=elf))
    except ArtefactError as err:
        raise read.fail(where, str(err)) from None


def replay_file(ref: str | Path) -> Path:
    path = Path(ref)
    return path / REPLAY if path.is_dir() else path


def load_capture(ref: str | Path) -> Capture:
    """A capture folder (or its replay.json), every reference checked. Every file of it is
    opened as its artefacts are (`harness.sources.confine`): replay.json and the mark of
    who wrote it too, so a link of either out of the folder is refused, not followed (it
    would also have made the folder it leads to the one the artefacts are looked for in)."""
    given = replay_file(ref)
    folder = given.parent.resolve()
    path = _confined(folder, given.name)
    try:
        stat = path.stat()
    except OSError as err:
        raise CaptureError(f"cannot read {given}: {err.strerror or err} (a capture folder "
                           f"holds {REPLAY} and the artefacts xrt-capture wrote)") from None
    check_regular(path, REPLAY, error=CaptureError)      # no FIFO nor device in its place
    capture = _cached(str(path), str(folder), stat.st_mtime_ns, stat.st_size)
    _confined(folder, ORIGIN_FILE)
    return replace(capture, origin=capture_origin(capture.folder))


def _confined(folder: Path, name: str) -> Path:
    try:
        return inside(folder, name)
    except ArtefactError as err:
        raise CaptureError(str(err)) from None


@lru_cache(maxsize=8)
def _cached(path: str, folder: str, mtime_ns: int, size: int) -> Capture:
    if size > MAX_REPLAY_BYTES:
        raise CaptureError(f"{path}: {size} bytes; a {REPLAY} over "
                           f"{MAX_REPLAY_BYTES >> 20} MiB is refused")
    with gc_paused():
        try:
            return _streamed(Path(path), Path(folder))
        except _OutOfOrder:
            pass
        raw = Path(path).read_bytes()        # sections in another order: read it whole
        data = parse_json(raw, path, CaptureError, _CUT_SHORT)
        return _whole(data, Path(path), Path(folder), hashlib.sha256(raw).hexdigest())


_CUT_SHORT = "; a capture cut short? capture again, letting the application exit"
_RESOURCES = ("hwctxs", "buffers", "kernels", "runs")


class _OutOfOrder(Exception):
    """Sections in an order the streamed read cannot check as it goes."""


def _streamed(path: Path, folder: Path) -> Capture:
    """replay.json read a run and a frame at a time, each checked as it comes (what a
    frame names, once every section is in): a capture of a million runs is never held as
    one parsed document, in XRT's key order or the one the tests wrote before."""
    build = _Builder(path, folder)
    try:
        with JsonStream(path) as stream:
            if stream.peek() != "{":
                raise _OutOfOrder                # not an object: the whole read says so
            seen = set()
            for key in stream.object_keys():
                if key == "version":
                    build.version(stream.value())
                elif key == "resources":
                    _stream_resources(stream, build)
                elif key == "execution":
                    _stream_execution(stream, build)
                elif key == "ini":
                    build.ini_section(stream.value())
                else:
                    stream.value()
                seen.add(key)
            stream.end()
            digest = stream.digest.hexdigest()
    except UnicodeDecodeError as err:
        raise CaptureError(f"{path}: not UTF-8 text (byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise CaptureError(f"{path}:{err.lineno}: not valid JSON ({err.msg}){_CUT_SHORT}") \
            from None
    except JsonShapeError as err:
        raise CaptureError(f"{path}: {err}") from None
    if not {"version", "resources", "execution"} <= seen:
        raise _OutOfOrder                         # a section missing: as the whole read says
    return build.finish(digest)


def _stream_resources(stream: JsonStream, build: _Builder) -> None:
    if stream.peek() != "{":
        build.resources(stream.value())          # not an object: refused by the builder
        return
    for key in stream.object_keys():
        if key != "runs":
            build.section(key, stream.value())
            continue
        if not build.has_sections(_RESOURCES[:-1]):
            raise _OutOfOrder                    # runs before what they name: read whole
        build.resources_before_runs()
        if stream.peek() == "[":
            for position in stream.array_items():
                build.run(f"resources.runs[{position}]", stream.value())
        else:                                  # null (none), or what the whole read refuses
            for where, entry in _section(build.read, {"runs": stream.value()}, "runs",
                                         "resources"):
                build.run(where, entry)
    build.resources_before_runs()
    build.resourced = True


def _stream_execution(stream: JsonStream, build: _Builder) -> None:
    if stream.peek() != "{":
        build.execution(stream.value())
        return
    for key in stream.object_keys():
        if key == "frames" and stream.peek() == "[":
            for position in stream.array_items():
                build.frame(f"execution.frames[{position}]", stream.value())
        elif key == "threads":
            build.thread_list(stream.value())
        else:
            value = stream.value()
            if key == "frames":
                for where, entry in build.read.objects(value or [], "execution.frames"):
                    build.frame(where, entry)
    build.executed = True


def _whole(data: Any, path: Path, folder: Path, digest: str) -> Capture:
    """replay.json parsed whole, checked section by section as the streamed read does."""
    build = _Builder(path, folder)
    top = build.read.mapping(data, "(top level)")
    build.version(top.get("version"))
    build.resources(top.get("resources"))
    build.execution(top.get("execution"))
    if "ini" in top:
        build.ini_section(top["ini"])
    return build.finish(digest)


class _Builder:
    """A Capture made from replay.json's sections in whatever order they come, each
    checked as it comes: a run's references (its kernel, its buffers) and a kernel's (its
    context) to the resources before them, artefact files at once; what a frame names
    (runs, buffers, threads, frames) once every section is in, since XRT writes the
    frames first."""

    def __init__(self, path: Path, folder: Path) -> None:
        self.read = JsonReader(str(path), CaptureError)
        self.folder = folder               # the capture's: where its artefacts must lie
        self.hwctxs: dict[str, str] = {}
        self.programs: dict[str, tuple[str, ...]] = {}
        self.cfgs: dict[str, dict[str, str]] = {}
        self.ini: dict[str, str] = {}
        self.buffers: dict[str, Buffer] = {}
        self.kernels: dict[str, CapturedKernel] = {}
        self.runs: dict[str, Run] = {}
        self.threads: tuple[str, ...] = ()
        self.frames: list[Frame] = []
        self.seen: set[str] = set()
        self.shared: dict[Any, Any] = {}       # runs alike share their arguments' tuples
        self.resourced = self.executed = self.resources_checked = False
        self._sections: dict[str, Any] = {}
        self._frame_buffers: list[tuple[str, str]] = []   # (buffer, where) a frame named

    def version(self, value: Any) -> None:
        if str(value) != "1.0":
            raise self.read.fail("version", f"{value!r}; XRT's capture writes 1.0")

    def ini_section(self, value: Any) -> None:
        """The XRT settings the application ran with: replay.cpp sets each (a string)."""
        self.ini = _strings(self.read, value, "ini")

    def resources(self, value: Any) -> None:
        resources = self.read.mapping(value, "resources")
        for key in _RESOURCES[:-1]:
            self.section(key, resources.get(key))
        self.resources_before_runs()
        for where, entry in _section(self.read, resources, "runs", "resources"):
            self.run(where, entry)
        self.resourced = True

    def section(self, key: str, value: Any) -> None:
        """hwctxs, buffers or kernels, whole (checked once all three are in)."""
        self._sections[key] = value

    def has_sections(self, keys: tuple[str, ...]) -> bool:
        return all(key in self._sections for key in keys)

    def resources_before_runs(self) -> None:
        """Check what runs refer to: the contexts, the buffers, the kernels."""
        if self.resources_checked:
            return
        self.resources_checked = True
        read, folder, sections = self.read, self.folder, self._sections
        for where, entry in _section(read, sections, "hwctxs", "resources"):
            name = read.text(entry.get("name"), where + ".name")
            if name in self.hwctxs or name in self.programs:
                raise read.fail(where + ".name", f"{name!r} is named twice")
            if "xclbin" in entry:
                self.hwctxs[name] = _file_in(read, folder,
                                             read.text(entry["xclbin"], where + ".xclbin"),
                                             where + ".xclbin")
            elif "programs" in entry:
                files = read.array(entry["programs"], where + ".programs")
                if not files:
                    raise read.fail(where + ".programs", "no program recorded for the context")
                self.programs[name] = tuple(_file_in(read, folder, read.text(f, at), at,
                                                     elf=True)
                                            for at, f in ((f"{where}.programs[{i}]", f)
                                                          for i, f in enumerate(files)))
            else:
                raise read.fail(where, "neither an xclbin nor programs")
            cfg = _strings(read, entry.get("cfg"), where + ".cfg")
            if cfg:
                self.cfgs[name] = cfg
        contexts = {*self.hwctxs, *self.programs}
        for where, entry in _section(read, sections, "buffers", "resources"):
            name = read.text(entry.get("name"), where + ".name")
            if name in self.buffers:
                raise read.fail(where + ".name", f"{name!r} is named twice")
            size = read.size(entry.get("size"), where + ".size")
            flags = read.index(entry["flags"], where + ".flags") if "flags" in entry else None
            memgrp = read.index(entry["memgrp"], where + ".memgrp") if "memgrp" in entry \
                else None
            self.buffers[sys.intern(name)] = Buffer(size, flags, memgrp)
        for where, entry in _section(read, sections, "kernels", "resources"):
            name = read.text(entry.get("name"), where + ".name")
            hwctx = read.text(entry.get("hwctx"), where + ".hwctx")
            if hwctx not in contexts:
                raise read.fail(where + ".hwctx",
                                f"{hwctx!r} is not a context of resources.hwctxs "
                                f"({', '.join(sorted(contexts))})")
            ctrlcode = None
            if entry.get("ctrlcode"):
                ctrlcode = _file_in(read, folder,
                                    read.text(entry["ctrlcode"], where + ".ctrlcode"),
                                    where + ".ctrlcode", elf=True)
            instance = read.text(entry.get("instance"), where + ".instance")
            self.kernels[name] = CapturedKernel(name, instance, hwctx, ctrlcode)

    def run(self, where: str, value: Any) -> None:
        read = self.read
        entry = read.mapping(value, where)
        name = read.text(entry.get("name"), where + ".name")
        if self.frames:                  # frames came first: share the names they hold
            name = sys.intern(name)
        kernel = read.text(entry.get("kernel"), where + ".kernel")
        if kernel not in self.kernels:
            raise read.fail(where + ".kernel", f"{kernel!r} is not a kernel of "
                                               "resources.kernels")
        args = _run_args(read, entry, where, self.buffers)
        args = self.shared.setdefault(args, args)
        self.runs[name] = Run(name, self.kernels[kernel].name, args)

    def execution(self, value: Any) -> None:
        execution = self.read.mapping(value, "execution")
        self.thread_list(execution.get("threads"))
        for where, entry in self.read.objects(execution.get("frames") or [],
                                              "execution.frames"):
            self.frame(where, entry)
        self.executed = True

    def thread_list(self, value: Any) -> None:
        self.threads = tuple(str(t) for t in self.read.array(value or [], "execution.threads"))

    def frame(self, where: str, value: Any) -> None:
        entry = self.read.mapping(value, where)
        frame = _frame(self.read, entry, where, self.folder, self.seen, self._frame_buffers,
                       self.runs)
        self.frames.append(frame)
        self.seen.add(frame.name)

    def finish(self, digest: str) -> Capture:
        read = self.read
        if not self.frames:
            raise read.fail("execution.frames", "no frames: nothing was started while "
                                                "capturing")
        self._check_frames()
        _check_waits(read, self.frames)
        return Capture(self.folder, digest, self.hwctxs, self.buffers, self.kernels,
                       self.runs, self.threads, tuple(self.frames), self.programs,
                       self.cfgs, self.ini)

    def _check_frames(self) -> None:
        """What the frames name, now that every section is in: runs, buffers, threads."""
        read, runs = self.read, self.runs
        for i, frame in enumerate(self.frames):
            for j, run in enumerate(frame.runs):
                if run not in runs:
                    raise read.fail(f"execution.frames[{i}].runs[{j}].run",
                                    f"{run!r} is not a run of resources.runs")
            if self.threads and frame.tid not in self.threads:
                raise read.fail(f"execution.frames[{i}].tid", f"thread {frame.tid} is not "
                                                              "one of execution.threads")
        for bo, where in self._frame_buffers:
            if bo not in self.buffers:
                raise read.fail(where, f"{bo!r} is not a buffer of resources.buffers")
        sizes: dict[str, int] = {}
        for i, frame in enumerate(self.frames):
            for bo, path in frame.data:
                if path not in sizes:
                    try:
                        sizes[path] = check_regular(path, f"buffer {bo}", error=CaptureError)
                    except CaptureError as err:
                        raise read.fail(f"execution.frames[{i}]", str(err)) from None
                if sizes[path] > self.buffers[bo].size:
                    # restored whole into a buffer it does not fit (6 GB for 4 KiB)
                    raise read.fail(f"execution.frames[{i}]", f"{path} is {sizes[path]} "
                                    f"bytes, more than the {self.buffers[bo].size} bytes of "
                                    f"buffer {bo} it fills: give a file that fits it")


def _strings(read: JsonReader, value: Any, where: str) -> dict[str, str]:
    """An object of string values (null or absent: empty), as replay.cpp reads cfg and
    ini (`get<std::string>()`)."""
    if value is None:
        return {}
    found = read.mapping(value, where)
    for key, item in found.items():
        if not isinstance(item, str):
            raise read.fail(f"{where}.{key}", f"expected a string, got {describe(item)}")
    return found


def _section(read: JsonReader, parent: dict[str, Any], key: str, where: str):
    """An array of objects that capture.cpp writes as null when it is empty."""
    value = parent.get(key)
    return read.objects([] if value is None else value, f"{where}.{key}")


def _check_waits(read: JsonReader, frames: list[Frame]) -> None:
    """A frame waits on itself, on an earlier frame of its own thread, or on any frame of
    another thread (replay.cpp's executor runs each thread's frames in order and waits on
    the frames named, wherever they are in the file)."""
    position = {f.name: i for i, f in enumerate(frames)}
    thread = {f.name: f.tid for f in frames}
    for i, frame in enumerate(frames):
        for j, wait in enumerate(frame.waits):
            if wait not in position:
                raise read.fail(f"execution.frames[{i}].waits[{j}]",
                                f"{wait!r} is not a frame of the capture")
            if thread[wait] == frame.tid and position[wait] > i:
                raise read.fail(f"execution.frames[{i}].waits[{j}]",
                                f"{wait!r} comes later in the same thread ({frame.tid}); its "
                                "thread could never reach it")


def _run_args(read: JsonReader, entry: dict[str, Any], where: str,
              buffers: dict[str, Buffer]) -> tuple[tuple[int, str, Any], ...]:
    args: list[tuple[int, str, Any]] = []
    for at, arg in read.objects(entry.get("arguments") or [], where + ".arguments"):
        bo = sys.intern(read.text(arg.get("bo"), at + ".bo"))
        if bo not in buffers:
            raise read.fail(at + ".bo", f"{bo!r} is not a buffer of resources.buffers")
        args.append((read.c_int(arg.get("argidx"), at + ".argidx"), "bo", bo))
    for at, constant in read.objects(entry.get("constants") or [], where + ".constants"):
        value = constant.get("value")
        # replay.cpp create_run reads the value as a uint64
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64:
            raise read.fail(at + ".value", f"expected an unsigned 64-bit integer, got "
                                           f"{describe(value)}")
        args.append((read.c_int(constant.get("argidx"), at + ".argidx"), "int", value))
    indices = [a[0] for a in args]
    if len(set(indices)) != len(indices):
        raise read.fail(where, f"an argument index is set twice ({sorted(indices)})")
    return tuple(sorted(args))


def _frame(read: JsonReader, entry: dict[str, Any], where: str, folder: Path,
           seen: set[str], buffers: list[tuple[str, str]], runs: dict[str, Run]) -> Frame:
    """A frame's own shape and artefact files; the runs and buffers it names are added to
    what `_Builder._check_frames` checks once the resources are in (`buffers` gets each
    buffer named with where). A run's name is the one its run holds when the runs came
    first, else interned, so that runs and frames share one string either way."""
    name = read.text(entry.get("name"), where + ".name")
    if name in seen:
        raise read.fail(where + ".name", f"{name!r} is named twice")
    tid = entry.get("tid")                  # written as text; a number is read as one
    tid = str(tid) if isinstance(tid, int) and not isinstance(tid, bool) else \
        read.text(tid, where + ".tid")
    names, data = [], []
    members = list(read.objects(entry.get("runs"), where + ".runs"))
    if not members:
        raise read.fail(where + ".runs", "a frame starts at least one run")
    for at, member in members:
        run = read.text(member.get("run"), at + ".run")
        known = runs.get(run)
        names.append(known.name if known is not None else sys.intern(run))
        for here, arg in read.objects(member.get("arguments", []), at + ".arguments"):
            bo = sys.intern(read.text(arg.get("bo"), here + ".bo"))
            buffers.append((bo, here + ".bo"))
            # the run's own arguments say where each buffer goes; this one is checked only
            # (replay.cpp reads it as an int too)
            read.c_int(arg.get("argidx"), here + ".argidx")
            fnm = read.text(arg.get("fnm"), here + ".fnm")
            data.append((bo, _file_in(read, folder, fnm, here + ".fnm")))
    waits = []
    for j, wait in enumerate(read.array(entry.get("waits") or [], where + ".waits")):
        if not isinstance(wait, str) or not wait:
            raise read.fail(f"{where}.waits[{j}]", f"expected a frame name, got "
                                                   f"{describe(wait)}")
        waits.append(wait)
    return Frame(name, tid, tuple(names), tuple(data), tuple(waits))


def depth_histogram(capture: Capture) -> dict[int, int]:
    return dict(sorted(Counter(f.depth for f in capture.frames).items()))
