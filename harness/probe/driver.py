"""Which amdxdna flavour is loaded, its parameters, and the timeout rule it applies.

Three flavours are in the field (STACK.md 4); detect, don't assume. Evidence, each
flavour's own from its row in `harness.model.drivers`: a module name of its own
(`amdxdna_legacy`), or its timeout parameter under the shared name `amdxdna`; else
whether the module was built out of tree: its file in `modules.dep` (in-tree under
kernel/drivers/accel, DKMS under updates/ or extra/), `/sys/module/<module>/version`
(DKMS builds only) and the DKMS flavour's parameter (`tdr_timeout_ms`).
"""

from __future__ import annotations

import re
from typing import Any

from harness.model.drivers import FLAVOURS
from harness.probe.readers import UNREADABLE, Sources

SHARED_MODULE = "amdxdna"


def modules() -> list[str]:
    """The module names an amdxdna driver loads as: the shared one, then the flavours'
    own."""
    return [SHARED_MODULE] + [f.module for f in FLAVOURS.values()
                              if f.module and f.module != SHARED_MODULE]


def driver_facts(src: Sources, kernel: str | None) -> dict[str, Any]:
    module = next((m for m in modules() if src.path(f"/sys/module/{m}").is_dir()), None)
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
    rows = list(FLAVOURS.values())
    # A flavour with a module of its own: known by that name, or by its timeout parameter
    # when it is loaded under the shared name.
    for row in rows:
        if row.module and row.module == module:
            return row.name, [f"module {module}"]
    for row in rows:
        if row.module and row.parameter in params:
            return row.name, [f"parameter {row.parameter} (the {row.called} driver's)"]
    # Else the shared module: built out of tree (the DKMS flavour) or in the kernel.
    dkms = next(r for r in rows if r.dkms and not r.module)
    in_kernel = next(r for r in rows if not r.dkms)
    out_of_tree, in_tree = [], []
    if dkms.parameter in params:
        out_of_tree.append(f"parameter {dkms.parameter} (the {dkms.called} driver's)")
    if version not in (None, UNREADABLE):
        out_of_tree.append(f"/sys/module/{module}/version exists (DKMS builds only)")
    if module_file:
        if any(mark in module_file for mark in ("/updates/", "/extra/", "dkms")):
            out_of_tree.append(f"module file {module_file}")
        elif "kernel/drivers/accel/" in module_file:
            in_tree.append(f"module file {module_file}")
    if out_of_tree:
        return dkms.name, out_of_tree
    if not in_tree:
        in_tree.append(f"no version file and no {dkms.parameter}: the in-tree parameter set")
    return in_kernel.name, in_tree
