"""XRT as this process really loads it.

`LD_LIBRARY_PATH` does not decide which `libxrt_core*.so` a process maps;
`/proc/self/maps` shows what it did (the trap of ROCm/FastFlowLM#712). So:
import pyxrt, open the device when an NPU is there (which loads the driver
plugin), then read the maps and compare the libraries with the XRT install
pyxrt came from.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from harness.probe.readers import Sources
from harness.probe.xrt_loader import mapped_libraries


def _install_version(module_file: str | None) -> tuple[str | None, str | None]:
    """(XRT install folder, BUILD_VERSION from its version.json) for a pyxrt file."""
    if not module_file:
        return None, None
    path = Path(module_file)
    for folder in list(path.parents)[:4]:
        candidate = folder / "version.json"
        if candidate.is_file():
            try:
                data = json.loads(candidate.read_text())
            except (OSError, ValueError):
                return str(folder), None
            return str(folder), str(data.get("BUILD_VERSION") or "") or None
    return None, None


def xrt_facts(src: Sources, npu_present: bool) -> dict[str, Any]:
    module, error = src.import_pyxrt()
    facts: dict[str, Any] = {
        "XILINX_XRT": src.environment("XILINX_XRT"),
        "LD_LIBRARY_PATH": src.environment("LD_LIBRARY_PATH"),
        "pyxrt": None,
    }
    if module is None:
        facts["pyxrt_error"] = error
        facts["pyxrt_built_for"] = built_for(src)
    else:
        file = getattr(module, "__file__", None)
        folder, version = _install_version(file)
        facts["pyxrt"] = {"file": file, "xrt_install": folder, "xrt_version": version,
                          "has_runlist": hasattr(module, "runlist")}
        if npu_present and src.open_device:
            try:
                module.device(0)            # loads the driver plugin into this process
                facts["device_opened"] = True
            except Exception as err:
                facts["device_opened"] = f"{type(err).__name__}: {err}"
    facts["mapped"] = mapped_libraries(src.read_maps())
    facts["validate_archive"] = _validate_archives(src)
    return facts


# compiled on first use, by re's own cache: a start-up does not pay for it
_ABI = r"^pyxrt\.cpython-(\d)(\d+)"


def built_for(src: Sources) -> dict[str, Any]:
    """Which Python the installed pyxrt was built for (its extension's ABI tag), beside the
    one running: a mismatch is why `import pyxrt` fails after `setup.sh`."""
    running = ".".join(str(n) for n in sys.version_info[:2])
    found: list[str] = []
    for install in filter(None, (src.environment("XILINX_XRT"), "/opt/xilinx/xrt")):
        folder = src.path(install) / "python"
        if folder.is_dir():
            for path in sorted(folder.glob("pyxrt*.so")):
                match = re.match(_ABI, path.name)
                label = f"{match[1]}.{match[2]}" if match else "unknown ABI"
                entry = f"{label} ({install.rstrip('/')}/python/{path.name})"
                if entry not in found:
                    found.append(entry)
    return {"running": running, "installed": found,
            "matches": any(entry.startswith(running + " ") for entry in found)}


VALIDATE_PATTERNS = ("share/amdxdna/bins/xrt_smi_*.a", "amdxdna/bins/*/validate.xclbin")


def _installs(xilinx_xrt: str | None) -> list[str]:
    return list(dict.fromkeys(filter(None, (xilinx_xrt, "/opt/xilinx/xrt"))))


def xrt_install(xilinx_xrt: str | None, root: Path = Path("/")) -> tuple[str, str | None] | None:
    """The XRT installed here, as `setup.sh` would give it (`XILINX_XRT`, else
    /opt/xilinx/xrt): its folder and BUILD_VERSION, or None when neither holds XRT's
    core library."""
    for install in _installs(xilinx_xrt):
        folder = root / install.lstrip("/")
        if any((folder / "lib").glob("libxrt_coreutil.so*")):
            found, version = _install_version(str(folder / "lib" / "x"))
            return install, version
    return None


def validate_places(xilinx_xrt: str | None) -> list[str]:
    """Where `validate_files` looks, as a user would type it."""
    return [f"{install.rstrip('/')}/{pattern}" for install in _installs(xilinx_xrt)
            for pattern in VALIDATE_PATTERNS]


def validate_files(root: Path, xilinx_xrt: str | None) -> list[Path]:
    """XRT's validate artefacts under `root`: the `xrt_smi_*.a` archives of an install, or
    an older install's loose `validate.xclbin` (STACK.md 7), in $XILINX_XRT and the
    default install."""
    found: list[Path] = []
    for install in _installs(xilinx_xrt):
        base = root / install.lstrip("/")
        for pattern in VALIDATE_PATTERNS:
            found += [p for p in sorted(base.glob(pattern)) if p not in found]
    return found


def _validate_archives(src: Sources) -> list[str]:
    return ["/" + str(p.relative_to(src.root)) if src.fake else str(p)
            for p in validate_files(src.root, src.environment("XILINX_XRT"))]
