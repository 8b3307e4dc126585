"""A plan written as XRT's replay script: what `run_PLAN.sh` runs, for every flow.

Replaying it is the harness's trial of the plan (`xrt-runner --replay`, replay.cpp): one
process, one hardware context, each runlist of the plan a frame of its own runs, executed
and waited on in turn on one thread, with the same buffers, each buffer's content restored
in the first frame that uses it. XRT's recipe runner cannot do that: it runs a recipe's
runlists in one process only as one list, and creates every buffer as `xrt::ext::bo`
(host-only; runner.cpp `create_bo`), while the TXN flow's instruction buffer must be
allocated cacheable in the memory group of the kernel's argument 1, as mlir-aie and IRON
do. XRT's own writer, `capture.cpp` (`replay_resource_buffer`), records `memgrp` and
`flags` for every buffer that has a memory group and is not host-only, and the replay
allocates it so (`replay.cpp` `create_buffer`). The format is the one XRT's capture writes
(STACK.md 9): keys sorted and two-space indented, as nlohmann::json writes them; frames
named so that their names sort in the order they run, as replay.cpp orders them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

CACHEABLE = 1 << 24              # XCL_BO_FLAGS_CACHEABLE (xrt/detail/xrt_mem.h)
HOST_ONLY = 1 << 29              # XCL_BO_FLAGS_HOST_ONLY
TID = "1"


@dataclass(frozen=True)
class ReplayBuffer:
    """A buffer as a replay script allocates it, and the file its content comes from."""

    size: int
    flags: int | None = None      # as allocated: recorded only with a memory group
    memgrp: int | None = None
    file: str | None = None       # the file (in the export folder) of its content


def recorded(flags: int | None, memgrp: int | None) -> dict[str, int]:
    """What capture.cpp records of a buffer's allocation: memgrp and flags when it has a
    memory group and is not host-only."""
    if memgrp and flags is not None and flags != HOST_ONLY:
        return {"memgrp": memgrp, "flags": flags}
    return {}


def replay_script(hwctx: dict[str, Any], kernels: list[dict[str, Any]],
                  buffers: dict[str, ReplayBuffer],
                  frames: list[list[tuple[str, tuple[tuple[int, str, Any], ...]]]]) -> str:
    """replay.json for `frames` (each a runlist: (kernel name, arguments) per run, an
    argument (argidx, "bo", buffer) or (argidx, "int", C int)) on one context."""
    runs: list[dict[str, Any]] = []
    frame_list: list[dict[str, Any]] = []
    restored: set[str] = set()
    for number, members in enumerate(frames):
        entries = []
        for kernel, args in members:
            name = f"run_{len(runs)}"
            runs.append({
                "name": name, "kernel": kernel,
                "arguments": [{"argidx": i, "bo": v, "type": "inout"}
                              for i, kind, v in args if kind == "bo"],
                # replay.cpp reads a constant as a uint64: a C int's bits
                "constants": [{"argidx": i, "type": "int", "value": v % 2**32}
                              for i, kind, v in args if kind == "int"]})
            data = []
            for i, kind, v in args:
                if kind == "bo" and v not in restored and buffers[v].file:
                    data.append({"argidx": i, "bo": v, "fnm": buffers[v].file})
                    restored.add(v)
            entries.append({"run": name, "arguments": data})
        # replay.cpp runs a thread's frames in the order of their names (a std::map of
        # strings): frame_10 would run before frame_2, so the numbers are padded
        frame = f"frame_{number:0{len(str(len(frames) - 1))}d}"
        frame_list.append({"name": frame, "tid": TID, "runs": entries, "waits": [frame]})
    document = {
        "version": "1.0",
        "resources": {
            "hwctxs": [{"name": "hwctx_0", "cfg": {}, **hwctx}],
            "buffers": [{"name": name, "size": b.size, "type": "inout",
                         **recorded(b.flags, b.memgrp)} for name, b in buffers.items()],
            "kernels": [{"hwctx": "hwctx_0", **k} for k in kernels],
            "runs": runs},
        "execution": {"threads": [TID], "frames": frame_list}}
    return json.dumps(document, indent=2, sort_keys=True) + "\n"
