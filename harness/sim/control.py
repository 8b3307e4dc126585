"""The one simulated NPU of this process, and how the harness configures it.

Host code sees only `harness.sim.pyxrt`, exactly as it would see the real
`pyxrt`. What the real binding cannot express (which stack to play, kernel
latencies from a case) is set here, by the backend, before devices are
opened. Without a call to `configure`, the profile comes from
``HARNESS_SIM_PROFILE`` (default: the documented staging driver), so a plain
script written for pyxrt runs against the simulator unchanged.
"""

from __future__ import annotations

import os

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
    if _current is None:
        return configure(os.environ.get(PROFILE_ENV))
    return _current
