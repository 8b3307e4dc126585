"""Experiments that change the machine: a longer driver timeout where the user allows one,
a second firmware where the user names one. The harness never makes such a change itself
(each needs root, and a module reload stops every other user of the NPU): it says what it
would change and the commands that change it and put it back, asks before the step, and
once the user says it is made, reads the machine to see that it is (a parameter a normal
user may not read is taken on the user's word, and said to be).

Where each change is read from: the flavour's timeout parameter and its unit
(`harness.model.drivers`, STACK.md 4: mainline's drm_sched timer is no parameter;
staging's `tdr_timeout_ms` is mode 0400, so a module reload sets it; the out-of-tree
`timeout_in_sec` is 0644, written in place, as amd/xdna-driver#1083 did with
`timeout_in_sec=20`); the firmware the driver loaded, `/sys/class/accel/accel0/device/
fw_version`, and its files under `/lib/firmware/amdnpu/` (STACK.md 10).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.model.drivers import FLAVOURS, UNREADABLE
from harness.probe.readers import Sources

TIMER, FIRMWARE = "timer", "firmware"
FW_VERSION = "/sys/class/accel/accel0/device/fw_version"
Ask = Callable[[str], bool]       # a question put to the user: yes or no


@dataclass(frozen=True)
class MachineChange:
    """One change of the machine an experiment needs: what it changes, the commands that
    make it and undo it (as root), and how the harness sees that it is made."""

    kind: str                      # TIMER or FIRMWARE
    label: str                     # in plan names and the report: tdr_timeout_ms=20000
    what: str                      # in words, with the value it had
    commands: tuple[str, ...]
    restore: tuple[str, ...]
    path: str                      # the file that shows it made
    expected: str                  # what that file reads once it is
    timer_s: float | None = None   # the driver's timer in force with it (TIMER)
    notes: tuple[str, ...] = field(default_factory=tuple)

    def question(self) -> str:
        return (f"This step changes the machine: {self.what}. As root, in another terminal: "
                + " && ".join(self.commands) + " (afterwards, to undo it: "
                + " && ".join(self.restore) + "). Made the change, and go on with the step?")

    def verified(self, sources: Sources) -> tuple[bool | None, str]:
        """Whether the machine shows the change (None: it cannot be read by this user), and
        what was read."""
        read = sources.read(self.path)
        if read is None:
            return False, f"{self.path} is absent"
        if read == UNREADABLE:
            return None, (f"{self.path} is unreadable to this user (its mode); taken on the "
                          "user's word")
        return read.strip() == self.expected, f"{self.path} reads {read.strip()}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "label": self.label, "what": self.what,
                               "commands": list(self.commands),
                               "restore": list(self.restore)}
        if self.timer_s is not None:
            out["timer_s"] = self.timer_s
        return out


def longer_timeout(driver: dict[str, Any], seconds: float) -> MachineChange | str:
    """The probed driver's timeout parameter set to `seconds` (its period: what
    tdr_timeout_ms or timeout_in_sec hold, in seconds), or why it cannot be."""
    row = FLAVOURS.get(str(driver.get("flavour") or ""))
    if row is None:
        return "the driver flavour is not known here, so neither is its timeout parameter"
    if row.parameter is None:
        return (f"the {row.called} driver's timer ({row.seconds():g} s, drm_sched's) is not a "
                "module parameter: no longer timeout can be set on it")
    module = row.module or "amdxdna"
    value = seconds / row.unit_s
    shown = f"{value:g}" if value != int(value) else str(int(value))
    was = driver.get("timeout_setting")
    before = f"{was}" if was not in (None, UNREADABLE) else f"{row.default:g} (its default)"
    # its mode as the flavour row gives it: 0644 is written in place, 0400 is not
    writable = any(name == row.parameter and mode & 0o200 for name, _, mode in row.parameters)
    path = f"/sys/module/{module}/parameters/{row.parameter}"
    if writable:
        # mode 0644: root writes it in place, and the next check reads it
        commands: tuple[str, ...] = (f"echo {shown} > {path}",)
        restore: tuple[str, ...] = (
            f"echo {was if was not in (None, UNREADABLE) else f'{row.default:g}'} > {path}",)
    else:
        # mode 0400: read-only once loaded, so the module is loaded again with it
        commands = (f"modprobe -r {module}", f"modprobe {module} {row.parameter}={shown}")
        restore = (f"modprobe -r {module}", f"modprobe {module}" + (
            f" {row.parameter}={was}" if was not in (None, UNREADABLE) else ""))
    return MachineChange(
        TIMER, f"{row.parameter}={shown}",
        f"the {row.called} driver's {row.parameter} from {before} to {shown} (a hang is then "
        f"noticed after up to {row.seconds(value):g} s)", commands, restore, path, shown,
        timer_s=row.seconds(value),
        notes=() if writable else ("reloading the module stops every other user of the NPU "
                                   "(flm serve, other runs) first",))


def other_firmware(version: str, current: str | None,
                   driver: dict[str, Any] | None = None) -> MachineChange:
    """The NPU firmware `version` loaded in place of `current`: the user installs its file
    where the driver loads it from and reloads the probed driver's module."""
    row = FLAVOURS.get(str((driver or {}).get("flavour") or ""))
    module = (row.module if row is not None else None) or "amdxdna"
    return MachineChange(
        FIRMWARE, f"firmware {version}",
        f"the NPU firmware from {current or 'the one loaded'} to {version} (its npu.sbin "
        "under /lib/firmware/amdnpu/<device>_<revision>/, then the driver reloaded)",
        (f"put firmware {version}'s npu.sbin in place of the one under "
         "/lib/firmware/amdnpu/<device>_<revision>/", f"modprobe -r {module}",
         f"modprobe {module}"),
        ("put the npu.sbin that was there back", f"modprobe -r {module}",
         f"modprobe {module}"),
        FW_VERSION, version,
        notes=("reloading the module stops every other user of the NPU first",))
