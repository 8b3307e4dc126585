"""The amdxdna driver flavours, the kernels they are built for, and what each does about a
hang, in one table (STACK.md 4).

The probe names the loaded flavour, the simulator plays its rules, trial deadlines allow
for its worst case and the kernel-log reader knows what it prints: all read this module.

What a flavour does depends on the kernel too. Mainline (Linux `drivers/accel/amdxdna`):
before 6fb7f2988832 (in 6.18, backported to 6.17.y) a hung job ends ABORT like the rest
of its context, and a single non-chain run the driver cancels keeps the NEW it was
submitted with; since then the hung job ends TIMEOUT. 89ff45359abb (7.0, backported to
6.19.y) writes every failed command through `amdxdna_cmd_set_error`: error_index 0 for a
timeout and sub-command 0's payload overwritten with 0xFF. 7.0 prints nothing to the
kernel log on a timeout (the trace event "job timedout" only); 25854131c04a (7.1)
retrieves the context's debug information and prints the capture block. The staging
driver (xdna-driver `drivers/accel/amdxdna`, DKMS) uses drm_sched's NO_HANG on kernels
>= 6.17 (`HAVE_6_17_drm_gpu_sched_stat_no_hang`): a context's timer fires
tdr_timeout_ms after its last job push or completion, and `aie2_tdr_detect` declares a
hang only if no job started or completed anywhere on the device for tdr_timeout_ms;
older kernels run `aie2_tdr.c`'s legacy device-wide check. The out-of-tree legacy
driver (`src/driver/amdxdna`) has its own device watchdog on every kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

UNREADABLE = "unreadable"
TIMEOUT, ABORT, NEW = "TIMEOUT", "ABORT", "NEW"
KERNELS = ("6.16", "6.17", "7.0", "7.1")
DEFAULT_KERNEL = "7.0"          # the ROCm/FastFlowLM#712 machine runs Linux 7.0


@dataclass(frozen=True)
class Flavour:
    name: str
    rule: str                   # what it does about a hang, in words
    parameter: str | None       # the module parameter that sets the timeout, if any
    default: float              # that parameter's default (its unit: see `seconds`)
    unit_s: float               # seconds per unit of the parameter
    silent_checks: int          # how many timeout periods pass before a hang is declared
    log_prefix: str             # what its XDNA_ERR lines carry after "amdxdna BDF: "

    def seconds(self, setting: float | None = None) -> float:
        """The longest the driver takes to notice a hang, for this parameter setting."""
        return (setting if setting is not None else self.default) * self.unit_s \
            * self.silent_checks


FLAVOURS = {f.name: f for f in (
    Flavour("mainline", "drm_sched 60 s job timeout, not tunable; the hung job ends TIMEOUT "
                        "(ABORT before 6.17.y) and the rest of its context ABORT",
            None, 60.0, 1.0, 1, "[drm] *ERROR* "),
    Flavour("staging", "no job pushed or completed on the context for tdr_timeout_ms "
                       "(default 2000 ms) while nothing started or completed anywhere on the "
                       "device either (kernels >= 6.17; before, a device check every "
                       "tdr_timeout_ms): the faulting job ends TIMEOUT with health data, the "
                       "rest of the context ABORT", "tdr_timeout_ms", 2000.0, 0.001, 1,
            "[drm] *ERROR* "),
    Flavour("oot", "device-wide check every timeout_in_sec (default 2 s) that fires when no "
                   "job completed during two whole periods (4-6 s after the last completion; "
                   "0-2 s for a job started after an idle spell): every context is dumped, "
                   "stopped and restarted, every chain in flight ends TIMEOUT",
            "timeout_in_sec", 2.0, 1.0, 3, ""),
)}
SLOWEST = FLAVOURS["mainline"]

# How a hang is noticed.
JOB_TIMER = "job-timer"                 # drm_sched: per context, from its last push/completion
JOB_TIMER_DEVICE_STAMP = "job-timer+device-stamp"   # ... and no device-wide signal either
DEVICE_TWO_CHECKS = "device-two-checks"             # periodic device check, two silent ones
# What the driver writes over a failed command's payload.
PAYLOAD_KEPT = "kept"
PAYLOAD_FF = "0xFF over sub-command 0"
PAYLOAD_HEALTH_FF = "V1 health then 0xFF over sub-command 0"
PAYLOAD_HEALTH_FAILING = "V1 health over the timed-out sub-command, once per context"


@dataclass(frozen=True)
class DriverBuild:
    """One flavour built for one kernel: how it notices a hang and what it leaves behind."""

    flavour: str
    kernel: str
    detection: str
    period_s: float                 # the timer or check period
    signals: str                    # what counts as progress: "push+completion" | "completion"
    scope: str                      # "context" or "device": which contexts a hang resets
    hung_state: str                 # the job found hung
    others_state: str               # the other jobs in flight on a reset context
    single_cancelled: str           # a non-chain run cancelled by the reset
    timeout_index: str              # error_index of a timed-out chain: "0" | "run_list_id"
    payload: str                    # what a failed command's payload holds afterwards
    logs_capture: bool              # prints the "Firmware timeout state capture:" block
    source: str

    @property
    def name(self) -> str:
        return f"{self.flavour} on Linux {self.kernel}"

    @property
    def worst_seconds(self) -> float:
        """The longest a hang goes unnoticed: one timer period, or three check periods
        (the two silent ones after the one that saw the last signal)."""
        return self.period_s * (3 if self.detection == DEVICE_TWO_CHECKS else 1)


def driver_build(flavour: str, kernel: str = DEFAULT_KERNEL) -> DriverBuild:
    """What `flavour` does on `kernel` (one of KERNELS)."""
    new = kernel != "6.16"
    if flavour == "mainline":
        timeout = kernel != "6.16"            # 6fb7f2988832, in 6.17.y by backport
        filled = kernel in ("7.0", "7.1")     # 89ff45359abb
        return DriverBuild(
            flavour, kernel, JOB_TIMER, FLAVOURS["mainline"].default, "push+completion",
            "context", TIMEOUT if timeout else ABORT, ABORT, ABORT if timeout else NEW, "0",
            PAYLOAD_FF if filled else PAYLOAD_KEPT, kernel == "7.1",
            "Linux drivers/accel/amdxdna aie2_ctx.c aie2_sched_job_timedout, "
            "aie2_sched_cmdlist_resp_handler; 6fb7f2988832 (TIMEOUT), 89ff45359abb "
            "(amdxdna_cmd_set_error), 25854131c04a (7.1: debug information)")
    if flavour == "staging":
        return DriverBuild(
            flavour, kernel, JOB_TIMER_DEVICE_STAMP if new else DEVICE_TWO_CHECKS,
            FLAVOURS["staging"].default * FLAVOURS["staging"].unit_s, "push+completion",
            "context" if new else "device",
            TIMEOUT, ABORT, ABORT, "run_list_id", PAYLOAD_HEALTH_FF, True,
            "amd/xdna-driver drivers/accel/amdxdna aie2_ctx.c aie2_sched_job_timedout, "
            "aie2_tdr_detect, aie2_set_cmd_timeout; amdxdna_ctx.c amdxdna_cmd_set_error"
            + ("" if new else "; aie2_tdr.c (kernels before 6.17)"))
    if flavour == "oot":
        return DriverBuild(
            flavour, kernel, DEVICE_TWO_CHECKS, FLAVOURS["oot"].default, "completion",
            "device", TIMEOUT, TIMEOUT, TIMEOUT, "run_list_id", PAYLOAD_HEALTH_FAILING, True,
            "amd/xdna-driver src/driver/amdxdna aie2_tdr.c aie2_tdr_work, "
            "aie2_ctx_runqueue.c aie2_rq_is_all_context_stuck, aie2_ctx.c aie2_dump_ctx, "
            "aie2_sched_cmdlist_resp_handler, aie2_ctx_cmd_health_data")
    raise ValueError(f"unknown driver flavour {flavour!r}")


def timeout_seconds(facts: dict[str, Any]) -> float | None:
    """How long the probed driver takes, at most, to notice a hang (None: flavour unknown)."""
    flavour = FLAVOURS.get(facts.get("flavour") or "")
    if flavour is None:
        return None
    setting = facts.get("timeout_setting")
    try:
        value = float(setting) if setting not in (None, UNREADABLE) else None
    except ValueError:
        value = None
    return flavour.seconds(value)
