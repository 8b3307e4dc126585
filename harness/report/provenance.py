"""The first screen of a render: what ran, what stack answered, and where each fact came
from.

What ran: for each plan, the control code its runs carried, their buffers and the
xclbins (the real pack by sha256 and the names it is known by, or stand-ins), from what
the run recorded (`harness.sources.workload`); a NOOP case says it tests submission depth,
not the decode's work, and how to run the engine's own commands.

What answered: each layer of the stack (the binding and XRT; the driver and firmware)
either is this machine's or is modelled by the harness. Hardware answers with both of
the machine's; the simulated stack with both modelled; an emulated stack (real XRT, the
model below it) with one of each. The machine's facts and a model's never share a table:
each table is titled for what it is, and every row says where its fact came from. On
hardware the machine's table is the block maintainers ask for first: device and PCI
revision, firmware and its file's sha256, driver flavour, version, srcversion and commit,
kernel, XRT and its XDNA shim plugin, FastFlowLM, the pack's hashes, IOMMU, power mode,
other users of the NPU or /dev/kfd, and the driver's trace events.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.formats.capture_origin import MACHINE as MACHINE_XRT
from harness.formats.capture_origin import CaptureOrigin
from harness.model.drivers import DEFAULT_FLAVOUR
from harness.report.header import mappings
from harness.report.model import is_simulated, mapping, played_profile, source_tag

MACHINE, MODEL = "machine", "model"
TRACE_FIX_DEFAULT = "not probed"


@dataclass(frozen=True)
class Table:
    title: str
    rows: list[tuple[str, str, str]]          # fact, value, where it came from


def origins(backend: dict[str, Any]) -> dict[str, str]:
    """Which layers of the stack were this machine's and which the harness modelled:
    {"xrt": machine|model, "driver": machine|model}."""
    if backend.get("kind") == "emulated" or backend.get("emulated"):
        return {"xrt": MACHINE, "driver": MODEL}
    if is_simulated(backend):
        return {"xrt": MODEL, "driver": MODEL}
    return {"xrt": MACHINE, "driver": MACHINE}


# -- what ran ------------------------------------------------------------------------------

def _xclbin_text(xclbins: list[dict[str, Any]], pack: dict[str, Any], role: str | None
                 ) -> str:
    name = pack.get("name") or "the pack"
    if pack.get("stand_ins"):
        return (f"synthesized stand-ins for {name} ({len(xclbins)}; kernel signatures only, "
                "not the real kernels)")
    main = next((x for x in xclbins if x.get("role") == role), xclbins[0] if xclbins else None)
    if main is None:
        return f"{name}: none recorded"
    known = main.get("known_as") or []
    file = str(main.get("path") or main.get("role")).rsplit("/", 1)[-1]
    text = f"{name}: {file} sha256 {main.get('sha256')}"
    if known:
        text += f", known as {known[0]}" + (f" (and {len(known) - 1} more)"
                                            if len(known) > 1 else "")
    elif main.get("synthetic"):
        text += ", a synthesized file"
    others = len(xclbins) - 1
    return (text + (f"; {others} more loaded (xclbins below)" if others > 0 else "")
            + _differs_text(mapping(pack.get("identity")), name))


def _differs_text(identity: dict[str, Any], pack: str) -> str:
    """The pack's files that FastFlowLM's table knows as other packs' (`identity`, as
    harness.sources.pack_identity records it), in a clause; "" for none."""
    files = [str(d["file"]) for d in mappings(identity.get("differs")) if "file" in d]
    if not files:
        return ""
    listed = files[0] if len(files) == 1 else ", ".join(files[:-1]) + " and " + files[-1]
    owner = identity.get("folder_of")
    whose = f"{owner}'s" if owner else "other packs' files"
    taken = f", run with {identity['taken_with']}" if identity.get("taken_with") else ""
    return (f"; by sha256 in FastFlowLM's table, {listed} {'is' if len(files) == 1 else 'are'} "
            f"{whose}, not {pack}'s own{taken}")


def what_ran_rows(data: dict[str, Any], labels: dict[str, str]) -> list[list[str]]:
    """plans | control code | buffers | xclbins: the case's plans in one row, each control
    plan in its own; empty when the report predates these records."""
    case = mapping(data.get("case"))
    artifacts = mapping(data.get("artifacts"))
    workload = mapping(case.get("workload"))
    plans = [p for p in data.get("plans") or [] if isinstance(p, dict)]
    rows = []
    mine = [labels.get(str(p.get("name")), str(p.get("name"))) for p in plans
            if not p.get("control")]
    if mine and workload:
        rows.append([", ".join(mine), str(workload.get("control_code")),
                     str(workload.get("buffers")),
                     _xclbin_text(artifacts.get("xclbins") or [], mapping(artifacts.get("pack")),
                                  case.get("runlist_context"))])
    control = mapping(artifacts.get("control"))
    for plan in plans:
        if not plan.get("control"):
            continue
        theirs = mapping(control.get("workload"))
        xclbins = control.get("xclbins") or []
        rows.append([labels.get(str(plan.get("name")), str(plan.get("name"))),
                     str(theirs.get("control_code") or "NOP runs (nop.elf)"),
                     str(theirs.get("buffers") or "-"),
                     _xclbin_text(xclbins, mapping(control.get("pack")),
                                  xclbins[0].get("role") if xclbins else None)])
    return rows


def nop_note(data: dict[str, Any]) -> str | None:
    """For a case whose every run carried only a NOOP: what it tests, and how to run the
    engine's own commands instead."""
    case = mapping(data.get("case"))
    if not mapping(case.get("workload")).get("nop_only"):
        return None
    engine = case.get("engine") or "flm run MODEL"
    return ("Every run of the case carried only the one-NOOP TXN stream: this tests how deep "
            "a runlist the stack takes (submission depth), not the decode's work. To run the "
            "engine's own commands, capture them with XRT (master since 2026-06, 2.26): "
            f"`runlist-harness capture record --frames 200 --out DIR -- {engine}`, then "
            "`reproduce_ert_timeout --capture DIR` (the frame as captured, its cut, and "
            "NOOPs at that depth).")


