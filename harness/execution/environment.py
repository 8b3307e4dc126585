"""The environment fingerprint a report embeds: the probe's facts about this machine."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.execution.backend import Backend
from harness.probe.fingerprint import probe
from harness.probe.readers import Sources


def collect_environment(backend: Backend, *, xrt_smi_validate: bool = False
                        ) -> dict[str, Any]:
    """On hardware the probe opens the device (loading the driver plugin) so the report
    names the XRT libraries really mapped, and runs `xrt-smi examine` (validate only when
    asked); on the simulated stack it only reads."""
    src = Sources.live()
    src.open_device = backend.hardware
    facts = probe(src, xrt_smi_runs=backend.hardware, xrt_smi_validate=xrt_smi_validate)
    facts["fingerprint_of"] = "this machine" + (" (trials ran on the simulated stack)"
                                                if backend.simulated else "")
    return facts


def _fingerprint(env: dict[str, Any]) -> dict[str, Any]:
    """What decides how trials behave: kernel, driver, firmware, XRT."""
    npu = env.get("npu") or {}
    driver = env.get("driver") or {}
    xrt = env.get("xrt") or {}
    return {
        "kernel": (env.get("system") or {}).get("kernel"),
        "driver": " ".join(str(driver.get(k)) for k in ("module", "version", "flavour")
                           if driver.get(k)) or None,
        "firmware": (npu.get("ioctl") or {}).get("firmware")
        or (npu.get("sysfs") or {}).get("fw_version"),
        "XRT": ((xrt.get("pyxrt") or {}).get("xrt_version")),
        "XRT libraries": ", ".join(sorted(lib.get("path", "") for lib in xrt.get("mapped") or []))
        or None,
    }


def fingerprint_differences(before: dict[str, Any], now: dict[str, Any],
                            shown: Callable[[str, str], str] | None = None) -> list[str]:
    """``firmware 1.1.2.65 -> 1.1.2.70`` for each fingerprint key that differs; `now`'s
    values as `shown` (by value and key: redacted, as a redacted report holds them)."""
    old, new = _fingerprint(before), _fingerprint(now)
    if shown is not None:
        new = {key: shown(str(value), key) if value is not None else None
               for key, value in new.items()}
    return [f"{key} {old[key] or 'unknown'} -> {new[key] or 'unknown'}"
            for key in old if old[key] != new[key]]
