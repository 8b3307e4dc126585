"""Cases: one experiment each, a YAML file validated strictly.

Unknown keys, wrong types, plans that do not add up to the layer count and
unknown expected states are errors naming the file, the line and the key path
(e.g. ``cases/x.yaml:14: plans.halves: plan '21+20' covers 41 layers, the case
has 42``). See DESIGN.md "Cases" and `cases/*.yaml` for the format.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.formats.jsonread import MAX_BUFFER_BYTES, describe, kind_of
from harness.formats.txn import file_problem
from harness.formats.yamlio import KeyPath, ShapeError, load_yaml_with_lines
from harness.model.errors import CaseError, PlanError
from harness.model.ert import CmdState, state_from_name
from harness.model.plan import Plan, make_plan
from harness.model.results import FLOWS, FULL_ELF, INSTR_BO, BufferSpec
from harness.model.text_enum import TextEnum
from harness.sources.confine import ArtefactError, artefact

NOP = "nop"
# the simulator's stand-in for an engine's own control code (harness.formats.txn
# work_stream), sized to the partition as NOP is: investigate's runs of "the work" where
# no capture gives the engine's own; never a case file's value, never on hardware
STAND_IN_WORK = "stand-in-work"
# the file an XRT capture folder holds: a reference naming one is a capture, not a case
REPLAY = "replay.json"
DEFAULT_TRIALS = 3
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_ROLE = re.compile(r"[a-z][a-z0-9_]*")


class CaseKind(TextEnum):
    """Where a case's runs come from."""

    CASE = "case"             # a decode case: a pack's xclbins and a per-layer program
    RECIPE = "recipe"         # an XRT run recipe and its profile
    CAPTURE = "capture"       # a frame of an XRT capture


@dataclass(frozen=True)
class Command:
    """One run a decode layer adds to the runlist (or one run of a recipe or capture)."""

    kernel: str
    instructions: str            # "nop" or an absolute path to an insts.bin
    buffers: tuple[int, ...]
    latency_us: float | None = None
    opcode: int = 3
    elf: str | None = None       # a control-code ELF file (recipes, captures)
    # a recipe's or capture's arguments: (argidx, "bo", buffer name) or (argidx, "int", value)
    args: tuple[tuple[int, str, Any], ...] | None = None


