"""The one simulated NPU of this process, and how the harness configures it.

Host code sees only `harness.sim.pyxrt`, exactly as it would see the real
`pyxrt`. What the real binding cannot express (which stack to play, kernel
latencies from a case) is set here, by the backend, before devices are
opened. Without a call to `configure`, the profile comes from
``HARNESS_SIM_PROFILE`` (default: the #712 machine's documented stack), so a plain
script written for pyxrt runs against the simulator unchanged.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from harness.model.drivers import FLAVOURS
from harness.model.firmware import FIRMWARE_REFUSED_FIX
from harness.probe.xrt_loader import ROOT_ENV
from harness.sim.device_life import DeviceLife
from harness.sim.profiles import Profile, parse_profile
from harness.sim.stack import Stack

PROFILE_ENV = "HARNESS_SIM_PROFILE"

_current: Stack | None = None


def configure(profile: Profile | str | None = None, *,
              latencies: dict[str, float] | None = None,
              life: DeviceLife | None = None) -> Stack:
    """Start a fresh simulated NPU (no contexts, time zero) with this profile; `life`: what
    an earlier trial left on the device (harness.sim.device_life), else a new device."""
    global _current
    if not isinstance(profile, Profile):
        profile = parse_profile(profile)
    _current = Stack(profile, latencies, life=life)
    return _current


def reload_module() -> None:
    """The driver reloaded on the simulated machine (`modprobe -r amdxdna && modprobe
    amdxdna`): what that does to the device is the stack's (`Stack.reload_module`)."""
    current().reload_module()


def current() -> Stack:
    """The configured stack; else one from the environment, as for a plain pyxrt script
    (`for_program`)."""
    if _current is None:
        return for_program(os.environ.get(PROFILE_ENV))
    return _current


def for_program(profile: Profile | str | None) -> Stack:
    """The stack a program on the simulated binding plays by itself (a plain pyxrt script,
    `sim exec`). Under ``HARNESS_ROOT`` (the hardware path on a fabricated machine) with a
    ``dev/kmsg`` file there, the driver's lines go to that file too, where the harness's
    kernel-log reader finds them as it would on a real machine; given a machine folder
    (``HARNESS_SIM_MACHINE``, `harness.sim.machine_folder`), the device starts as the
    folder says an earlier program left it, and its kernel log, trace buffer and life are
    kept there for the harness that started the program."""
    from harness.sim.machine_folder import MACHINE_ENV, attach, saved_life
    machine = os.environ.get(MACHINE_ENV)
    folder = Path(machine) if machine else None
    stack = configure(profile, life=saved_life(folder) if folder else None)
    root = os.environ.get(ROOT_ENV)
    kmsg = Path(root) / "dev" / "kmsg" if root else None
    if folder is not None:
        attach(stack, folder)
    elif kmsg is not None and kmsg.is_file():
        stack.kernel_log.sink = kmsg
    return stack


def refused_at_probe(profile: Profile) -> str | None:
    """Why a run under `profile` cannot start, when its driver refuses the firmware at
    probe (the simulated machine then has no /dev/accel node): what the driver logged,
    the fix on a machine, and the profile that plays the same kernel with firmware it
    takes. None when the driver takes the firmware."""
    stack = Stack(profile)
    if not stack.refused:
        return None
    first = stack.kernel_log.records[0].text
    firmware = profile.firmware_version or profile.firmware
    protocol = profile.protocol.text if profile.protocol else "unknown"
    other = replace(profile, firmware="1.0.0.63").name
    return (f"SIMULATED stack, profile {profile.name}: the {FLAVOURS[profile.flavour].called} "
            f"driver of Linux {profile.kernel} refuses firmware {firmware} (mailbox protocol "
            f"{protocol}) at probe, so the simulated machine has no /dev/accel node and no "
            f"trial ran; its kernel log reads \"SIMULATED {first}\". On a machine: "
            f"{FIRMWARE_REFUSED_FIX}. To play this kernel's other rules, give firmware it "
            f"takes: --profile {other} (or firmware:protocol:6.x)")
