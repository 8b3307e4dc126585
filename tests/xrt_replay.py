"""What `xrt-runner --replay replay.json --dir D` would do: an independent reading of Xilinx/XRT
`src/runtime_src/core/common/runner/replay.cpp` at 49612fa3 (2.26, the commit amd/xdna-driver
856409ca pins; master 963c58ee the same), for tests, so that the harness's replay scripts
are checked against how XRT reads them, not against the harness's own reader.

Rules read from replay.cpp:
- `ini` values are set with xrt::ini::set, each read as a string (`init_ini`);
- `resources.buffers` (`create_buffer`): `xrt::bo{device, size, flags, memgrp}` when the
  entry has a memgrp other than 0 and flags other than host-only, else
  `xrt::ext::bo{device, size}` (host-only); `resources.hwctxs`: an xclbin or `programs`
  (full ELFs, each `add_config`ed), with `cfg` read as strings; `resources.kernels`: with a
  `ctrlcode` ELF an `ext::kernel(hwctx, module, instance)`, else `xrt::kernel` (an ELF
  context: `ext::kernel(hwctx, instance)`); `resources.runs`: constants as uint64, then
  buffer arguments, each buffer looked up by name (`bmap.at`);
- `execution.frames` (`create_frames`, `group_frames`): kept in a std::map keyed by the
  frame's name, so each thread runs its frames in the order their NAMES sort, whatever
  the order in the file; a frame of more than one run is an `xrt::runlist` made in the
  first run's context, of one run a plain `run.start()`/`wait2()` (`alloc_executor`);
- before a frame starts, each buffer named in its runs' `arguments` is filled from its
  `fnm` (at most once a frame; another file for the same buffer in one frame throws
  "Unexpected reinit of buffer"), then the frame starts and every frame in its `waits` is
  waited on; after all frames of an iteration, every frame is waited on again;
- `execution.threads` gives a thread per id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HOST_ONLY = 1 << 29


class ReplayError(Exception):
    """What replay.cpp would throw."""


@dataclass
class Buffer:
    size: int
    flags: int                       # as allocated: host-only unless recorded otherwise
    memgrp: int


@dataclass
class Step:
    """One frame as a thread runs it."""

    frame: str
    thread: str
    runlist: bool                    # an xrt::runlist, or one run started by itself
    runs: list[str]
    hwctx: str
    restored: dict[str, bytes]       # buffer -> the data put in before it starts
    waits: list[str]


@dataclass
class Replay:
    hwctxs: dict[str, dict[str, Any]]
    buffers: dict[str, Buffer]
    runs: dict[str, dict[str, Any]]  # name -> {kernel, instance, ctrlcode, args}
    steps: list[Step] = field(default_factory=list)
    ini: dict[str, str] = field(default_factory=dict)


def read(script: Path, folder: Path | None = None) -> Replay:
    folder = folder or script.parent
    data = json.loads(script.read_text())
    ini = {key: _text(value, f"ini.{key}") for key, value in (data.get("ini") or {}).items()}
    resources = data["resources"]
    buffers = {}
    for node in resources["buffers"]:
        flags, memgrp = node.get("flags", HOST_ONLY), node.get("memgrp", 0)
        if not (memgrp and flags != HOST_ONLY):
            flags, memgrp = HOST_ONLY, 0
        buffers[node["name"]] = Buffer(int(node["size"]), flags, memgrp)
    hwctxs = {}
    for node in resources["hwctxs"]:
        cfg = {key: _text(value, "cfg") for key, value in node.get("cfg", {}).items()}
        if "xclbin" in node:
            _artefact(folder, node["xclbin"])
            hwctxs[node["name"]] = {"xclbin": node["xclbin"], "cfg": cfg}
        elif "programs" in node:
            if not node["programs"]:
                raise ReplayError("No program specified for hwctx")
            for program in node["programs"]:
                _artefact(folder, program)
            hwctxs[node["name"]] = {"programs": node["programs"], "cfg": cfg}
        else:
            raise ReplayError("No xclbin or program specified for hwctx")
    kernels = {}
    for node in resources["kernels"]:
        if node["hwctx"] not in hwctxs:
            raise ReplayError(f"map::at: no hwctx {node['hwctx']}")
        if node.get("ctrlcode"):
            _artefact(folder, node["ctrlcode"])
        kernels[node["name"]] = {"instance": node["instance"], "hwctx": node["hwctx"],
                                 "ctrlcode": node.get("ctrlcode") or None}
    runs = {}
    for node in resources["runs"]:
        kernel = kernels[node["kernel"]]
        args: dict[int, Any] = {}
        for constant in node["constants"]:
            value = constant["value"]
            if not isinstance(value, int) or not 0 <= value < 2**64:
                raise ReplayError("constant is not a uint64")
            args[int(constant["argidx"])] = value
        for argument in node["arguments"]:
            if argument["bo"] not in buffers:
                raise ReplayError(f"map::at: no buffer {argument['bo']}")
            args[int(argument["argidx"])] = ("bo", argument["bo"])
        runs[node["name"]] = {"kernel": node["kernel"], **kernel, "args": args}
    replay = Replay(hwctxs, buffers, runs, ini=ini)
    execution = data["execution"]
    by_name = {frame["name"]: frame for frame in execution["frames"]}
    for thread in execution["threads"]:
        for name in sorted(by_name):                  # std::map<std::string, frame>
            frame = by_name[name]
            if frame["tid"] != thread:
                continue
            replay.steps.append(_step(frame, runs, buffers, folder))
    return replay


def _step(frame: dict[str, Any], runs: dict[str, dict[str, Any]],
          buffers: dict[str, Buffer], folder: Path) -> Step:
    members = [member["run"] for member in frame["runs"]]
    if not members:
        raise ReplayError("A frame must contain at least one run")
    restored: dict[str, bytes] = {}
    named: dict[str, str] = {}
    for member in frame["runs"]:
        for argument in member.get("arguments", []):
            bo, fnm = argument["bo"], argument["fnm"]
            if bo in named:
                if named[bo] != fnm:
                    raise ReplayError("Unexpected reinit of buffer")
                continue
            named[bo] = fnm
            data = _artefact(folder, fnm)
            if len(data) > buffers[bo].size:
                raise ReplayError("size mismatch during buffer initialization")
            restored[bo] = data
    return Step(frame["name"], frame["tid"], len(members) > 1, members,
                runs[members[0]]["hwctx"], restored, list(frame["waits"]))


def _artefact(folder: Path, name: str) -> bytes:
    path = folder / name
    if not path.is_file():
        raise ReplayError(f"artifact {name} not found in {folder}")
    return path.read_bytes()


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ReplayError(f"{where}: get<std::string>() of a non-string")
    return value
