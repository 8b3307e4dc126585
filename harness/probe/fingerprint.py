"""The environment fingerprint and preflight: what `runlist-harness probe` reads and checks.

The upstream thread spent days establishing by hand what is read here in a
second: driver flavour, firmware, which XRT libraries the process really
mapped, the memlock limit (STACK.md 1, 4, 5).
"""

from __future__ import annotations

from typing import Any

from harness.probe.checks import Check, run_checks
from harness.probe.driver import driver_facts
from harness.probe.emulation import emulation
from harness.probe.flm import flm_facts, memlock_facts
from harness.probe.holders import device_users, own_family
from harness.probe.kernel_log_access import kernel_log_facts
from harness.probe.npu import npu_facts
from harness.probe.readers import Sources, as_plain
from harness.probe.system import system_facts
from harness.probe.trace_access import tracefs_facts
from harness.probe.xrt import xrt_facts


def probe(src: Sources | None = None, *, need_bytes: int | None = None,
          xrt_smi_runs: bool = False, xrt_smi_validate: bool = False) -> dict[str, Any]:
    """Everything the probe reads; `xrt_smi_runs` runs `xrt-smi examine` (and validate only
    with `xrt_smi_validate`: it runs work on the NPU)."""
    src = src or Sources.live()
    system = system_facts(src)
    npu = npu_facts(src)
    facts: dict[str, Any] = {
        "root": str(src.root),
        "system": system,
        "npu": npu,
        "driver": driver_facts(src, system["kernel"]),
        "xrt": xrt_facts(src, npu["present"]),
        "memlock": memlock_facts(src, need_bytes),
        "flm": flm_facts(src),
        **kernel_log_facts(src, npu.get("pci") or {}),
        "trace_events": tracefs_facts(src),
        "device_users": device_users(src, own_family() if not src.fake else ()),
    }
    if npu["present"]:
        # imported here and below: only a machine with an NPU needs them, and start-up
        # is measured
        from harness.probe.firmware_health import firmware_health
        facts["npu_firmware"].update(firmware_health(npu, facts["npu_firmware"]))
    emulated = emulation()
    if emulated is not None:
        facts["emulator"] = emulated
    if xrt_smi_runs and npu["present"]:
        from harness.probe.xrt_smi import xrt_smi
        facts["xrt_smi"] = xrt_smi(src, validate=xrt_smi_validate)
    facts["checks"] = [c.to_dict() for c in run_checks(facts)]
    return as_plain(facts)


def ready(facts: dict[str, Any]) -> bool:
    return facts["npu"]["present"] and not any(c["status"] == "FAIL" for c in facts["checks"])


def render(facts: dict[str, Any]) -> str:
    """The probe's facts as the lines `probe` prints, checks last."""
    lines = _emulator_lines(facts) + _npu_lines(facts) + [_system_line(facts["system"])]
    lines += _driver_lines(facts["driver"], facts["npu"]) + _xrt_lines(facts["xrt"])
    lines += _host_lines(facts) + _access_lines(facts)
    lines.append("checks:")
    lines += [f"  {Check(**c).line()}" for c in facts["checks"]]
    return "\n".join(lines)


def _emulator_lines(facts: dict[str, Any]) -> list[str]:
    """First of all, when this process runs under `runlist-harness emulate`."""
    emulated = facts.get("emulator")
    if not emulated:
        return []
    return [f"EMULATED NPU: this process runs under `runlist-harness emulate` (profile "
            f"{emulated['profile']}, {emulated['preload']} mapped); the driver and firmware "
            "answering are the harness's model, not hardware"]


def _npu_lines(facts: dict[str, Any]) -> list[str]:
    """The NPU: its identity and node, firmware and what its protocol gives, PCI and PM."""
    npu = facts["npu"]
    if not npu["present"]:
        return ["no NPU: this machine has no /dev/accel/accel* node; everything else "
                "works, and trials run on the simulated stack (--backend sim)"]
    node = npu["nodes"][0]
    pci = npu.get("pci", {})
    lines = [f"NPU: {npu.get('generation') or 'unknown'} (PCI "
             + (f"{pci.get('vendor')}:{pci.get('device')} rev {pci.get('revision')}"
                if pci.get("device") else "identity unreadable")
             + f"), {node['path']} "
             f"{node['owner']} {node['mode']}, "
             f"{'openable' if node['openable'] else 'NOT openable by this user'}"]
    ioctl = npu.get("ioctl", {})
    firmware = ioctl.get("firmware") or npu.get("sysfs", {}).get("fw_version")
    lines.append(f"firmware: {firmware or 'unknown'}; columns: "
                 f"{ioctl.get('columns') or 'unknown'}; power mode: "
                 f"{ioctl.get('power_mode') or 'unknown'}")
    health = facts.get("npu_firmware") or {}
    reports = {True: "reports health", False: "does not report health",
               None: "health reporting not known"}[health.get("app_health")]
    lines.append(f"  mailbox protocol {health.get('protocol') or 'unknown'} "
                 f"({health.get('protocol_from')}): {reports}")
    pm = npu.get("runtime_pm") or {}
    loaded = (facts.get("npu_firmware") or {}).get("loaded") or "not in the log"
    lines.append(f"  PCI {npu.get('bdf') or '?'}; IOMMU group type "
                 f"{npu.get('iommu_group_type') or 'unknown'}; runtime PM "
                 f"{pm.get('status') or '?'} (control {pm.get('control') or '?'}); "
                 f"firmware file {loaded}")
    return lines


