"""The causes a runlist failure can have, one row each: what it predicts for every kind of
observation, what falsifies it, the experiment that separates it from its neighbours,
and how it reads the observations (`judge`). Adding a cause is adding a row and its
tests, as a driver flavour is a row of `harness.model.drivers`.

The rows come from what maintainers asked of such reports in public threads
(amd/xdna-driver#1605 and #1083, Xilinx/mlir-air#1984, IRON#43 and #103,
ROCm/FastFlowLM#712 and #536): which timer fired, a threshold or a probability, does it
follow depth or the work, does a cut avoid it, what the kernel and the firmware say, and
is it the NPU path at all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.report.diagnosis import (
    context_judges,
    defect_judge,
    judges,
    stack_experiments,
    stack_judges,
)
from harness.report.diagnosis.findings import Evidence, Findings
from harness.report.diagnosis.judges import CANNOT
from harness.report.verdict import ENGINE_DEFAULT, capture_how


@dataclass(frozen=True)
class Cause:
    """One row of the table."""

    id: str
    title: str
    predicts: dict[str, str]         # observation -> what the cause predicts of it
    falsifier: str
    judge: Callable[[Evidence], Findings]
    experiment: Callable[[Evidence], str]
    # where what falsifies the cause depends on what the files show (host-memory: the
    # device heap or the memlock limit)
    falsifier_of: Callable[[Evidence], str] | None = None

    def falsifier_for(self, ev: Evidence) -> str:
        return self.falsifier if self.falsifier_of is None else self.falsifier_of(ev)


# observations, in the order rows predict them
OBSERVATIONS = ("NOOPs vs the engine's commands", "time to failure", "rate",
                "depth", "the cut", "kernel log and firmware")


# -- the experiments ---------------------------------------------------------------------

def _case(ev: Evidence) -> str:
    return next((r.case for r in ev.reports if r.command != "serve-probe"), "CASE")


def _depth(ev: Evidence) -> int:
    """The shallowest depth seen failing (else the deepest that ran): a search's --hi."""
    failing = [d for a in ev.failing for d in a.failing_depths]
    return min(failing) if failing else max([a.deepest for a in ev.arms] or [42])


def engine_of(ev: Evidence) -> str:
    """The command line that runs the reports' engine, as their case names it."""
    return next((r.engine for r in ev.reports if r.engine), None) or ENGINE_DEFAULT


def _capture_how(ev: Evidence) -> str:
    captured = next((r for r in ev.reports if r.case_kind == "capture"), None)
    if captured is not None:
        return f"runlist-harness bisect {captured.case} --lo 1 --hi {_depth(ev)}"
    return capture_how(engine_of(ev)) + "; then runlist-harness investigate DIR"


def _slow_plan(ev: Evidence) -> str:
    for slow, done in ev.under_longer_timers()[:1]:
        # the longer timer already decided it: what is left is the fix, or a cut
        cut = (f", or cut the runlist so each chain finishes within the shorter one: "
               f"runlist-harness sweep {_case(ev)} --depths {slow.deepest} --chunks "
               "1,2,4,8,16,24" if slow.deepest > 1 else "")
        return (f"keep the driver's timer as long as it was where the same commands completed "
                f"({done.label}; this changes the machine){cut}")
    for arm in ev.failing:
        timer, per_run = ev.timer_s(arm), ev.faster(arm)
        if timer and per_run:
            fits = max(1, min(arm.submit_size, int(CANNOT * timer[0] * 1000 / per_run)))
            return f"runlist-harness run {_case(ev)} --plan max:{fits}"
    return f"runlist-harness sweep {_case(ev)} --depths {_depth(ev)} --chunks 1,2,4,8,16,24"


def _first_named(ev: Evidence) -> int | None:
    return next((a.named_runs[0] for a in ev.failing if a.named_runs), None)


