"""Captures written to the format XRT's capture.cpp writes (replay.md; STACK.md 9), for
tests: artefacts are `capture_N.bin` files, names are `hwctx_N`, `bo_N`, `kernel_N`,
`run_N`, `frame_N`, thread ids are numbers written as strings, and every object's keys
sorted, as nlohmann::json writes them (`execution`, `ini`, `resources`, `version`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.formats.elf_writer import control_code_elf, full_elf
from harness.formats.txn import nop_stream
from harness.formats.xclbin_writer import flm_spec, synthesize

FLM_CONTEXTS = ("attn", "mm", "layer", "dequant")
MAIN, OTHER = "140123456789", "140123456790"


class CaptureWriter:
    """Builds a replay.json and its artefacts the way XRT records an application."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.artefacts = 0
        self.hwctxs: list[dict[str, Any]] = []
        self.buffers: list[dict[str, Any]] = []
        self.kernels: list[dict[str, Any]] = []
        self.runs: list[dict[str, Any]] = []
        self.frames: list[dict[str, Any]] = []
        self.threads: list[str] = []

    def artefact(self, data: bytes) -> str:
        name = f"capture_{self.artefacts}.bin"
        self.artefacts += 1
        (self.folder / name).write_bytes(data)
        return name

    def hwctx(self, label: str, cfg: dict[str, str] | None = None) -> str:
        name = f"hwctx_{len(self.hwctxs)}"
        xclbin = self.artefact(synthesize(flm_spec(f"Capture/{label}")))
        self.hwctxs.append({"name": name, "cfg": cfg or {}, "xclbin": xclbin})
        return name

    def program_hwctx(self, columns: int = 4) -> str:
        """A context made from a full ELF (capture.cpp dump_programs)."""
        name = f"hwctx_{len(self.hwctxs)}"
        program = self.artefact(full_elf(nop_stream(columns), columns))
        self.hwctxs.append({"name": name, "cfg": {}, "programs": [program]})
        return name

    def elf_kernel(self, hwctx: str, instance: str = "main:sequence") -> str:
        """A kernel of a full-ELF context: no ctrlcode of its own."""
        name = f"kernel_{len(self.kernels)}"
        self.kernels.append({"name": name, "instance": instance, "hwctx": hwctx})
        return name

    def kernel(self, hwctx: str, instance: str = "MLIR_AIE", columns: int = 8) -> str:
        name = f"kernel_{len(self.kernels)}"
        ctrlcode = self.artefact(control_code_elf(nop_stream(columns)))
        self.kernels.append({"name": name, "instance": instance, "hwctx": hwctx,
                             "ctrlcode": ctrlcode})
        return name

    def buffer(self, size: int = 4096, *, flags: int | None = None,
               memgrp: int | None = None) -> str:
        name = f"bo_{len(self.buffers)}"
        entry: dict[str, Any] = {"name": name, "size": size, "type": "inout"}
        if memgrp:                    # capture.cpp: only for non-host-only buffers
            entry.update(memgrp=memgrp, flags=flags)
        self.buffers.append(entry)
        return name

    def raw_run(self, kernel: str, bos: dict[int, str], constants: dict[int, int]) -> str:
        name = f"run_{len(self.runs)}"
        self.runs.append({
            "name": name, "kernel": kernel,
            "arguments": [{"bo": bo, "argidx": i, "type": "inout"} for i, bo in bos.items()],
            "constants": [{"value": v, "argidx": i, "type": "int"}
                          for i, v in constants.items()]})
        return name

    def run(self, kernel: str, bos: list[str]) -> str:
        """A run called as FastFlowLM calls kernels: (3, 0, 0, bo...)."""
        name = f"run_{len(self.runs)}"
        self.runs.append({
            "name": name, "kernel": kernel,
            "arguments": [{"bo": bo, "argidx": 3 + i, "type": "inout"}
                          for i, bo in enumerate(bos)],
            "constants": [{"value": v, "argidx": i, "type": "int"}
                          for i, v in enumerate((3, 0, 0))]})
        return name

    def frame(self, runs: list[str], *, tid: str = MAIN, waits: list[str] | None = None,
              dump: dict[str, bytes] | None = None) -> str:
        name = f"frame_{len(self.frames)}"
        if tid not in self.threads:
            self.threads.append(tid)
        members = []
        for run in runs:
            args = []
            for arg in next(r for r in self.runs if r["name"] == run)["arguments"]:
                if dump and arg["bo"] in dump:
                    args.append({"argidx": arg["argidx"], "bo": arg["bo"],
                                 "fnm": self.artefact(dump.pop(arg["bo"]))})
            members.append({"run": run, "arguments": args})
        self.frames.append({"name": name, "tid": tid, "runs": members,
                            "waits": [name] if waits is None else waits})
        return name

    def document(self) -> dict[str, Any]:
        # capture.cpp insert_json_object leaves an empty section null
        def section(items: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
            return items or None
        return {"version": "1.0",
                "resources": {"hwctxs": section(self.hwctxs),
                              "buffers": section(self.buffers),
                              "kernels": section(self.kernels), "runs": section(self.runs)},
                "execution": {"threads": section(self.threads),
                              "frames": section(self.frames)},
                "ini": {"Runtime.verbosity": "4"}}

    def save(self, document: dict[str, Any] | None = None, *, xrt_order: bool = True) -> Path:
        """replay.json as capture.cpp writes it (`ostr << std::setw(2) << recipe`: keys
        sorted, two-space indent); `xrt_order=False` keeps the order the document was
        built in (version, resources, execution: what the harness's tests wrote before)."""
        path = self.folder / "replay.json"
        path.write_text(json.dumps(document or self.document(), indent=2,
                                   sort_keys=xrt_order))
        return self.folder


def decode_capture(folder: Path, depth: int = 42) -> Path:
    """What FastFlowLM's decode looks like captured: four contexts, single-run frames
    around one `depth`-run runlist frame in the layer context."""
    writer = CaptureWriter(folder)
    contexts = {label: writer.hwctx(label) for label in FLM_CONTEXTS}
    kernels = {label: writer.kernel(ctx) for label, ctx in contexts.items()}
    weights = [writer.buffer() for _ in range(5)]
    attn = writer.run(kernels["attn"], weights)
    writer.frame([attn], dump={weights[0]: b"\x01" * 4096})
    mm = writer.run(kernels["mm"], weights)
    writer.frame([mm])
    layers = [writer.run(kernels["layer"], weights) for _ in range(depth)]
    writer.frame(layers, dump={weights[1]: b"\x02" * 4096})
    dequant = writer.run(kernels["dequant"], weights)
    writer.frame([dequant])
    return writer.save()


def threaded_capture(folder: Path) -> Path:
    """Two threads, each with its runlist, one waiting on the other's frame."""
    writer = CaptureWriter(folder)
    ctx = writer.hwctx("layer")
    kernel = writer.kernel(ctx)
    bos = [writer.buffer() for _ in range(5)]
    first = writer.frame([writer.run(kernel, bos) for _ in range(8)], tid=MAIN)
    second = writer.frame([writer.run(kernel, bos) for _ in range(30)], tid=OTHER,
                          waits=[first])
    writer.frame([writer.run(kernel, bos)], tid=MAIN, waits=[second, "frame_2"])
    return writer.save()
