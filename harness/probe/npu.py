"""The NPU: device nodes, PCI identity and generation, sysfs facts, and the DRM ioctls."""

from __future__ import annotations

import grp
import pwd
import stat
from typing import Any

from harness.probe import drm
from harness.probe.readers import UNREADABLE, Sources

# STACK.md 4: PCI device / revision -> generation.
GENERATIONS = {
    (0x1502, None): "NPU1 Phoenix",
    (0x17F0, 0x10): "NPU4 Strix",
    (0x17F0, 0x11): "NPU5 Strix Halo",
    (0x17F0, 0x20): "NPU6 Krackan",
}


def generation(device: int | None, revision: int | None) -> str | None:
    if device is None:
        return None
    return GENERATIONS.get((device, revision)) or GENERATIONS.get((device, None)) or \
        (f"unknown AMD NPU ({device:#06x} rev {revision:#04x})" if revision is not None
         else None)


def _owner(uid: int, gid: int) -> str:
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = str(uid)
    try:
        group = grp.getgrgid(gid).gr_name
    except KeyError:
        group = str(gid)
    return f"{user}:{group}"


def nodes(src: Sources) -> list[dict[str, Any]]:
    folder = src.path("/dev/accel")
    found = []
    for path in sorted(folder.glob("accel*")) if folder.is_dir() else []:
        st = path.stat()
        found.append({
            "path": f"/dev/accel/{path.name}",
            "owner": _owner(st.st_uid, st.st_gid),
            "mode": f"{stat.S_IMODE(st.st_mode):04o}",
            "openable": src.allowed(path, 6),
        })
    return found


def _hex(text: str | None) -> int | None:
    if not text or text == UNREADABLE:
        return None
    try:
        return int(text, 16)
    except ValueError:
        return None


def npu_facts(src: Sources) -> dict[str, Any]:
    found = nodes(src)
    facts: dict[str, Any] = {"present": bool(found), "nodes": found}
    if not found:
        return facts
    name = found[0]["path"].rsplit("/", 1)[1]
    device_dir = f"/sys/class/accel/{name}/device"
    vendor = _hex(src.read(f"{device_dir}/vendor"))
    device = _hex(src.read(f"{device_dir}/device"))
    revision = _hex(src.read(f"{device_dir}/revision"))
    facts.update({
        "pci": {"vendor": f"{vendor:#06x}" if vendor is not None else None,
                "device": f"{device:#06x}" if device is not None else None,
                "revision": f"{revision:#04x}" if revision is not None else None},
        "generation": generation(device, revision),
        "sysfs": {key: src.read(f"{device_dir}/{key}")
                  for key in ("fw_version", "vbnv", "device_type")},
        **_pci_context(src, device_dir),
        "ioctl": _ioctl_facts(src, src.path(found[0]["path"])),
    })
    return facts


def _pci_context(src: Sources, device_dir: str) -> dict[str, Any]:
    """Where the function sits and how the kernel treats it: its BDF, the IOMMU domain
    type of its group (``DMA``, ``DMA-FQ``, ``identity`` with iommu=pt), runtime PM."""
    uevent = src.read(f"{device_dir}/uevent") or ""
    bdf = next((line.split("=", 1)[1] for line in uevent.splitlines()
                if line.startswith("PCI_SLOT_NAME=")), None)
    return {"bdf": bdf,
            "iommu_group_type": src.read(f"{device_dir}/iommu_group/type"),
            "runtime_pm": {"status": src.read(f"{device_dir}/power/runtime_status"),
                           "control": src.read(f"{device_dir}/power/control")}}


def _ioctl_facts(src: Sources, node) -> dict[str, Any]:
    if src.drm is None:
        return {"queried": False, "why": "no ioctl source (a fake root without canned answers)"}
    path = str(node)
    version = src.drm.version(path)
    out: dict[str, Any] = {"queried": True}
    if version is not None:
        out["driver_name"] = version.name
        out["driver_version"] = f"{version.major}.{version.minor}.{version.patch}"
    out["firmware"] = drm.firmware(src.drm.get_info(path, drm.QUERY_FIRMWARE_VERSION,
                                                    drm.FIRMWARE_SIZE))
    out["columns"] = drm.columns(src.drm.get_info(path, drm.QUERY_AIE_METADATA,
                                                  drm.AIE_METADATA_SIZE))
    out["power_mode"] = drm.power_mode(src.drm.get_info(path, drm.GET_POWER_MODE,
                                                        drm.POWER_MODE_SIZE))
    return out
