"""Which amdxdna flavour is loaded, its parameters, and the timeout rule it applies.

Three flavours are in the field (STACK.md 4); detect, don't assume. Evidence:
the module's file in `modules.dep` (in-tree under kernel/drivers/accel, DKMS
under updates/ or extra/), `/sys/module/<module>/version` (DKMS builds only),
the module name (`amdxdna_legacy`) and the parameter set (`tdr_timeout_ms`
is the staging driver's, `timeout_in_sec` the legacy one's).
"""

from __future__ import annotations

import re
from typing import Any

from harness.model.drivers import FLAVOURS
from harness.probe.sources import UNREADABLE, Sources

MODULES = ("amdxdna", "amdxdna_legacy")

def driver_facts(src: Sources, kernel: str | None) -> dict[str, Any]:
    module = next((m for m in MODULES if src.path(f"/sys/module/{m}").is_dir()), None)
    if module is None:
        return {"loaded": False, "flavour": None,
                "timeout_rule": "no amdxdna module is loaded"}
    params_dir = src.path(f"/sys/module/{module}/parameters")
    params: dict[str, str] = {}
    if params_dir.is_dir():
        for entry in sorted(params_dir.iterdir()):
            value = src.read(f"/sys/module/{module}/parameters/{entry.name}")
            params[entry.name] = UNREADABLE if value is None else value
    version_file = src.read(f"/sys/module/{module}/version")
    srcversion = src.read(f"/sys/module/{module}/srcversion")
    module_file = _module_file(src, kernel, module)
    flavour, evidence = _flavour(module, module_file, version_file, params)
    parameter = FLAVOURS[flavour].parameter if flavour in FLAVOURS else None
    timeout = params.get(parameter) if parameter else None
    return {
        "loaded": True,
        "module": module,
        "module_file": module_file,
        "version": version_file if version_file not in (None, UNREADABLE) else None,
        "version_note": None if version_file not in (None, UNREADABLE) else
        f"no /sys/module/{module}/version (in-tree builds have none); kernel {kernel}",
        "srcversion": srcversion if srcversion not in (None, UNREADABLE) else None,
        "commit": source_commit(version_file),
        "flavour": flavour,
        "evidence": evidence,
        "parameters": params,
        "timeout_setting": timeout,
        "timeout_rule": FLAVOURS[flavour].rule if flavour in FLAVOURS else
        "unknown flavour: check the evidence",
    }


# compiled on first use, by re's own cache: a start-up does not pay for it
_HASH = r"[0-9a-f]{7,40}"


def source_commit(version: str | None) -> str | None:
    """The xdna-driver commit a DKMS build names in its module version: its packaging
    writes MODULE_VERSION("<plugin version>_<date>,<commit>") (CMake/pkg_driver_source.cmake);
    None for any other version string."""
    if not version or "," not in version:
        return None
    commit = version.rsplit(",", 1)[1].strip().lower()
    return commit if re.fullmatch(_HASH, commit) else None


def _module_file(src: Sources, kernel: str | None, module: str) -> str | None:
    if not kernel:
        return None
    deps = src.read(f"/lib/modules/{kernel}/modules.dep")
    if not deps or deps == UNREADABLE:
        return None
    for line in deps.splitlines():
        path = line.split(":", 1)[0]
        name = path.rsplit("/", 1)[-1].split(".ko", 1)[0]
        if name.replace("-", "_") == module:
            return path
    return None


def _flavour(module: str, module_file: str | None, version: str | None,
             params: dict[str, str]) -> tuple[str | None, list[str]]:
    if module == "amdxdna_legacy":
        return "oot", ["module amdxdna_legacy"]
    if "timeout_in_sec" in params:
        return "oot", ["parameter timeout_in_sec (the legacy driver's)"]
    out_of_tree, in_tree = [], []
    if "tdr_timeout_ms" in params:
        out_of_tree.append("parameter tdr_timeout_ms (the staging driver's)")
    if version not in (None, UNREADABLE):
        out_of_tree.append(f"/sys/module/{module}/version exists (DKMS builds only)")
    if module_file:
        if any(mark in module_file for mark in ("/updates/", "/extra/", "dkms")):
            out_of_tree.append(f"module file {module_file}")
        elif "kernel/drivers/accel/" in module_file:
            in_tree.append(f"module file {module_file}")
    if out_of_tree:
        return "staging", out_of_tree
    if not in_tree:
        in_tree.append("no version file and no tdr_timeout_ms: the in-tree parameter set")
    return "mainline", in_tree
