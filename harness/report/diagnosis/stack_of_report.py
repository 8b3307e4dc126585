"""What a report says of the stack it ran on, in the diagnosis's vocabulary: its
`StackFacts` (from the probe's fingerprint on a machine; from the driver build the model
played on the simulated or emulated stack), the hardware contexts its run asks, and the
conditions the probe saw (the memlock limit, other processes holding the NPU).

A machine is told apart by the probe's machine id (compared, never shown); a simulated or
emulated report describes a model, not a machine, and has no identity.
"""

from __future__ import annotations

import hashlib
from typing import Any

from harness.report.diagnosis.vocabulary import HARDWARE, Fact, Observed
from harness.report.header import ReportHeader, section


def fill_stack(observed: Observed, doc: dict[str, Any], header: ReportHeader) -> None:
    env, backend = header.environment, header.backend
    stack = observed.stack
    if observed.source == HARDWARE:
        stack.set("kernel", env.system.kernel, observed.cite("environment.system.kernel",
                                                              env.system.kernel))
        driver = " ".join(str(v) for v in (env.driver.flavour, env.driver.version
                                           or env.npu.ioctl.driver_version) if v)
        stack.set("driver", driver, observed.cite("environment.driver", driver))
        stack.flavour = str(env.driver.flavour) if env.driver.flavour else None
        stack.module = str(env.driver.module) if env.driver.module else None
        firmware = env.npu.firmware
        stack.set("firmware", firmware, observed.cite("environment.npu.firmware", firmware))
        xrt = section(backend.raw.get("xrt")).get("release") or env.xrt.pyxrt.xrt_version
        stack.set("xrt", xrt, observed.cite("backend.xrt.release", xrt))
        flm = section(env.raw.get("flm")).get("version")
        stack.set("flm", flm, observed.cite("environment.flm.version", flm))
        identity = env.system.machine_id or env.system.hostname
        if identity:
            stack.identity = "report:" + hashlib.sha256(str(identity).encode()).hexdigest()
        if env.npu.generation:
            stack.npu = Fact(str(env.npu.generation), observed.cite(
                "environment.npu.generation", env.npu.generation))
        _conditions(observed, env.raw)
    elif backend.driver is not None:
        modelled = backend.driver
        stack.set("kernel", modelled.kernel, observed.cite("backend.driver.kernel",
                                                            modelled.kernel))
        stack.set("driver", modelled.flavour, observed.cite("backend.driver.flavour",
                                                             modelled.flavour))
        stack.flavour = modelled.flavour
    model = header.artifacts.pack_name or header.settings.model
    stack.set("model", model, observed.cite("artifacts.pack.name", model))
    roles = [x for x in header.artifacts.xclbins if x.get("role")]
    if roles and observed.case_kind == "case":
        observed.contexts = len(roles)


def _conditions(observed: Observed, env: dict[str, Any]) -> None:
    memlock = section(env.get("memlock"))
    if memlock.get("enough") is False:
        observed.sign("memlock-low", observed.cite(
            "environment.memlock", f"soft {memlock.get('soft')} bytes, below "
                                   f"{memlock.get('needed')}"))
    users = section(env.get("device_users"))
    held = [u for u in map(section, users.get("users") or []) if u]
    if held:
        shown = ", ".join(f"{u.get('command') or '?'} ({', '.join(u.get('devices') or [])})"
                          for u in held[:3])
        observed.sign("other-holders", observed.cite("environment.device_users", shown),
                      count=len(held))
    elif users and users.get("uninspectable") == 0 and section(env.get("npu")).get("present"):
        observed.sign("no-other-holders", observed.cite(
            "environment.device_users", "no other process holds the NPU (every process "
                                        "inspected)"))
