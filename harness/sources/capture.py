"""XRT captures (STACK.md 9): what an application really submitted, read as cases.

`xrt-capture --frames N -- APP` (XRT master since 2026-06) writes `replay.json` and the
artefacts of every `run.start()` and `runlist.execute()`: a frame each. The format is
the one XRT's `capture.cpp` writes and `replay.md` describes:

- `resources.hwctxs[] {name, cfg, xclbin | programs}` (a context made from full ELFs
  lists its programs: the full-elf flow),
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

A section with nothing in it is `null`: `capture.cpp` `insert_json_object` leaves the
member it created empty-handed.

Every reference is checked (hwctx, kernel, run, buffer, artefact file) and what is wrong
is named with its field and file. A frame is a plan source: its runs, in order, are
what plans cut (`run --frame F --plan 21+21`).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness.formats.elf import ElfError, read_elf
from harness.formats.jsonread import JsonReader, describe, gc_paused, parse_json
from harness.model.errors import CaseError, PlanError
from harness.model.plan import Plan, make_plan
from harness.model.results import ELF_FLOW, FULL_ELF, INSTR_BO, BufferSpec
from harness.sources.case import DEFAULT_TRIALS, NAME, Case, Command, FieldChecker
from harness.sources.confine import OutsideFolder, inside

REPLAY = "replay.json"
MAX_REPLAY_BYTES = 256 << 20


class CaptureError(CaseError):
    """A capture the harness cannot read: the field and file are named."""


@dataclass(frozen=True)
class Kernel:
    name: str
    instance: str
    hwctx: str
    ctrlcode: str | None          # absolute path


@dataclass(frozen=True)
class Run:
    name: str
    kernel: str
    args: tuple[tuple[int, str, Any], ...]    # (argidx, "bo", buffer) / (argidx, "int", v)


@dataclass(frozen=True)
class Frame:
    name: str
    tid: str
    runs: tuple[str, ...]
    data: tuple[tuple[str, str], ...]         # (buffer, absolute data file) dumped here
    waits: tuple[str, ...]

    @property
    def depth(self) -> int:
        return len(self.runs)


@dataclass(frozen=True)
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
    kernels: dict[str, Kernel]
    runs: dict[str, Run]
    threads: tuple[str, ...]
    frames: tuple[Frame, ...]
    programs: dict[str, tuple[str, ...]] = field(default_factory=dict)   # full-ELF contexts

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


def _file_in(read: JsonReader, folder: Path, name: str, where: str) -> str:
    try:
        path = inside(folder, name)
    except OutsideFolder as err:
        raise read.fail(where, str(err)) from None
    if not path.is_file():
        raise read.fail(where, f"{name} is not in {folder}")
    return str(path)


def _elf_in(read: JsonReader, folder: Path, name: str, where: str) -> str:
    """An ELF the capture names, read now: a file that is no ELF is bad input, not a
    device failure."""
    path = _file_in(read, folder, name, where)
    try:
        read_elf(path)
    except ElfError as err:
        raise read.fail(where, str(err)) from None
    return path


def replay_file(ref: str | Path) -> Path:
    path = Path(ref)
    return path / REPLAY if path.is_dir() else path


def load_capture(ref: str | Path) -> Capture:
    """A capture folder (or its replay.json), every reference checked."""
    path = replay_file(ref)
    try:
        stat = path.stat()
    except OSError as err:
        raise CaptureError(f"cannot read {path}: {err.strerror or err} (a capture folder holds "
                           f"{REPLAY} and the artefacts xrt-capture wrote)") from None
    return _cached(str(path.resolve()), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=8)
def _cached(path: str, mtime_ns: int, size: int) -> Capture:
    if size > MAX_REPLAY_BYTES:
        raise CaptureError(f"{path}: {size} bytes; a {REPLAY} over "
                           f"{MAX_REPLAY_BYTES >> 20} MiB is refused")
    raw = Path(path).read_bytes()
    data = parse_json(raw, path, CaptureError, "; a capture cut short? capture again, "
                      "letting the application exit")
    with gc_paused():
        return _parse(data, Path(path), hashlib.sha256(raw).hexdigest())


def _parse(data: Any, path: Path, digest: str) -> Capture:
    read = JsonReader(str(path), CaptureError)
    folder = path.parent
    top = read.mapping(data, "(top level)")
    if str(top.get("version")) != "1.0":
        raise read.fail("version", f"{top.get('version')!r}; XRT's capture writes 1.0")
    resources = read.mapping(top.get("resources"), "resources")
    hwctxs: dict[str, str] = {}
    programs: dict[str, tuple[str, ...]] = {}
    for where, entry in _section(read, resources, "hwctxs", "resources"):
        name = read.text(entry.get("name"), where + ".name")
        if name in hwctxs or name in programs:
            raise read.fail(where + ".name", f"{name!r} is named twice")
        if "xclbin" in entry:
            hwctxs[name] = _file_in(read, folder, read.text(entry["xclbin"], where + ".xclbin"),
                                    where + ".xclbin")
        elif "programs" in entry:
            files = read.array(entry["programs"], where + ".programs")
            if not files:
                raise read.fail(where + ".programs", "no program recorded for the context")
            programs[name] = tuple(_elf_in(read, folder, read.text(f, at), at)
                                   for at, f in ((f"{where}.programs[{i}]", f)
                                                 for i, f in enumerate(files)))
        else:
            raise read.fail(where, "neither an xclbin nor programs")
    contexts = {*hwctxs, *programs}
    buffers: dict[str, Buffer] = {}
    for where, entry in _section(read, resources, "buffers", "resources"):
        name = read.text(entry.get("name"), where + ".name")
        if name in buffers:
            raise read.fail(where + ".name", f"{name!r} is named twice")
        size = read.size(entry.get("size"), where + ".size")
        flags = read.index(entry["flags"], where + ".flags") if "flags" in entry else None
        memgrp = read.index(entry["memgrp"], where + ".memgrp") if "memgrp" in entry \
            else None
        buffers[name] = Buffer(size, flags, memgrp)
    kernels: dict[str, Kernel] = {}
    for where, entry in _section(read, resources, "kernels", "resources"):
        name = read.text(entry.get("name"), where + ".name")
        hwctx = read.text(entry.get("hwctx"), where + ".hwctx")
        if hwctx not in contexts:
            raise read.fail(where + ".hwctx", f"{hwctx!r} is not a context of "
                                              f"resources.hwctxs ({', '.join(sorted(contexts))})")
        ctrlcode = None
        if entry.get("ctrlcode"):
            ctrlcode = _elf_in(read, folder, read.text(entry["ctrlcode"], where + ".ctrlcode"),
                               where + ".ctrlcode")
        instance = read.text(entry.get("instance"), where + ".instance")
        kernels[name] = Kernel(name, instance, hwctx, ctrlcode)
    runs: dict[str, Run] = {}
    for where, entry in _section(read, resources, "runs", "resources"):
        name = read.text(entry.get("name"), where + ".name")
        kernel = read.text(entry.get("kernel"), where + ".kernel")
        if kernel not in kernels:
            raise read.fail(where + ".kernel", f"{kernel!r} is not a kernel of "
                                               "resources.kernels")
        runs[name] = Run(name, kernel, _run_args(read, entry, where, buffers))
    execution = read.mapping(top.get("execution"), "execution")
    threads = tuple(str(t) for t in read.array(execution.get("threads") or [],
                                               "execution.threads"))
    frames: list[Frame] = []
    seen: set[str] = set()
    for where, entry in read.objects(execution.get("frames") or [], "execution.frames"):
        frame = _frame(read, entry, where, runs, buffers, folder, seen)
        if threads and frame.tid not in threads:
            raise read.fail(where + ".tid", f"thread {frame.tid} is not one of "
                                            "execution.threads")
        frames.append(frame)
        seen.add(frame.name)
    if not frames:
        raise read.fail("execution.frames", "no frames: nothing was started while capturing")
    _check_waits(read, frames)
    return Capture(folder, digest, hwctxs, buffers, kernels, runs, threads, tuple(frames),
                   programs)


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
        bo = read.text(arg.get("bo"), at + ".bo")
        if bo not in buffers:
            raise read.fail(at + ".bo", f"{bo!r} is not a buffer of resources.buffers")
        args.append((read.index(arg.get("argidx"), at + ".argidx"), "bo", bo))
    for at, constant in read.objects(entry.get("constants") or [], where + ".constants"):
        value = constant.get("value")
        # replay.cpp create_run reads the value as a uint64
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64:
            raise read.fail(at + ".value", f"expected an unsigned 64-bit integer, got "
                                           f"{describe(value)}")
        args.append((read.index(constant.get("argidx"), at + ".argidx"), "int", value))
    indices = [a[0] for a in args]
    if len(set(indices)) != len(indices):
        raise read.fail(where, f"an argument index is set twice ({sorted(indices)})")
    return tuple(sorted(args))


def _frame(read: JsonReader, entry: dict[str, Any], where: str, runs: dict[str, Run],
           buffers: dict[str, Buffer], folder: Path, seen: set[str]) -> Frame:
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
        if run not in runs:
            raise read.fail(at + ".run", f"{run!r} is not a run of resources.runs")
        names.append(run)
        for here, arg in read.objects(member.get("arguments", []), at + ".arguments"):
            bo = read.text(arg.get("bo"), here + ".bo")
            if bo not in buffers:
                raise read.fail(here + ".bo", f"{bo!r} is not a buffer of resources.buffers")
            fnm = read.text(arg.get("fnm"), here + ".fnm")
            data.append((bo, _file_in(read, folder, fnm, here + ".fnm")))
    waits = []
    for j, wait in enumerate(read.array(entry.get("waits") or [], where + ".waits")):
        if not isinstance(wait, str) or not wait:
            raise read.fail(f"{where}.waits[{j}]", f"expected a frame name, got "
                                                   f"{describe(wait)}")
        waits.append(wait)
    return Frame(name, tid, tuple(names), tuple(data), tuple(waits))


# -- a frame as a case ---------------------------------------------------------------------

def capture_case(capture: Capture, frame_name: str | None, *, name: str, description: str,
                 file: str, sha256: str, trials: int = DEFAULT_TRIALS,
                 deadline_s: float | None = None,
                 plan_specs: dict[str, str] | None = None) -> Case:
    """Frame `frame_name` of `capture` (None: the deepest runlist) as a case: every
    context the application made, the frame's runs in order, the data each buffer held
    when it started."""
    frame = capture.frame(frame_name)
    context = capture.context_of(frame)
    # Runs alike (same kernel, same arguments) share a template; each is still its own
    # run object when the runlist is built, as in the application.
    members = [capture.runs[r] for r in frame.runs]
    keys: dict[tuple, int] = {}
    templates: list[Run] = []
    order = []
    for run in members:
        key = (run.kernel, run.args)
        if key not in keys:
            keys[key] = len(templates)
            templates.append(run)
        order.append(keys[key])
    commands = tuple(Command(capture.kernels[run.kernel].instance, "nop", (),
                             elf=capture.kernels[run.kernel].ctrlcode,
                             args=_as_c_ints(capture, run))
                     for run in templates)
    data = capture.data_for(frame)
    used = {value for run in templates for _, kind, value in run.args if kind == "bo"}
    buffers = {bo: BufferSpec(capture.buffers[bo].size, data.get(bo),
                              capture.buffers[bo].flags, capture.buffers[bo].memgrp)
               for bo in sorted(used)}
    n = frame.depth
    specs = plan_specs or {"captured": str(n)}
    plans: list[Plan] = []
    for plan_name, spec in specs.items():
        plans.append(make_plan(plan_name, spec, n))
    flow = FULL_ELF if context in capture.programs else ELF_FLOW if all(
        c.elf for c in commands) else INSTR_BO
    return Case(name=name, description=description, source=f"xrt-capture {capture.folder}",
                pack="capture", xclbins=dict(capture.hwctxs), layers=n,
                runlist_context=context, per_layer=commands, plans=tuple(plans), expect={},
                trials=trials, deadline_s=deadline_s, file=file, sha256=sha256, flow=flow,
                buffers=buffers, order=tuple(order), kind="capture", frame=frame.name,
                frames=tuple(f.name for f in capture.frames), capture=str(capture.folder),
                programs=dict(capture.programs))


def _as_c_ints(capture: Capture, run: Run) -> tuple[tuple[int, str, Any], ...]:
    """A run's arguments as pyxrt can set them. The capture records constants as uint64;
    pyxrt's run.set_arg takes a C int, so a value of 32 bits is passed as the C int with
    the same bits (what XRT's set_arg copies), and a wider one cannot be set from Python
    at all (XRT's own `xrt-runner --replay` can)."""
    out = []
    for index, kind, value in run.args:
        if kind == "int" and value >= 2**31:
            if value >= 2**32:
                raise CaptureError(f"{capture.folder / REPLAY}: {run.name} sets argument "
                                   f"{index} to the 64-bit constant 0x{value:x}; pyxrt's "
                                   "run.set_arg takes a C int, so the harness cannot set it "
                                   "(replay this frame with xrt-runner --replay)")
            value -= 2**32
        out.append((index, kind, value))
    return tuple(out)


def depth_histogram(capture: Capture) -> dict[int, int]:
    return dict(sorted(Counter(f.depth for f in capture.frames).items()))


def frame_case(case: Case, frame: str) -> Case:
    """The same capture case on another frame (a sweep over frames, a plan's own frame)."""
    if case.frame == frame:
        return case
    return capture_case(load_capture(case.capture or ""), frame, name=case.name,
                        description=case.description, file=case.file, sha256=case.sha256,
                        trials=case.trials, deadline_s=case.deadline_s)



def folder_case(folder: Path) -> Case:
    """A capture folder given directly (not imported): a case named after it."""
    capture = load_capture(folder)
    return capture_case(capture, None, name=folder.resolve().name,
                        description=f"XRT capture in {folder}", file=str(capture.folder / REPLAY),
                        sha256=capture.sha256)


def pointer_case(check: FieldChecker, data: dict, file: str, raw: bytes) -> Case:
    """A case that points at an imported capture (`capture import` writes these)."""
    top = check.mapping(data, (), {"case", "description", "source", "capture", "frame",
                                   "plans", "trials", "deadline_s"},
                        {"case", "description", "capture"})
    name = check.string(top["case"], ("case",), NAME)
    folder = (Path(file).parent / check.string(top["capture"], ("capture",))).resolve()
    capture = load_capture(folder)
    frame = str(top["frame"]) if "frame" in top else None
    plans = top.get("plans")
    if plans is not None and (not isinstance(plans, dict) or not all(
            isinstance(v, (str, int)) for v in plans.values())):
        raise check.error(("plans",), "expected a mapping of plan name to spec")
    trials = (check.integer(top["trials"], ("trials",), 1, 1000)
              if "trials" in top else DEFAULT_TRIALS)
    deadline = (check.number(top["deadline_s"], ("deadline_s",), 0.1, 86_400)
                if "deadline_s" in top else None)
    try:
        return capture_case(capture, frame, name=name,
                            description=check.string(top["description"], ("description",)),
                            file=file, sha256=hashlib.sha256(raw + capture.sha256.encode())
                            .hexdigest(), trials=trials, deadline_s=deadline,
                            plan_specs={str(k): str(v) for k, v in plans.items()}
                            if plans else None)
    except PlanError as err:
        raise check.error(("plans",), str(err)) from None
