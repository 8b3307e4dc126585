"""XRT's own deep runlist as a control, on hardware, once the case has failed.

`xrt-smi validate --run runlist-latency` runs one runlist of 1000 NOP runs on XRT's
validate.xclbin (STACK.md 8). When a case's plan failed on the device, the run asks it
once, bounded in time (`harness.probe.xrt_smi.RUNLIST_LATENCY_TIMEOUT_S`), and the verdict
names its answer: XRT's own deep runlist passing on the same machine points at the case,
failing beside it at the stack. `--no-xrt-smi-validate` skips it (it runs work on the NPU).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.model.results import TrialStatus

if TYPE_CHECKING:
    from harness.report.model import Report

SECTION = "xrt_smi_control"


def wanted(report: Report, hardware: bool, allowed: bool) -> bool:
    """On the hardware path, allowed, not asked already (a continued run), and a plan of
    the case (not a control plan) failed on the device."""
    if not hardware or not allowed or SECTION in report.sections:
        return False
    return any(t.status is TrialStatus.FAILED for plan in report.plans if not plan.control
               for t in plan.trials)


def run_control(report: Report) -> dict[str, Any]:
    """Ask xrt-smi once and keep its answer in the report."""
    # imported here: every run asks `wanted`, only a failed one on hardware gets here
    from harness.probe import xrt_smi
    from harness.probe.readers import Sources
    bdf = (report.environment.get("npu") or {}).get("bdf")
    section = xrt_smi.runlist_latency(Sources.live(), bdf, xrt_smi.RUNLIST_LATENCY_TIMEOUT_S)
    report.sections[SECTION] = section
    return section
