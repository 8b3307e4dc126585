"""How the causes below the runlist read the observations: the firmware, a known defect
of a release, the IOMMU, power management, access to the device, host memory, other
holders of the device, and a binary built for another NPU. Each reads signs
(`vocabulary.SIGNS`) and stacks (`cohort.machines`), never a line's absence alone: a
cause leads only on what some file shows.

Where `resources` ends and `contention` begins: a context refused with none left is
`resources` when the run's own demand (one context per xclbin) exceeds what the device
gives (`hwctx_limit`: 6 on npu1, 16 on npu4/5/6, `npu*_regs.c`; the legacy tree's 32
virtual contexts, 6 on npu1), and `contention` when it does not, for then other clients
held the rest. Where the demand is not known (a kernel log alone) both stay open and the
probe (who holds the NPU) decides.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.formats.known_defects import KnownDefect, known_defects
from harness.model.drivers import DRM, LEGACY
from harness.report.diagnosis.cohort import Machine, machines
from harness.report.diagnosis.findings import (
    AGAINST,
    FOR,
    STRONG,
    SUPPORT,
    WEAK,
    Evidence,
    Findings,
    rate_cite,
)
from harness.report.diagnosis.observed import context_refused
from harness.report.diagnosis.vocabulary import WORK, Cite, Sign, is_flavour, quote

NPU1_CONTEXTS = 6              # npu1_regs.c hwctx_limit: the fewest any XDNA device gives
CONTEXTS = 16                  # npu4/5/6_regs.c hwctx_limit
STORM = 3                      # IO_PAGE_FAULTs that make a storm, not a stray fault
ANSWERED_STATES = ("TIMEOUT", "ERROR", "ABORT", "COMPLETED")


def signs(ev: Evidence, *kinds: str) -> list[Sign]:
    return [s for r in ev.reports for s in r.signs if s.kind in kinds]


def _first(out: Findings, kind: str, weight: int, found: list[Sign], text: str) -> None:
    if found:
        out.add(kind, weight, text + (f" ({len(found)} lines)" if len(found) > 1 else ""),
                found[0].cite)


def _each(out: Findings, ev: Evidence, rows: tuple[tuple[str, int, str], ...]) -> None:
    """For the cause, each kind of sign the files show: (kind, weight, what it says)."""
    for kind, weight, text in rows:
        _first(out, FOR, weight, signs(ev, kind), text)


def device_answered(ev: Evidence) -> list[Cite]:
    """Where the NPU ran commands: runlists that completed, a state the device gave a
    runlist, a job the driver timed out, an xrt-smi test that passed."""
    cites = [rate_cite(a) for a in ev.arms if a.completed or any(
        s in ANSWERED_STATES for s in a.states if s != "set-up failed")]
    cites += [s.cite for s in signs(ev, "runlist-failed") if s.facts.get("state")
              in ANSWERED_STATES]
    cites += [s.cite for s in signs(ev, "driver-timeout", "runlist-test-passed",
                                    "validate-passed")]
    return cites


def judge_firmware_mismatch(ev: Evidence) -> Findings:
    out = Findings()
    refused = signs(ev, "firmware-refused")
    _each(out, ev, (
        ("firmware-refused", STRONG, "the driver refused the firmware's mailbox protocol"),
        ("firmware-missing", STRONG, "the driver could not load its firmware file"),
        ("firmware-boot-failed", SUPPORT, "the firmware did not come up (the PSP, the mailbox "
                                          "or its alive check failed)"),
        ("firmware-too-old", SUPPORT, "FastFlowLM's check refused the firmware version (it "
                                      "needs 1.1 or later)")))
    for hit in defect_hits(ev):
        if hit.line is not None and any(hit.defect.shown_in(s.cite.value) for s in refused):
            out.add(AGAINST, SUPPORT, f"the refusal is a known defect of the release, fixed "
                    f"in {hit.defect.fixed_in} ({hit.defect.id}): the firmware is not at "
                    "fault", hit.version, hit.line)
            break
    answered = device_answered(ev)
    if answered and out.supported:
        out.add(AGAINST, SUPPORT, "the NPU ran commands, so its firmware was loaded and "
                "answering", answered[0])
    return out


@dataclass(frozen=True)
class DefectHit:
    """A known defect whose component's version a machine shows, and the line that shows
    its symptom (None: no symptom seen)."""

    defect: KnownDefect
    version: Cite
    line: Cite | None


def component_version(machine: Machine, component: str) -> tuple[str, Cite] | None:
    """The version of `component` a machine shows (amdxdna-mainline: its kernel, unless the
    driver is a DKMS build; the DKMS flavours: the package's version)."""
    def fact(factor: str) -> tuple[str, Cite] | None:
        found = machine.facts.get(factor)
        return (found.value, found.cite) if found else None
    driver = fact("driver")
    dkms = driver is not None and ("DKMS" in driver[0] or "_" in driver[0])
    if component == "amdxdna-mainline":
        built_in = machine.flavour is None or is_flavour(machine.flavour, dkms=False)
        return fact("kernel") if built_in and not dkms else None
    if component in ("amdxdna-staging", "amdxdna-legacy"):
        tree = DRM if component == "amdxdna-staging" else LEGACY
        wanted = machine.flavour is None or is_flavour(machine.flavour, dkms=True, tree=tree)
        return driver if dkms and wanted else None
    return fact({"xrt": "xrt", "firmware": "firmware", "fastflowlm": "flm"}[component])


def defect_hits(ev: Evidence) -> list[DefectHit]:
    hits = []
    for machine in machines(ev.reports)[0]:
        for defect in known_defects():
            found = component_version(machine, defect.component)
            if found is None or not defect.affects_version(found[0]):
                continue
            line = next((Cite(o.file, where, quote(text), number) for o in machine.observed
                         for where, number, text in o.lines if defect.shown_in(text)), None)
            if line is None and defect.symptoms and machine.flavour is None and \
                    defect.component == "amdxdna-mainline":
                continue        # the flavour is not known: only the symptom would tell it
            hits.append(DefectHit(defect, Cite(found[1].file, found[1].field,
                                               f"{defect.component} {found[0]}",
                                               found[1].line), line))
    return hits


def judge_driver_bug(ev: Evidence) -> Findings:
    out = Findings()
    found = machines(ev.reports)[0]
    if not any(m.facts.get(f) for m in found for f in ("kernel", "driver", "xrt", "firmware",
                                                          "flm")):
        out.untested = ("no file shows a version of the kernel, the driver, XRT, the "
                        "firmware or FastFlowLM to hold against the known defects")
        return out
    for hit in defect_hits(ev):
        defect = hit.defect
        if hit.line is not None:
            out.add(FOR, STRONG, f"{defect.id}: {defect.summary} This release is affected "
                    f"({defect.affects_text}) and the line shows it", hit.version, hit.line)
            out.add(FOR, SUPPORT, f"a later release fixes it: {defect.fixed_in} "
                    f"({defect.source})", hit.version)
        elif not defect.symptoms:
            out.add(FOR, WEAK, f"{defect.id}: this release is affected "
                    f"({defect.affects_text}; fixed in {defect.fixed_in}), a defect that shows "
                    f"no line of its own: {defect.summary}", hit.version)
    return out


def driver_bug_experiment(ev: Evidence) -> str:
    hits = sorted(defect_hits(ev), key=lambda h: h.line is None)
    if not hits:
        return ("runlist-harness probe (the versions of the driver, XRT and the firmware), "
                "then diagnose again with its report")
    defect = hits[0].defect
    install = {"amdxdna-mainline": f"boot Linux {defect.fixed_in} or later (or install the "
                                   "DKMS driver, amd/xdna-driver)",
               "amdxdna-staging": f"install amdxdna {defect.fixed_in} (DKMS)",
               "amdxdna-legacy": f"install amdxdna {defect.fixed_in} (DKMS)",
               "xrt": f"install XRT {defect.fixed_in} or later",
               "firmware": f"install NPU firmware {defect.fixed_in}",
               "fastflowlm": f"install FastFlowLM {defect.fixed_in} or later"}[defect.component]
    return (f"{install} (this changes the machine), then runlist-harness probe and "
            f"reproduce_ert_timeout: the failure goes with the release ({defect.id}, "
            f"{defect.source})")


def judge_iommu(ev: Evidence) -> Findings:
    out = Findings()
    _first(out, FOR, STRONG, signs(ev, "sva-failed"), "binding the process's memory to the "
           "NPU failed (SVA, PASID or the IOMMU group)")
    faults = signs(ev, "iommu-page-fault")
    if faults:
        out.add(FOR, STRONG if len(faults) >= STORM else SUPPORT,
                f"the IOMMU logged {len(faults)} IO_PAGE_FAULT" + ("s: a storm"
                                                                   if len(faults) >= STORM
                                                                   else ""), faults[0].cite)
    off = [s for s in signs(ev, "iommu-mode") if "=off" in str(s.facts.get("setting"))]
    _first(out, FOR, SUPPORT, off, "the kernel command line turns the IOMMU off, and the "
           "driver binds each process's memory through it (SVA)")
    done = [a for a in ev.arms if a.completed]
    if done and out.supported:
        out.add(AGAINST, WEAK, "runs completed: the process's memory was bound to the NPU",
                rate_cite(done[0]))
    return out


def judge_power_management(ev: Evidence) -> Findings:
    out = Findings()
    _each(out, ev, (("smu-failed", STRONG, "the SMU refused or timed out a power or clock "
                                           "command"),
                    ("suspend-resume-failed", STRONG, "suspending or resuming the NPU (or its "
                                                      "firmware) failed")))
    for sleep in signs(ev, "system-suspend"):
        after = [s for r in ev.reports if r.file == sleep.cite.file for s in r.signs
                 if s.failure and (s.cite.line or 0) > (sleep.cite.line or 0)]
        if after:
            out.add(FOR, WEAK, "the system suspended before the failure", sleep.cite,
                    after[0].cite)
            break
    return out


def judge_device_access(ev: Evidence) -> Findings:
    out = Findings()
    weight = STRONG                 # the first kind seen; the rest follow from it
    for kind, text in (("no-device", "no NPU device was found"),
                       ("permission-denied", "the NPU's device node could not be opened: "
                                             "permission denied"),
                       ("hypervisor", "the driver refuses to run under a hypervisor"),
                       ("driver-probe-failed", "the driver did not bind to the NPU"),
                       ("plugin-missing", "XRT could not load its XDNA driver plug-in")):
        if signs(ev, kind):
            _first(out, FOR, weight, signs(ev, kind), text)
            weight = WEAK
    firmware = signs(ev, "firmware-refused", "firmware-missing", "firmware-boot-failed")
    if firmware and signs(ev, "no-device", "driver-probe-failed") and \
            not signs(ev, "permission-denied", "hypervisor", "plugin-missing"):
        out.add(AGAINST, STRONG, "the driver stopped at its firmware, so no device follows "
                "from that, not from access", firmware[0].cite)
    answered = device_answered(ev)
    if answered and out.supported:
        out.add(AGAINST, STRONG, "the NPU was opened and ran commands", answered[0])
    return out


def judge_host_memory(ev: Evidence) -> Findings:
    out = Findings()
    _each(out, ev, (("host-map-failed", STRONG, "the driver could not pin or map host memory "
                                                "for the NPU"),
                    ("buffer-alloc-failed", STRONG, "a buffer could not be allocated (or the "
                                                    "shim refused it)"),
                    ("oom", SUPPORT, "the kernel's out-of-memory killer ended a process")))
    # a low memlock limit is a condition, not a failure: it bites where a buffer or the
    # heap's mmap is refused, at set-up; where the device ran the commands and nothing
    # about memory failed, the failure came later and the limit says nothing of it
    memory_failed = signs(ev, "host-map-failed", "buffer-alloc-failed", "oom")
    if memory_failed or any(a.setup_failed for a in ev.arms) or not device_answered(ev):
        _first(out, FOR, SUPPORT, signs(ev, "memlock-low"), "the memlock limit is below what "
               "the engine needs (100 MiB for FastFlowLM)")
    return out


def context_demand(ev: Evidence) -> tuple[int, int, Cite] | None:
    """The run's own demand for contexts, the device's limit, and where the demand was
    read, from the first report that refused a context and knows both."""
    for report in ev.reports:
        refused = [a for a in report.arms if context_refused(a)]
        if refused and report.contexts:
            npu = (report.stack.npu.value if report.stack.npu else "").lower()
            limit = NPU1_CONTEXTS if "npu1" in npu or "phoenix" in npu else CONTEXTS
            return report.contexts, limit, report.cite("artifacts.xclbins", f"{report.contexts} "
                                                       "xclbins, a context each")
    return None


def resources_of_demand(out: Findings, ev: Evidence) -> None:
    """What the run's own demand for contexts says of `resources` (the boundary with
    `contention`, above)."""
    demand = context_demand(ev)
    if demand is not None:
        asked, limit, cite = demand
        if asked > limit:
            out.add(FOR, STRONG, f"the run asks {asked} contexts and the device gives "
                    f"{limit}: its own demand meets the limit", cite)
        else:
            out.add(AGAINST, STRONG, f"the run asks {asked} contexts and the device gives "
                    f"{limit}: its own demand cannot use them up", cite)
        return
    if not any(context_refused(a) for a in ev.arms):
        _first(out, FOR, SUPPORT, signs(ev, "context-unavailable"), "a hardware context was "
               "refused with none left (whose demand used them up the files do not say)")


def judge_contention(ev: Evidence) -> Findings:
    out = Findings()
    demand = context_demand(ev)
    if demand is not None:
        asked, limit, cite = demand
        if asked <= limit:
            out.add(FOR, STRONG, f"a context was refused though the run asks {asked} and "
                    f"the device gives {limit}: other clients held the rest", cite)
            _first(out, FOR, SUPPORT, signs(ev, "context-unavailable"), "the driver or the "
                   "firmware said no context was left to give")
    else:
        refused = signs(ev, "context-unavailable")
        _first(out, FOR, SUPPORT, refused, "a hardware context was refused with none left "
               "(whose demand used them up the files do not say)")
    _first(out, FOR, SUPPORT, signs(ev, "other-holders"), "other processes held the NPU or "
           "the GPU's compute node during the run")
    _first(out, FOR, WEAK, signs(ev, "gpu-fault"), "the GPU's driver reported a hang or reset "
           "beside the NPU run")
    _first(out, AGAINST, SUPPORT, signs(ev, "no-other-holders"), "the probe saw no other "
           "process holding the NPU")
    return out


def judge_wrong_binary(ev: Evidence) -> Findings:
    out = Findings()
    _each(out, ev, (("wrong-columns", STRONG, "a partition does not fit the device's columns"),
                    ("xclbin-mismatch", STRONG, "the shim found no kernel or PDI it needs in "
                                                "the xclbin")))
    for machine in machines(ev.reports)[0]:
        npu, model = machine.value("model"), ""
        for observed in machine.observed:
            if observed.stack.npu is not None:
                model = observed.stack.npu.value
        if ("npu1" in model.lower() or "phoenix" in model.lower()) and "NPU2" in npu:
            out.add(FOR, STRONG, f"a pack built for XDNA 2 ({npu}) on an XDNA 1 NPU ({model})",
                    machine.facts["model"].cite)
    done = [a for a in ev.arms if a.workload == WORK and a.completed]
    if done and out.supported:
        out.add(AGAINST, SUPPORT, "runs of the case's own commands completed on this device",
                rate_cite(done[0]))
    return out


def deep_runlist_tests(out: Findings, ev: Evidence) -> None:
    """xrt-smi validate's deep-runlist test as an artefact shows it (a report's own run of
    it is its `xrt_smi_control`, read beside): for a depth limit when it fails, against
    one when it passes."""
    _first(out, FOR, SUPPORT, signs(ev, "runlist-test-failed"), "XRT's own deep runlist "
           "(xrt-smi validate's runlist test, 1000 NOOP runs in one runlist) fails there too")
    _first(out, AGAINST, SUPPORT, signs(ev, "runlist-test-passed"), "XRT's own deep runlist "
           "(xrt-smi validate's runlist test, 1000 NOOP runs in one runlist) completes there")


def refusal_states(out: Findings, ev: Evidence) -> None:
    """What XRT's text says of a refusal where no trial ran through the harness: a runlist
    ended ERROR (the firmware rejected a command), or TIMEOUT beside the driver's timeout
    lines (it waited for a hang to be noticed)."""
    if ev.arms:
        return
    failed = signs(ev, "runlist-failed")
    _first(out, FOR, SUPPORT, [s for s in failed if s.facts.get("state") == "ERROR"],
           "XRT says a runlist ended ERROR: the firmware rejected a command")
    if [s for s in failed if s.facts.get("state") == "TIMEOUT"]:
        _first(out, AGAINST, SUPPORT, signs(ev, "driver-timeout"), "the driver timed the job "
               "out: it waited for a hang to be noticed, nothing refused it at once")
