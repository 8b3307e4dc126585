"""Which mailbox protocol the NPU's firmware speaks, and so whether it gives the driver its
own account of a timeout (the app health report, `harness.model.firmware`).

No interface hands user space the protocol, so it is read where the machine gives it
away, most direct first: the driver's refusal in the kernel log ("Incompatible firmware
protocol major 7 minor 2"), the firmware version the device answers (the GET_INFO
ioctl, else sysfs `fw_version`) looked up among the releases public logs tie to a
protocol, or the protocol major in the name of the file the driver loaded
(`npu_7.sbin`, `aie2_pci.c` `npu_fw[]`).
"""

from __future__ import annotations

import re
from typing import Any

from harness.model import firmware

# compiled on first use, by re's own cache: a start-up does not pay for it
_FILE_MAJOR = r"(?:^|/)npu_(\d+)\.sbin"


def firmware_health(npu: dict[str, Any], npu_firmware: dict[str, Any]) -> dict[str, Any]:
    """protocol, protocol_from, app_health (None: not settled) and a note when the
    firmware does not report health."""
    version = (npu.get("ioctl") or {}).get("firmware") or (npu.get("sysfs") or {}).get(
        "fw_version")
    protocol: firmware.Protocol | None = None
    source = None
    if npu_firmware.get("refused_protocol"):
        protocol = firmware.parse_protocol(npu_firmware["refused_protocol"])
        source = "the driver's refusal in the kernel log"
    elif version is not None and firmware.protocol_of(version) is not None:
        protocol = firmware.protocol_of(version)
        source = f"firmware {version}: {firmware.RELEASES[version].source}"
    else:
        match = re.search(_FILE_MAJOR, npu_firmware.get("loaded") or "")
        if match:
            protocol = firmware.Protocol(int(match[1]), None)
            source = f"the major in the file name {npu_firmware['loaded']}"
    out: dict[str, Any] = {"protocol": protocol.text if protocol else None,
                           "protocol_from": source or (
                               f"not known (firmware {version or 'unknown'} is not among the "
                               f"releases whose protocol public logs establish)")}
    device = (npu.get("pci") or {}).get("device")
    if not device:
        out["app_health"] = None
        return out
    health = firmware.has_app_health(device == "0x17f0", protocol)
    out["app_health"] = health
    if health is False:
        out["note"] = f"{firmware.NO_HEALTH} ({firmware.APP_HEALTH_RULE})"
    return out
