"""Any case's plans written as XRT run recipes, for XRT's own `xrt-runner` and no Python.

The format is XRT's (`src/runtime_src/core/common/runner/recipe.md`, `profile.md`,
`schema/recipe.schema.json`; STACK.md 8), as `harness.sources.recipe` reads it, and as
XRT replay scripts (`harness.sources.replay_export`). A plan's `run_PLAN.sh` replays it as
the harness runs a trial (one process, its runlists in turn); XRT's runner makes one
`xrt::runlist` of each contiguous sequence of NPU runs, so each runlist of a plan is also a
recipe of its own, for a runner without `--replay` (not for the instruction-buffer flow,
which XRT's runner cannot run: see `_readme`).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.formats.output_paths import check_folder
from harness.formats.regular import read_regular
from harness.model.errors import BadInput
from harness.model.plan import plan_file_stem
from harness.model.results import ELF_FLOW, FULL_ELF
from harness.sources.case import Case, CaseKind, Command
from harness.sources.export_owned import listing_line
from harness.sources.recipe import RUNLIST_THRESHOLD, c_int_refusal, fits_c_int

# a buffer's content, as a recipe's or capture's run filled it: data_NAME.bin
DATA_PREFIX = "data_"
# A run as a recipe names its arguments: (argidx, "bo" | "int", buffer name | value).
Args = tuple[tuple[int, str, Any], ...]


@dataclass
class Export:
    """What `export` wrote: the recipes (one per runlist of each plan), the script that
    runs each plan's in order, and the artefacts they name that are not here (the folder's
    README says where they go)."""

    recipes: list[str]
    missing: list[str]
    replays: list[str] = field(default_factory=list)   # the TXN flow as replay scripts
    scripts: list[str] = field(default_factory=list)   # run_PLAN.sh, one per plan


def export_plans(case: Case, plans: list[tuple[str, list[int]]], xclbin: Path | None,
                 real: bool, flow: str, folder: Path) -> Export:
    """Write `case`, cut as each plan says, as XRT run recipes into `folder` (which must
    not exist). XRT's runner makes one runlist of each contiguous sequence of NPU runs,
    so each runlist of a plan is a recipe of its own, run in order by run_PLAN.sh.
    `xclbin` gives the partition the control code is sized to; it is copied only when
    `real` (a stand-in is never passed off as the pack), else the README says where the
    real one goes. A context made from full ELFs is written as `resources.hwctxs[]` with
    its programs.

    Every buffer is one XRT's runner creates (runner.cpp `create_bo`, `bindings::init`):
    a data buffer with no content is `internal` with its size; one with content is bound
    in the profile with its `size` and `init.file` (without a size the runner copies
    nothing into it). The instruction-buffer flow is also written as XRT replay scripts
    (`replay_PLAN.json`), which keep the flags and memory group its buffers are allocated
    with (`harness.sources.replay_export`)."""
    programs = case.programs.get(case.runlist_context)
    if programs is None and flow == FULL_ELF:
        raise BadInput(f"{case.name}: --flow full-elf needs a full ELF for context "
                       f"{case.runlist_context!r} (programs: in the case); the simulator's "
                       "stand-in is not exported")
    written = _Recipes(case, flow, programs)
    written.context(xclbin, real)
    for c, command in enumerate(case.per_layer):
        written.command(c, command)
    written.named_buffers()
    recipes: list[str] = []
    replays: list[str] = []
    for plan_name, chunks in plans:
        written.plan(plan_name, chunks, recipes, replays)
    written.profile(plans)
    txn = written.programs is None and any("ctrlcode" not in k for k in written.kernels)
    written.files["README.md"] = _readme(case, plans, flow, written.files, written.missing,
                                         txn).encode()
    _write_folder(folder, written.files)
    return Export(recipes, written.missing, replays,
                  [name for name in written.files if name.startswith("run_")])


class _Recipes:
    """An export as it is written: what every recipe of it shares (the header, contexts,
    kernels, buffers, the profile's bindings, each command's run), and its files."""

    def __init__(self, case: Case, flow: str, programs: tuple[str, ...] | None) -> None:
        from harness.sources.replay_export import ReplayBuffer
        self.case, self.flow, self.programs = case, flow, programs
        self.files: dict[str, bytes] = {}
        self.missing: list[str] = []
        self.columns = 4
        self.meta: Any = None                      # the runlist context's xclbin, read
        self.header: dict[str, Any] = {}
        self.hwctxs: list[dict[str, Any]] = []
        self.kernels: list[dict[str, Any]] = []
        self.buffers: list[dict[str, Any]] = []
        self.bindings: list[dict[str, Any]] = []
        self.templates: list[dict[str, Any]] = []   # each command's recipe run
        self.run_args: list[Args] = []              # and its arguments
        self.replay_buffers: dict[str, ReplayBuffer] = {}

    def context(self, xclbin: Path | None, real: bool) -> None:
        """The runlist context: its full ELFs, or its xclbin (copied only when real)."""
        from harness.formats.xclbin import read_xclbin_cached
        case = self.case
        if self.programs is not None:
            names = [f"program_{i}.elf" for i in range(len(self.programs))]
            self.files.update({n: Path(p).read_bytes()
                               for n, p in zip(names, self.programs, strict=True)})
            self.hwctxs.append({"name": case.runlist_context, "programs": names})
            return
        self.meta = read_xclbin_cached(xclbin) if xclbin else None
        part = self.meta.partition if self.meta else None
        self.columns = part.column_width if part else self.columns
        xclbin_name = Path(case.xclbins[case.runlist_context]).name
        self.header["xclbin"] = xclbin_name
        if real and xclbin:
            self.files[xclbin_name] = xclbin.read_bytes()
        else:
            self.missing.append(xclbin_name)

    def _stream(self, command: Command) -> bytes:
        from harness.formats.txn import nop_stream
        return nop_stream(self.columns) if command.instructions == "nop" else \
            Path(command.instructions).read_bytes()

    def _bound(self, name: str, content: bytes, file: str, flags: int | None = None,
               memgrp: int | None = None) -> None:
        """A buffer with content: bound in the profile to the file it is filled from."""
        from harness.sources.replay_export import ReplayBuffer
        self.files[file] = content
        self.buffers.append({"name": name, "type": "input", "size": len(content)})
        self.bindings.append({"name": name, "size": len(content), "init": {"file": file}})
        self.replay_buffers[name] = ReplayBuffer(len(content), flags, memgrp, file)

    def command(self, c: int, command: Command) -> None:
        """Command `c`: its kernel (with the control code its flow needs) and its run."""
        from harness.formats.elf_writer import control_code_elf
        kernel: dict[str, Any] = {"name": f"k{c}", "instance": command.kernel}
        if self.programs is not None:
            kernel["hwctx"] = self.case.runlist_context
        elif command.elf:                             # a recipe's or capture's own
            kernel["ctrlcode"] = f"ctrl_{c}.elf"
            self.files[kernel["ctrlcode"]] = Path(command.elf).read_bytes()
        elif command.args is not None and self.case.flow == ELF_FLOW:
            kernel["ctrlcode"] = f"ctrl_{c}.elf"      # named, but absent here
            self.missing.append(kernel["ctrlcode"])
        elif command.args is None and self.flow == ELF_FLOW:
            kernel["ctrlcode"] = f"ctrl_{c}.elf"      # as FastFlowLM builds it
            self.files[kernel["ctrlcode"]] = control_code_elf(self._stream(command))
        self.kernels.append(kernel)
        args = command.args if command.args is not None else self._npu_call(c, command, kernel)
        self.templates.append(_exported_run(f"k{c}", command.kernel, args))
        self.run_args.append(args)

    def _npu_call(self, c: int, command: Command, kernel: dict[str, Any]) -> Args:
        """A decode case's arguments: the opcode, the instruction buffer and its word count
        where the flow passes them, then the data buffers."""
        from harness.formats.txn import word_count
        from harness.sources.replay_export import CACHEABLE, ReplayBuffer
        args: list[tuple[int, str, Any]] = []
        first = 0
        if self.programs is None:
            args.append((0, "int", command.opcode))
            first = 3
            if "ctrlcode" not in kernel:
                # mlir-aie and IRON: cacheable, in the memory group of argument 1
                stream = self._stream(command)
                group = self.meta.group_id(command.kernel, 1) if self.meta else None
                self._bound(f"c{c}_instr", stream, f"instr_{c}.bin", CACHEABLE,
                            group if group and group > 0 else None)
                args += [(1, "bo", f"c{c}_instr"), (2, "int", word_count(stream))]
        for j, size in enumerate(command.buffers):
            self.buffers.append({"name": f"c{c}_b{j}", "type": "internal", "size": size})
            self.replay_buffers[f"c{c}_b{j}"] = ReplayBuffer(size)
            args.append((first + j, "bo", f"c{c}_b{j}"))
        return tuple(args)

    def named_buffers(self) -> None:
        """A recipe's or capture's own buffers: bound to their content, or internal."""
        from harness.sources.replay_export import ReplayBuffer
        for name, spec in self.case.buffers.items():
            if spec.data:
                self._bound(name, read_regular(spec.data, f"buffer {name}", limit=spec.size),
                            f"{DATA_PREFIX}{name}.bin", spec.flags, spec.memgrp)
            else:
                self.buffers.append({"name": name, "type": "internal", "size": spec.size})
                self.replay_buffers[name] = ReplayBuffer(spec.size, spec.flags, spec.memgrp)

    def plan(self, plan_name: str, chunks: list[int], recipes: list[str],
             replays: list[str]) -> None:
        """One plan: its replay script (every flow), a recipe per runlist (not for the TXN
        flow, which XRT's runner cannot run), and the script that runs it."""
        from harness.sources.replay_export import replay_script
        case = self.case
        sequence = (list(case.order) if case.order is not None
                    else [c for _ in range(case.layers) for c in range(len(case.per_layer))])
        per_unit = case.runs_per_layer
        txn = self.programs is None and any("ctrlcode" not in k for k in self.kernels)
        start, these, frames = 0, [], []
        for k, units in enumerate(chunks):
            positions = sequence[start * per_unit:(start + units) * per_unit]
            frames.append([(f"k{t}", self.run_args[t]) for t in positions])
            start += units
            if txn:
                continue
            name = f"recipe_{plan_file_stem(plan_name)}_{k + 1}of{len(chunks)}.json"
            recipe = {"version": "1.0", "header": self.header,
                      "resources": {**({"hwctxs": self.hwctxs} if self.hwctxs else {}),
                                    "buffers": self.buffers, "kernels": self.kernels},
                      "execution": {"runs": [self.templates[t] for t in positions]}}
            self.files[name] = (json.dumps(recipe, indent=2) + "\n").encode()
            these.append(name)
            recipes.append(name)
        context = {"programs": self.hwctxs[0]["programs"]} if self.programs is not None \
            else {"xclbin": self.header["xclbin"]}
        replay = f"replay_{plan_file_stem(plan_name)}.json"
        self.files[replay] = replay_script(
            context, [{key: kernel[key] for key in ("name", "instance", "ctrlcode")
                       if key in kernel} for kernel in self.kernels],
            self.replay_buffers, frames).encode()
        replays.append(replay)
        self.files[f"run_{plan_file_stem(plan_name)}.sh"] = _run_script(
            case, plan_name, chunks, replay, these).encode()

    def profile(self, plans: list[tuple[str, list[int]]]) -> None:
        """profile.json: the bindings, one iteration, and a runlist threshold low enough."""
        # A runlist of fewer than RUNLIST_THRESHOLD runs would be started run by run: the
        # profile lowers the threshold so every recipe is one xrt::runlist, as the plan
        # cuts it.
        per_unit = self.case.runs_per_layer
        smallest = min(c * per_unit for _, chunks in plans for c in chunks)
        execution: dict[str, Any] = {"iterations": 1}
        if smallest < RUNLIST_THRESHOLD:
            execution["runlist_threshold"] = max(1, smallest)
        profile = {"version": "1.0", "bindings": self.bindings, "execution": execution}
        self.files["profile.json"] = (json.dumps(profile, indent=2) + "\n").encode()


def _exported_run(kernel: str, instance: str, args: Args) -> dict[str, Any]:
    """A recipe run: its kernel named with `kernel` (runner.cpp create_kernel_run; `name`
    is the deprecated spelling), every constant a C int or the export is refused."""
    for index, kind, value in args:
        if kind == "int" and not fits_c_int(value):
            raise BadInput(c_int_refusal(f"export: a run of kernel {kernel} ({instance})",
                                         index, value) + "; change the case's value")
    return {"kernel": kernel,
            "arguments": [{"name": v, "argidx": i} for i, kind, v in args if kind == "bo"],
            "constants": [{"value": v, "type": "int", "argidx": i}
                          for i, kind, v in args if kind == "int"]}


def _run_script(case: Case, plan_name: str, chunks: list[int], replay: str,
                recipes: list[str]) -> str:
    """run_PLAN.sh: the plan as the harness runs a trial of it, with XRT's replay (one
    process, one hardware context, its runlists executed and waited on in turn); where
    this XRT's runner has no --replay, each runlist's recipe in its own process, which is
    not the same experiment (it says how it differs), or nothing for the TXN flow."""
    where_it_differs = ("each recipe runs in its own xrt-runner process, so each runlist gets a "
                        "new hardware context and new buffers (the harness runs a plan's "
                        "runlists in one process, in turn)")
    lines = ["#!/bin/sh",
             f"# {case.name}, plan {plan_name}: {len(chunks)} runlist(s) of "
             f"{'+'.join(map(str, chunks))} {case.unit}(s),",
             "# run in turn as a trial of the harness runs them: one process, one hardware",
             "# context, execute, wait, then the next (XRT's replay, replay.cpp).",
             "# Needs XRT (source /opt/xilinx/xrt/setup.sh); no Python. README.md says where",
             "# this differs from the harness's trial.",
             "set -e", 'cd "$(dirname "$0")"',
             "if xrt-runner --help 2>/dev/null | grep -q -- --replay; then",
             f"  exec xrt-runner --replay {replay} --dir . --report -",
             "fi"]
    if recipes:
        lines += [f'echo "this xrt-runner has no --replay (XRT master since 2026-06, 2.26): '
                  f'running the recipes instead; {where_it_differs}" >&2']
        lines += [f"xrt-runner --recipe {name} --profile profile.json --dir ." for name in recipes]
    else:
        lines += ['echo "this xrt-runner has no --replay (XRT master since 2026-06, 2.26), and '
                  "the instruction-buffer flow cannot run as recipes: XRT's runner makes every "
                  "buffer host-only, and XRT copies the instruction buffer into argument 1's "
                  'memory group, which fails (No host side buffer in destination buffer)" >&2',
                  "exit 2"]
    return "\n".join(lines) + "\n"


def _origin(case: Case) -> str:
    """Where the case came from, by name: a capture's or recipe's folder or file as the
    user knows it, never the path it has on this machine (the README ships upstream)."""
    if case.kind is CaseKind.CAPTURE:
        return f"the XRT capture {Path(case.capture or case.file).name}"
    if case.kind is CaseKind.RECIPE:
        return f"the XRT recipe {Path(case.file).name}"
    return case.source or Path(case.file).name


def _readme(case: Case, plans: list[tuple[str, list[int]]], flow: str,
            files: dict[str, bytes], missing: list[str], txn: bool) -> str:
    unit = case.unit
    lines = [f"# {case.name} for XRT's own runner", "",
             f"Written by xdna-runlist-harness from {_origin(case)}: {case.layers} {unit}s"
             + (f", {case.runs_per_layer} run(s) per {unit}" if unit == "layer" else "")
             + ". Runs: "
             f"{flow}, with the arguments the harness sets.", "",
             "`run_PLAN.sh` runs a plan as a trial of the harness does: one process, one hardware "
             "context, the plan's runlists executed and waited on in turn, with the same buffers. "
             "It replays `replay_PLAN.json` (the format `xrt-capture` writes: one frame per "
             "runlist, each waiting on itself, on one thread) with `xrt-runner --replay "
             "replay_PLAN.json --dir . --report -`, which XRT has from master of 2026-06 (2.26). "
             "Where it differs from the harness's trial (replay.cpp): a frame of one run is "
             "started as a run, not as a runlist of one; only the runlist's hardware context is "
             "made (the harness also opens the pack's other contexts, as FastFlowLM does); a "
             "failed runlist ends the replay (the exception leaves the replay's thread, so the C++ "
             "runtime ends xrt-runner: `terminate called after throwing ...`, `what(): runlist "
             "failed execution (...)`, status 134), where the harness records the later runlists "
             "as skipped; and it is one trial (run it again for more). `--report -` prints what "
             "the replay ran "
             "(frames, iterations, time) when it completes.", ""]
    if txn:
        lines += ["This is the instruction-buffer flow, which has no recipes: XRT's runner "
                  "creates every recipe buffer host-only (runner.cpp `create_bo`), and XRT "
                  "copies a buffer into the memory group its kernel argument is connected to "
                  "(xrt_kernel.cpp `validate_bo_at_index`); the copy of the instruction "
                  "buffer (argument 1) has no host side and fails with `No host side buffer "
                  "in destination buffer` (xrt_bo.cpp `copy_through_host`). The replay "
                  "allocates it cacheable in that memory group, with the `flags` and "
                  "`memgrp` XRT's own capture writer records (replay.cpp `create_buffer`).",
                  ""]
    else:
        lines += ["Each runlist is also an XRT run recipe, `recipe_PLAN_KofN.json` with "
                  "`profile.json`, for an `xrt-runner` without `--replay` (the run script "
                  "falls back to them): each runs in its own process, so each runlist gets a "
                  "new hardware context. XRT's runner makes one `xrt::runlist` of every "
                  "contiguous sequence of `runlist_threshold` (6) or more NPU runs; when a "
                  "plan has a runlist of fewer, profile.json lowers `runlist_threshold`. "
                  "Every buffer is one the runner creates: `internal` with its size, or bound "
                  "in profile.json with its `size` and the file it is filled from.", ""]
    lines += ["```sh", "source /opt/xilinx/xrt/setup.sh"]
    lines += [f"sh run_{plan_file_stem(name)}.sh      # {name}: {'+'.join(map(str, chunks))}"
              for name, chunks in plans]
    lines += ["```", "", "## Files", ""]
    lines += [listing_line(name, files[name]) for name in sorted(files)]
    for name in missing:
        lines.append(f"- `{name}`: **not included** (not found where the harness looked); "
                     "copy it here before running")
    return "\n".join(lines) + "\n"


def _write_folder(folder: Path, files: dict[str, bytes]) -> None:
    """All files or none: written into a hidden sibling folder, then renamed into place."""
    if folder.exists():
        raise BadInput(f"{folder} exists; export writes a new folder (choose another)")
    check_folder(folder)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        for name, data in files.items():
            (staging / name).write_bytes(data)
        for script in staging.glob("*.sh"):
            script.chmod(0o755)
        staging.chmod(0o755)             # mkdtemp's 0700 is for while it is written
        staging.rename(folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
