"""A line a driver prints, as the model of every tree keeps it (`harness.model.drivers`,
`harness.model.heap`, `harness.model.wedge`): which printk path, which function, the text.
The simulated driver prints them in its tree's form (`harness.sim.driver_log`)."""

from __future__ import annotations

from dataclasses import dataclass

# XDNA_ERR / XDNA_WARN carry the function's name; "dev" is the driver core's dev_err on
# the device (drivers/base/dd.c); "drm" is drm_err called directly, without a function
# name, which prints "[drm] *ERROR* text" in every tree (staging aie_smu.c, the legacy
# tree's aie_smu.c)
ERR, WARN, DEV, DRM_ERR = "err", "warn", "dev", "drm"


@dataclass(frozen=True)
class Printed:
    """A line a driver prints: through XDNA_ERR ("err") or XDNA_WARN ("warn"), by
    `function`, its text with {count} and {timeout} filled in where it has them; "dev" is
    a line of the driver core's own (dev_err, no function name); "drm" drm_err itself."""

    level: str
    function: str
    text: str