def sequence_note(data: dict[str, Any], labels: dict[str, str]) -> str | None:
    """For plans cut into several runlists: that a trial runs them one after another
    (`harness.execution.session`), never side by side."""
    cut = [labels.get(str(p.get("name")), str(p.get("name")))
           for p in data.get("plans") or [] if isinstance(p, dict)
           and len(p.get("chunks") or []) > 1]
    if not cut:
        return None
    return (f"{', '.join(cut)}: a trial runs its runlists one after another, in one process "
            "on one hardware context with the same buffers: execute, wait, then the next")


def captured_note(data: dict[str, Any]) -> str | None:
    """For a captured frame: that these are the engine's own commands, from which capture
    and frame, how many runs, the runlist context's xclbin, and the buffers restored from
    the capture."""
    case = mapping(data.get("case"))
    captured = mapping(case.get("captured"))
    if not captured:
        return None
    artifacts = mapping(data.get("artifacts"))
    folder = str(captured.get("folder") or "").rstrip("/").rsplit("/", 1)[-1]
    restored = [r for r in captured.get("restored") or [] if isinstance(r, dict)]
    shown = ", ".join(f"{r.get('buffer')} ({r.get('size')} bytes, {r.get('file')})"
                      for r in restored[:6]) + (f", and {len(restored) - 6} more"
                                               if len(restored) > 6 else "")
    context = case.get("runlist_context")
    xclbin = next((x for x in artifacts.get("xclbins") or [] if isinstance(x, dict)
                   and x.get("role") == context), {})
    known = xclbin.get("known_as") or []
    identity = (f"known as {known[0]}" if known else "a synthesized file"
                if xclbin.get("synthetic") else "known as no FastFlowLM pack")
    origin = CaptureOrigin(str(captured.get("written_by") or MACHINE_XRT),
                           captured.get("written_under"))
    under = f" (profile {origin.profile})" if origin.marked and origin.profile else ""
    return (f"the engine's own commands, {origin.captured_by()}{under}: "
            f"{captured.get('frame')} of "
            f"the {captured.get('frames')} frames of capture {folder} (replay.json sha256 "
            f"{captured.get('replay_sha256')}), {captured.get('runs')} runs in one runlist in "
            f"context {context}, whose xclbin "
            f"{str(xclbin.get('path') or '?').rsplit('/', 1)[-1]} has sha256 "
            f"{xclbin.get('sha256')} ({identity})"
            + f"; {captured.get('buffers')} buffers, {len(restored)} restored from the "
              "capture as they held when the frame started"
            + (f": {shown}" if restored else ""))


