"""What an upstream maintainer reads first, taken out of a report: the kernel log of the
first failing trial, the firmware's own account of the timeout (as the driver logged it
and as XRT's message carried it), whether the device recovered, and the machine's
identity. `harness.report.render` lays these out; the bundle carries them whole."""

from __future__ import annotations

from typing import Any

from harness.logs.driver_lines import FIRMWARE_FIELDS, firmware_account
from harness.model.ert import parse_xrt_error
from harness.model.firmware import NO_HEALTH
from harness.report.model import mapping

# XRT's health lines (xrt_kernel.cpp, amend_aie_error_message / aie_error_message_v1)
# under the driver's names for the same fields (the firmware's app-health report)
XRT_FIELD_NAMES = {"txn_op_idx": "txn_op_id", "ctx_pc": "context_pc",
                   "fatal_error_type": "fatal_error_type",
                   "fatal_error_exception_type": "fatal_error_exception_type",
                   "fatal_error_exception_pc": "fatal_error_exception_pc",
                   "fatal_error_app_module": "fatal_error_app_module"}
FAILED = ("failed", "deadline", "crashed")


def xrt_account(trial: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The health fields (driver names) and identity lines XRT's message carried."""
    for outcome in trial.get("runlists") or []:
        message = outcome.get("message")
        if outcome.get("state") in (None, "COMPLETED") or not message:
            continue
        failure = parse_xrt_error(message)
        fields = {XRT_FIELD_NAMES.get(k, k): v for k, v in failure.health.items()}
        return fields, failure.identity
    return {}, {}


def firmware_rows(trial: dict[str, Any]) -> list[list[str]]:
    """field | kernel log | XRT message, for each field either side reported; [] when
    neither did."""
    logged = firmware_account((trial.get("kernel_log") or {}).get("events") or []) or {}
    carried, identity = xrt_account(trial)
    rows = []
    for name in FIRMWARE_FIELDS:
        if name in logged or name in carried:
            rows.append([name, _shown(logged.get(name)), _shown(carried.get(name))])
    rows += [[label, "-", value] for label, value in identity.items()]
    return rows


def health_note(header: dict[str, Any]) -> str | None:
    """"this firmware does not report health (...)" when the firmware the trials ran on
    gives the driver no app health report (the simulated firmware for a simulated run,
    the probe's reading of the machine's otherwise); None when it does or is not known."""
    backend = mapping(header.get("backend"))
    found = mapping(backend.get("firmware")) if backend.get("simulated") else \
        mapping(mapping(header.get("environment")).get("npu_firmware"))
    if found.get("app_health") is False:
        return str(found.get("note") or NO_HEALTH)
    return None


def _shown(value: Any) -> str:
    if value is None:
        return "-"
    return f"0x{value:x}" if isinstance(value, int) and value > 9 else str(value)


def event_summary(trial: dict[str, Any]) -> list[str]:
    """One line per driver event of a trial, e.g. ``mailbox_failure: opcode 0x2
    (CREATE_CONTEXT) status 0x2000003 (MGMT_ERT_NOAVAIL)``."""
    out = []
    for event in (trial.get("kernel_log") or {}).get("events") or []:
        kind = event.get("event")
        details = {k: v for k, v in event.items() if k not in ("event", "usec")}
        if kind == "timeout_capture":
            details = {k: details[k] for k in ("function", "context_id", "dpu_pc", "txn_op_id",
                                               "fatal_error_type", "timed_out_sub_command_id")
                       if k in details}
        if kind == "mailbox_failure":
            text = (f"opcode 0x{event['opcode']:x} ({event.get('opcode_name')}) status "
                    f"0x{event['status']:x} ({event.get('status_name')})")
        else:
            text = ", ".join(f"{k} {_shown(v)}" for k, v in details.items())
        out.append(f"{kind}: {text}" if text else str(kind))
    return out


def recovery_text(trial: dict[str, Any]) -> str | None:
    recovery = trial.get("recovery")
    if not recovery:
        return None
    text = f"{recovery.get('status')} ({recovery.get('attempts')} attempt(s), " \
           f"{recovery.get('what')})"
    if recovery.get("status") == "not recovered":
        text += f"; last error: {recovery.get('last_error')}; fix: {recovery.get('fix')}"
    return text


def _names(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def identity_rows(env: dict[str, Any]) -> list[tuple[str, str]]:
    """The machine as maintainers ask for it, beyond kernel/driver/firmware/XRT."""
    npu = mapping(env.get("npu"))
    system = mapping(env.get("system"))
    rows: list[tuple[str, str]] = []
    pci = mapping(npu.get("pci"))
    if pci.get("device"):
        rows.append(("PCI", f"{pci.get('vendor')}:{pci.get('device')} rev "
                            f"{pci.get('revision')} ({npu.get('generation') or 'unknown'})"
                            + (f" at {npu['bdf']}" if npu.get("bdf") else "")))
    dmi = mapping(system.get("dmi"))
    if dmi.get("bios_version") or dmi.get("product_name"):
        rows.append(("machine / BIOS", f"{dmi.get('sys_vendor') or '?'} "
                                       f"{dmi.get('product_name') or '?'}; BIOS "
                                       f"{dmi.get('bios_version') or '?'} "
                                       f"({dmi.get('bios_date') or '?'})"))
    flags = mapping(system.get("boot_flags"))
    if npu.get("present") or flags:
        rows.append(("IOMMU", f"group type {npu.get('iommu_group_type') or 'unknown'}; boot "
                              "flags " + (" ".join(f"{k}={v}" for k, v in flags.items())
                                          or "none")))
    pm = mapping(npu.get("runtime_pm"))
    if pm.get("status") or pm.get("control"):
        rows.append(("runtime PM", f"{pm.get('status') or '?'} (control "
                                   f"{pm.get('control') or '?'})"))
    firmware = mapping(env.get("npu_firmware"))
    if firmware.get("loaded") or firmware.get("files"):
        rows.append(("firmware file", str(firmware.get("loaded") or "not in the kernel log")
                     + (f" (present: {_names(firmware['files'])})"
                        if firmware.get("files") else "")))
    log = mapping(env.get("kernel_log"))
    if log:
        rows.append(("kernel log", f"read from {log.get('source')}" if "unreadable" not in log
                     else f"unreadable: {log['unreadable']} (fix: {log.get('fix')})"))
    smi = mapping(env.get("xrt_smi"))
    if smi:
        rows.append(("xrt-smi", "not installed" if not smi.get("installed") else "; ".join(
            f"{name}: " + (f"exit {run['exit_status']}" if "exit_status" in run
                           else str(run.get("note")))
            for name, run in smi.items() if isinstance(run, dict))))
    users = mapping(env.get("device_users"))
    if users:
        listed = users.get("users")
        listed = ", ".join(f"{u.get('pid')} {u.get('command') or '?'}" for u in listed
                           if isinstance(u, dict)) if isinstance(listed, list) else ""
        hidden = users.get("uninspectable")
        rows.append(("other NPU/GPU users at start", (listed or "none") + (
            f" ({hidden} processes not inspectable)" if hidden else "")))
    built = mapping(mapping(env.get("xrt")).get("pyxrt_built_for"))
    if built.get("installed"):
        rows.append(("pyxrt built for", f"{_names(built['installed'])}; running Python "
                                        f"{built.get('running')}"))
    return rows
