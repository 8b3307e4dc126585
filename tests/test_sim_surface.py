"""The simulated pyxrt has the real binding's surface, release by release.

The reference is the binding's own files (../shared/reference/xrt): the 2.23 and
master type stubs and the 2.20 source, parsed by `surface_ref`. For every simulated
release, every class, enum member, module name, constructor overload and method
overload of that release's binding must exist and accept arguments of its types
(a RuntimeError is the stack's answer and fine; a TypeError or AttributeError means
the overload is missing), and every overload or name that only another release has
must be refused as the real one refuses it (TypeError, AttributeError).

Deliberate exceptions, each with its reason, are in DEVIATIONS: where a stub and the
binding source disagree, the simulator follows the source.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import SHARED_REFERENCE
from surface_ref import Sig, Surface, parse_cpp, parse_stub

import harness.sim.pyxrt as pyxrt
from harness.formats.elf_writer import control_code_elf, full_elf
from harness.formats.txn import nop_stream
from harness.formats.xclbin_writer import flm_spec, synthesize
from harness.sim import binding, control
from harness.sim.driver_log import BDF
from harness.sim.releases import RELEASES

XRT_REFERENCE = SHARED_REFERENCE / "xrt"
CHRONO = ("chrono",)
# (class, method or __init__, parameter kinds) -> (what the simulator raises, and why)
DEVIATIONS: dict[tuple[str, str, tuple[str, ...]], tuple[type[Exception], str]] = {
    ("runlist", "wait", ("int",)): (TypeError, "the stub says an int; pyxrt.cpp binds "
                                    "std::chrono::milliseconds and includes no chrono caster"),
    ("run", "wait2", ("int",)): (TypeError, "as runlist.wait: std::chrono, no caster"),
    ("runlist", "wait", CHRONO): (TypeError, "std::chrono::milliseconds has no caster"),
    ("run", "wait2", CHRONO): (TypeError, "std::chrono::milliseconds has no caster"),
    ("run", "add_callback", ("state", "callable", "pointer")): (
        TypeError, "std::function and void* need pybind11/functional.h, never included"),
    ("xclbin", "__init__", ("axlf",)): (TypeError, "const axlf* is not a registered type"),
    ("xclbin", "get_axlf", ()): (TypeError, "pybind11 cannot return the unregistered axlf*"),
    ("ext.bo", "__init__", ("device", "pid", "int")): (
        TypeError, "xrt::pid_type is not a registered type"),
    ("ext.bo", "__init__", ("hw_context", "pid", "int")): (
        TypeError, "xrt::pid_type is not a registered type"),
}
# Not read from the stubs: enums are pybind11 enums, not IntEnum (they equal only their own
# values, test below); the master stub lacks run.get_ctrl_scratchpad_bo, which the binding
# has bound since 2.25 (pyxrt.cpp at 2.25.0 and 963c58ee); methods on default-constructed
# objects crash the real binding (an empty handle) and raise RuntimeError here.
SCRATCHPAD = ("run", "get_ctrl_scratchpad_bo")
# The calls a runlist is built from (run(kernel), run.set_arg, runlist.add) take their
# arguments positionally only, so that binding them allocates nothing: there a keyword
# argument or one too many is a TypeError in Python's words rather than pybind11's. A
# missing argument, a wrong type and every other method answer in pybind11's words.
HOT_PATH = ("run.__init__", "run.set_arg", "runlist.add")


def reference(release: str) -> Surface:
    if not XRT_REFERENCE.is_dir():
        pytest.skip(f"the pyxrt reference files are not present at {XRT_REFERENCE}")
    if release in ("2.20", "2.21.21"):          # 202610.2.21.21 has 2.20's binding
        return parse_cpp(XRT_REFERENCE / "pyxrt-2.20.197.cpp")
    if release in ("2.21", "2.21-tip"):          # 2.21.75 adds exactly hw_context(device, elf)
        surface = parse_cpp(XRT_REFERENCE / "pyxrt-2.20.197.cpp")
        surface.cls("hw_context").ctors.add(("device", "elf"))
        if release == "2.21-tip":                # the XRT-2.21 branch tip: PR #9813
            surface.cls(SCRATCHPAD[0]).methods[SCRATCHPAD[1]] = {()}
        return surface
    # 2.26.0 (49612fa3): src/python is unchanged from there to 963c58ee
    stub = "pyxrt-963c58ee.pyi" if release in ("2.26", "master") else "pyxrt-2.23.244.pyi"
    surface = parse_stub(XRT_REFERENCE / stub)
    if release in ("2.25", "2.26", "master"):
        surface.cls(SCRATCHPAD[0]).methods[SCRATCHPAD[1]] = {()}
    return surface


def kinds(sig: Sig) -> tuple[str, ...]:
    return tuple(k.split(":")[0] for k in sig)


class Fixtures:
    def __init__(self, folder: Path, release: str) -> None:
        control.configure(f"xrt:{release}")
        self.release = RELEASES[release]
        self.xclbin_path = folder / "layer.xclbin"
        self.xclbin_path.write_bytes(synthesize(flm_spec("Surface/layer")))
        self.elf_path = folder / "nop.elf"
        self.elf_path.write_bytes(control_code_elf(nop_stream(8)))
        self.device = pyxrt.device(0)
        self.xclbin = pyxrt.xclbin(str(self.xclbin_path))
        self.uuid = self.device.register_xclbin(self.xclbin)
        self.ctx = pyxrt.hw_context(self.device, self.uuid)
        self.kernel = pyxrt.kernel(self.ctx, "MLIR_AIE")
        self.elf = pyxrt.elf(str(self.elf_path))
        self.module = pyxrt.module(self.elf)

    def bo(self) -> Any:
        return pyxrt.bo(self.device, 4096, pyxrt.bo.host_only, 0)

    def instance(self, cls: str) -> Any:
        makers = {
            "device": lambda: pyxrt.device(0), "xclbin": lambda: self.xclbin,
            "hw_context": lambda: self.ctx, "kernel": lambda: self.kernel,
            "run": lambda: pyxrt.run(self.kernel), "bo": self.bo,
            "runlist": lambda: pyxrt.runlist(self.ctx), "uuid": lambda: self.uuid,
            "elf": lambda: self.elf, "program": lambda: pyxrt.program(self.elf),
            "module": lambda: self.module,
            "xclbin.xclbinkernel": lambda: self.xclbin.get_kernels()[0],
            "xclbin.xclbinmem": lambda: self.xclbin.get_mems()[0],
            "xclbin.xclbinip": lambda: pyxrt.xclbin.xclbinip(),
            "ext.bo": lambda: pyxrt.ext.bo(self.device, 4096),
            "ext.kernel": lambda: pyxrt.ext.kernel(self.ctx, self.module, "MLIR_AIE"),
            "aie.bo": lambda: pyxrt.aie.bo(self.device, 4096, pyxrt.bo.host_only, 0),
        }
        return makers[cls]() if cls in makers else None

    def value(self, kind: str, cls: str) -> Any:
        base, _, name = kind.partition(":")
        if base == "str":
            if name in ("xclbin_path", "xclbin") or (name == "filename" and cls == "xclbin"):
                return str(self.xclbin_path)
            return {"filename": str(self.elf_path), "name": "MLIR_AIE", "bdf": BDF,
                    "uuid_str": self.uuid.to_string()}.get(name, "p")
        if base == "int":
            return {"size": 16, "value": 3, "item": 3, "timeout_ms": 1, "timeout": 1,
                    "group": 0}.get(name, 0)
        simple = {
            "device": lambda: self.device, "uuid": lambda: self.uuid,
            "xclbin": lambda: self.xclbin, "hw_context": lambda: self.ctx, "bo": self.bo,
            "kernel": lambda: self.kernel, "run": lambda: pyxrt.run(self.kernel),
            "elf": lambda: self.elf, "module": lambda: self.module,
            "sync": lambda: pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE,
            "state": lambda: pyxrt.ert_cmd_state.ERT_CMD_STATE_COMPLETED,
            "info": lambda: pyxrt.xrt_info_device.name, "level": lambda: pyxrt.debug,
            "cfg": dict, "buffer": lambda: bytes(16), "bo.flags": lambda: pyxrt.bo.host_only,
            "kernel.cu_access_mode": lambda: pyxrt.kernel.shared,
            # the enum objects themselves, so a release without them can be offered them
            "hw_context.access_mode": lambda: binding.hw_access_mode.shared,
            "ext.access_mode": lambda: pyxrt.ext.read_write,
            "graph.access_mode": lambda: binding.graph_access_mode.shared,
            "pointer": lambda: None, "axlf": lambda: None, "pid": lambda: 0,
            "callable": lambda: (lambda *a: None), "chrono": lambda: 1,
        }
        return simple[base]()

    def arguments(self, sig: Sig, cls: str) -> list[Any]:
        out: list[Any] = []
        for kind in sig:
            out += [3] if kind == "*args" else [self.value(kind, cls)]
        return out


def resolve(path: str) -> Any:
    target: Any = pyxrt
    for part in path.split("."):
        target = getattr(target, part)
    return target


def call(target: Any, args: list[Any]) -> BaseException | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            target(*args)
        except (RuntimeError, TypeError, AttributeError, IndexError) as err:
            return err
    return None


def check_accepted(what: str, cls: str, method: str, sig: Sig, outcome: BaseException | None,
                   problems: list[str]) -> None:
    expected = DEVIATIONS.get((cls, method, kinds(sig)))
    if expected is not None:
        if not isinstance(outcome, expected[0]):
            problems.append(f"{what}: expected {expected[0].__name__} ({expected[1]}), got "
                            f"{outcome!r}")
    elif outcome is not None and not isinstance(outcome, RuntimeError):
        problems.append(f"{what}: {type(outcome).__name__}: {str(outcome)[:160]}")


@pytest.mark.parametrize("release", list(RELEASES))
def test_every_name_and_overload_of_the_release_is_there(tmp_path, release):
    surface = reference(release)
    fx = Fixtures(tmp_path, release)
    problems: list[str] = []
    for name in sorted(surface.names):
        try:
            resolve(name)
        except AttributeError:
            problems.append(f"module name pyxrt.{name} is missing")
    for name, sigs in surface.functions.items():
        for sig in sigs:
            check_accepted(f"pyxrt.{name}{sig}", "", name, sig,
                           call(resolve(name), fx.arguments(sig, "")), problems)
    for cls, ref in sorted(surface.classes.items()):
        try:
            target = resolve(cls)
        except AttributeError:
            problems.append(f"class pyxrt.{cls} is missing")
            continue
        problems += [f"pyxrt.{cls}.{m} is missing" for m in sorted(ref.members)
                     if not hasattr(target, m)]
        for sig in ref.ctors:
            check_accepted(f"pyxrt.{cls}{sig}", cls, "__init__", sig,
                           call(target, fx.arguments(sig, cls)), problems)
        for method, sigs in ref.methods.items():
            if not hasattr(target, method):
                problems.append(f"pyxrt.{cls}.{method} is missing")
                continue
            instance = fx.instance(cls)
            if instance is None:          # graph: no FastFlowLM xclbin carries one
                continue
            for sig in sigs:
                check_accepted(f"pyxrt.{cls}.{method}{sig}", cls, method, sig,
                               call(getattr(fx.instance(cls), method),
                                    fx.arguments(sig, cls)), problems)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("release", list(RELEASES))
def test_what_only_other_releases_have_is_refused(tmp_path, release):
    mine = reference(release)
    fx = Fixtures(tmp_path, release)
    problems: list[str] = []
    checked = 0
    for other in RELEASES:
        theirs = reference(other)
        for name in theirs.names - mine.names:
            if "." not in name and hasattr(pyxrt, name):
                problems.append(f"pyxrt.{name} exists, but not in {release}")
        for cls, ref in theirs.classes.items():
            own = mine.classes.get(cls)
            if own is None:
                continue
            own_ctors = {kinds(s) for s in own.ctors}
            for sig in ref.ctors:
                if kinds(sig) in own_ctors:
                    continue
                checked += 1
                outcome = call(resolve(cls), fx.arguments(sig, cls))
                if not isinstance(outcome, TypeError):
                    problems.append(f"pyxrt.{cls}{sig} (only in {other}) gave {outcome!r}, "
                                    "not TypeError")
            for method in set(ref.methods) - set(own.methods):
                checked += 1
                if hasattr(resolve(cls), method):
                    problems.append(f"pyxrt.{cls}.{method} (only in {other}) exists here")
    assert not problems, "\n".join(problems)
    if release in ("2.20", "master"):
        assert checked > 0                       # the releases do differ


def test_the_release_differences_that_matter(tmp_path):
    fx = Fixtures(tmp_path, "2.20")
    # 2.20: a context only from a registered uuid; no access modes, no xclbin/path forms
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        pyxrt.hw_context(fx.device, fx.xclbin)
    assert not hasattr(pyxrt.hw_context, "access_mode") and not hasattr(pyxrt, "graph")
    assert hasattr(pyxrt.module, "get_cfg_uuid")
    with pytest.raises(TypeError):
        pyxrt.hw_context(fx.device, fx.elf)       # 2.21.75 brought this one
    Fixtures(tmp_path, "2.21")
    full = tmp_path / "full.elf"
    full.write_bytes(full_elf(nop_stream(4), 4))
    pyxrt.hw_context(pyxrt.device(0), pyxrt.elf(str(full)))
    # hw_context_impl(device, elf) takes its partition from a full ELF's configuration note
    with pytest.raises(RuntimeError, match="ELF is missing xrt configuration info"):
        pyxrt.hw_context(pyxrt.device(0), pyxrt.elf(str(fx.elf_path)))
    fx = Fixtures(tmp_path, "2.23")
    ctx = pyxrt.hw_context(fx.device, str(fx.xclbin_path), pyxrt.hw_context.access_mode.shared)
    assert ctx.get_xclbin_uuid().to_string() == fx.uuid.to_string()
    assert not hasattr(pyxrt.module, "get_cfg_uuid") and not hasattr(pyxrt.run,
                                                                     "get_ctrl_scratchpad_bo")
    with pytest.warns(DeprecationWarning, match="kernel\\(hw_context, name\\)"):
        pyxrt.kernel(fx.device, fx.uuid, "MLIR_AIE")
    Fixtures(tmp_path, "master")
    assert hasattr(pyxrt, "graph") and hasattr(pyxrt.aie, "bo")


# -- behaviour beyond names (pyxrt.cpp, xrt_kernel.cpp) -----------------------------------

def test_enums_equal_only_their_own_values(tmp_path):
    Fixtures(tmp_path, "master")
    completed = pyxrt.ert_cmd_state.ERT_CMD_STATE_COMPLETED
    assert completed != 4 and int(completed) == 4 and completed == pyxrt.ert_cmd_state(4)
    assert [m.value for m in pyxrt.ert_cmd_state.__members__.values()] == \
        [1, 2, 4, 5, 6, 7, 8, 9, 10, 11]                     # no RUNNING (3)
    assert pyxrt.ext.none.name == "none" and pyxrt.ext.local.value == 0
    both = pyxrt.ext.read | pyxrt.ext.write
    assert both == pyxrt.ext.read_write


def test_set_arg_takes_c_ints_numpy_scalars_and_raises_indexerror(tmp_path):
    fx = Fixtures(tmp_path, "master")
    r = pyxrt.run(fx.kernel)
    r.set_arg(0, np.int64(3))                  # __index__ converts, as pybind11's int caster
    r.set_arg(2, np.uint32(5))
    r.set_arg(3, fx.bo())
    for bad in (2**31, -2**31 - 1, 1.5, "3"):
        with pytest.raises(TypeError, match="incompatible function arguments"):
            r.set_arg(0, bad)
    with pytest.raises(IndexError):
        r.set_arg(8, 0)
    with pytest.raises(IndexError):
        r.set_arg(-1, 0)                       # not Python's from-the-end index
    for bad_index in (1.0, "1", None, np.array([1, 2])):
        with pytest.raises(TypeError, match="incompatible function arguments"):
            r.set_arg(bad_index, 0)
    r.set_arg(np.int64(4), 7)
    r.set_arg(True, 9)                         # bool is an int to pybind11's caster
    assert r._args[4] == 7 and r._args[1] == 9


def test_register_xclbin_returns_the_uuid_and_sub_buffers_share_memory(tmp_path):
    fx = Fixtures(tmp_path, "2.20")
    assert isinstance(fx.uuid, pyxrt.uuid)
    assert fx.uuid.to_string() == fx.xclbin.get_uuid().to_string()
    parent = fx.bo()
    child = pyxrt.bo(parent, 8, 16)
    child.write(b"\x01" * 8, 0)
    assert parent.read(8, 16).tolist() == [1] * 8 and child.address() == parent.address() + 16
    with pytest.raises(RuntimeError, match="exceeds"):
        pyxrt.bo(parent, 4096, 8)


def test_wait2_raises_the_command_error(tmp_path):
    fx = Fixtures(tmp_path, "master")
    # an instruction buffer never synced: all zeros (in the bank argument 1 is connected
    # to: a buffer elsewhere is not set, as XRT cannot copy it there)
    instr = pyxrt.bo(fx.device, 4096, pyxrt.bo.cacheable, fx.kernel.group_id(1))
    r = fx.kernel(3, instr, 0)
    with pytest.raises(RuntimeError, match=r"Command failed to complete successfully "
                                           r"\(ERT_CMD_STATE_ERROR\)"):
        r.wait2()
    with pytest.raises(TypeError):
        r.wait2(100)


# -- round 2: ELFs, full-ELF kernels, pybind11's words --------------------------------------

def _full(tmp_path: Path) -> str:
    path = tmp_path / "full.elf"
    path.write_bytes(full_elf(nop_stream(4), 4))
    return str(path)


def test_elf_errors_as_xrt_words_them(tmp_path):
    Fixtures(tmp_path, "master")
    # load_elfio: one text for a file that is missing and one that is not an ELF
    for path in (str(tmp_path / "missing.elf"), str(tmp_path / "layer.xclbin")):
        with pytest.raises(RuntimeError, match=f"^{path} is not found or is not a valid ELF "
                                               "file$"):
            pyxrt.elf(path)
    with pytest.raises(RuntimeError, match="^not valid ELF data$"):
        pyxrt.elf(None, 16)                      # the void* caster takes None as nullptr
    x86 = tmp_path / "x86.elf"
    x86.write_bytes(control_code_elf(nop_stream(4))[:7] + b"\x00" +
                    control_code_elf(nop_stream(4))[8:])
    with pytest.raises(RuntimeError, match="unsupported platform OS/ABI: 0"):
        pyxrt.elf(str(x86))                      # create_elf_impl, 2.23 on


def test_elf_reads_the_bytes_a_capsule_points_at(tmp_path):
    import ctypes
    Fixtures(tmp_path, "2.21")
    data = np.frombuffer(Path(_full(tmp_path)).read_bytes(), dtype=np.uint8).copy()
    ctypes.pythonapi.PyCapsule_New.restype = ctypes.py_object
    ctypes.pythonapi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                               ctypes.c_void_p]
    capsule = ctypes.pythonapi.PyCapsule_New(data.ctypes.data, None, None)
    e = pyxrt.elf(capsule, data.nbytes)
    assert pyxrt.program(e).get_partition_size() == 4
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        pyxrt.elf(b"\x7fELF", 4)                 # bytes are no pointer


def test_full_elf_kernels_and_the_flow_checks(tmp_path):
    fx = Fixtures(tmp_path, "master")
    ctx = pyxrt.hw_context(fx.device, pyxrt.elf(_full(tmp_path)))
    k = pyxrt.ext.kernel(ctx, "main:sequence")
    assert pyxrt.ext.kernel(ctx, "main") is not None       # the only sub-kernel
    r = pyxrt.run(k)
    r.set_arg(0, fx.bo())
    with pytest.raises(IndexError):
        r.set_arg(3, 0)                                      # main(void*, void*, void*)
    # check_and_get_hw_context (2.21.75 on)
    with pytest.raises(RuntimeError, match="^Invalid API called for xrt::kernel creation, "
                                           "xrt::hw_context passed is not created using "
                                           "full ELF$"):
        pyxrt.ext.kernel(fx.ctx, "MLIR_AIE")
    with pytest.raises(RuntimeError, match="not created using XCLBIN"):
        pyxrt.kernel(ctx, "main")
    with pytest.raises(RuntimeError, match="^no ELF found with given kernel name in ctx$"):
        pyxrt.ext.kernel(ctx, "other")
    with pytest.raises(RuntimeError, match="xrt::module passed is created using full ELF"):
        pyxrt.ext.kernel(fx.ctx, pyxrt.module(pyxrt.elf(_full(tmp_path))), "MLIR_AIE")
    with pytest.raises(RuntimeError, match="kernel already exists"):
        ctx.add_config(pyxrt.elf(_full(tmp_path)))
    with pytest.raises(RuntimeError, match="^No such kernel 'NOPE'$"):
        pyxrt.kernel(fx.ctx, "NOPE")
    # before 2.21.75 the full-ELF constructor looked for a module of that name
    Fixtures(tmp_path, "2.20")
    with pytest.raises(RuntimeError, match="^no module found with given kernel name in ctx$"):
        pyxrt.ext.kernel(pyxrt.hw_context(pyxrt.device(0), fx.uuid) if False else
                         Fixtures(tmp_path, "2.20").ctx, "MLIR_AIE")


@pytest.mark.parametrize("release, keywords", [("2.20", False), ("2.21", False),
                                               ("2.23", True), ("master", True)])
def test_keywords_only_where_the_binding_names_parameters(tmp_path, release, keywords):
    fx = Fixtures(tmp_path, release)

    def call():
        return pyxrt.bo(device=fx.device, size=64, flags=pyxrt.bo.host_only, group=0)
    if keywords:
        assert call().size() == 64
        # run.set_arg has no py::arg names in any release. (HOT_PATH: a keyword there is
        # Python's TypeError text, not pybind11's)
        with pytest.raises(TypeError):
            pyxrt.run(fx.kernel).set_arg(index=0, value=3)
    else:
        with pytest.raises(TypeError) as info:
            call()
        text = str(info.value)
        assert "pyxrt.bo(arg0: pyxrt.device, arg1: int, arg2: pyxrt.bo.flags, arg3: int)" \
            in text
        assert text.endswith("Invoked with: kwargs: device=<pyxrt.device object at "
                             + text.split("<pyxrt.device object at ")[1])


def test_a_missing_argument_is_pybind11s_typeerror_not_pythons(tmp_path):
    fx = Fixtures(tmp_path, "master")
    with pytest.raises(TypeError) as info:
        fx.device.register_xclbin()
    text = str(info.value)
    assert text.startswith("register_xclbin(): incompatible function arguments. The "
                           "following argument types are supported:\n"
                           "    1. (self: pyxrt.device, xclbin: pyxrt.xclbin) -> pyxrt.uuid")
    assert "\nInvoked with: <pyxrt.device object at 0x" in text
    for bad in (lambda: fx.xclbin.get_uuid(1), lambda: fx.kernel.group_id(),
                lambda: pyxrt.run(fx.kernel).start(0), lambda: fx.bo().size(1),
                lambda: fx.bo().sync(), lambda: pyxrt.runlist(fx.ctx).execute(1)):
        with pytest.raises(TypeError, match="incompatible function arguments") as info:
            bad()
        assert "missing" not in str(info.value) and "positional" not in str(info.value)
    with pytest.raises(TypeError, match="    1. \\(self: pyxrt.xclbin\\) -> pyxrt.uuid"):
        fx.xclbin.get_uuid(1)


def test_objects_are_pyxrt_objects(tmp_path):
    fx = Fixtures(tmp_path, "master")
    assert repr(fx.device).startswith("<pyxrt.device object at 0x")
    assert repr(pyxrt.run(fx.kernel)).startswith("<pyxrt.run object at 0x")
    assert repr(pyxrt.ext.bo(fx.device, 16)).startswith("<pyxrt.ext.bo object at 0x")
    assert repr(fx.uuid).startswith("<pyxrt.uuid object at 0x")
    assert type(fx.kernel).__module__ == "pyxrt" and type(fx.xclbin).__name__ == "xclbin"