def control_notes(data: dict[str, Any]) -> list[str]:
    """What each control plan changes against the case, as recorded with the plan."""
    return [str(p["control"]) for p in data.get("plans") or []
            if isinstance(p, dict) and p.get("control")]


# -- what answered -------------------------------------------------------------------------

def _kernel_release(env: dict[str, Any]) -> str:
    return str(mapping(env.get("system")).get("kernel") or "unknown")


def _under_root(env: dict[str, Any]) -> bool:
    root = env.get("root")
    return isinstance(root, str) and root not in ("", "/")


def modelled_table(backend: dict[str, Any]) -> Table:
    """The stack the harness modelled, each fact with the source its rules were read from."""
    profile = played_profile(backend) or DEFAULT_FLAVOUR
    nature = ("documented limits" if backend.get("documented", True)
              else "hypothesis " + ", ".join(map(str, backend.get("deviations") or [])))
    emulated = mapping(backend.get("emulated"))
    if emulated:
        how, given = ("the harness's driver and firmware model, under this machine's real "
                      "XRT", "runlist-harness emulate --profile")
    elif backend.get("stand_in"):
        how, given = ("the simulator standing in for pyxrt on the hardware path",
                      "HARNESS_SIM_PROFILE")
    else:
        how, given = "the simulated stack, in process", "--profile (or the default)"
    kind = source_tag(backend)
    rows = [("profile", f"{profile} ({nature})", given)]
    if emulated:
        rows.append(("driver interface (emulated)", "an LD_PRELOAD library answering the "
                     "amdxdna ioctls, sysfs and /dev/accel from the model",
                     "`runlist-harness emulate`; `runlist-harness sim profiles`"))
    xrt = mapping(backend.get("xrt"))
    if xrt.get("tag"):
        form = {"state in message": "runlist errors name the state",
                "no state in message": "runlist errors name no state"}.get(
            str(xrt.get("message_form")), "runlist error form unknown")
        rows.append(("XRT and pyxrt (modelled)", f"release {xrt.get('release')}: {form}",
                     f"rules and binding read from Xilinx/XRT at {xrt.get('tag')}"))
    driver = mapping(backend.get("driver"))
    if driver:
        rows.append(("driver (modelled)", f"{driver.get('flavour')} on Linux "
                                          f"{driver.get('kernel')}", str(driver.get("source"))))
    device = mapping(backend.get("device"))
    if device:
        rows.append(("NPU and firmware (modelled)", f"{device.get('name')}, "
                     f"{device.get('columns')} columns; {_modelled_firmware(backend)}",
                     "the driver's npu*_regs.c; `runlist-harness sim profiles`"))
    return Table(f"The stack that answered: {kind} ({how})", rows)


