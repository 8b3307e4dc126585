"""How the causes below the runlist read the observations: the firmware, a known defect
of a release, the IOMMU, power management, access to the device, host memory, other
holders of the device (`context_judges`), and a binary built for another NPU. Each reads signs
(`vocabulary.SIGNS`) and stacks (`cohort.machines`), never a line's absence alone: a
cause leads only on what some file shows.

Where `resources` ends and `contention` begins is `context_judges`'.

Order within one log tells the first failure from its consequences: the driver's start-up
stops at its first error and then unwinds (a firmware that did not come up is followed by
the SMU's power-off failing and the probe failing, `aie2_hw_start` then `aie2_smu_fini` and
`amdxdna_probe`), so lines after a firmware failure in the same log are its unwinding, not
a cause of their own. A buffer refused with -ENOMEM, -EAGAIN, -ENOSPC or -EFAULT is memory
the stack lacked; one refused -EINVAL is a request the driver will not take (a size past
its limit, or a kind its build does not support here), which the driver's own line tells.
IO_PAGE_FAULTs with the IOMMU on and the process bound to it are the device touching what
was not mapped for it: the driver's or the work's mapping as much as the IOMMU's setup, so
they support `iommu` without deciding it, and another driver build separates them.
"""

from __future__ import annotations

from harness.report.diagnosis.cohort import machines
from harness.report.diagnosis.defect_judge import defect_hits
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
from harness.report.diagnosis.signs_seen import first_of as _first
from harness.report.diagnosis.signs_seen import signs
from harness.report.diagnosis.vocabulary import WORK, Cite, Sign

STORM = 3                      # IO_PAGE_FAULTs that make a storm, not a stray fault
ANSWERED_STATES = ("TIMEOUT", "ERROR", "ABORT", "COMPLETED")
FIRMWARE_FAILED = ("firmware-refused", "firmware-missing", "firmware-boot-failed")
# what stops the driver's start before its device appears, by what it is
START_FAILED = {**{kind: "its firmware" for kind in FIRMWARE_FAILED},
                "sva-failed": "the IOMMU's PASID or SVA", "smu-failed": "the SMU"}
# errnos of memory the stack lacked (asm-generic/errno-base.h): ENOMEM, EAGAIN (a locked
# mapping past the memlock limit), ENOSPC (a full heap), EFAULT (pages it could not pin)
SHORT_OF_MEMORY = (-12, -11, -28, -14)
# what the IOMMU's own setup shows, beside faults: a binding that failed, its mode set
IOMMU_SETUP = ("sva-failed", "iommu-mode")
# what the NPU path shows when it failed (XRT's states and texts, the driver's lines)
NPU_PATH_FAILED = ("runlist-failed", "unexpected-state", "ioctl-failed", "shim-error",
                   "driver-timeout", "aie-error", "restart-failed")


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


def unwound_after_firmware(ev: Evidence, found: list[Sign]) -> bool:
    """Whether every one of `found` comes after a firmware failure in the same log (the
    driver unwinding its start-up), and there is one at least."""
    firsts: dict[str, int] = {}
    for sign in signs(ev, *FIRMWARE_FAILED):
        if sign.cite.line is not None:
            firsts[sign.cite.file] = min(firsts.get(sign.cite.file, sign.cite.line),
                                         sign.cite.line)
    return bool(found) and all(s.cite.file in firsts and s.cite.line is not None
                               and s.cite.line > firsts[s.cite.file] for s in found)


def _first_error_of_start(ev: Evidence) -> Sign | None:
    """A firmware failure that is its log's first failure line (what follows unwinds)."""
    for report in ev.reports:
        failing = sorted((s for s in report.signs if s.failure and s.cite.line is not None),
                         key=lambda s: s.cite.line or 0)
        if failing and failing[0].kind in FIRMWARE_FAILED and len(failing) > 1:
            return failing[0]
    return None


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
    first = _first_error_of_start(ev)
    if first is not None:
        out.add(FOR, SUPPORT, "the firmware's failure is the first error of the driver's "
                "start: the lines after it are the driver unwinding", first.cite)
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


