"""NPU firmware: which mailbox protocol a release speaks, and whether that protocol lets the
driver ask for the firmware's own account of a timeout (its app health report).

The driver reads the firmware's protocol version (major.minor) from the mailbox when it
loads it and enables features from a table per device (amd/xdna-driver at 856409ca):

- `drivers/accel/amdxdna/npu4_regs.c` `npu4_fw_feature_table` (shared by npu5 and npu6,
  `npu5_regs.c` / `npu6_regs.c`): AIE2_APP_HEALTH from protocol 6.18, every feature with
  protocol 7; the Linux tree has the same entry since 25854131c04a (xdna-driver f13c7f41).
  The legacy tree gates MSG_OP_GET_APP_HEALTH the same way (`src/driver/amdxdna/
  npu4_regs.c` optional messages, `AIE2_FW_VERSION(6, 18)`).
- `npu1_regs.c`: no AIE2_APP_HEALTH at any protocol.

Without the feature, `aie2_query_app_health` returns -EOPNOTSUPP (a debug line only): the
driver prints no capture block and writes no version-1 health data, so neither the
kernel log nor XRT's message carries the firmware's account.

No interface gives user space the protocol (it is logged only at debug level, or when
the driver refuses it: "Incompatible firmware protocol major 7 minor 2"), so the probe
and the simulator's profiles map firmware releases to protocols where public logs
establish it (`RELEASES`), and take a protocol given directly otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NOT_MODELLED = "not modelled"
# A device writes a number into every word of its health data; where the model does not
# know the firmware's value (program counters, TXN op, fatal error details) the emulated
# device writes this one, which a report of an emulated run reads back as NOT_MODELLED
NOT_MODELLED_WORD = 0xFFFFFFFF
APP_HEALTH_SINCE = (6, 18)           # npu4_regs.c: AIE2_APP_HEALTH, major 6, min_minor 18
APP_HEALTH_RULE = ("AIE2_APP_HEALTH, the firmware's app health report, needs mailbox "
                   "protocol 6.18 or later on npu4-class devices, npu4/5/6; npu1 has none")
NO_HEALTH = "this firmware does not report health"
# What a firmware with app health writes at the head of its report: the capture blocks
# seen upstream (amd/xdna-driver#906) read "Version: 2.0" and "Report size: 0x230", which
# is sizeof(struct app_health_report) in aie2_msg_priv.h at 856409ca (24 + 532 + 4 bytes).
REPORT_VERSION = (2, 0)
REPORT_SIZE = 0x230


@dataclass(frozen=True)
class Protocol:
    """A mailbox protocol version; minor None: only the major is established."""

    major: int
    minor: int | None

    @property
    def text(self) -> str:
        return f"{self.major}.{'x' if self.minor is None else self.minor}"


@dataclass(frozen=True)
class Release:
    """A firmware release, the protocol it speaks, and where that was read."""

    version: str                 # as the firmware reports it (GET_INFO, sysfs fw_version)
    protocol: Protocol
    source: str


# Releases whose protocol public logs establish.
RELEASES = {r.version: r for r in (
    Release("1.1.2.64", Protocol(7, 2),
            "dri-devel 2026-03 (amdnpu/17f0_10/npu.sbin.1.1.2.64 refused by Linux 6.19: "
            "'Incompatible firmware protocol major 7 minor 2'); amd/xdna-driver#1257"),
    Release("1.1.2.65", Protocol(7, 2),
            "amdnpu/17f0_11/npu.sbin.1.1.2.65 refused by Linux 6.19 on a Strix Halo: "
            "'Incompatible firmware protocol major 7 minor 2' (public CachyOS report, "
            "2026-03)"),
    Release("1.0.0.63", Protocol(6, None),
            "amd/xdna-driver#1257 (1.0.0.63: mailbox protocol 6; the minor is not given)"),
)}
# The firmware amd/xdna-driver ships for each device (tools/WHENCE at 856409ca; npu6
# links npu4's), which the ROCm/FastFlowLM#712 machine ran (1.1.2.65 on a Strix Halo).
DEVICE_FIRMWARE = {"npu1": "1.5.5.391", "npu4": "1.1.2.64", "npu5": "1.1.2.65",
                   "npu6": "1.1.2.64"}

# The one protocol each device's driver spoke before f1eac46fe5f7 (Linux 7.0): its
# protocol_major must equal the firmware's and its protocol_minor be no larger
# (`aie2_check_protocol`, the legacy tree's copy of the check at ae559d3e^ with npu4/5
# 6.12 and npu1 5.7 in npuN_regs.c; Linux 7.0, as xdna-driver 234824b1 imports it, keeps
# the same pairs as the base entries of its feature tables and accepts major 7 beside 6
# on npu4/5/6).
SINGLE_PROTOCOL = {True: (6, 12), False: (5, 7)}          # by npu4_class
SINGLE_PROTOCOL_SOURCE = (
    "amd/xdna-driver src/driver/amdxdna/aie2_pci.c aie2_check_protocol and npu1_regs.c, "
    "npu4_regs.c, npu5_regs.c protocol_major/minor at ae559d3e^ (the check kernel.org's "
    "aie2_pci.c made before f1eac46fe5f7); drivers/accel/amdxdna npu1_regs.c, npu4_regs.c "
    "feature tables at 234824b1 (Linux 7.0)")
# What a machine whose driver refused its firmware can do (the probe's fix, and a
# simulated profile's explanation): public reports on 6.18.9, 6.18.13, 6.19.3 and 6.19.6
DRIVER_FOR_PROTOCOL_7 = (
    "boot a kernel with f1eac46fe5f7 (Linux 7.0 or later, or a distribution kernel that "
    "carries it), or install the DKMS driver (amd/xdna-driver)")
FIRMWARE_REFUSED_FIX = (DRIVER_FOR_PROTOCOL_7 + ", or install NPU firmware that speaks "
                        "mailbox protocol 6 (firmware 1.0.0.63, for one)")
# FastFlowLM's own check refuses NPU firmware older than 1.1 (ROCm/FastFlowLM src/src/main.cpp
# sanity_check_npu_stack, STACK.md 5: 1.0.0.63 and 1.0.0.166 refused in ROCm/FastFlowLM#421
# and #536), so the older firmware that a driver without f1eac46fe5f7 takes is no fix for it:
# what it needs is 1.1 or later (protocol 7.2: `RELEASES`) on a driver that takes protocol 7
FLM_FIRMWARE_MIN = "1.1"
FIRMWARE_TOO_OLD_FIX = (
    f"install NPU firmware {FLM_FIRMWARE_MIN} or later (linux-firmware's amdnpu files, or the "
    "amd/xdna-driver package, which ships 1.1.2.64 and 1.1.2.65) and, for its mailbox "
    "protocol 7, a driver that takes it: " + DRIVER_FOR_PROTOCOL_7)


def single_protocol_refusal(npu4_class: bool, protocol: Protocol | None) -> str | None:
    """The line a driver that speaks one protocol per device (kernel.org mainline before
    f1eac46fe5f7) prints when it refuses the firmware at probe; None when it accepts it
    (or the protocol is not known: nothing public shows such firmware refused)."""
    if protocol is None:
        return None
    major, minor = SINGLE_PROTOCOL[npu4_class]
    if protocol.major != major:
        return (f"Incompatible firmware protocol major {protocol.major} minor "
                f"{'x' if protocol.minor is None else protocol.minor}")
    if protocol.minor is not None and protocol.minor < minor:
        return "Firmware minor version smaller than supported"
    return None


# compiled on first use, by re's own cache: a start-up does not pay for it
_PROTOCOL = r"(\d+)\.(\d+|x)"


def protocol_of(version: str | None) -> Protocol | None:
    """The protocol a firmware release speaks, when public logs establish it."""
    release = RELEASES.get((version or "").strip())
    return release.protocol if release else None


def parse_protocol(text: str) -> Protocol | None:
    """``6.18`` -> Protocol(6, 18), ``6.x`` -> Protocol(6, None) (only the major known);
    anything else None."""
    match = re.fullmatch(_PROTOCOL, text.strip())
    if not match or len(match[1]) > 9 or len(match[2]) > 9:
        return None
    return Protocol(int(match[1]), None if match[2] == "x" else int(match[2]))


def has_app_health(npu4_class: bool, protocol: Protocol | None) -> bool | None:
    """Whether the driver gets an app health report from this firmware; None when the
    protocol does not settle it (unknown, or major 6 with an unknown minor)."""
    if not npu4_class:
        return False
    if protocol is None:
        return None
    if protocol.major != APP_HEALTH_SINCE[0]:
        return protocol.major > APP_HEALTH_SINCE[0]
    if protocol.minor is None:
        return None
    return protocol.minor >= APP_HEALTH_SINCE[1]