def _modelled_firmware(backend: dict[str, Any]) -> str:
    """The firmware release whose features the model plays; no image of it runs."""
    firmware = mapping(backend.get("firmware"))
    if not firmware.get("version"):
        return "no firmware image runs"
    health = ("reports app health" if firmware.get("app_health")
              else "does not report health")
    protocol = f", protocol {firmware['protocol']}" if firmware.get("protocol") else ""
    return (f"the features of firmware {firmware['version']}{protocol} ({health}); "
            "no firmware image runs")


def machine_table(data: dict[str, Any], *, answered: bool, xrt_answered: bool = False,
                  workers: list[Any] | None = None) -> Table:
    """This machine's facts, each with where the probe read it. `answered`: its stack ran
    the trials (hardware): then this is the block maintainers ask for first;
    `xrt_answered`: only its XRT did (the emulated stack). `workers`: XRT libraries a trial
    worker mapped."""
    env = mapping(data.get("environment"))
    npu = mapping(env.get("npu"))
    driver = mapping(env.get("driver"))
    xrt = mapping(env.get("xrt"))
    pyxrt = mapping(xrt.get("pyxrt"))
    system = mapping(env.get("system"))
    ioctl = mapping(npu.get("ioctl"))
    pci = mapping(npu.get("pci"))
    rows: list[tuple[str, str, str]] = []
    if npu.get("present") is False:
        rows.append(("NPU", "none: no /dev/accel/accel* node", "/dev/accel"))
    else:
        rows.append(("NPU", f"{npu.get('generation') or 'unknown'}, PCI "
                     f"{pci.get('vendor')}:{pci.get('device')} rev {pci.get('revision')}"
                     + (f" at {npu['bdf']}" if npu.get("bdf") else ""),
                     "sysfs device/{vendor,device,revision}"))
        rows.append(("firmware", _firmware_text(env), "sysfs fw_version (or the GET_INFO "
                     "ioctl); the driver's 'Load firmware' line; /lib/firmware/amdnpu"))
    rows.append(("driver", _driver_text(driver, ioctl), "/sys/module/amdxdna/{version,"
                 "srcversion,parameters}; modules.dep"))
    rows.append(("kernel", _kernel_release(env), "/proc/sys/kernel/osrelease"))
    if pyxrt:
        rows.append(("XRT", f"{pyxrt.get('xrt_version') or 'version unknown'}; XDNA shim "
                     f"plugin {_plugin_text(data, workers or [])}",
                     "BUILD_VERSION of the XRT install pyxrt came from; libxrt_driver_xdna in "
                     "/proc/<pid>/maps"))
    else:
        rows.append(("XRT", f"pyxrt does not import ({xrt.get('pyxrt_error') or '?'})",
                     "import pyxrt"))
    if answered or npu.get("present"):
        flm = mapping(env.get("flm"))
        rows.append(("FastFlowLM", (f"{flm.get('version') or 'version unknown'}"
                                    if flm.get("binary") else "no flm on PATH"),
                     "flm --version"))
        flags = mapping(system.get("boot_flags"))
        rows.append(("IOMMU", f"group type {npu.get('iommu_group_type') or 'unknown'}; boot "
                     "flags " + (" ".join(f"{k}={v}" for k, v in flags.items()) or "none"),
                     "sysfs iommu_group/type; /proc/cmdline"))
        rows.append(("power mode", str(ioctl.get("power_mode") or "unknown (the GET_INFO "
                                        "ioctl did not answer)"), "DRM_IOCTL_AMDXDNA_GET_INFO"))
        rows.append(("other NPU or /dev/kfd users", _users_text(env), "/proc/*/fd"))
        rows.append(("driver trace events", _trace_text(env), "tracefs events/amdxdna*"))
    else:
        rows.append(("distribution", str(system.get("distribution") or "unknown"),
                     "/etc/os-release"))
    if answered:
        title = "The stack that answered: this machine's"
    elif xrt_answered:
        title = ("This machine: its XRT and pyxrt answered; the driver, firmware and NPU "
                 "below did not (they were emulated)")
    else:
        title = "This machine: where the harness ran (it answered no trial)"
    if _under_root(env):
        title += ", read under HARNESS_ROOT (a copied or fabricated tree, not a live machine)"
    return Table(title, rows)


