"""XRT run recipes in: a recipe (and its profile) read as a case whose runs a plan cuts
(any case's plans written as recipes: `harness.sources.recipe_export`).

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

What the harness cannot do with a recipe is refused by name: CPU runs, sub-buffer
arguments, string constants.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from harness.formats.cache import cache_dir
from harness.formats.jsonread import JsonReader, describe, kind_of, parse_json
from harness.formats.regular import check_regular
from harness.formats.yamlio import write_atomic
from harness.model.errors import BadInput, CaseError
from harness.model.plan import make_plan
from harness.model.results import ELF_FLOW, FULL_ELF, INSTR_BO, BufferSpec
from harness.sources.case import DEFAULT_TRIALS, Case, CaseKind, Command
from harness.sources.confine import ArtefactError, artefact

VALIDATE_PREFIX = "xrt-validate:"
RUNLIST_THRESHOLD = 6            # xrt_core::runner default_runlist_threshold
MAX_RECIPE_BYTES = 64 << 20
SHAPES = Path(__file__).parents[1] / "data" / "xrt_validate.yaml"


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
    read = _profile(_json(profile_raw, str(profile_path)), str(profile_path), notes) \
        if profile_path else RecipeProfile({}, None, RUNLIST_THRESHOLD)
    case = _case(data, recipe_path, read, notes)
    if read.iterations is not None:
        notes.append(f"the profile asks for {read.iterations} iterations (XRT's runner "
                     "executes the whole recipe that often); here --trials sets how often "
                     "each plan runs")
    digest = hashlib.sha256(raw + b"\0" + profile_raw).hexdigest()
    return _with(case, notes, digest, str(profile_path) if profile_path else None, ref)


@dataclass(frozen=True)
class RecipeProfile:
    """What a profile says: the buffers it binds, iterations, the runlist threshold."""

    bindings: dict[str, BufferSpec]
    iterations: int | None
    runlist_threshold: int


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
        raise RecipeError(f"{file}: expected a JSON object at the top (an XRT run recipe), "
                          f"got {kind_of(data)}: is this the file you meant?")
    return data


def _profile(data: dict[str, Any], file: str, notes: list[str]) -> RecipeProfile:
    """The buffers the profile binds, as XRT's runner creates them (`bindings::init`,
    `init_buffer_file`): `size` when given, else the file's; the file's bytes are copied
    into [begin, end) of the buffer, and without a size that range is empty (only a
    page-aligned "mmap": true file is mapped whole), so the buffer stays zero."""
    read = JsonReader(file, RecipeError)
    bindings: dict[str, BufferSpec] = {}
    for where, entry in read.objects(data.get("bindings", []), "bindings"):
        name = read.text(entry.get("name"), where + ".name")
        init = read.mapping(entry.get("init", {}), where + ".init")
        source, held = None, 0
        if "file" in init:
            source = _artefact(read, Path(file).parent, init["file"], where + ".init.file")
            if not source.exists():
                raise read.fail(where + ".init.file", f"{source} does not exist")
            try:
                held = check_regular(source, f"buffer {name}", error=RecipeError)
            except RecipeError as err:
                raise read.fail(where + ".init.file", str(err)) from None
        elif init:
            raise read.fail(where + ".init", "only file initialisation is supported (not "
                                             "stride or random)")
        size = entry.get("size")
        if size is None and source is None:
            raise read.fail(where, "a binding without a file needs a size")
        if size is not None:
            declared = read.size(size, where + ".size")
            if source is not None and held > declared:
                # it would be read whole into a buffer it does not fit (6 GB for 4 KiB)
                raise read.fail(where + ".init.file", f"{source} is {held} bytes, more than "
                                f"the {declared} bytes of buffer {name} it fills: give a "
                                "file that fits it, or the buffer's size")
            bindings[name] = BufferSpec(declared, str(source) if source else None)
        elif source is None:              # a binding without a file was refused above
            raise read.fail(where, "a binding without a file needs a size")
        elif init.get("mmap") is True:
            bindings[name] = BufferSpec(read.size(source.stat().st_size, where + ".init.file"),
                                        str(source))
        else:
            bindings[name] = BufferSpec(read.size(source.stat().st_size, where + ".init.file"))
            notes.append(f"{file}: {where} ({name}) has a file but no size: XRT's runner "
                         "makes the buffer the file's size and copies nothing into it (the "
                         "range [begin, end) defaults to [0, size) = empty); it stays zero "
                         "here too. Give size to fill it")
    execution = read.mapping(data.get("execution", {}), "execution")
    iterations = execution.get("iterations")
    threshold = execution.get("runlist_threshold", RUNLIST_THRESHOLD)
    return RecipeProfile(bindings,
                   read.c_int(iterations, "execution.iterations")
                   if iterations is not None else None,
                   read.c_int(threshold, "execution.runlist_threshold"))


def _artefact(read: JsonReader, folder: Path, name: Any, where: str, *, elf: bool = False,
              required: bool = False) -> Path:
    """The file the recipe names (`artefact`); one not `required` may be absent (the caller
    puts a stand-in in its place)."""
    try:
        return artefact(folder, read.text(name, where), elf=elf, required=required)
    except ArtefactError as err:
        raise read.fail(where, str(err)) from None


EXTERNAL = {"input", "output", "inout", "weight"}    # runner.cpp buffer::is_external
BUFFER_TYPES = EXTERNAL | {"internal", "spill", "unknown", "debug"}


def _contexts(read: JsonReader, data: dict[str, Any], base: Path,
              absent: list[str]) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """The hardware contexts a recipe makes (`resources::create_hwctxs`): the legacy
    header's (xclbin, or program/programs) named "header", then each of
    resources.hwctxs (name, xclbin or programs)."""
    xclbins: dict[str, str] = {}
    programs: dict[str, tuple[str, ...]] = {}

    def named(name: Any, where: str, stand_in: bool = True) -> str:
        # no stand-in configures an array: a full ELF must exist
        path = _artefact(read, base, name, where, elf=not stand_in, required=not stand_in)
        if not path.is_file():
            absent.append(str(path))
        return str(path)

    def add(name: str, entry: dict[str, Any], where: str, legacy: bool) -> None:
        if "xclbin" in entry:
            xclbins[name] = named(entry["xclbin"], where + ".xclbin")
        elif "programs" in entry or (legacy and "program" in entry):
            files = [(entry["program"], f"{where}.program")] if legacy and \
                "program" in entry else []
            files += [(f, f"{where}.programs[{i}]") for i, f in
                      enumerate(read.array(entry.get("programs", []), where + ".programs"))]
            if not files:
                raise read.fail(where + ".programs", "no program specified for hwctx")
            programs[name] = tuple(named(f, at, stand_in=False) for f, at in files)
        elif not legacy:
            raise read.fail(where, "no xclbin or program specified for hwctx")

    add("header", read.mapping(data.get("header", {}), "header"), "header", legacy=True)
    resources = read.mapping(data.get("resources", {}), "resources")
    for where, entry in read.objects(resources.get("hwctxs", []), "resources.hwctxs"):
        name = read.text(entry.get("name"), where + ".name")
        if name in xclbins or name in programs:
            raise read.fail(where + ".name", f"{name!r} is named twice")
        add(name, entry, where, legacy=False)
    if not xclbins and not programs:
        raise read.fail("header", "could not create hwctx, xclbin or program is required in "
                                  "recipe")
    return xclbins, programs


def _case(data: dict[str, Any], path: Path, profile: RecipeProfile, notes: list[str]) -> Case:
    read = JsonReader(str(path), RecipeError)
    base = path.parent
    if data.get("version") != "1.0":
        raise read.fail("version", f"{data.get('version')!r}; XRT's runner reads version 1.0")
    absent: list[str] = []
    xclbins, programs = _contexts(read, data, base, absent)
    resources = read.mapping(data.get("resources", {}), "resources")
    buffers, unset = _buffers(read, resources, profile, notes)
    kernels = _kernels(read, resources, base, [*xclbins, *programs], programs, absent)
    execution = read.mapping(data.get("execution"), "execution")
    templates, order, context = _runs(read, execution, kernels, buffers, set(buffers) | unset)
    flow = ELF_FLOW if all(elf for _, elf, c in kernels.values() if c == context) else \
        INSTR_BO
    n = len(order)
    threshold = profile.runlist_threshold
    if n < threshold:
        notes.append(f"XRT's runner starts fewer than {threshold} runs one by one "
                     "(runlist_threshold); here the "
                     f"{n} run{'s' if n > 1 else ''} go in a runlist like any plan")
    elif threshold != RUNLIST_THRESHOLD:
        notes.append(f"the profile's runlist_threshold is {threshold}: XRT's runner makes a "
                     f"runlist of {n} runs, as here")
    return Case(name=path.stem, description=f"XRT run recipe {path.name}: {n} runs",
                source=str(path), pack="recipe", xclbins=xclbins, layers=n,
                runlist_context=context, per_layer=tuple(templates),
                plans=(make_plan("recipe", str(n), n),), expect={}, trials=DEFAULT_TRIALS,
                deadline_s=None, file=str(path.resolve()), sha256="",
                flow=FULL_ELF if context in programs else flow, buffers=buffers,
                order=tuple(order), kind=CaseKind.RECIPE, absent=tuple(absent), programs=programs)


def _buffers(read: JsonReader, resources: dict[str, Any], profile: RecipeProfile, notes: list[str]
             ) -> tuple[dict[str, BufferSpec], set[str]]:
    """resources.buffers as XRT's runner creates them (`create_bo`): the buffers it makes,
    bound by the profile or internal with a size, and the names it makes none for."""
    buffers: dict[str, BufferSpec] = {}
    unset: list[str] = []
    for where, entry in read.objects(resources.get("buffers", []), "resources.buffers"):
        name = read.text(entry.get("name"), where + ".name")
        kind = entry.get("type")
        if kind not in BUFFER_TYPES:
            raise read.fail(where + ".type", f"{describe(kind)}; XRT's runner knows "
                                             f"{', '.join(sorted(BUFFER_TYPES))}")
        size = entry.get("size")
        if size is None and kind in ("internal", "debug"):
            raise read.fail(where, f"a{'n' if kind == 'internal' else ''} {kind} buffer "
                                   "needs a size")
        if name in profile.bindings:
            buffers[name] = profile.bindings[name]
        elif kind not in EXTERNAL and size:
            buffers[name] = BufferSpec(read.size(size, where + ".size"))
        else:
            unset.append(name)              # runner.cpp create_bo: no buffer, no argument
    if unset:
        notes.append(f"buffers {', '.join(unset)} are external ({'/'.join(sorted(EXTERNAL))}) "
                     "or empty with no binding in the profile: XRT's runner creates no buffer "
                     "for them and leaves the arguments they are given unset; so does the "
                     "harness")
    return buffers, set(unset)


def _kernels(read: JsonReader, resources: dict[str, Any], base: Path, contexts: list[str],
             programs: dict[str, tuple[str, ...]], absent: list[str]
             ) -> dict[str, tuple[str, str | None, str]]:
    """resources.kernels: each kernel's instance, control-code ELF (None without one) and
    context (`resources::create_kernels`)."""
    kernels: dict[str, tuple[str, str | None, str]] = {}
    for where, entry in read.objects(resources.get("kernels", []), "resources.kernels"):
        name = read.text(entry.get("name"), where + ".name")
        instance = read.text(entry.get("instance", name), where + ".instance")
        hwctx = entry.get("hwctx", "")
        if hwctx:
            hwctx = read.text(hwctx, where + ".hwctx")
            if hwctx not in contexts:
                raise read.fail(where + ".hwctx", f"{hwctx!r} is not a context of the recipe "
                                                  f"({', '.join(contexts)})")
        elif len(contexts) == 1:
            hwctx = contexts[0]
        else:
            raise read.fail(where, "default hwctx is missing or ambiguous: name the kernel's "
                                   f"hwctx ({', '.join(contexts)})")
        elf = None
        if "ctrlcode" in entry:
            if hwctx in programs:
                raise read.fail(where + ".ctrlcode", "a kernel of a context made from full "
                                                     "ELFs takes no ctrlcode")
            elf = str(_artefact(read, base, entry["ctrlcode"], where + ".ctrlcode", elf=True))
            if not Path(elf).is_file():
                absent.append(elf)
        kernels[name] = (instance, elf, hwctx)
    return kernels


def _runs(read: JsonReader, execution: dict[str, Any],
          kernels: dict[str, tuple[str, str | None, str]], buffers: dict[str, BufferSpec],
          declared: set[str]) -> tuple[dict[Command, int], list[int], str]:
    """execution.runs: one command per kind of run (alike runs share one, in first-seen
    order), the order they run in, and the one context they all belong to."""
    runs = list(read.objects(execution.get("runs"), "execution.runs"))
    if not runs:
        raise read.fail("execution.runs", "no runs")
    templates: dict[Command, int] = {}
    order, used = [], set()
    for where, entry in runs:
        command, hwctx = _run(read, entry, where, kernels, buffers, declared)
        used.add(hwctx)
        order.append(templates.setdefault(command, len(templates)))
    if len(used) > 1:
        raise read.fail("execution.runs", f"the runs use kernels of {len(used)} contexts "
                                          f"({', '.join(sorted(used))}); a runlist belongs "
                                          "to one")
    return templates, order, used.pop()


def _run(read: JsonReader, entry: dict[str, Any], where: str,
         kernels: dict[str, tuple[str, str | None, str]],
         buffers: dict[str, BufferSpec], declared: set[str]) -> tuple[Command, str]:
    # runner.cpp create_kernel_run: "kernel" names the kernel; the legacy "name" does
    # when "kernel" is absent
    key = "kernel" if "kernel" in entry else "name"
    name = read.text(entry.get(key), f"{where}.{key}")
    if name not in kernels:
        raise read.fail(f"{where}.{key}", f"{name!r} is not a kernel of resources.kernels "
                                          f"({', '.join(kernels) or 'none'})")
    if entry.get("where", "npu") != "npu":
        raise read.fail(where + ".where", "CPU runs are not supported; the harness submits "
                                          "to the NPU")
    args: list[tuple[int, str, Any]] = []
    for at, arg in read.objects(entry.get("arguments", []), where + ".arguments"):
        if "size" in arg or "offset" in arg:
            raise read.fail(at, "sub-buffer arguments (size/offset) are not supported")
        buffer = read.text(arg.get("name"), at + ".name")
        index = read.c_int(arg.get("argidx"), at + ".argidx")
        if buffer not in declared:         # resources::get_buffer_or_error
            raise read.fail(at + ".name", f"{buffer!r} is not a buffer of resources.buffers "
                                          f"({', '.join(sorted(declared)) or 'none'})")
        if buffer in buffers:
            args.append((index, "bo", buffer))
    for at, constant in read.objects(entry.get("constants", []), where + ".constants"):
        value = constant.get("value")
        # create_constant_args: "int" read as a C int; "string" the harness cannot pass
        if constant.get("type") != "int" or isinstance(value, bool) \
                or not isinstance(value, int):
            raise read.fail(at, f"only int constants (a C int) are supported, got "
                                f"{describe(value)} of type {describe(constant.get('type'))}")
        index = read.c_int(constant.get("argidx"), at + ".argidx")
        if not fits_c_int(value):
            raise read.fail(at, c_int_refusal(f"the run of kernel {name!r}", index, value))
        args.append((index, "int", value))
    indices = [a[0] for a in args]
    if len(set(indices)) != len(indices):
        raise read.fail(where, f"an argument index is set twice ({sorted(indices)})")
    instance, elf, hwctx = kernels[name]
    # An absent control code is a NOP ELF stand-in (simulated stack only; hardware refuses).
    return Command(instance, "nop", (), elf=elf if elf and Path(elf).is_file() else None,
                   args=tuple(sorted(args))), hwctx


def fits_c_int(value: int) -> bool:
    """Whether the constant is a C int, which xrt-runner passes as it is written: runner.cpp
    reads `value` with `node.at("value").get<int>()`."""
    return -2**31 <= value < 2**31


def runner_reads(value: int) -> int | None:
    """What xrt-runner runs with for an int constant: `get<int>()` is a static_cast in the
    nlohmann::json 3.11.3 XRT bundles (get_arithmetic_value), so a JSON integer (int64 or
    uint64) is cut to its low 32 bits, two's complement; None past those, which nlohmann
    reads as a double whose conversion to int is undefined."""
    if not -2**63 <= value < 2**64:
        return None
    low = value & 0xFFFFFFFF
    return low - 2**32 if low >= 2**31 else low


def c_int_refusal(run: str, index: int, value: int) -> str:
    """Why the harness refuses a constant past a C int: xrt-runner would not refuse it, it
    would run with another number."""
    read = runner_reads(value)
    runner = (f"xrt-runner would run it as {read}" if read is not None else
              "xrt-runner would read it as a double and convert it with undefined behaviour")
    return (f"{run} sets argument {index} to {value}, past a C int: {runner}, without a "
            "word (runner.cpp value.get<int>(), a static_cast in nlohmann::json 3.11.3), so "
            "the harness refuses it; give a value from -2147483648 to 2147483647")


def _with(case: Case, notes: list[str], digest: str, profile: str | None, ref: str) -> Case:
    return replace(case, sha256=digest, notes=tuple(notes), recipe_profile=profile,
                   reference=ref)


# -- XRT's validate archive ---------------------------------------------------------------

def validate_recipe(name: str) -> tuple[Path, Path | None, list[str]]:
    """recipe_NAME.json and profile_NAME.json with the artefacts they name, from XRT's
    validate archive; else rebuilt from the recorded shape of XRT's shipped recipe."""
    from harness.formats.ar import read_ar_member
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
        profile_data = read_ar_member(source, f"profile_{name}.json")
        if profile_data is not None:
            _put(folder / f"profile_{name}.json", profile_data)
        for archived in _artefacts(json.loads(recipe)):
            member = read_ar_member(source, archived)
            if member is not None:
                _put(folder / archived, member)
        kept = folder / f"profile_{name}.json" if profile_data is not None else None
        return folder / wanted, kept, [f"recipe from {source}"]
    return _rebuilt(name)


def _artefacts(recipe: dict[str, Any]) -> list[str]:
    names = [recipe.get("header", {}).get("xclbin")]
    names += [k.get("ctrlcode") for k in recipe.get("resources", {}).get("kernels", [])]
    # names from the archive become files in our cache: plain names only
    return [n for n in names if isinstance(n, str) and Path(n).name == n and n not in (".", "..")]


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
    kernel = {"name": "k1", "instance": shape["instance"]}
    if shape["ctrlcode"]:
        kernel["ctrlcode"] = shape["ctrlcode"]
    recipe = {"version": "1.0", "header": {"xclbin": shape["xclbin"]},
              "resources": {"buffers": buffers, "kernels": [kernel]},
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
