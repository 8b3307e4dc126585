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
from pathlib import Path

from harness.probe.xrt_loader import ROOT_ENV
from harness.sim.profiles import Profile, parse_profile
from harness.sim.stack import Stack

PROFILE_ENV = "HARNESS_SIM_PROFILE"

_current: Stack | None = None


def configure(profile: Profile | str | None = None, *,
              latencies: dict[str, float] | None = None) -> Stack:
    """Start a fresh simulated NPU (no contexts, time zero) with this profile."""
    global _current
    if not isinstance(profile, Profile):
        profile = parse_profile(profile)
    _current = Stack(profile, latencies)
    return _current


def current() -> Stack:
    """The configured stack; else one from the environment, as for a plain pyxrt script.
    Under ``HARNESS_ROOT`` (the hardware path on a fabricated machine) with a
    ``dev/kmsg`` file there, the driver's lines go to that file too, where the harness's
    kernel-log reader finds them as it would on a real machine."""
    if _current is None:
        stack = configure(os.environ.get(PROFILE_ENV))
        root = os.environ.get(ROOT_ENV)
        kmsg = Path(root) / "dev" / "kmsg" if root else None
        if kmsg is not None and kmsg.is_file():
            stack.kernel_log.sink = kmsg
        return stack
    return _current
