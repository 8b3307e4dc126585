"""The kernel log as the probe sees it: can this user read it, and what firmware the
driver says it loaded (staging and mainline print ``Load firmware <file>`` at probe time,
`aie2_pci.c` `aie2_init`; the legacy tree prints it only at debug level)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from harness.logs.driver_lines import boot_firmware
from harness.logs.kernel_log import KernelLogReader, Unreadable, open_kernel_log
from harness.probe.readers import Sources

FIRMWARE_DIR = "/lib/firmware/amdnpu"


def kernel_log_reader(src: Sources) -> KernelLogReader | Unreadable:
    journalctl = src.which("journalctl")
    return open_kernel_log(src.path("/dev/kmsg"), str(journalctl) if journalctl else None,
                           src.execute or (lambda argv, timeout: None))


def kernel_log_facts(src: Sources, pci: dict[str, Any]) -> dict[str, Any]:
    reader = kernel_log_reader(src)
    if isinstance(reader, Unreadable):
        return {"kernel_log": reader.to_json(), "npu_firmware": _firmware_files(src, pci, None)}
    refused = None
    try:
        loaded, refused = boot_firmware(reader.boot())
    except OSError:
        loaded = None
    finally:
        reader.close()
    firmware = _firmware_files(src, pci, loaded)
    if refused is not None:
        firmware["refused_protocol"] = f"{refused[0]}.{refused[1]}"
    return {"kernel_log": {"source": reader.source}, "npu_firmware": firmware}


MAX_FIRMWARE_BYTES = 64 << 20       # an NPU firmware image is a few MiB


def _firmware_files(src: Sources, pci: dict[str, Any], loaded: str | None) -> dict[str, Any]:
    """The file the log names, what /lib/firmware/amdnpu/<device>_<revision>/ holds (the
    driver's fw_path is ``amdnpu/<device>_<revision>/``), and each file's sha256: which
    image a firmware version came from is what a maintainer compares first."""
    device, revision = pci.get("device"), pci.get("revision")
    files: list[str] = []
    hashes: dict[str, str] = {}
    if device and revision:
        folder = src.path(f"{FIRMWARE_DIR}/{int(device, 16):x}_{int(revision, 16):02x}")
        if folder.is_dir():
            files = sorted(p.name for p in folder.iterdir())
            for name in files:
                digest = _sha256(folder / name)
                if digest:
                    hashes[name] = digest
    out: dict[str, Any] = {"loaded": loaded or None, "files": files}
    if hashes:
        out["sha256"] = hashes
    return out


def _sha256(path: Path) -> str | None:
    """A regular file's sha256, or None (unreadable, not a file, implausibly big)."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_FIRMWARE_BYTES:
            return None
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()
    except OSError:
        return None
