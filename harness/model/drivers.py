"""The amdxdna driver flavours, the kernels they are built for, and what each does about a
hang, in one table (STACK.md 4).

The probe names the loaded flavour, the simulator plays its rules, trial deadlines allow
for its worst case and the kernel-log reader knows what it prints: all read this module.

What a flavour does depends on the kernel release too, as released: a change reaches a
stable series as a backport in one of its point releases, so 6.18.0 and 6.18.3 differ.
Mainline (Linux `drivers/accel/amdxdna`): before 6fb7f2988832 (6.19; 6.18.2 and 6.17.13
by backport) a hung job ends ABORT like the rest of its context, and a single non-chain
run the driver cancels keeps the NEW it was submitted with; since then the hung job ends
TIMEOUT. 89ff45359abb (7.0; 6.19.7 by backport) writes every failed command through
`amdxdna_cmd_set_error`: error_index 0 for a timeout and sub-command 0's payload
overwritten with 0xFF. 7.0 prints nothing to the kernel log on a timeout (the trace event
"job timedout" only); 25854131c04a (7.1; the out-of-tree f13c7f41) asks the firmware for
its app health report, prints the capture block, takes the failing index from the
report's run_list_id and writes the version-1 health data over sub-command 0. The staging
driver (xdna-driver `drivers/accel/amdxdna`, DKMS) uses drm_sched's NO_HANG on kernels
>= 6.17 (`HAVE_6_17_drm_gpu_sched_stat_no_hang`): a context's timer fires
tdr_timeout_ms after its last job push or completion, and `aie2_tdr_detect` declares a
hang only if no job started or completed anywhere on the device for tdr_timeout_ms;
older kernels run `aie2_tdr.c`'s legacy device-wide check. The out-of-tree legacy
driver (`src/driver/amdxdna`) has its own device watchdog on every kernel, and counts a
submit as progress as it counts a completion (`reset_tdr_timer`, 1471fd97).

Whether a driver that asks for the app health report gets one is the firmware's
(`harness.model.firmware`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

UNREADABLE = "unreadable"
TIMEOUT, ABORT, NEW = "TIMEOUT", "ABORT", "NEW"
# Jobs in flight per hardware context (CTX_MAX_CMDS / HWCTX_MAX_CMDS, the size of the
# context's job semaphore): the next submit blocks in the ioctl until one ends.
JOBS_IN_FLIGHT = 4
KERNELS = ("6.16", "6.17", "6.18", "6.19", "7.0", "7.1")   # the series modelled
DEFAULT_KERNEL = "7.0"          # the ROCm/FastFlowLM#712 machine runs Linux 7.0
_RELEASE = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def kernel_release(text: str) -> tuple[int, int, int] | None:
    """``6.18.3`` -> (6, 18, 3); ``7.0`` is the release Linus tagged, 7.0.0. None for
    anything else, or a series the simulator does not model."""
    match = _RELEASE.fullmatch(text.strip())
    if not match or f"{match[1]}.{match[2]}" not in KERNELS:
        return None
    return int(match[1]), int(match[2]), int(match[3] or 0)


@dataclass(frozen=True)
class KernelChange:
    """A mainline commit, the release it first shipped in, and the stable point releases
    its backports reached (series -> first patch level), from the stable-list mails."""

    commit: str
    what: str
    mainline: tuple[int, int]
    backports: dict[tuple[int, int], int] = field(default_factory=dict)
    source: str = ""

    def in_release(self, release: tuple[int, int, int]) -> bool:
        series = release[:2]
        if series >= self.mainline:
            return True
        first = self.backports.get(series)
        return first is not None and release[2] >= first


# The review series name the release ("[PATCH 6.18 000/614] 6.18.2-rc1 review"); the
# simulator assumes a patch in an -rc1 review reached that release.
TIMEOUT_STATE = KernelChange(
    "6fb7f2988832", "the timed-out job ends TIMEOUT (ABORT before)", (6, 19),
    {(6, 17): 13, (6, 18): 2},
    "stable review mails 2025-12-16: '[PATCH 6.17 143/507]' of the 6.17.13-rc1 review and "
    "'[PATCH 6.18 167/614]' of the 6.18.2-rc1 review (assumed to reach those releases)")
FILLED_PAYLOAD = KernelChange(
    "89ff45359abb", "a failed command's payload filled with 0xFF (amdxdna_cmd_set_error)",
    (7, 0), {(6, 19): 7},
    "stable review mail 2026-03-10: '[PATCH 6.19 208/311]' of the 6.19.7-rc1 review "
    "(assumed to reach 6.19.7)")
APP_HEALTH_QUERY = KernelChange(
    "25854131c04a", "asks the firmware for its app health report on a timeout", (7, 1), {},
    "no stable backport found in the stable-list mails; assumed 7.1 on")
CHANGES = (TIMEOUT_STATE, FILLED_PAYLOAD, APP_HEALTH_QUERY)


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
                        "(ABORT before 6.19, 6.18.2 and 6.17.13) and the rest of its "
                        "context ABORT",
            None, 60.0, 1.0, 1, "[drm] *ERROR* "),
    Flavour("staging", "no job pushed or completed on the context for tdr_timeout_ms "
                       "(default 2000 ms) while nothing started or completed anywhere on the "
                       "device either (kernels >= 6.17; before, a device check every "
                       "tdr_timeout_ms): the faulting job ends TIMEOUT with health data (from a "
                       "firmware that reports it), the rest of the context ABORT",
            "tdr_timeout_ms", 2000.0, 0.001, 1,
            "[drm] *ERROR* "),
    Flavour("oot", "device-wide check every timeout_in_sec (default 2 s) that fires when no "
                   "job was submitted or completed during two whole periods (4-6 s after "
                   "the last submit or completion, a first job after an idle spell "
                   "included): every context is dumped, stopped and restarted, every chain "
                   "in flight ends TIMEOUT",
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
PAYLOAD_HEALTH_FAILING = "the context's last report (zeros before one) over the timed-out " \
    "sub-command, once per report"


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
    asks_health: bool               # asks the firmware's app health report on a timeout
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
    """What `flavour` does on `kernel`: a release (``6.18.3``) or a series (``6.18``, its
    first release) of one of KERNELS."""
    release = kernel_release(kernel)
    if release is None:
        raise ValueError(f"unknown kernel release {kernel!r}")
    new = release[:2] >= (6, 17)           # HAVE_6_17_drm_gpu_sched_stat_no_hang
    if flavour == "mainline":
        timeout = TIMEOUT_STATE.in_release(release)
        filled = FILLED_PAYLOAD.in_release(release)
        health = APP_HEALTH_QUERY.in_release(release)
        return DriverBuild(
            flavour, kernel, JOB_TIMER, FLAVOURS["mainline"].default, "push+completion",
            "context", TIMEOUT if timeout else ABORT, ABORT, ABORT if timeout else NEW,
            "run_list_id" if health else "0",
            PAYLOAD_HEALTH_FF if health else PAYLOAD_FF if filled else PAYLOAD_KEPT, health,
            "Linux drivers/accel/amdxdna aie2_ctx.c aie2_sched_job_timedout, "
            "aie2_sched_cmdlist_resp_handler; 6fb7f2988832 (TIMEOUT), 89ff45359abb "
            "(amdxdna_cmd_set_error), 25854131c04a (7.1: app health, as xdna-driver "
            "f13c7f41 aie2_set_cmd_timeout)")
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
            flavour, kernel, DEVICE_TWO_CHECKS, FLAVOURS["oot"].default, "push+completion",
            "device", TIMEOUT, TIMEOUT, TIMEOUT, "run_list_id", PAYLOAD_HEALTH_FAILING, True,
            "amd/xdna-driver src/driver/amdxdna aie2_tdr.c aie2_tdr_work, "
            "aie2_ctx_runqueue.c aie2_rq_is_all_context_stuck, aie2_ctx.c aie2_dump_ctx, "
            "aie2_cmd_submit and aie2_sched_notify reset_tdr_timer (1471fd97), "
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
