"""The machine: kernel and its boot flags, distribution, CPU, memory, the user."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from harness.probe.readers import Sources

BOOT_FLAGS = ("iommu", "amd_iommu", "iommu.passthrough", "iommu.strict", "amd_iommu_dump")
# DMI identity without serial numbers or UUIDs (those identify one unit, not a model)
DMI = ("sys_vendor", "product_name", "board_name", "bios_vendor", "bios_version", "bios_date")


def system_facts(src: Sources) -> dict[str, Any]:
    cmdline = src.read("/proc/cmdline") or ""
    flags = {}
    for word in cmdline.split():
        key, _, value = word.partition("=")
        if key in BOOT_FLAGS:
            flags[key] = value or True
    cpuinfo = src.read("/proc/cpuinfo") or ""
    model = next((line.split(":", 1)[1].strip() for line in cpuinfo.splitlines()
                  if line.startswith("model name")), None)
    cores = sum(1 for line in cpuinfo.splitlines() if line.startswith("processor")) or None
    meminfo = src.read("/proc/meminfo") or ""
    mem_kb = next((int(line.split()[1]) for line in meminfo.splitlines()
                   if line.startswith("MemTotal:") and len(line.split()) > 1
                   and line.split()[1].isdigit() and len(line.split()[1]) < 19), None)
    machine_id = src.read("/etc/machine-id") or src.read("/var/lib/dbus/machine-id")
    return {
        # hostname and machine id name the machine; a redacted report replaces both, and
        # its machine_tag still tells machines apart (`report compare`, `diagnose`)
        "hostname": src.read("/proc/sys/kernel/hostname") or src.read("/etc/hostname"),
        "machine_id": machine_id,
        "machine_tag": machine_tag(machine_id),
        "kernel": src.read("/proc/sys/kernel/osrelease"),
        "boot_flags": flags,
        "distribution": _os_release(src),
        "cpu": model,
        "cpus": cores,
        "memory_gib": round(mem_kb / 1024 / 1024, 1) if mem_kb else None,
        "dmi": {key: src.read(f"/sys/class/dmi/id/{key}") for key in DMI},
        "user": src.identity.user,
        "root": src.identity.root,
    }


# the message the tag is keyed over: this application's, so that no other application's
# tag of the same machine is this one
TAG_MESSAGE = b"xdna-runlist-harness machine tag"


def machine_tag(machine_id: str | None) -> str | None:
    """A tag that tells this machine from others without naming it: HMAC-SHA256 of an
    application-specific message keyed by the machine id, as machine-id(5) asks an
    application that needs a stable identifier to derive one
    (sd_id128_get_machine_app_specific), so that the machine id itself never leaves the
    machine. Reports of one machine share it; it names no machine id (a 128-bit random
    key cannot be recovered from it). None without a machine id: a host name is too easy
    to guess to be hashed into a tag."""
    key = (machine_id or "").strip()
    if not key:
        return None
    return hmac.new(key.encode(), TAG_MESSAGE, hashlib.sha256).hexdigest()[:16]


def _os_release(src: Sources) -> str | None:
    text = src.read("/etc/os-release") or src.read("/usr/lib/os-release") or ""
    for line in text.splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return None
