"""What XRT's own runner would do with a recipe and profile: an independent reading of
Xilinx/XRT `src/runtime_src/core/common/runner/runner.cpp` (963c58ee) for tests, so that
the harness's exports are checked against how the real tool reads them, not against the
harness's own reader.

Rules read from runner.cpp:
- hwctxs: the legacy header's (`xclbin`, or `program` / `programs`) named "header", then
  `resources.hwctxs[]` (`create_hwctxs`); a kernel's `hwctx` defaults to the only one.
- buffers (`buffer::create_buffer`, `create_bo`): `type` is required; an external buffer
  (input, output, inout, weight) is never created by the recipe, nor is one of size 0;
  internal and debug buffers need a size.
- bindings (`bindings::init`, `init_buffer_file`): a binding with `init.file` makes a
  buffer of `size` (the file's size when absent) and copies the file into [begin, end),
  which defaults to [0, size): with no size given, nothing is copied (the userptr path
  needs page-aligned data, which a file read into memory is not); a binding without init
  makes an empty buffer of its (required) size.
- runs (`create_kernel_run`): "kernel" names the kernel, "name" only when "kernel" is
  absent; an argument of a buffer with no xrt::bo is not set (`create_and_set_args`);
  int constants are read as a C int.
- connectivity (xrt_kernel.cpp `validate_bo_at_index`, xrt_bo.cpp `alloc_clone`,
  `buffer_clone`, `copy_through_host`, at 49612fa3): a buffer set on an argument of an
  xclbin kernel whose memory group is not the buffer's is cloned into that group, and the
  clone (a `bo_impl` without a host side) cannot be copied into: "No host side buffer in
  destination buffer". Every recipe buffer is host-only, and the instruction buffer of the
  TXN flow (argument 1 of a kernel with no control-code ELF, on an xclbin context) is
  connected to its own group in FastFlowLM's, mlir-aie's and the harness's xclbins: set
  from a recipe, it fails so (what a real `xrt-runner` printed for such a recipe);
- execution (`npu_runlist::add`): runs go in a vector until `runlist_threshold` (profile
  `execution.runlist_threshold`, default 6) are added, then the whole list becomes an
  xrt::runlist; the profile's `iterations` execute the whole recipe again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXTERNAL = {"input", "output", "inout", "weight"}
DEFAULT_RUNLIST_THRESHOLD = 6


class RunnerError(Exception):
    """What runner.cpp would throw."""


@dataclass
class Run:
    kernel: str                     # the kernel object's name
    instance: str                   # what xrt::kernel / ext::kernel opens
    ctrlcode: str | None
    hwctx: str
    args: dict[int, Any]            # argidx -> int, or the buffer's bytes


@dataclass
class Execution:
    hwctxs: dict[str, dict[str, Any]]
    runs: list[Run]
    as_runlist: bool                # one xrt::runlist, or runs started one by one
    iterations: int


def read(recipe_path: Path, profile_path: Path) -> Execution:
    recipe = json.loads(recipe_path.read_text())
    profile = json.loads(profile_path.read_text())
    folder = recipe_path.parent
    hwctxs: dict[str, dict[str, Any]] = {}
    header = recipe.get("header", {})
    if "xclbin" in header:
        hwctxs["header"] = {"xclbin": header["xclbin"]}
    elif "program" in header or "programs" in header:
        hwctxs["header"] = {"programs": ([header["program"]] if "program" in header else [])
                            + header.get("programs", [])}
    for node in recipe["resources"].get("hwctxs", []):
        hwctxs[node["name"]] = {k: node[k] for k in ("xclbin", "programs") if k in node}
    if not hwctxs:
        raise RunnerError("Could not create hwctx, xclbin or program is required in recipe")

    bos: dict[str, bytes | None] = {}
    for node in recipe["resources"]["buffers"]:
        kind = node["type"]
        size = node["size"] if kind in ("internal", "debug") else node.get("size", 0)
        bos[node["name"]] = None if kind in EXTERNAL or not size else bytes(size)
    for node in profile.get("bindings", []):
        name = node["name"]
        if "init" not in node:
            bos[name] = bytes(node["size"])
            continue
        data = (folder / node["init"]["file"]).read_bytes()
        size = node.get("size", 0)
        begin = node["init"].get("begin", 0)
        end = node["init"].get("end", size)
        buffer = bytearray(size or len(data))
        span = data[:end - begin]
        buffer[begin:begin + len(span)] = span
        bos[name] = bytes(buffer)

    kernels: dict[str, dict[str, Any]] = {}
    for node in recipe["resources"]["kernels"]:
        hwctx = node.get("hwctx") or (next(iter(hwctxs)) if len(hwctxs) == 1 else None)
        if hwctx is None:
            raise RunnerError("Default hwctx is missing or ambigious")
        kernels[node["name"]] = {"instance": node.get("instance", node["name"]),
                                 "ctrlcode": node.get("ctrlcode"), "hwctx": hwctx}
    runs = []
    for node in recipe["execution"]["runs"]:
        kname = node["kernel"] if "kernel" in node else node["name"]
        kernel = kernels[kname]
        args: dict[int, Any] = {}
        for arg in node.get("arguments", []):
            if arg["name"] not in bos:
                raise RunnerError(f"unknown buffer {arg['name']}")
            if bos[arg["name"]] is not None:
                args[arg["argidx"]] = bos[arg["name"]]
        if 1 in args and kernel["ctrlcode"] is None and "xclbin" in hwctxs[kernel["hwctx"]]:
            raise RunnerError("No host side buffer in destination buffer: Invalid argument")
        for constant in node.get("constants", []):
            if constant["type"] != "int" or not -2**31 <= constant["value"] < 2**31:
                raise RunnerError("constant is not a C int")
            args[constant["argidx"]] = constant["value"]
        runs.append(Run(kname, kernel["instance"], kernel["ctrlcode"], kernel["hwctx"], args))
    execution = profile.get("execution", {})
    threshold = execution.get("runlist_threshold", DEFAULT_RUNLIST_THRESHOLD)
    return Execution(hwctxs, runs, len(runs) >= threshold, execution.get("iterations", 1))


def schema_as_runner_reads(path: Path) -> dict[str, Any]:
    """XRT's recipe schema (963c58ee) with the one key runner.cpp reads that it does not
    list: a run names its kernel with `kernel` (create_kernel_run; recipe.md's examples),
    `name` being the deprecated spelling the schema still has."""
    schema = json.loads(path.read_text())
    run = schema["$defs"]["execution"]["properties"]["runs"]["items"]
    assert "kernel" not in run["properties"]        # still so at that commit
    run["properties"]["kernel"] = {"$ref": "#/$defs/key"}
    return schema
