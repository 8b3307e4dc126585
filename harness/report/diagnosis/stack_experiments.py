"""The experiments of the causes below the runlist where what they need depends on what the
files show: the firmware (who refused what: the driver its protocol, FastFlowLM its
version, or a file missing), the IOMMU (its setup, or a driver build's mapping) and host
memory (the device heap's size, or the memlock limit on pinning and mapping)."""

from __future__ import annotations

from harness.model.firmware import (
    DRIVER_FOR_PROTOCOL_7,
    FIRMWARE_REFUSED_FIX,
    FIRMWARE_TOO_OLD_FIX,
    FLM_FIRMWARE_MIN,
)
from harness.model.heap import CHUNK, MIB, SHIM_MOST
from harness.report.diagnosis.findings import Evidence
from harness.report.diagnosis.signs_seen import signs
from harness.report.diagnosis.stack_judges import IOMMU_SETUP, heap_bound


def firmware_experiment(ev: Evidence) -> str:
    """What makes the firmware and the driver agree, by who refused what: a driver that
    refused the firmware's protocol takes a driver that speaks it or the older firmware,
    save where FastFlowLM runs on it (it refuses firmware below 1.1, so only the driver
    helps); FastFlowLM refusing the firmware as too old takes newer firmware (and a driver
    for its protocol); a firmware file the driver could not load takes that file."""
    probe = ("runlist-harness probe (the firmware the driver loaded, its version, and the "
             "driver's lines at load); then ")
    refused = signs(ev, "firmware-refused", "firmware-boot-failed")
    flm = signs(ev, "firmware-too-old") or any(
        part.startswith("FastFlowLM") for r in ev.reports for part in r.read_as) or any(
        r.stack.value("flm") for r in ev.reports)
    if refused and flm:
        fix = (DRIVER_FOR_PROTOCOL_7 + f" (not older firmware: FastFlowLM refuses NPU "
               f"firmware below {FLM_FIRMWARE_MIN})")
    elif refused:
        fix = "install firmware this driver takes, e.g. " + FIRMWARE_REFUSED_FIX
    elif signs(ev, "firmware-too-old"):
        fix = FIRMWARE_TOO_OLD_FIX
    elif signs(ev, "firmware-missing"):
        fix = ("install the firmware file the driver asks for (linux-firmware's amdnpu "
               "folder, or the amd/xdna-driver package)")
    else:
        fix = "install firmware this driver takes, e.g. " + FIRMWARE_REFUSED_FIX
    return probe + fix + " (this changes the machine)"


def iommu_experiment(ev: Evidence) -> str:
    """The IOMMU's setup where a file shows it at fault; where only faults show, what
    separates the driver's mapping from the rest: another driver build."""
    setup = ("runlist-harness probe (the NPU's IOMMU group and its type, the kernel command "
             "line); then boot without amd_iommu=off or iommu=off (edit GRUB_CMDLINE_LINUX in "
             "/etc/default/grub and run `sudo update-grub`: this changes the machine and needs "
             "a reboot)")
    if signs(ev, *IOMMU_SETUP) or not signs(ev, "iommu-page-fault"):
        return setup
    return ("the same run on another build of the driver (the DKMS package's release from "
            "amd/xdna-driver, or the kernel's in-tree driver): faults that go with the build "
            "are its mapping's; beside it, runlist-harness probe (the NPU's IOMMU group and "
            "its type)")


MEMLOCK_FALSIFIER = ("the same buffers allocate with an unlimited memlock limit and the run "
                     "still fails")
HEAP_FALSIFIER = (f"the same buffers, fewer or smaller cacheable ones, fit the device heap "
                  f"({CHUNK // MIB} MiB on the in-tree and legacy drivers, growing to "
                  f"{SHIM_MOST // MIB} MiB on staging) and the run still fails")


def host_memory_falsifier(ev: Evidence) -> str:
    return HEAP_FALSIFIER if heap_bound(ev) else MEMLOCK_FALSIFIER


def host_memory_experiment(ev: Evidence, case: str) -> str:
    """For the heap, what fits in it or a driver whose heap is larger; for pinning and
    mapping, the memlock limit."""
    if heap_bound(ev):
        return (f"fewer or smaller cacheable buffers (the in-tree heap holds {CHUNK // MIB} "
                f"MiB in all, every buffer aligned to 32 KiB), host_only buffers for data "
                f"the device heap need not hold (the driver's shmem, which no heap bounds), "
                f"or a driver whose heap grows to {SHIM_MOST // MIB} MiB (amd/xdna-driver's "
                f"staging build from b9d18f04; this changes the machine); then "
                f"runlist-harness run {case} --plan 1 --trials 1")
    return (f"ulimit -l unlimited (this shell only), then runlist-harness run {case} --plan 1 "
            f"--trials 1; runlist-harness probe reads the limit")
