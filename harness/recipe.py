"""XRT run recipes in and out: a recipe (and its profile) read as a case whose runs a
plan cuts; any case's plans written as recipes for XRT's own `xrt-runner`.

The format is XRT's (`src/runtime_src/core/common/runner/recipe.md`, `profile.md`,
`schema/recipe.schema.json`; STACK.md 8): `header.xclbin`,
`resources.buffers` (name, type, size), `resources.kernels` (name, `instance`,
`ctrlcode` ELF), `execution.runs` (the kernel's name, buffer `arguments` by argidx,
integer `constants` by argidx). XRT's runner turns 6 or more consecutive runs into one
`xrt::runlist`; here the plan named after the recipe does the same, and other plans
(`500+500`, `max:24`) cut the same runs.

`xrt-validate:NAME` takes the recipe from XRT's validate archive (`xrt_smi_*.a`) the
way `xrt-smi validate` does: `recipe_NAME.json`, `profile_NAME.json` and the
artefacts they name. Without an XRT install, the recipes XRT ships for XDNA 2 are
rebuilt from their recorded shape (`harness/data/xrt_validate.yaml`), and the case
says so.

What the harness cannot do with a recipe is refused by name: ELF-program
configurations (`header.program`), CPU runs, sub-buffer arguments, string constants.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from harness.cache import cache_dir
from harness.case import DEFAULT_TRIALS, Case, Command
from harness.errors import BadInput, CaseError
from harness.jsonread import JsonReader, describe, parse_json
from harness.plan import make_plan
from harness.results import ELF_FLOW, INSTR_BO, BufferSpec
from harness.yamlio import write_atomic

VALIDATE_PREFIX = "xrt-validate:"
RECIPE_CONTEXT = "recipe"
RUNLIST_THRESHOLD = 6            # xrt_core::runner default_runlist_threshold
MAX_RECIPE_BYTES = 64 << 20
SHAPES = Path(__file__).parent / "data" / "xrt_validate.yaml"


class RecipeError(CaseError):
    """A recipe or profile the harness cannot read or run."""


def is_recipe_ref(ref: str) -> bool:
    return ref.startswith(VALIDATE_PREFIX) or (ref.lower().endswith(".json")
                                                and Path(ref).name != "replay.json")


def load_recipe(ref: str, profile: str | None = None) -> Case:
    """A recipe file (or `xrt-validate:NAME`) and its profile as a case."""
    notes: list[str] = []
    if ref.startswith(VALIDATE_PREFIX):
        if profile is not None:
            raise BadInput(f"{ref} comes with its own profile; drop --recipe-profile")
        recipe_path, profile_path, origin = validate_recipe(ref[len(VALIDATE_PREFIX):])
        notes += origin
    else:
        recipe_path, profile_path = Path(ref), Path(profile) if profile else None
    raw = _read(recipe_path)
    data = _json(raw, str(recipe_path))
    profile_raw = _read(profile_path) if profile_path else b""
    bindings, iterations = (_profile(_json(profile_raw, str(profile_path)), str(profile_path))
                            if profile_path else ({}, None))
    case = _case(data, recipe_path, bindings, notes)
    if iterations is not None:
        notes.append(f"the profile asks for {iterations} iterations; here --trials sets how "
                     "often each plan runs")
    digest = hashlib.sha256(raw + b"\0" + profile_raw).hexdigest()
    return _with(case, notes, digest, str(profile_path) if profile_path else None, ref)


def _read(path: Path) -> bytes:
    try:
        size = path.stat().st_size
        if size > MAX_RECIPE_BYTES:
            raise RecipeError(f"{path}: {size} bytes; a recipe over {MAX_RECIPE_BYTES >> 20} MiB "
                              "is refused")
        return path.read_bytes()
    except OSError as err:
        raise RecipeError(f"cannot read {path}: {err.strerror or err}") from None


def _json(raw: bytes, file: str) -> dict[str, Any]:
    data = parse_json(raw, file, RecipeError)
    if not isinstance(data, dict):
        raise RecipeError(f"{file}: expected a JSON object at the top, got {describe(data)}")
    return data


def _profile(data: dict[str, Any], file: str) -> tuple[dict[str, BufferSpec], int | None]:
    """Buffers the profile binds (size, and a file that initialises them), and the
    number of iterations it asks for."""
    read = JsonReader(file, RecipeError)
    bindings: dict[str, BufferSpec] = {}
    for where, entry in read.objects(data.get("bindings", []), "bindings"):
        name = read.text(entry.get("name"), where + ".name")
        init = read.mapping(entry.get("init", {}), where + ".init")
        source = None
        if "file" in init:
            source = (Path(file).parent / read.text(init["file"], where + ".init.file")).resolve()
            if not source.is_file():
                raise read.fail(where + ".init.file", f"{source} does not exist")
        size = entry.get("size")
        if size is None and source is None:
            raise read.fail(where, "a binding without a file needs a size")
        size = read.index(size, where + ".size") if size is not None else source.stat().st_size
        bindings[name] = BufferSpec(size, str(source) if source else None)
    execution = read.mapping(data.get("execution", {}), "execution")
    iterations = execution.get("iterations")
    return bindings, read.index(iterations, "execution.iterations") if iterations is not None \
        else None


def _case(data: dict[str, Any], path: Path, bindings: dict[str, BufferSpec],
          notes: list[str]) -> Case:
    read = JsonReader(str(path), RecipeError)
    base = path.parent
    if data.get("version") != "1.0":
        raise read.fail("version", f"{data.get('version')!r}; XRT's runner reads version 1.0")
    header = read.mapping(data.get("header"), "header")
    if "program" in header:
        raise read.fail("header.program", "ELF-program configurations are not supported; "
                                          "give a recipe whose header names an xclbin")
    xclbin = (base / read.text(header.get("xclbin"), "header.xclbin")).resolve()
    absent = [] if xclbin.is_file() else [str(xclbin)]
    resources = read.mapping(data.get("resources", {}), "resources")
    buffers: dict[str, BufferSpec] = {}
    for where, entry in read.objects(resources.get("buffers", []), "resources.buffers"):
        name = read.text(entry.get("name"), where + ".name")
        if name in bindings:
            buffers[name] = bindings[name]
        elif "size" in entry:
            buffers[name] = BufferSpec(read.index(entry["size"], where + ".size"))
        else:
            raise read.fail(where, f"buffer {name!r} has no size and the profile binds "
                                   "no file to it")
    kernels: dict[str, tuple[str, str | None]] = {}
    for where, entry in read.objects(resources.get("kernels", []), "resources.kernels"):
        name = read.text(entry.get("name"), where + ".name")
        instance = read.text(entry.get("instance", name), where + ".instance")
        elf = None
        if "ctrlcode" in entry:
            elf = str((base / read.text(entry["ctrlcode"], where + ".ctrlcode")).resolve())
            if not Path(elf).is_file():
                absent.append(elf)
        kernels[name] = (instance, elf)
    execution = read.mapping(data.get("execution"), "execution")
    runs = list(read.objects(execution.get("runs"), "execution.runs"))
    if not runs:
        raise read.fail("execution.runs", "no runs")
    templates: dict[Command, int] = {}          # runs alike share one, in first-seen order
    order = [templates.setdefault(_run(read, entry, where, kernels, buffers), len(templates))
             for where, entry in runs]
    flow = ELF_FLOW if all(elf for _, elf in kernels.values()) else INSTR_BO
    n = len(order)
    if n < RUNLIST_THRESHOLD:
        notes.append(f"XRT's runner starts fewer than {RUNLIST_THRESHOLD} runs one by one; "
                     f"here the {n} run{'s' if n > 1 else ''} go in a runlist like any plan")
    return Case(name=path.stem, description=f"XRT run recipe {path.name}: {n} runs",
                source=str(path), pack="recipe", xclbins={RECIPE_CONTEXT: str(xclbin)},
                layers=n, runlist_context=RECIPE_CONTEXT, per_layer=tuple(templates),
                plans=(make_plan("recipe", str(n), n),), expect={}, trials=DEFAULT_TRIALS,
                deadline_s=None, file=str(path.resolve()), sha256="", flow=flow,
                buffers=buffers, order=tuple(order), kind="recipe", absent=tuple(absent))


def _run(read: JsonReader, entry: dict[str, Any], where: str,
         kernels: dict[str, tuple[str, str | None]], buffers: dict[str, BufferSpec]) -> Command:
    name = read.text(entry.get("name"), where + ".name")
    if name not in kernels:
        raise read.fail(where + ".name", f"{name!r} is not a kernel of resources.kernels "
                                         f"({', '.join(kernels) or 'none'})")
    if entry.get("where", "npu") != "npu":
        raise read.fail(where + ".where", "CPU runs are not supported; the harness submits "
                                          "to the NPU")
    args: list[tuple[int, str, Any]] = []
    for at, arg in read.objects(entry.get("arguments", []), where + ".arguments"):
        if "size" in arg or "offset" in arg:
            raise read.fail(at, "sub-buffer arguments (size/offset) are not supported")
        buffer = read.text(arg.get("name"), at + ".name")
        if buffer not in buffers:
            raise read.fail(at + ".name", f"{buffer!r} is not a buffer of resources.buffers "
                                          f"({', '.join(buffers) or 'none'})")
        args.append((read.index(arg.get("argidx"), at + ".argidx"), "bo", buffer))
    for at, constant in read.objects(entry.get("constants", []), where + ".constants"):
        value = constant.get("value")
        if constant.get("type", "int") != "int" or isinstance(value, bool) \
                or not isinstance(value, int):
            raise read.fail(at, f"only integer constants are supported, got {describe(value)}")
        args.append((read.index(constant.get("argidx"), at + ".argidx"), "int", value))
    indices = [a[0] for a in args]
    if len(set(indices)) != len(indices):
        raise read.fail(where, f"an argument index is set twice ({sorted(indices)})")
    instance, elf = kernels[name]
    # An absent control code is a NOP ELF stand-in (simulated stack only; hardware refuses).
    return Command(instance, "nop", (), elf=elf if elf and Path(elf).is_file() else None,
                   args=tuple(sorted(args)))


def _with(case: Case, notes: list[str], digest: str, profile: str | None, ref: str) -> Case:
    return replace(case, sha256=digest, notes=tuple(notes), recipe_profile=profile,
                   reference=ref)


# -- XRT's validate archive ---------------------------------------------------------------

def validate_recipe(name: str) -> tuple[Path, Path | None, list[str]]:
    """recipe_NAME.json and profile_NAME.json with the artefacts they name, from XRT's
    validate archive; else rebuilt from the recorded shape of XRT's shipped recipe."""
    from harness.packs import read_ar_member
    from harness.probe.xrt import validate_files
    wanted = f"recipe_{name}.json"
    for source in validate_files(Path("/"), os.environ.get("XILINX_XRT")):
        if source.suffix != ".a":
            loose = source.parent / wanted
            if loose.is_file():
                profile = source.parent / f"profile_{name}.json"
                return loose, profile if profile.is_file() else None, \
                    [f"recipe from {source.parent}"]
            continue
        recipe = read_ar_member(source, wanted)
        if recipe is None:
            continue
        folder = cache_dir("xrt-validate", hashlib.sha256(source.read_bytes()).hexdigest()[:16])
        _put(folder / wanted, recipe)
        profile = read_ar_member(source, f"profile_{name}.json")
        if profile is not None:
            _put(folder / f"profile_{name}.json", profile)
        for artefact in _artefacts(json.loads(recipe)):
            member = read_ar_member(source, artefact)
            if member is not None:
                _put(folder / artefact, member)
        return folder / wanted, (folder / f"profile_{name}.json" if profile else None), \
            [f"recipe from {source}"]
    return _rebuilt(name)


