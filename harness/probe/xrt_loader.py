"""Where the harness gets pyxrt and the NPU's device nodes: the one loader.

Everything that imports pyxrt (the backend, the probe) or looks for
`/dev/accel/accel*` goes through here, and both can be redirected:

- ``HARNESS_PYXRT``: the module to import as pyxrt (default ``pyxrt``, the one XRT's
  setup.sh puts on the path); ``none`` makes pyxrt count as not importable, which is
  how the test suite keeps a machine's real NPU out of its tests. Naming the
  harness's own simulated module (``harness.sim.pyxrt``) drives the hardware code
  path against the simulator: every result is then still labelled simulated.
- ``HARNESS_ROOT``: the folder `/dev`, `/sys` and `/proc` are read under (default
  ``/``), for a copied or fabricated machine.
"""

from __future__ import annotations

import glob
import importlib
import os
import re
from pathlib import Path
from types import ModuleType
from typing import Any

PYXRT_ENV = "HARNESS_PYXRT"
ROOT_ENV = "HARNESS_ROOT"
DISABLED = "none"
SIMULATED_MODULE = "harness.sim.pyxrt"


def load_pyxrt() -> tuple[ModuleType | None, str]:
    """(the module, "") or (None, why it does not import)."""
    name = os.environ.get(PYXRT_ENV) or "pyxrt"
    if name == DISABLED:
        return None, f"pyxrt disabled ({PYXRT_ENV}={DISABLED})"
    try:
        return importlib.import_module(name), ""
    except Exception as err:  # an XRT install can fail to load in many ways
        return None, f"{type(err).__name__}: {err}"


def is_stand_in(module: ModuleType) -> bool:
    """Whether this "pyxrt" is the harness's simulated one standing in for the real module
    (itself, or a module built on it that says so with ``__harness_stand_in__``)."""
    return getattr(module, "__name__", "") == SIMULATED_MODULE or \
        getattr(module, "__harness_stand_in__", False) is True


def system_root() -> Path:
    return Path(os.environ.get(ROOT_ENV) or "/")


def npu_nodes(root: Path | None = None) -> list[str]:
    base = root if root is not None else system_root()
    return sorted(glob.glob(os.path.join(base, "dev", "accel", "accel*")))


_LIB = re.compile(r"/(lib(?:xrt[\w+-]*|xdp[\w-]*|xrt_driver_\w+)\.so(?:\.[\d.]+)?)$")
# compiled on first use, by re's own cache: a start-up does not pay for it
_VERSION = r"\.so\.(\d+(?:\.\d+)*)$"


def mapped_libraries(maps_text: str) -> list[dict[str, Any]]:
    """Distinct XRT libraries in a /proc/<pid>/maps text, with the version in their name.

    `LD_LIBRARY_PATH` does not decide which `libxrt_core*.so` a process maps; the maps do
    (the trap of ROCm/FastFlowLM#712)."""
    seen: dict[str, dict[str, Any]] = {}
    for line in maps_text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 6:
            continue
        path = parts[5].strip()
        match = _LIB.search(path)
        if not match or path in seen:
            continue
        version = re.search(_VERSION, path)
        name = match.group(1)
        seen[path] = {"path": path, "name": name.split(".so", 1)[0],
                      "version": version.group(1) if version else None}
    return list(seen.values())


def own_libraries() -> list[dict[str, Any]]:
    """The XRT libraries this process maps now."""
    try:
        with open("/proc/self/maps") as maps:
            return mapped_libraries(maps.read())
    except OSError:
        return []