def _firmware_text(env: dict[str, Any]) -> str:
    npu = mapping(env.get("npu"))
    version = mapping(npu.get("ioctl")).get("firmware") or \
        mapping(npu.get("sysfs")).get("fw_version")
    firmware = mapping(env.get("npu_firmware"))
    loaded = firmware.get("loaded")
    hashes = mapping(firmware.get("sha256"))
    text = str(version or "version unknown")
    if loaded:
        name = str(loaded).rsplit("/", 1)[-1]
        digest = hashes.get(name)
        text += f"; file {loaded}" + (f" sha256 {digest}" if digest else
                                      " (not readable here to hash)")
    elif firmware.get("files"):
        text += "; the kernel log names no file; present: " + ", ".join(
            f"{n}" + (f" sha256 {hashes[n]}" if n in hashes else "") for n in firmware["files"])
    return text


def _driver_text(driver: dict[str, Any], ioctl: dict[str, Any]) -> str:
    if not driver.get("loaded"):
        return "not loaded" if driver else "not recorded"
    version = driver.get("version") or ioctl.get("driver_version") or "version unknown"
    parts = [f"{driver.get('module')} {version}", f"flavour {driver.get('flavour')}"]
    if driver.get("srcversion"):
        parts.append(f"srcversion {driver['srcversion']}")
    parts.append(f"commit {driver['commit']}" if driver.get("commit")
                 else "commit unknown (the module does not name one)")
    return ", ".join(parts)


def _plugin_text(data: dict[str, Any], workers: list[Any]) -> str:
    """The libxrt_driver_xdna a process of the run really mapped: the probe's, else a
    trial worker's (each trial on the hardware path records what its worker mapped)."""
    libraries = list(mapping(mapping(data.get("environment")).get("xrt")).get("mapped") or [])
    for lib in [*libraries, *workers]:
        if isinstance(lib, dict) and str(lib.get("name", "")).startswith("libxrt_driver_xdna"):
            return f"{lib.get('name')} {lib.get('version') or '(version not in its name)'}"
    return "not mapped by any process of this run"


def _users_text(env: dict[str, Any]) -> str:
    users = mapping(env.get("device_users"))
    listed = users.get("users")
    if not isinstance(listed, list):
        return "not recorded"
    text = ", ".join(f"{u.get('pid')} {u.get('command') or '?'} ("
                     + ", ".join(map(str, u.get("devices") or [])) + ")"
                     for u in listed if isinstance(u, dict)) or "none"
    hidden = users.get("uninspectable")
    return text + (f"; {hidden} processes not inspectable" if hidden else "")


def _trace_text(env: dict[str, Any]) -> str:
    trace = mapping(env.get("trace_events"))
    if not trace:
        return TRACE_FIX_DEFAULT
    if trace.get("simulated"):       # the simulated driver's own events, as it said them
        return f"{trace.get('note')} ({trace.get('system')})"
    if trace.get("recording"):
        return f"recorded around each trial ({', '.join(trace.get('enabled') or [])})"
    return f"{trace.get('why')}; {trace.get('fix')}"


def stack_tables(data: dict[str, Any], workers: list[Any] | None = None) -> list[Table]:
    """The tables of the first screen, the stack that answered first."""
    backend = mapping(data.get("backend"))
    if backend.get("kind") == "flm-server":
        return []
    where = origins(backend)
    if where == {"xrt": MACHINE, "driver": MACHINE}:
        return [machine_table(data, answered=True, workers=workers)]
    return [modelled_table(backend),
            machine_table(data, answered=False, xrt_answered=where["xrt"] == MACHINE,
                          workers=workers)]