@dataclass(frozen=True)
class Case:
    """An experiment: the pack and xclbins, the commands of one layer, the plans cutting the
    layers into runlists, and what each plan is expected to do."""

    name: str
    description: str
    source: str
    pack: str
    xclbins: dict[str, str]      # role -> file name inside the pack
    layers: int
    runlist_context: str
    per_layer: tuple[Command, ...]
    plans: tuple[Plan, ...]
    expect: dict[str, CmdState]
    trials: int
    deadline_s: float | None
    file: str
    sha256: str
    flow: str = INSTR_BO
    # A recipe or capture: its named buffers, and the run sequence as indices into
    # per_layer (then `layers` counts runs).
    buffers: dict[str, BufferSpec] = field(default_factory=dict)
    order: tuple[int, ...] | None = None
    kind: CaseKind = CaseKind.CASE
    notes: tuple[str, ...] = ()  # what the user should know about how it was read
    absent: tuple[str, ...] = ()  # artefacts it names that are not there (stand-ins)
    recipe_profile: str | None = None
    reference: str | None = None  # how it was named (xrt-validate:NAME), if not by file
    capture: str | None = None    # a capture's folder
    frame: str | None = None      # the captured frame whose runs the plans cut
    frames: tuple[str, ...] = ()  # every frame of the capture
    # contexts made from full ELFs (role -> absolute ELF paths), beside the xclbin ones
    programs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # a capture's context configurations (role -> key -> value, as replay.cpp passes them to
    # xrt::hw_context) and the XRT settings the application ran with (its `ini`)
    context_cfg: dict[str, dict[str, str]] = field(default_factory=dict)
    ini: dict[str, str] = field(default_factory=dict)
    # the command line that runs the case's engine (`flm run minicpm5:2b`): what a verdict
    # names to capture the engine's own commands
    engine: str | None = None
    # files of the pack that are another pack's byte for byte (role -> the name FastFlowLM
    # shipped it under, `Qwen3-1.7B-NPU2/layer.xclbin`): what its files are checked against
    reuses: dict[str, str] = field(default_factory=dict)

    @property
    def model_tag(self) -> str | None:
        """The model tag of an engine run as `flm run TAG` (what `flm serve` serves it
        by), else None."""
        words = (self.engine or "").split()
        return words[2] if len(words) > 2 and words[:2] == ["flm", "run"] else None

    def plan(self, name: str) -> Plan:
        for plan in self.plans:
            if plan.name == name:
                return plan
        raise CaseError(f"case {self.name} has no plan {name!r} "
                        f"(plans: {', '.join(p.name for p in self.plans)})")

    @property
    def runs_per_layer(self) -> int:
        return 1 if self.order is not None else len(self.per_layer)

    @property
    def unit(self) -> str:
        """What a plan's chunk sizes count."""
        return "run" if self.order is not None else "layer"

    def _other_depth(self, ref: str) -> str:
        """How to run another depth than the case's, which a plan cannot: a sweep of it."""
        if self.kind is not CaseKind.CASE or not re.fullmatch(r"[0-9]{1,9}(\+[0-9]{1,9})*",
                                                               ref, re.ASCII):
            return ""
        chunks = [int(part) for part in ref.split("+")]
        depth = sum(chunks)
        if depth == self.layers or not 0 < depth <= 100_000:
            return ""
        how = ("in one runlist" if len(chunks) == 1
               else f"in runlists of at most {max(chunks)}")
        return (f". A plan cuts the case's {self.layers} layers; to run depth {depth} {how}, "
                f"sweep it: runlist-harness sweep {self.name} --depths {depth} --chunks "
                f"{max(chunks)}")

    def plans_for(self, refs: tuple[str, ...] | list[str]) -> list[Plan]:
        """`--plan` values: a plan name of the case, or a spec like 21+21 / even:3 / max:24;
        none means every plan of the case."""
        if not refs:
            return list(self.plans)
        plans = []
        names = {p.name: p for p in self.plans}
        for ref in refs:
            if ref in names:
                plans.append(names[ref])
                continue
            try:
                plan = make_plan(ref, ref, self.layers)
            except PlanError as err:
                raise PlanError(f"--plan {ref!r} is neither a plan of {self.name} "
                                f"({', '.join(names)}) nor a valid spec: {err}"
                                + self._other_depth(ref)) from None
            named = ":" in plan.spec           # even:K / max:N keep their spec as the name
            plans.append(Plan(plan.spec if named else "+".join(map(str, plan.chunks)),
                              plan.spec, plan.chunks))
        seen: dict[str, str] = {}
        for ref, plan in zip(refs, plans, strict=True):
            if plan.name in seen:
                # the report keys trials by plan name: two plans of one name would merge
                raise PlanError(f"--plan {ref!r} names plan {plan.name!r} again (given as "
                                f"{seen[plan.name]!r} already); give each plan once")
            seen[plan.name] = ref
        return plans


# -- finding cases -------------------------------------------------------------

@dataclass(frozen=True)
class CaseFile:
    """A case file found: its name, path, where it comes from, and the file that shadows it."""

    name: str
    path: Path
    origin: str                   # shipped | local (./cases) | $HARNESS_CASES
    shadowed_by: Path | None = None   # a file of the same name found first, which wins