def _artefacts(recipe: dict[str, Any]) -> list[str]:
    names = [recipe.get("header", {}).get("xclbin")]
    names += [k.get("ctrlcode") for k in recipe.get("resources", {}).get("kernels", [])]
    return [n for n in names if isinstance(n, str)]


def shipped_shapes() -> dict[str, dict[str, Any]]:
    data = yaml.safe_load(SHAPES.read_text())
    shapes = data["recipes"]
    for shape in shapes.values():
        if isinstance(shape["buffers"], str):
            shape["buffers"] = data["buffer_sets"][shape["buffers"]]
    return shapes


def _rebuilt(name: str) -> tuple[Path, Path | None, list[str]]:
    shapes = shipped_shapes()
    if name not in shapes:
        raise BadInput(f"xrt-validate:{name}: no recipe_{name}.json in an XRT install (none "
                       f"found), and not one the harness knows ({', '.join(shapes)})")
    shape = shapes[name]
    folder = cache_dir("xrt-validate", "rebuilt")
    buffers = [{"name": b["name"], "type": b["type"], "size": b["size"]}
               for b in shape["buffers"]]
    run = {"name": "k1",
           "arguments": [{"name": b["name"], "argidx": b["argidx"]}
                         for b in shape["buffers"] if "argidx" in b],
           "constants": [{"value": 3, "type": "int", "argidx": 0}]}
    recipe = {"version": "1.0", "header": {"xclbin": shape["xclbin"]},
              "resources": {"buffers": buffers,
                            "kernels": [{"name": "k1", "instance": shape["instance"],
                                         "ctrlcode": shape["ctrlcode"]}]},
              "execution": {"runs": [run] * shape["runs"]}}
    profile = {"version": "1.0", "execution": {"iterations": shape["iterations"],
                                               "verbose": False}}
    _put(folder / f"recipe_{name}.json", json.dumps(recipe, indent=2).encode())
    _put(folder / f"profile_{name}.json", json.dumps(profile, indent=2).encode())
    return folder / f"recipe_{name}.json", folder / f"profile_{name}.json", [
        f"no XRT validate archive here: recipe_{name}.json rebuilt from the shape XRT ships "
        f"({shape['source']}); its artefacts are stand-ins unless present"]