def _system_line(system: dict[str, Any]) -> str:
    return (f"system: {system.get('distribution') or '?'}, "
            f"kernel {system.get('kernel') or '?'}, "
            f"{system.get('cpu') or '?'} ({system.get('cpus') or '?'} CPUs), "
            f"{system.get('memory_gib') or '?'} GiB; user {system.get('user') or '?'}"
            + (" (root)" if system.get("root") else "")
            + ("; boot flags " + " ".join(f"{k}={v}" for k, v in
                                          system["boot_flags"].items())
               if system.get("boot_flags") else ""))


def _driver_lines(driver: dict[str, Any], npu: dict[str, Any]) -> list[str]:
    """The driver: module, version, flavour and why, its timeout rule and parameters."""
    if not driver["loaded"]:
        return ["driver: no amdxdna module loaded"]
    # two versions with two sources: a DKMS build's MODULE_VERSION string and the DRM
    # version the device's ioctl answers; each is named, so that they never seem to disagree
    drm = npu.get("ioctl", {}).get("driver_version")
    versions = ([f"module version {driver['version']}"] if driver.get("version") else []) + \
        ([f"DRM version {drm}"] if drm else [])
    version = ", ".join(versions) if versions else driver.get("version_note")
    lines = [f"driver: {driver['module']} ({version}); flavour {driver['flavour']} "
             f"({'; '.join(driver['evidence'])})",
             f"  timeout rule: {driver['timeout_rule']}"
             + (f" [setting: {driver['timeout_setting']}]"
                if driver.get("timeout_setting") else "")]
    if driver["parameters"]:
        lines.append("  parameters: " + ", ".join(f"{k}={v}" for k, v in
                                                  driver["parameters"].items()))
    return lines


def _xrt_lines(xrt: dict[str, Any]) -> list[str]:
    """XRT: pyxrt and its version, and the libraries this process maps."""
    pyxrt = xrt.get("pyxrt")
    lines = ["XRT: " + (f"pyxrt {pyxrt['file']} (XRT {pyxrt.get('xrt_version') or '?'})"
                        if pyxrt else f"pyxrt does not import ({xrt.get('pyxrt_error')})")
             + f"; XILINX_XRT={xrt.get('XILINX_XRT') or '-'}"]
    lines += [f"  mapped {lib['path']}" for lib in xrt.get("mapped", [])]
    return lines


def _host_lines(facts: dict[str, Any]) -> list[str]:
    """memlock, FastFlowLM and the machine's BIOS."""
    memlock = facts["memlock"]
    lines = [f"memlock: soft {memlock.get('soft')}, hard {memlock.get('hard')}"]
    flm = facts["flm"]
    if flm.get("binary"):
        models = flm.get("model_list", {}).get("models")
        lines.append(f"FastFlowLM: {flm['binary']} {flm.get('version') or ''}".rstrip()
                     + (f", {models} models in model_list.json" if models else ""))
    else:
        lines.append("FastFlowLM: no flm on PATH")
    dmi = facts["system"].get("dmi") or {}
    if dmi.get("bios_version"):
        lines.append(f"BIOS: {dmi.get('bios_vendor') or '?'} {dmi['bios_version']} "
                     f"({dmi.get('bios_date') or '?'}); {dmi.get('sys_vendor') or '?'} "
                     f"{dmi.get('product_name') or '?'}")
    return lines


def _access_lines(facts: dict[str, Any]) -> list[str]:
    """What this user can read around a trial (the kernel log, the driver's trace events),
    who else holds the device, a pyxrt built for another Python, and xrt-smi's output."""
    log = facts.get("kernel_log") or {}
    lines = ["kernel log: " + (f"read from {log['source']}" if "unreadable" not in log
                               else f"unreadable ({log['unreadable']}) -> {log['fix']}")]
    trace = facts.get("trace_events") or {}
    lines.append("driver trace events: " + (
        f"recorded around each trial ({trace.get('system')}: "
        f"{', '.join(trace.get('enabled') or [])})" if trace.get("recording")
        else f"not recorded ({trace.get('why')}) -> {trace.get('fix')}"))
    users = (facts.get("device_users") or {}).get("users") or []
    if users:
        lines.append("other processes on the NPU or /dev/kfd: " + ", ".join(
            f"{u['pid']} {u.get('command') or '?'} ({', '.join(u['devices'])})" for u in users))
    built = facts["xrt"].get("pyxrt_built_for")
    if built and built.get("installed") and not built.get("matches"):
        lines.append(f"  pyxrt is built for Python {', '.join(built['installed'])}; this is "
                     f"Python {built['running']}")
    for name, run in (facts.get("xrt_smi") or {}).items():
        if isinstance(run, dict) and "output" in run:
            lines.append(f"xrt-smi {name} (exit {run.get('exit_status')}):")
            lines += [f"  {line}" for line in run["output"].splitlines()]
    return lines