def case_dirs() -> list[tuple[Path, str]]:
    """Where cases are looked for, in order, with where each folder comes from:
    $HARNESS_CASES, ./cases, then the checkout's cases/ (an editable install) or the
    installed package's copy (harness/cases)."""
    here = Path(__file__).resolve().parents[1]      # the harness package
    package = {(here.parent / "cases").resolve(), (here / "cases").resolve()}
    dirs = []
    if os.environ.get("HARNESS_CASES"):
        dirs.append((Path(os.environ["HARNESS_CASES"]), "$HARNESS_CASES"))
    dirs += [(Path.cwd() / "cases", "local"), (here.parent / "cases", "shipped"),
             (here / "cases", "shipped")]
    unique: list[tuple[Path, str]] = []
    for folder, origin in dirs:
        if folder.is_dir() and folder.resolve() not in [u.resolve() for u, _ in unique]:
            unique.append((folder, "shipped" if folder.resolve() in package else origin))
    return unique


def case_files() -> list[CaseFile]:
    """Every case file found, by name; a name found twice is marked shadowed after the first."""
    first: dict[str, Path] = {}
    out = []
    for folder, origin in case_dirs():
        for path in sorted(folder.glob("*.yaml")):
            winner = first.setdefault(path.stem, path)
            out.append(CaseFile(path.stem, path, origin, None if winner is path else winner))
    return sorted(out, key=lambda c: (c.name, c.shadowed_by is not None))


def shipped_cases() -> list[Path]:
    """The case each name resolves to."""
    return [c.path for c in case_files() if c.shadowed_by is None]


def find_case(ref: str) -> Path:
    """A case by file path or by name (``minicpm5-2b-decode``)."""
    path = Path(ref)
    if path.suffix in (".yaml", ".yml") or os.sep in ref or path.exists():
        if not path.is_file():
            raise CaseError(f"case file {ref} {_not_a_file(path)}")
        return path
    for candidate in shipped_cases():
        if candidate.stem == ref:
            return candidate
    names = ", ".join(p.stem for p in shipped_cases()) or "none found"
    raise CaseError(f"no case named {ref!r}; shipped cases: {names} "
                    "(or give a path to a case file)")


def _not_a_file(path: Path) -> str:
    """What a path that is no regular file is, said of a case file ("does not exist",
    "is a FIFO (named pipe), not a file")."""
    from harness.formats.regular import kind_of as kind_of_mode
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "is a link to nothing" if path.is_symlink() else "does not exist"
    except OSError as err:
        return f"cannot be looked at ({err.strerror or err})"
    return f"is {kind_of_mode(mode)}, not a file: give the case's YAML file"


# -- validation ----------------------------------------------------------------