def _put(path: Path, data: bytes) -> None:
    if not path.is_file() or path.read_bytes() != data:
        write_atomic(path, data)



# -- recipes out ---------------------------------------------------------------------------

@dataclass
class Export:
    """What `export` wrote: the recipes (one per runlist of each plan), and the artefacts
    they name that are not here (the folder's README says where they go)."""

    recipes: list[str]
    missing: list[str]


def export_plans(case: Case, plans: list[tuple[str, list[int]]], xclbin: Path, real: bool,
                 flow: str, folder: Path) -> Export:
    """Write `case`, cut as each plan says, as XRT run recipes into `folder` (which must
    not exist). XRT's runner makes one runlist of each contiguous sequence of NPU runs,
    so each runlist of a plan is a recipe of its own, run in order by run_PLAN.sh.
    `xclbin` gives the partition the control code is sized to; it is copied only when
    `real` (a stand-in is never passed off as the pack), else the README says where the
    real one goes."""
    from harness.elf_writer import control_code_elf
    from harness.txn import nop_stream, word_count
    from harness.xclbin import read_xclbin

    part = read_xclbin(xclbin).partition
    columns = part.column_width if part else 4
    files: dict[str, bytes] = {}
    xclbin_name = Path(case.xclbins[case.runlist_context]).name
    missing = []
    if real:
        files[xclbin_name] = xclbin.read_bytes()
    else:
        missing.append(xclbin_name)

    def stream_of(command: Command) -> bytes:
        return nop_stream(columns) if command.instructions == "nop" else \
            Path(command.instructions).read_bytes()

    kernels, buffers, bindings, templates = [], [], [], []
    for c, command in enumerate(case.per_layer):
        kernel = {"name": f"k{c}", "instance": command.kernel}
        if command.elf:                               # a recipe's or capture's own
            kernel["ctrlcode"] = f"ctrl_{c}.elf"
            files[kernel["ctrlcode"]] = Path(command.elf).read_bytes()
        elif command.args is not None and case.flow == ELF_FLOW:
            kernel["ctrlcode"] = f"ctrl_{c}.elf"      # named, but absent here
            missing.append(kernel["ctrlcode"])
        elif command.args is None and flow == ELF_FLOW:
            kernel["ctrlcode"] = f"ctrl_{c}.elf"      # as FastFlowLM builds it
            files[kernel["ctrlcode"]] = control_code_elf(stream_of(command))
        kernels.append(kernel)
        if command.args is not None:
            templates.append(_exported_run(f"k{c}", command.args))
            continue
        args: list[tuple[int, str, Any]] = [(0, "int", command.opcode)]
        if "ctrlcode" not in kernel:
            stream = stream_of(command)
            files[f"instr_{c}.bin"] = stream
            buffers.append({"name": f"c{c}_instr", "type": "input", "size": len(stream)})
            bindings.append({"name": f"c{c}_instr", "init": {"file": f"instr_{c}.bin"}})
            args += [(1, "bo", f"c{c}_instr"), (2, "int", word_count(stream))]
        for j, size in enumerate(command.buffers):
            buffers.append({"name": f"c{c}_b{j}", "type": "inout", "size": size})
            args.append((3 + j, "bo", f"c{c}_b{j}"))
        templates.append(_exported_run(f"k{c}", tuple(args)))
    for name, spec in case.buffers.items():
        buffers.append({"name": name, "type": "inout", "size": spec.size})
        if spec.data:
            files[f"data_{name}.bin"] = Path(spec.data).read_bytes()
            bindings.append({"name": name, "init": {"file": f"data_{name}.bin"}})
    sequence = (list(case.order) if case.order is not None
                else [c for _ in range(case.layers) for c in range(len(case.per_layer))])
    per_unit = case.runs_per_layer
    recipes: list[str] = []
    for plan_name, chunks in plans:
        start, these = 0, []
        for k, units in enumerate(chunks):
            runs = [templates[t] for t in sequence[start * per_unit:(start + units) * per_unit]]
            start += units
            name = f"recipe_{_safe(plan_name)}_{k + 1}of{len(chunks)}.json"
            recipe = {"version": "1.0", "header": {"xclbin": xclbin_name},
                      "resources": {"buffers": buffers, "kernels": kernels},
                      "execution": {"runs": runs}}
            files[name] = (json.dumps(recipe, indent=2) + "\n").encode()
            these.append(f"xrt-runner --recipe {name} --profile profile.json --dir .")
            recipes.append(name)
        files[f"run_{_safe(plan_name)}.sh"] = _run_script(case, plan_name, chunks,
                                                           these).encode()
    profile = {"version": "1.0", "bindings": bindings, "execution": {"iterations": 1}}
    files["profile.json"] = (json.dumps(profile, indent=2) + "\n").encode()
    files["README.md"] = _readme(case, plans, flow, files, missing).encode()
    _write_folder(folder, files)
    return Export(recipes, missing)


