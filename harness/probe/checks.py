"""PASS / WARN / FAIL lines, like `flm validate`, each naming the fix."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from harness.model.firmware import FIRMWARE_REFUSED_FIX
from harness.probe.readers import UNREADABLE

MIN_DRIVER = (0, 6)
MIN_FIRMWARE = (1, 1)
MIN_COLUMNS = 8


@dataclass(frozen=True)
class Check:
    """One preflight check: PASS, WARN or FAIL, what it found, and the fix."""

    status: str          # PASS | WARN | FAIL
    name: str
    detail: str
    fix: str = ""

    def line(self) -> str:
        tail = f" -> {self.fix}" if self.fix and self.status != "PASS" else ""
        return f"{self.status:<4} {self.name}: {self.detail}{tail}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def version_tuple(text: str | None) -> tuple[int, ...] | None:
    if not text or text == UNREADABLE:
        return None
    numbers = re.findall(r"\d{1,9}", text)     # a version's parts, never a 4,300-digit run
    return tuple(int(n) for n in numbers) if numbers else None


def run_checks(facts: dict[str, Any]) -> list[Check]:
    npu, driver, xrt, memlock = facts["npu"], facts["driver"], facts["xrt"], facts["memlock"]
    checks: list[Check] = []
    refused = (facts.get("npu_firmware") or {}).get("refused_protocol")
    if not npu["present"] and refused:
        # Linux before f1eac46fe5f7 (7.0) speaks one firmware protocol per device
        # (aie2_check_protocol); firmware 1.1.2.64/65 speaks 7.2 and is refused at probe
        checks.append(Check("FAIL", "device node", "no /dev/accel/accel* node: the driver "
                            f"refused the NPU firmware at probe (kernel log: Incompatible "
                            f"firmware protocol, protocol {refused})", FIRMWARE_REFUSED_FIX))
    elif not npu["present"]:
        checks.append(Check("FAIL", "device node", "no /dev/accel/accel* node",
                            "load the driver (`sudo modprobe amdxdna`) on a machine with an "
                            "XDNA NPU; without one, use --backend sim"))
    else:
        node = npu["nodes"][0]
        checks.append(Check("PASS", "device node", f"{node['path']} present"))
        if node["openable"]:
            checks.append(Check("PASS", "device access", f"{node['path']} "
                                f"({node['owner']} {node['mode']}) opens read-write"))
        else:
            checks.append(Check("FAIL", "device access", f"{node['path']} ({node['owner']} "
                                f"{node['mode']}) is not read-write for this user",
                                "add yourself to the node's group (usually `render`: "
                                "`sudo usermod -aG render $USER`, then log in again)"))
        ioctl = npu.get("ioctl", {})
        drm = ioctl.get("driver_version")
        checks.append(_minimum("driver version", drm or driver.get("version"), MIN_DRIVER,
                               "update amdxdna (FastFlowLM needs DRM version >= 0.6)",
                               "DRM version" if drm else "module version"))
        firmware = ioctl.get("firmware") or npu.get("sysfs", {}).get("fw_version")
        checks.append(_minimum("firmware", firmware, MIN_FIRMWARE,
                               "install NPU firmware >= 1.1 (linux-firmware amdnpu)"))
        columns = ioctl.get("columns")
        if columns is None:
            checks.append(Check("WARN", "columns", "unknown (the AIE metadata ioctl did not "
                                "answer)", "run as a user who can open the node"))
        elif columns >= MIN_COLUMNS:
            checks.append(Check("PASS", "columns", f"{columns} columns"))
        else:
            checks.append(Check("FAIL", "columns", f"{columns} columns, FastFlowLM packs need "
                                f"{MIN_COLUMNS}", "use an XDNA 2 NPU (Strix, Strix Halo, "
                                "Krackan)"))
    checks.append(_memlock(memlock))
    checks += _xrt_checks(xrt)
    return checks


def _minimum(name: str, value: str | None, minimum: tuple[int, ...], fix: str,
             which: str = "") -> Check:
    """`which` names the version compared, where there are two (the driver's)."""
    parsed = version_tuple(value)
    wanted = ".".join(map(str, minimum))
    shown = f"{which} {value}" if which else str(value)
    if parsed is None:
        return Check("WARN", name, f"unknown (need >= {wanted})", fix)
    if parsed[:len(minimum)] >= minimum:
        return Check("PASS", name, f"{shown} (>= {wanted})")
    return Check("FAIL", name, f"{shown} is older than {wanted}", fix)


def _memlock(memlock: dict[str, Any]) -> Check:
    if memlock.get("soft") is None:
        return Check("WARN", "memlock", "limit unknown", "check `ulimit -l`")
    soft, need = memlock["soft"], memlock["needed"]
    if memlock["enough"]:
        return Check("PASS", "memlock", f"soft limit {soft}")
    return Check("WARN", "memlock", f"soft limit {soft} bytes, below {need}",
                 "raise it: `ulimit -l unlimited`, or a memlock line in "
                 "/etc/security/limits.d/")


def _xrt_checks(xrt: dict[str, Any]) -> list[Check]:
    pyxrt = xrt.get("pyxrt")
    if pyxrt is None:
        return [Check("FAIL", "pyxrt", f"does not import ({xrt.get('pyxrt_error')})",
                      "`source /opt/xilinx/xrt/setup.sh`, or install XRT with its Python "
                      "binding")]
    checks = []
    if pyxrt["has_runlist"]:
        checks.append(Check("PASS", "pyxrt", f"{pyxrt['file']} has runlist "
                            f"(XRT {pyxrt.get('xrt_version') or 'version unknown'})"))
    else:
        checks.append(Check("FAIL", "pyxrt", f"{pyxrt['file']} has no runlist (XRT < 2.20)",
                            "install XRT 2.20 or newer"))
    core = [lib for lib in xrt.get("mapped", []) if lib["name"].startswith("libxrt_core")]
    versions = sorted({lib["version"] for lib in core if lib["version"]})
    folders = sorted({lib["path"].rsplit("/", 1)[0] for lib in core})
    wanted = pyxrt.get("xrt_version")
    if not core:
        checks.append(Check("WARN", "mapped XRT", "no libxrt_core* mapped in this process",
                            "pyxrt may be a stub; run the probe where trials run"))
    elif len(versions) > 1 or len(folders) > 1:
        checks.append(Check("FAIL", "mapped XRT", "two XRT builds mapped at once: "
                            + ", ".join(lib["path"] for lib in core),
                            "remove one from LD_LIBRARY_PATH and the loader's paths"))
    elif wanted and versions and versions[0] != wanted:
        checks.append(Check("WARN", "mapped XRT", f"pyxrt comes from XRT {wanted} "
                            f"({pyxrt.get('xrt_install')}) but the process mapped "
                            f"{core[0]['path']} ({versions[0]})",
                            "the loader picked another XRT than the one you sourced: fix "
                            "LD_LIBRARY_PATH/ld.so.conf so both agree"))
    else:
        checks.append(Check("PASS", "mapped XRT", ", ".join(lib["path"] for lib in core)))
    return checks