class FieldChecker:
    """Checks values of a YAML document and names the file, line and key path of the
    first that is wrong (`CaseError`)."""

    def __init__(self, file: str, lines: dict[KeyPath, int], *,
                 allow_outside_paths: bool = False) -> None:
        self.file = file
        self.lines = lines
        # the user's own case may name files outside its folder (--allow-outside-paths)
        self.allow_outside_paths = allow_outside_paths

    def error(self, path: KeyPath, message: str) -> CaseError:
        line = self.lines.get(path)
        probe = path
        while line is None and probe:
            probe = probe[:-1]
            line = self.lines.get(probe)
        where = f"{self.file}:{line}" if line else self.file
        dotted = _dotted(path) or "(top level)"
        return CaseError(f"{where}: {dotted}: {message}")

    def mapping(self, value: Any, path: KeyPath, allowed: set[str],
                required: set[str]) -> dict:
        if not isinstance(value, dict):
            if not path:        # no case at all: say what it is, never a word of it
                raise self.error(path, f"expected a mapping (a case starts `case: NAME`), "
                                       f"got {kind_of(value)}: is this the file you meant?")
            raise self.error(path, f"expected a mapping, got {describe(value)}")
        for key in value:
            if not isinstance(key, str) or key not in allowed:
                raise self.error(path + (key,), f"unknown key {key!r}; allowed: "
                                                f"{', '.join(sorted(allowed))}")
        for key in sorted(required):
            if key not in value:
                raise self.error(path, f"missing required key {key!r}")
        return value

    def string(self, value: Any, path: KeyPath, pattern: re.Pattern | None = None) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.error(path, f"expected a non-empty string, got {describe(value)}")
        if pattern is not None and not pattern.fullmatch(value):
            raise self.error(path, f"{value!r} is not a valid name (letters, digits, "
                                   "'.', '_', '-')")
        return value

    def integer(self, value: Any, path: KeyPath, low: int, high: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(path, f"expected an integer, got {describe(value)}")
        if not low <= value <= high:
            raise self.error(path, f"{value} is out of range {low}..{high}")
        return value

    def number(self, value: Any, path: KeyPath, low: float, high: float) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(path, f"expected a number, got {describe(value)}")
        if not low <= value <= high:
            raise self.error(path, f"{value} is out of range {low}..{high}")
        return float(value)


def read_document(raw: bytes, file: str, *, allow_outside_paths: bool = False
                  ) -> tuple[Any, FieldChecker]:
    """A case file's YAML, and a checker that names its lines."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CaseError(f"{file}: not UTF-8 text (byte {err.start})") from None
    try:
        data, lines = load_yaml_with_lines(text)
    except ShapeError as err:
        raise CaseError(f"{file}:{err.line}: {err}") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{file}:{mark.line + 1}" if mark else file
        problem = getattr(err, "problem", None) or str(err)
        raise CaseError(f"{where}: not valid YAML: {problem}") from None
    return data, FieldChecker(file, lines, allow_outside_paths=allow_outside_paths)


def decode_case(check: FieldChecker, data: Any, file: str, raw: bytes) -> Case:
    """A decode case (a pack's xclbins and a per-layer program) from its document."""
    top = check.mapping(data, (), {"case", "description", "source", "pack", "xclbins",
                                   "decode", "plans", "expect", "trials", "deadline_s",
                                   "flow", "programs", "engine", "reuses"},
                        {"case", "description", "pack", "xclbins", "decode", "plans"})
    name = check.string(top["case"], ("case",), NAME)
    description = check.string(top["description"], ("description",))
    source = check.string(top["source"], ("source",)) if "source" in top else ""
    pack = check.string(top["pack"], ("pack",), NAME)
    xclbins = _xclbins(check, top["xclbins"])
    programs = _programs(check, top.get("programs", {}), xclbins, Path(file).parent)
    decode = check.mapping(top["decode"], ("decode",), {"layers", "runlist_context",
                                                        "per_layer"},
                           {"layers", "runlist_context", "per_layer"})
    layers = check.integer(decode["layers"], ("decode", "layers"), 1, 10_000)
    context = check.string(decode["runlist_context"], ("decode", "runlist_context"))
    if context not in xclbins and context not in programs:
        raise check.error(("decode", "runlist_context"),
                          f"{context!r} is not one of the case's contexts "
                          f"({', '.join([*xclbins, *programs])})")
    per_layer = _commands(check, decode["per_layer"], Path(file).parent)
    plans = _plans(check, top["plans"], layers)
    expect = _expect(check, top["expect"], top["plans"]) if "expect" in top else {}
    trials = (check.integer(top["trials"], ("trials",), 1, 1000)
              if "trials" in top else DEFAULT_TRIALS)
    deadline = (check.number(top["deadline_s"], ("deadline_s",), 0.1, 86_400)
                if "deadline_s" in top else None)
    flow = _flow(check, top.get("flow", FULL_ELF if context in programs else INSTR_BO),
                 context in programs, context)
    engine = check.string(top["engine"], ("engine",)) if "engine" in top else None
    reuses = _reuses(check, top["reuses"], xclbins) if "reuses" in top else {}
    return Case(name, description, source, pack, xclbins, layers, context, per_layer,
                tuple(plans), expect, trials, deadline, file, hashlib.sha256(raw).hexdigest(),
                flow, programs=programs, engine=engine, reuses=reuses)


def _reuses(check: FieldChecker, raw: Any, xclbins: dict[str, str]) -> dict[str, str]:
    """`reuses: {role: PACK/FILE}`: a role's file is another pack's, as FastFlowLM shipped
    it (a name its table of shipped xclbins holds, as `xclbin inspect` shows it)."""
    from harness.formats.known import shipped_name
    if not isinstance(raw, dict):
        raise check.error(("reuses",), "expected a mapping of role to the file it reuses, "
                                       "e.g. {layer: Qwen3-1.7B-NPU2/layer.xclbin}")
    reuses: dict[str, str] = {}
    for role, name in raw.items():
        if role not in xclbins:
            raise check.error(("reuses", role), f"{role!r} is not one of the case's xclbins "
                                                f"({', '.join(xclbins)})")
        reuses[role] = check.string(name, ("reuses", role))
        if not shipped_name(reuses[role]):
            raise check.error(("reuses", role), f"{reuses[role]!r} is no file FastFlowLM's "
                                                "table of shipped xclbins names; give "
                                                "PACK/FILE as `xclbin inspect` shows it (known "
                                                "as ...)")
    return reuses


def _xclbins(check: FieldChecker, raw: Any) -> dict[str, str]:
    """`xclbins: {role: file name}`: names in the pack's folder, never paths."""
    if not isinstance(raw, dict) or not raw:
        raise check.error(("xclbins",), "expected a mapping of role to file name, e.g. "
                                        "{layer: layer.xclbin}")
    xclbins: dict[str, str] = {}
    for role, filename in raw.items():
        if not isinstance(role, str) or not _ROLE.fullmatch(role):
            raise check.error(("xclbins", role), f"role {role!r} must be a lower-case name "
                                                 "such as attn, mm, layer, dequant")
        xclbins[role] = check.string(filename, ("xclbins", role))
        if Path(xclbins[role]).name != xclbins[role] or xclbins[role] in (".", ".."):
            raise check.error(("xclbins", role), f"{xclbins[role]!r} must be a file name in "
                                                 "the pack's folder, not a path")
    return xclbins


def _plans(check: FieldChecker, raw: Any, layers: int) -> list[Plan]:
    """`plans: {name: spec}`, each covering the layer count."""
    if not isinstance(raw, dict) or not raw:
        raise check.error(("plans",), "expected a mapping of plan name to spec, e.g. "
                                      "{monolithic: \"42\", halves: \"21+21\"}")
    plans = []
    for plan_name, spec in raw.items():
        path = ("plans", plan_name)
        if not isinstance(plan_name, str) or not NAME.fullmatch(plan_name):
            raise check.error(path, f"plan name {plan_name!r} must be a simple name")
        try:
            plans.append(make_plan(plan_name, spec, layers))
        except PlanError as err:
            raise check.error(path, str(err)) from None
    return plans


def _expect(check: FieldChecker, raw: Any, plans: dict[str, Any]) -> dict[str, CmdState]:
    """`expect: {plan: state}`: what hardware showed upstream, for plans the case has."""
    if not isinstance(raw, dict):
        raise check.error(("expect",), f"expected a mapping of plan name to state, got "
                                       f"{describe(raw)}")
    expect: dict[str, CmdState] = {}
    for plan_name, state in raw.items():
        path = ("expect", plan_name)
        if plan_name not in plans:
            raise check.error(path, f"no plan named {plan_name!r} "
                                    f"(plans: {', '.join(plans)})")
        try:
            expect[plan_name] = state_from_name(check.string(state, path))
        except ValueError as err:
            raise check.error(path, str(err)) from None
    return expect


def _flow(check: FieldChecker, raw: Any, full_elf_context: bool, context: str) -> str:
    """`flow`: one of FLOWS, and full-elf where the runlist context is made from ELFs."""
    flow = check.string(raw, ("flow",))
    if flow not in FLOWS:
        raise check.error(("flow",), f"{flow!r} is not a flow; use elf (FastFlowLM's: a "
                                     "control-code ELF, module and ext.kernel), instr-bo "
                                     "(an instruction buffer, as mlir-aie and IRON) or "
                                     "full-elf (a context made from a full ELF)")
    if full_elf_context and flow != FULL_ELF:
        raise check.error(("flow",), f"the runlist context {context!r} is made from full "
                                     f"ELFs (programs), which only the full-elf flow runs")
    return flow


def _artefact(check: FieldChecker, folder: Path, name: str, path: KeyPath, *,
              elf: bool = False, required: bool = True) -> Path:
    try:
        return artefact(folder, name, elf=elf, required=required, own_case=True,
                        allow_outside=check.allow_outside_paths)
    except ArtefactError as err:
        raise check.error(path, str(err)) from None


def _programs(check: FieldChecker, raw: Any, xclbins: dict[str, str],
              folder: Path) -> dict[str, tuple[str, ...]]:
    """`programs: {role: file or [files]}`: contexts made from full ELFs, paths relative to
    the case file."""
    if not isinstance(raw, dict):
        raise check.error(("programs",), f"expected a mapping of role to ELF file(s), got "
                                         f"{describe(raw)}")
    programs: dict[str, tuple[str, ...]] = {}
    for role, files in raw.items():
        path = ("programs", role)
        if not isinstance(role, str) or not _ROLE.fullmatch(role):
            raise check.error(path, f"role {role!r} must be a lower-case name")
        if role in xclbins:
            raise check.error(path, f"{role!r} is an xclbin context too; a context is made "
                                    "from an xclbin or from full ELFs, not both")
        names = [files] if isinstance(files, str) else files
        if not isinstance(names, list) or not names:
            raise check.error(path, "expected an ELF file or a list of them")
        resolved = []
        for i, name in enumerate(names):
            elf = _artefact(check, folder, check.string(name, path + (i,)), path + (i,),
                            elf=True)
            resolved.append(str(elf))
        programs[role] = tuple(resolved)
    return programs


def _commands(check: FieldChecker, value: Any, base: Path) -> tuple[Command, ...]:
    path: KeyPath = ("decode", "per_layer")
    if not isinstance(value, list) or not value:
        raise check.error(path, "expected a non-empty list of commands")
    commands = []
    for i, item in enumerate(value):
        here = path + (i,)
        entry = check.mapping(item, here, {"kernel", "instructions", "buffers", "latency_us",
                                           "opcode"}, {"kernel", "buffers"})
        kernel = check.string(entry["kernel"], here + ("kernel",))
        instructions = entry.get("instructions", NOP)
        check.string(instructions, here + ("instructions",))
        if instructions != NOP:
            insts = _artefact(check, base, instructions, here + ("instructions",),
                              required=False)
            if not insts.is_file():
                raise check.error(here + ("instructions",),
                                  f"instruction file {insts} does not exist (use 'nop' for "
                                  "the one-NOOP stream)")
            problem = file_problem(insts)
            if problem:
                raise check.error(here + ("instructions",),
                                  f"instruction file {insts}: {problem}")
            instructions = str(insts)
        buffers_raw = entry["buffers"]
        if not isinstance(buffers_raw, list):
            raise check.error(here + ("buffers",), f"expected a list of buffer sizes in "
                                                   f"bytes, got {describe(buffers_raw)}")
        buffers = tuple(check.integer(b, here + ("buffers", j), 1, MAX_BUFFER_BYTES)
                        for j, b in enumerate(buffers_raw))
        latency = (check.number(entry["latency_us"], here + ("latency_us",), 0, 3.6e9)
                   if "latency_us" in entry else None)
        opcode = (check.integer(entry["opcode"], here + ("opcode",), 0, 2**32 - 1)
                  if "opcode" in entry else 3)
        commands.append(Command(kernel, instructions, buffers, latency, opcode))
    return tuple(commands)


def _dotted(path: KeyPath) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out