def _refused_plans(ev: Evidence) -> str:
    named = _first_named(ev)
    if named is None:
        return f"runlist-harness bisect {_case(ev)} --lo 1 --hi {_depth(ev)}"
    return f"runlist-harness run {_case(ev)} --plan {named} --plan {named + 1}"


def _rates_plan(ev: Evidence) -> str:
    arm = next((a for a in ev.failing), None)
    plan = arm.name if arm is not None else "monolithic"
    return f"runlist-harness run {_case(ev)} --plan {plan} --trials 20"


def _server_model(ev: Evidence) -> str:
    return next((r.server_model for r in ev.reports if r.server_model), None) or "MODEL"


CAUSES: tuple[Cause, ...] = (
    Cause(
        "depth-limit", "a depth limit in submission (XRT, driver or firmware)",
        {"NOOPs vs the engine's commands": "NOOP runlists fail as the engine's do",
         "time to failure": "at the driver's timer (a wedge it catches) or at once (a chain "
                            "the driver refuses), no run named",
         "rate": "every trial at a failing depth fails",
         "depth": "fails from some depth on, completes below it",
         "the cut": "runlists cut below the depth complete",
         "kernel log and firmware": "the timer's lines, if the build prints any; nothing "
                                    "that names a run"},
        "NOOP runlists at or past the failing depth complete (the depth-only control, "
        "nop-depth), or the same depth fails in some trials only",
        judges.judge_depth_limit,
        lambda ev: f"runlist-harness bisect nop-depth --lo 1 --hi {_depth(ev)} (NOOPs only: "
                   f"where depth alone starts to fail), then runlist-harness run {_case(ev)} "
                   "--plan max:N below it"),
    Cause(
        "work-hang", "a hang in the work (a kernel's lock or semaphore that overflows after N "
        "runs, a deadlock)",
        {"NOOPs vs the engine's commands": "NOOPs complete at the depth where the engine's "
                                           "commands fail",
         "time to failure": "at the driver's timer (a hang), never at once",
         "rate": "every trial, or some (a deadlock may be a race)",
         "depth": "from the Nth run of the work, or any depth",
         "the cut": "runlists holding fewer than N runs of the work complete",
         "kernel log and firmware": "the timer's lines; the firmware's report names no run "
                                    "on a timeout"},
        "the engine's commands complete at that depth, NOOPs fail there too, or the failure "
        "comes at once",
        judges.judge_work_hang,
        lambda ev: _capture_how(ev) + " (where the engine's commands start to hang), beside "
                   "NOOPs at the same depth"),
    Cause(
        "slow-work", "work that outlasts the driver's timer",
        {"NOOPs vs the engine's commands": "fast commands (NOOPs) complete; slow ones fail",
         "time to failure": "at the driver's timer",
         "rate": "every trial",
         "depth": "follows how long one chain's commands take, not a count",
         "the cut": "chains short enough to finish within the timer complete",
         "kernel log and firmware": "the timer's lines"},
        "completed runlists of the same commands show a chain of them takes far less than the "
        "timer, or failures come before the timer",
        judges.judge_slow_work, _slow_plan),
    Cause(
        "refused", "refused at once (a command the firmware or driver rejects)",
        {"NOOPs vs the engine's commands": "whichever carries the rejected command",
         "time to failure": "far below every timer",
         "rate": "every trial",
         "depth": "from the runlist that holds the rejected run on",
         "the cut": "runlists that do not hold it complete",
         "kernel log and firmware": "an error that names its run (ERROR with error_index)"},
        "the failure takes as long as the driver's timer, or no run is named",
        judges.judge_refused, _refused_plans),
    Cause(
        "resources", "contexts or resources exhausted (the flavour's context limit, the "
        "5th submit)",
        {"NOOPs vs the engine's commands": "both, once contexts run out",
         "time to failure": "at set-up (no runlist runs), or a 5th submit that waits",
         "rate": "every trial while the device is full",
         "depth": "none, or past 4 chains in flight",
         "the cut": "does not help contexts; fewer chains avoid the 5th submit",
         "kernel log and firmware": "a refused context (MGMT_ERT_NOAVAIL, 'Not allow more "
                                    "than N context(s)')"},
        "every context is made and every runlist answered",
        context_judges.judge_resources,
        lambda ev: f"runlist-harness probe (who else holds the NPU), then runlist-harness run "
                   f"{_case(ev)} --plan 1 --trials 1"),
    Cause(
        "nondeterministic", "nondeterministic (a race, an intermittent firmware hang)",
        {"NOOPs vs the engine's commands": "either",
         "time to failure": "at the driver's timer, mostly",
         "rate": "strictly between 0 and 1 at the same depth",
         "depth": "more chains, more chances to fail",
         "the cut": "fails less often, not never",
         "kernel log and firmware": "the timer's lines, in some trials"},
        "more trials of each plan fail all or none",
        judges.judge_nondeterministic, _rates_plan),
    Cause(
        "not-npu-path", "not the NPU path (flm serve fails where pyxrt completes)",
        {"NOOPs vs the engine's commands": "the engine's commands complete through pyxrt",
         "time to failure": "whatever the server's own timeout is",
         "rate": "the server fails; pyxrt does not",
         "depth": "none through pyxrt",
         "the cut": "not needed through pyxrt",
         "kernel log and firmware": "nothing from the driver"},
        "the engine's commands fail through pyxrt at the same depth",
        judges.judge_not_npu_path,
        lambda ev: f"reproduce_ert_timeout --capture CAPTURE (the engine's commands through "
                   f"pyxrt), and runlist-harness serve-probe --model {_server_model(ev)} "
                   "again"),
)
# the causes below the runlist: each predicts the same of NOOPs and the engine's commands,
# of depth and of the cut (none of them helps), so its own lines and versions tell it
_BELOW = {"NOOPs vs the engine's commands": "both fail alike (the stack, not the runlist)",
          "depth": "none: shallow runlists fail too",
          "the cut": "does not help"}
