"""The real pyxrt's surface, read from the binding's own files in ../shared/reference/xrt:
the type stubs of 2.23 (`pyxrt-2.23.244.pyi`) and master (`pyxrt-963c58ee.pyi`), and the
2.20 binding source (`pyxrt-2.20.197.cpp`, shared by tag 202610.2.21.21).

Both are reduced to one shape: classes (dotted, e.g. ``ext.bo``) with constructor and
method overloads, each overload a tuple of normalised parameter kinds (``device``,
``int``, ``str:xclbin_path``, ``chrono``, ...), plus enum members and module names.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

# A parameter kind: what a caller must pass. "str:NAME" / "int:NAME" keep the name, which
# decides which value a test passes (a path, a kernel name, a size ...).
Sig = tuple[str, ...]


@dataclass
class ClassRef:
    ctors: set[Sig] = field(default_factory=set)
    methods: dict[str, set[Sig]] = field(default_factory=dict)
    members: set[str] = field(default_factory=set)


@dataclass
class Surface:
    classes: dict[str, ClassRef] = field(default_factory=dict)
    functions: dict[str, set[Sig]] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)

    def cls(self, name: str) -> ClassRef:
        return self.classes.setdefault(name, ClassRef())


# -- stubs ---------------------------------------------------------------------------

STUB_CLASS = {"_ext_bo": "ext.bo", "_ext_kernel": "ext.kernel",
              "_ext_access_mode": "ext.access_mode", "_aie_bo": "aie.bo"}
STUB_TYPES = {
    "SupportsInt": "int", "int": "int", "str": "str", "device": "device", "uuid": "uuid",
    "xclbin": "xclbin", "hw_context": "hw_context", "bo": "bo", "kernel": "kernel",
    "run": "run", "elf": "elf", "module": "module", "xclBOSyncDirection": "sync",
    "ert_cmd_state": "state", "xrt_info_device": "info", "xrt_msg_level": "level",
    "dict[str, int]": "cfg", "ReadableBuffer": "buffer", "flags": "bo.flags",
    "bo.flags": "bo.flags", "cu_access_mode": "kernel.cu_access_mode",
    "_ext_access_mode": "ext.access_mode", "pid_type": "pid",
}
POINTER_PARAMS = {"userptr": "pointer", "data": "pointer", "axlf_data": "axlf"}


def parse_stub(path: Path) -> Surface:
    surface = Surface()
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            surface.functions.setdefault(node.name, set()).add(_stub_sig(node, None))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            surface.names.add(node.target.id)
        elif isinstance(node, ast.ClassDef):
            if node.name in ("ext", "aie"):
                surface.names.add(node.name)
                for item in node.body:
                    if isinstance(item, ast.AnnAssign):
                        surface.cls(f"{node.name}.access_mode")
                        surface.names.add(f"{node.name}.{item.target.id}")
                continue
            if node.name.endswith("_vector"):
                surface.names.add(node.name)
                continue
            name = STUB_CLASS.get(node.name, node.name)
            if "." not in name:
                surface.names.add(name)
            _stub_class(surface, node, name)
    return surface


def _stub_class(surface: Surface, node: ast.ClassDef, name: str) -> None:
    ref = surface.cls(name)
    for item in node.body:
        if isinstance(item, ast.ClassDef):
            _stub_class(surface, item, f"{name}.{item.name}")
            ref.members.add(item.name)
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            ref.members.add(item.target.id)
        elif isinstance(item, ast.FunctionDef):
            sig = _stub_sig(item, name)
            if item.name == "__init__":
                ref.ctors.add(sig)
            elif not item.name.startswith("__") or item.name == "__call__":
                ref.methods.setdefault(item.name, set()).add(sig)


def _stub_sig(node: ast.FunctionDef, owner: str | None) -> Sig:
    out = []
    params = node.args.args[1:] if owner else node.args.args
    for arg in params:
        text = ast.unparse(arg.annotation) if arg.annotation else "Any"
        out.append(_kind(text, arg.arg, owner))
    if node.args.vararg is not None:
        out.append("*args")
    return tuple(out)


def _kind(text: str, name: str, owner: str | None) -> str:
    if name in POINTER_PARAMS and text in ("Any",):
        return POINTER_PARAMS[name]
    if text == "access_mode":
        return f"{owner.split('.')[0]}.access_mode" if owner else "hw_context.access_mode"
    if text.startswith("Callable"):
        return "callable"
    kind = STUB_TYPES.get(text, text)
    return f"{kind}:{name}" if kind in ("str", "int") else kind


# -- the 2.20 binding source -------------------------------------------------------------

CPP_TYPES = {
    "xrt::device": "device", "unsigned int": "int", "std::string": "str", "xrt::bo": "bo",
    "int": "int", "std::chrono::milliseconds": "chrono", "xrt::uuid": "uuid",
    "xrt::xclbin": "xclbin", "xrt::info::device": "info", "xrt::kernel": "kernel",
    "size_t": "int", "xrt::bo::flags": "bo.flags", "xrt::memory_group": "int",
    "py::buffer": "buffer", "xclBOSyncDirection": "sync", "axlf": "axlf", "char": "str",
    "void": "pointer", "xrt::elf": "elf", "xrt::module": "module",
    "xrt::hw_context": "hw_context", "xrt::kernel::cu_access_mode": "kernel.cu_access_mode",
    "xrt::ext::bo::access_mode": "ext.access_mode", "xrt::pid_type": "pid",
    "xrt::bo::export_handle": "int", "xrt::run": "run", "py::args": "*args",
}
# Member-function pointers bound with `&xrt::...`: their parameters, from XRT's headers.
MEMBER_POINTERS = {
    "xrt::kernel::group_id": ("int:index",),
    "xrt::run::add_callback": ("state", "callable", "pointer"),
    "xrt::message::log": ("level", "str:tag", "str:message"),
}
# C++ parameter names -> the names the stubs use, so both sources name values alike.
CPP_NAMES = {"bfd": "bdf", "n": "name", "xclbin": "xclbin", "i": "index", "fnm": "filename",
             "filename": "filename", "sz": "size", "timeout_ms": "timeout_ms",
             "timeout": "timeout", "seek": "seek", "skip": "skip", "size": "size",
             "offset": "offset"}
# `py::init<T...>()` has no parameter names; these are the names the stubs give them.
TEMPLATE_NAMES = {("bo", 4): ("device", "size", "flags", "group"),
                  ("bo", 3): ("parent", "size", "offset"), ("device", 1): ("index",),
                  ("uuid", 1): ("uuid_str",)}
CPP_SCOPES = {"m": "", "ext": "ext.", "pyker": "kernel.", "pybo": "bo.", "pyxclbin": "xclbin."}


EVENTS = re.compile(
    r'(?P<cls>py::class_<[^;{]*?>\s*(?P<var>\w*)\s*\((?P<scope>\w+),\s*"(?P<name>\w+)")'
    r'|(?P<enum>py::enum_<[^;{]*?>\((?P<escope>\w+),\s*"(?P<ename>\w+)")'
    r'|(?P<vector>py::bind_vector<[^;]*?>\(m,\s*"(?P<vname2>\w+)")'
    r'|(?P<value>\.value\("(?P<vname>\w+)")'
    r'|(?P<export>\.export_values\(\))'
    r'|(?P<mdef>\bm\.def\("(?P<fname>\w+)",\s*&(?P<fptr>[\w:]+))'
    r'|(?P<attr>\bm\.attr\("(?P<aname>\w+)"\))'
    r'|(?P<sub>def_submodule\("(?P<sname>\w+)")'
    r'|(?P<vstart>^\s*(?!m\.)(?P<svar>\w+)(?=\s*\n?\s*\.def\())'
    r'|(?P<tinit>\.def\(py::init<(?P<targs>[^()]*)>\(\))'
    r'|(?P<linit>\.def\(py::init\(\s*\[\]\s*\((?P<largs>[^)]*)\))'
    r'|(?P<meth>\.def\("(?P<mname>\w+)",\s*\(?\s*(?:\[[^\]]*\]\s*\((?P<margs>[^)]*)\)'
    r'|&(?P<mptr>[\w:]+)))',
    re.M)


def parse_cpp(path: Path) -> Surface:
    surface = Surface()
    variables: dict[str, str] = {}
    current: str | None = None
    enum_members: set[str] = set()
    enum_scope = ""
    for event in EVENTS.finditer(path.read_text()):
        groups = event.groupdict()
        if groups["cls"]:
            scope = groups["scope"]
            current = CPP_SCOPES.get(scope, "") + groups["name"]
            if groups["var"]:
                variables[groups["var"]] = current
            surface.cls(current)
            if scope == "m":
                surface.names.add(groups["name"])
        elif groups["enum"]:
            enum_scope = CPP_SCOPES.get(groups["escope"], "")
            current = enum_scope + groups["ename"]
            enum_members = surface.cls(current).members
            if groups["escope"] == "m":
                surface.names.add(groups["ename"])
        elif groups["vector"]:
            surface.names.add(groups["vname2"])
        elif groups["value"]:
            enum_members.add(groups["vname"])
        elif groups["export"]:
            for member in enum_members:
                if enum_scope:
                    surface.cls(enum_scope.rstrip(".")).members.add(member)
                else:
                    surface.names.add(member)
        elif groups["mdef"]:
            surface.functions.setdefault(groups["fname"], set()).add(
                MEMBER_POINTERS.get(groups["fptr"], ()))
        elif groups["attr"]:
            surface.names.add(groups["aname"])
        elif groups["sub"]:
            surface.names.add(groups["sname"])
        elif groups["vstart"]:
            if groups["svar"] in variables:
                current = variables[groups["svar"]]
        elif groups["tinit"] and current:
            types = _split(groups["targs"])
            names = TEMPLATE_NAMES.get((current, len(types)), [f"arg{i}" for i in range(9)])
            surface.cls(current).ctors.add(tuple(_cpp_kind(t, n) for t, n in zip(types, names,
                                                                                 strict=False)))
        elif groups["linit"] and current:
            surface.cls(current).ctors.add(_cpp_params(groups["largs"], skip_self=False))
        elif groups["meth"] and current:
            name = groups["mname"]
            if name.startswith("__") and name != "__call__":
                continue
            if groups["margs"] is not None:
                sig = _cpp_params(groups["margs"], skip_self=True)
            else:
                sig = MEMBER_POINTERS.get(groups["mptr"], ())
            surface.cls(current).methods.setdefault(name, set()).add(sig)
    return surface


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _cpp_params(text: str, *, skip_self: bool) -> Sig:
    params = _split(text)[1 if skip_self else 0:]
    out = []
    for param in params:
        match = re.match(r"(.*?)\s*([\w]+)$", param.replace("&", " ").replace("*", " "))
        ctype, name = (match.group(1), match.group(2)) if match else (param, "")
        if param.strip() == "py::args args":
            out.append("*args")
            continue
        out.append(_cpp_kind(ctype, CPP_NAMES.get(name, name)))
    return tuple(out)


def _cpp_kind(ctype: str, name: str) -> str:
    clean = re.sub(r"\bconst\b", "", ctype).replace("&", "").replace("*", "").strip()
    kind = CPP_TYPES.get(clean, clean)
    if kind in ("str", "int"):
        return f"{kind}:{name}"
    return kind