def _exported_run(kernel: str, args: tuple[tuple[int, str, Any], ...]) -> dict[str, Any]:
    return {"name": kernel,
            "arguments": [{"name": v, "argidx": i} for i, kind, v in args if kind == "bo"],
            "constants": [{"value": v, "type": "int", "argidx": i}
                          for i, kind, v in args if kind == "int"]}


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)


def _run_script(case: Case, plan_name: str, chunks: list[int], commands: list[str]) -> str:
    lines = ["#!/bin/sh",
             f"# {case.name}, plan {plan_name}: {len(chunks)} runlist(s), run in order.",
             "# Needs XRT (source /opt/xilinx/xrt/setup.sh); no Python.",
             "set -e", 'cd "$(dirname "$0")"']
    return "\n".join(lines + commands) + "\n"


def _readme(case: Case, plans: list[tuple[str, list[int]]], flow: str,
            files: dict[str, bytes], missing: list[str]) -> str:
    unit = case.unit
    lines = [f"# {case.name} as XRT run recipes", "",
             f"Written by xdna-runlist-harness from {case.source or case.file}: "
             f"{case.layers} {unit}s, {case.runs_per_layer} run(s) per {unit}. Runs: "
             f"{flow}, with the arguments the harness sets.", "",
             "XRT's runner (`xrt-runner`) makes one `xrt::runlist` of every contiguous "
             "sequence of 6 or more NPU runs in a recipe, so each runlist of a plan is a "
             "recipe of its own, and `run_PLAN.sh` runs them in order (each in its own "
             "process, so each opens its own hardware context). A recipe of fewer than 6 "
             "runs is started run by run, not as a runlist.", "",
             "```sh", "source /opt/xilinx/xrt/setup.sh"]
    lines += [f"sh run_{_safe(name)}.sh      # {name}: {'+'.join(map(str, chunks))}"
              for name, chunks in plans]
    lines += ["```", "", "## Files", ""]
    for name in sorted(files):
        lines.append(f"- `{name}` ({len(files[name])} bytes, sha256 "
                     f"{hashlib.sha256(files[name]).hexdigest()})")
    for name in missing:
        lines.append(f"- `{name}`: **not included** (not found where the harness looked); "
                     "copy it here before running")
    return "\n".join(lines) + "\n"


def _write_folder(folder: Path, files: dict[str, bytes]) -> None:
    """All files or none: written into a hidden sibling folder, then renamed into place."""
    if folder.exists():
        raise BadInput(f"{folder} exists; export writes a new folder (choose another)")
    folder.parent.mkdir(parents=True, exist_ok=True)
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