def judge_iommu(ev: Evidence) -> Findings:
    out = Findings()
    _first(out, FOR, STRONG, signs(ev, "sva-failed"), "binding the process's memory to the "
           "NPU failed (SVA, PASID or the IOMMU group)")
    faults = signs(ev, "iommu-page-fault")
    if faults:
        # faults alone: the device reached what no one mapped for it (the module docstring)
        out.add(FOR, SUPPORT if len(faults) >= STORM else WEAK,
                f"the IOMMU logged {len(faults)} IO_PAGE_FAULT" + ("s: a storm"
                                                                   if len(faults) >= STORM
                                                                   else "") +
                " from the NPU: addresses not mapped for it (the driver's or the work's "
                "mapping, or the IOMMU's setup)", faults[0].cite)
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
    power = signs(ev, "smu-failed", "suspend-resume-failed")
    if unwound_after_firmware(ev, power):
        out.add(AGAINST, STRONG, "the SMU's refusals come after the firmware failed to come up "
                "in the same log: the driver powering the NPU off on its way out of its start",
                signs(ev, *FIRMWARE_FAILED)[0].cite, power[0].cite)
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
    _first(out, FOR, SUPPORT, signs(ev, "ioctl-not-permitted"), "an ioctl was refused to this "
           "user: the driver gives it to root only (the device node itself was open)")
    stopped = signs(ev, *START_FAILED)
    if stopped and signs(ev, "no-device", "driver-probe-failed") and \
            not signs(ev, "permission-denied", "hypervisor", "plugin-missing"):
        out.add(AGAINST, STRONG, f"the driver stopped at {START_FAILED[stopped[0].kind]} in "
                "its start, so no device follows from that, not from access", stopped[0].cite)
    answered = device_answered(ev)
    if answered and out.supported:
        out.add(AGAINST, STRONG, "the NPU was opened and ran commands", answered[0])
    return out


# pinning or mapping host memory, which the memlock limit bounds (mm/mmap.c do_mmap)
HOST_PIN_KINDS = ("host-map-failed", "memlock-refused", "oom")


def heap_bound(ev: Evidence) -> bool:
    """The device heap refused a buffer and nothing pinning or mapping host memory failed:
    the bound is the heap object's size (harness.model.heap: in-tree amdxdna_gem_heap_alloc
    against heap->mem.size, capped at dev_mem_size), which no memlock limit moves."""
    return bool(signs(ev, "device-heap-refused")) and not signs(ev, *HOST_PIN_KINDS)


def judge_host_memory(ev: Evidence) -> Findings:
    out = Findings()
    _each(out, ev, (("host-map-failed", STRONG, "the driver could not pin or map host memory "
                                                "for the NPU"),
                    ("memlock-refused", STRONG, "the kernel refused a locked mapping "
                                                "(EAGAIN): the process's memlock limit is "
                                                "below it"),
                    ("device-heap-refused", STRONG, "the driver's device heap could not "
                                                    "hold a cacheable buffer: the heap "
                                                    "object's size bounds it, not host "
                                                    "memory or the memlock limit"),
                    ("oom", SUPPORT, "the kernel's out-of-memory killer ended a process")))
    buffers = signs(ev, "buffer-alloc-failed")
    short = [s for s in buffers if s.facts.get("errno") is None
             or -abs(int(s.facts["errno"])) in SHORT_OF_MEMORY]
    _first(out, FOR, STRONG, short, "a buffer could not be allocated (or the shim refused it)")
    invalid = [s for s in buffers if s not in short]
    if invalid and not short:
        _first(out, FOR, SUPPORT, invalid, f"a buffer was refused as not one the driver takes "
               f"(err={invalid[0].facts.get('errno')}): a limit on its size or its kind, not "
               "memory the stack lacked")
    # a low memlock limit is a condition, not a failure: it bites where a buffer or the
    # heap's mmap is refused, at set-up; where the device ran the commands and nothing
    # about memory failed, the failure came later and the limit says nothing of it; nor
    # where only the device heap refused, whose size no memlock limit moves
    memory_failed = signs(ev, "host-map-failed", "buffer-alloc-failed", "memlock-refused",
                          "oom")
    if not heap_bound(ev) and (memory_failed or any(a.setup_failed for a in ev.arms)
                               or not device_answered(ev)):
        _first(out, FOR, SUPPORT, signs(ev, "memlock-low"), "the memlock limit is below what "
               "the engine needs (100 MiB for FastFlowLM)")
    _first(out, AGAINST, STRONG, signs(ev, "unsupported-path"), "the driver says why it "
           "refused: its build does not take the request on this platform, whatever memory "
           "there is")
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
        elif "NPU2" in npu and not model and (refused := signs(ev, "context-unavailable",
                                                              "context-refused")):
            out.add(FOR, WEAK, f"a context was refused for a pack built for XDNA 2 ({npu}), "
                    "and no file shows this NPU's generation (an XDNA 1 NPU cannot take it)",
                    machine.facts["model"].cite, refused[0].cite)
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


def server_path(out: Findings, ev: Evidence) -> bool:
    """What plain artefacts say of a server that failed where no serve-probe report ran:
    a client that could not reach it (for `not-npu-path`: no NPU answered), FastFlowLM
    stopping its own server, and against it whatever the NPU path reported failing. False
    when no file shows a server's failure."""
    unreachable = signs(ev, "server-unreachable")
    if not unreachable:
        return False
    out.add(FOR, SUPPORT, "a client could not reach the server, which was no longer serving: "
            "the request failed before any NPU could answer it", unreachable[0].cite)
    _first(out, FOR, SUPPORT, signs(ev, "server-stopped"), "FastFlowLM stopped its own server "
           "(it leaves its serve loop so when told to exit), with no XRT state or driver line")
    _first(out, AGAINST, STRONG, signs(ev, *NPU_PATH_FAILED), "XRT or the driver reported a "
           "failure of the NPU path too")
    return True