STACK_CAUSES: tuple[Cause, ...] = (
    Cause(
        "firmware-mismatch", "the driver refuses or misreads the loaded firmware (its "
        "protocol, its version, a missing file)",
        {**_BELOW, "time to failure": "at load or set-up: no runlist reaches the NPU",
         "rate": "every trial, every boot", "kernel log and firmware":
             "'Incompatible firmware protocol', 'failed to request_firmware', 'firmware is "
             "not alive'; flm validate: 'NPU firmware version ... is incompatible'"},
        "the NPU runs commands (any runlist answered by the device), or the firmware lines "
        "are a known defect of the driver's release",
        stack_judges.judge_firmware_mismatch, stack_experiments.firmware_experiment),
    Cause(
        "driver-bug", "a defect of a named driver, XRT or firmware release that a later "
        "release fixes (harness/data/known_defects.yaml)",
        {**_BELOW, "time to failure": "as the defect does",
         "rate": "on the affected releases, as the defect does",
         "kernel log and firmware": "the defect's own lines (its symptoms), on a release "
                                    "its entry names"},
        "the same failure on a release the entry says is fixed, or none of the defect's "
        "lines where it has some",
        defect_judge.judge_driver_bug, defect_judge.driver_bug_experiment),
    Cause(
        "iommu", "the IOMMU: binding the process's memory (SVA/PASID) fails, or page faults",
        {**_BELOW, "time to failure": "at open (SVA) or during work (page faults)",
         "rate": "every trial (SVA), or as often as the faults",
         "kernel log and firmware": "'SVA bind device failed', 'Can not assign PASID', "
                                    "AMD-Vi IO_PAGE_FAULT; amd_iommu=off or iommu=off on the "
                                    "kernel command line"},
        "runs complete with no IOMMU line, or the faults name another device",
        stack_judges.judge_iommu, stack_experiments.iommu_experiment),
    Cause(
        "power-management", "power management: the SMU, suspend and resume, runtime PM",
        {**_BELOW, "time to failure": "at power-up or after a resume",
         "rate": "after a suspend, or at random with runtime PM",
         "kernel log and firmware": "'smu cmd N failed', 'Power on failed', 'Resume "
                                    "firmware failed', PM: ... failed"},
        "the failure comes after a fresh boot with the NPU kept powered",
        stack_judges.judge_power_management,
        lambda ev: f"runlist-harness run {_case(ev)} --plan 1 --trials 3 after a fresh boot "
                   "with no suspend since; to keep the NPU powered meanwhile: `echo on | sudo "
                   "tee /sys/bus/pci/devices/BDF/power/control` (this changes the machine "
                   "until reboot)"),
    Cause(
        "device-access", "the device cannot be reached: no /dev/accel/accel0, the driver not "
        "bound, permissions, XRT's plug-in missing, a VM without pass-through",
        {**_BELOW, "time to failure": "at open: nothing runs",
         "rate": "every trial",
         "kernel log and firmware": "a probe that failed, 'Running under hypervisor not "
                                    "supported'; XRT: 'No such device', xrt-smi: '0 devices "
                                    "found'; FastFlowLM: 'No NPU device found'"},
        "the NPU was opened and ran commands",
        stack_judges.judge_device_access,
        lambda ev: "runlist-harness probe (the device node and its permissions, the render "
                   "group, the driver bound, XRT's XDNA plug-in); for permission: `sudo "
                   "usermod -aG render $USER`, then log in again (this changes the machine)"),
    Cause(
        "host-memory", "host memory: the memlock limit, the heap, a buffer the driver cannot "
        "allocate, pin or map",
        {**_BELOW, "time to failure": "at set-up (a buffer) or at once",
         "rate": "every trial at that size",
         "kernel log and firmware": "'Map host buffer failed', 'Failed to pin pages'; the "
                                    "shim's CREATE_BO failing (-ENOMEM); FastFlowLM: "
                                    "'Memlock limit is too low'; the device heap: 'Failed "
                                    "to alloc dev bo memory', 'Invalid dev bo size'"},
        stack_experiments.MEMLOCK_FALSIFIER,
        stack_judges.judge_host_memory,
        lambda ev: stack_experiments.host_memory_experiment(ev, _case(ev)),
        stack_experiments.host_memory_falsifier),
    Cause(
        "contention", "other clients hold or share the device (other processes' contexts, "
        "a server, the GPU)",
        {**_BELOW, "time to failure": "at set-up (no context left), or whenever they run",
         "rate": "while the others run",
         "kernel log and firmware": "a context refused though the run asks fewer than the "
                                    "device gives (MGMT_ERT_NOAVAIL, 'Not allow more than N "
                                    "context(s)'); other holders of /dev/accel"},
        "the failure stays with no other process on the device",
        context_judges.judge_contention,
        lambda ev: f"runlist-harness probe (who else holds the NPU); stop them, then "
                   f"runlist-harness run {_case(ev)} --plan 1 --trials 1"),
    Cause(
        "wrong-binary", "an xclbin or kernel built for another NPU generation",
        {**_BELOW, "time to failure": "at set-up (the context) or at once",
         "rate": "every trial with that binary",
         "kernel log and firmware": "'Invalid num_col', a partition outside the device; "
                                    "the shim: 'No valid DPU kernel found in xclbin'; an "
                                    "XDNA 2 pack on an XDNA 1 NPU"},
        "runs of the same binary complete on this NPU",
        stack_judges.judge_wrong_binary,
        lambda ev: "runlist-harness xclbin inspect XCLBIN (its partition's columns and the "
                   "device it was built for) beside runlist-harness probe (this NPU's "
                   "generation and columns)"),
)
CAUSES = CAUSES + STACK_CAUSES
IDS = tuple(cause.id for cause in CAUSES)


def predictions(cause: Cause) -> dict[str, Any]:
    return {observation: cause.predicts[observation] for observation in OBSERVATIONS}
