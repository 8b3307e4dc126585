"""The amdxdna driver flavours, the kernels they are built for, and what each does about a
hang, in one table (STACK.md 4).

The probe names the loaded flavour, the simulator plays its rules, trial deadlines allow
for its worst case and the kernel-log reader knows what it prints: all read this module,
and none of them names a flavour. A flavour is one `Flavour` row (how it is recognised,
its timeout parameter, the limits and names the simulator plays, how its log lines look,
its rule in words with its source) and one build function (what it does on each kernel);
adding a flavour is adding those here.

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
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from harness.model import heap, trace_tree, wedge
from harness.model.firmware import Protocol, single_protocol_refusal
from harness.model.heap import HeapRule
from harness.model.printed import Printed
from harness.model.text_enum import TextEnum
from harness.model.trace_tree import TraceTree
from harness.model.wedge import WedgeRule

UNREADABLE = "unreadable"
TIMEOUT, ABORT, NEW = "TIMEOUT", "ABORT", "NEW"
# Jobs in flight per hardware context (CTX_MAX_CMDS / HWCTX_MAX_CMDS, the size of the
# context's job semaphore): the next submit blocks in the ioctl until one ends.
JOBS_IN_FLIGHT = 4
KERNELS = ("6.16", "6.17", "6.18", "6.19", "7.0", "7.1")   # the series modelled
# The most contexts a device keeps connected at once: each holds one of the firmware's
# hardware contexts, hwctx_limit of them (16 on npu4/5/6, npu4_family.h; 6 on npu1,
# npu1_regs.c; amd/xdna-driver 856409ca src/driver/amdxdna, aie2_ctx_runqueue.c
# part->max_hwctx): the bound of the legacy tree's idle-context skips
MOST_CONNECTED = 16
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
FIRMWARE_TABLE = KernelChange(
    "f1eac46fe5f7", "firmware of several protocol majors accepted (protocol 7 on npu4/5/6; "
    "before, the device's one protocol: 1.1.2.64/65, protocol 7.2, refused at probe)",
    (7, 0), {},
    "merged for 7.0; no stable backport found in the stable-list mails, and public logs "
    "show 6.18.9, 6.18.13, 6.19.3 and 6.19.6 refusing protocol 7.2 (dri-devel 2026-03, "
    "Debian 6.19.6; a CachyOS 6.19.6 report)")
FORCE_CMDLIST = KernelChange(
    "c68a6af400ca", "force_cmdlist defaults to true: a single command goes to the firmware "
    "as a one-slot command list (aie2_cmdlist_single_execbuf), the chain's slot rules with it",
    (7, 0), {(6, 19): 7},
    "Linux 7.0 as amd/xdna-driver 234824b1 imports it (aie2_ctx.c 'static bool "
    "force_cmdlist = true'); stable review mail 2026-03-10: '[PATCH 6.19 033/311] "
    "accel/amdxdna: Switch to always use chained command' of the 6.19.7-rc1 review "
    "(assumed to reach 6.19.7)")
TEMPORAL_ONLY = KernelChange(
    "7818618a09a0", "temporal sharing only: with AIE2_TEMPORAL_ONLY firmware (npu4/5/6 from "
    "protocol 6.12) aie2_alloc_resource creates the context itself, without the resource "
    "solver (so a refused context logs no aie2_xrs_load or aie2_alloc_resource line)",
    (7, 0), {(6, 19): 4},
    "Linux 7.0 as amd/xdna-driver 234824b1 imports it (aie2_ctx.c aie2_alloc_resource); "
    "stable review mail 2026-02-24: '[PATCH 6.19 299/781] accel/amdxdna: Enable temporal "
    "sharing only mode' of the 6.19.4-rc1 review, in the linux-6.19.y push of 2026-02-26 "
    "(assumed to reach 6.19.4); before it the enum has no AIE2_TEMPORAL_ONLY")
CHANGES = (FIRMWARE_TABLE, TIMEOUT_STATE, TEMPORAL_ONLY, FILLED_PAYLOAD, FORCE_CMDLIST,
           APP_HEALTH_QUERY)


class Detection(TextEnum):
    """How a driver build notices a hang."""

    JOB_TIMER = "job-timer"                  # drm_sched: per context, from its last push/completion
    JOB_TIMER_DEVICE_STAMP = "job-timer+device-stamp"   # ... and no device-wide signal either
    DEVICE_TWO_CHECKS = "device-two-checks"             # periodic device check, two silent ones


JOB_TIMER = Detection.JOB_TIMER
JOB_TIMER_DEVICE_STAMP = Detection.JOB_TIMER_DEVICE_STAMP
DEVICE_TWO_CHECKS = Detection.DEVICE_TWO_CHECKS
# What the driver writes over a failed command's payload.
PAYLOAD_KEPT = "kept"
PAYLOAD_FF = "0xFF over sub-command 0"
PAYLOAD_HEALTH_FF = "V1 health then 0xFF over sub-command 0"
PAYLOAD_HEALTH_FAILING = "the context's last report (zeros before one) over the timed-out " \
    "sub-command, once per report"
# How a tree's XDNA_ERR / XDNA_WARN lines look (amdxdna_pci_drv.h, amdxdna_drm.h):
# "amdxdna BDF: [drm] *ERROR* func: text" through drm_err, or "amdxdna BDF: func: text"
# through dev_err_ratelimited (harness.logs.driver_lines reads both).
DRM, LEGACY = "drm", "legacy"


@dataclass(frozen=True)
class DriverBuild:
    """One flavour built for one kernel: how it notices a hang and what it leaves behind."""

    flavour: str
    kernel: str
    detection: Detection
    period_s: float                 # the timer or check period
    signals: str                    # what counts as progress: "push+completion" | "completion"
    hung_state: str                 # the job found hung
    others_state: str               # the other jobs in flight on a reset context
    single_cancelled: str           # a non-chain run cancelled by the reset
    timeout_index: str              # error_index of a timed-out chain: "0" | "run_list_id"
    timeout_index_why: str          # what it does that gives that index, in words
    payload: str                    # what a failed command's payload holds afterwards
    asks_health: bool               # asks the firmware's app health report on a timeout
    source: str
    timeout_lines: tuple[Printed, ...] = ()   # printed when a context's job timer fires
    check_lines: tuple[Printed, ...] = ()     # printed when the device check finds it silent
    dumps_contexts: bool = False    # that check dumps, stops and restarts every context
    idle_check_passes: bool = False  # that check takes an idle device for one making progress
    single_protocol: bool = False   # accepts only its device's one firmware protocol
    single_cmdlist: bool = True     # a single command goes out as a one-slot command list
    timeout_needs_report: bool = False  # the hung job ends hung_state only with a report
    # with AIE2_TEMPORAL_ONLY firmware a context is created without the resource solver
    # (so a refusal logs no solver lines)
    temporal_skips_solver: bool = False
    # what DRM_IOCTL_VERSION answers (amdxdna_drm_drv .major/.minor): FastFlowLM gates on it
    drm_version: tuple[int, int] = (0, 0)
    # writes a timed-out or aborted chain's error_index; else the chain buffer keeps what
    # was there (XRT zeroes it once, when a runlist makes it, and reuses it)
    writes_timeout_index: bool = True
    # the legacy tree's check is skipped on the pass where another connected context
    # reaches RQ_CTX_IDLE_COUNT idle checks (aie2_tdr.c aie2_tdr_detect ->
    # aie2_rq_handle_idle_ctx): a hang can be declared one check later for each other
    # connected context that goes idle at a check of its own
    idle_context_skips: bool = False

    def refuses_firmware(self, npu4_class: bool, protocol: Protocol | None
                         ) -> tuple[Printed, ...]:
        """What this build prints when it refuses the firmware at probe, leaving no
        /dev/accel node (empty: it accepts it). Kernel.org mainline before f1eac46fe5f7:
        `aie2_check_protocol`, then each caller on the way out, as a public log of Debian's
        6.19.6 shows them (dri-devel 2026-03)."""
        refusal = single_protocol_refusal(npu4_class, protocol) if self.single_protocol \
            else None
        if refusal is None:
            return ()
        return (Printed("err", "aie2_check_protocol", refusal),
                Printed("err", "aie2_hw_start", "firmware is not alive"),
                Printed("err", "aie2_smu_exec", "smu cmd 4 failed, 0xff"),
                Printed("err", "aie2_smu_fini", "Power off failed, ret -22"),
                Printed("err", "aie2_init", "start npu failed, ret -22"),
                Printed("err", "amdxdna_probe", "Hardware init failed, ret -22"),
                Printed("dev", "", "probe with driver amdxdna failed with error -22"))

    @property
    def name(self) -> str:
        return f"{self.flavour} on Linux {self.kernel}"

    @property
    def worst_seconds(self) -> float:
        """The longest a hang goes unnoticed, whatever else is on the device: one timer
        period, or three check periods (the two silent ones after the one that saw the last
        signal) and, in the legacy tree, a check more for each other context it can keep
        connected (`worst_seconds_with`, at the device's most)."""
        return self.worst_seconds_with(MOST_CONNECTED)

    def worst_seconds_with(self, contexts: int) -> float:
        """The longest a hang goes unnoticed with `contexts` connected contexts, the hung
        one among them. In the legacy tree each other one that had work and went idle
        reaches RQ_CTX_IDLE_COUNT at a check of its own and is swapped out there, and that
        check declares nothing (aie2_tdr_detect): staggered, each adds a check (2 s: 8 s
        beside one, 12 s with FastFlowLM's four); a context swapped out stays out until it
        has work, which is progress, so it skips no second check."""
        if self.detection != DEVICE_TWO_CHECKS:
            return self.period_s
        others = max(0, min(contexts, MOST_CONNECTED) - 1) if self.idle_context_skips else 0
        return self.period_s * (3 + others)

    @property
    def earliest_seconds(self) -> float:
        """The soonest a hang is declared after the last job push or completion: one timer
        period, or two whole silent check periods."""
        return self.period_s * (2 if self.detection == DEVICE_TWO_CHECKS else 1)

    def with_period(self, seconds: float) -> DriverBuild:
        """This build with its timeout parameter set otherwise (a machine's setting)."""
        return replace(self, period_s=seconds)


@dataclass(frozen=True)
class Flavour:
    """One amdxdna flavour: everything the harness knows of it, in one row. How the probe
    knows it (`module`, `parameter`, `dkms`), what it does about a hang on each kernel
    (`build`), the limits and names the simulator plays, how its kernel-log lines look,
    and its rule in words with where it was read (`sim profiles` lists both)."""

    name: str
    title: str                  # what it is, for `sim profiles`
    called: str                 # "the <called> driver", in messages
    rule: str                   # what it does about a hang, in words (the probe says it)
    parameter: str | None       # the module parameter that sets the timeout, if any
    default: float              # that parameter's default (its unit: see `seconds`)
    unit_s: float               # seconds per unit of the parameter
    silent_checks: int          # how many timeout periods pass before a hang is declared
    build: Callable[[Flavour, str, tuple[int, int, int]], DriverBuild]   # on one kernel
    played: str                 # the rule as the simulator plays it, kernel by kernel
    source: str                 # where `played` was read
    module: str | None = None   # a module name of its own (None: it loads as amdxdna)
    dkms: bool = False          # built out of tree: a version file, under updates/ or extra/
    log_tree: str = DRM         # how its kernel-log lines look (DRM or LEGACY)
    chain_cap: int | None = None        # sub-commands a chain may hold, past the 4 KiB buffer
    context_prefix: str = "hwctx"       # its contexts' names: <prefix>.<pid>.<id>
    virtual_contexts: bool = False      # refuses contexts itself, past the device's ctx_limit
    mailbox_function: str = "aie2_send_mgmt_msg_wait"   # logs a refused mailbox command
    # its module parameters as it defines them (module_param): name, default as sysfs
    # shows it, and its mode (0444/0644 a normal user may read; 0400/0600 only root).
    # A default may name {force_cmdlist} (Y or N, the build's),
    # {hwctx_limit} or {ctx_limit} (the device's), which the legacy tree writes back into
    # its parameters once it knows them (aie2_ctx_runqueue.c aie2_rq_init)
    parameters: tuple[tuple[str, str, int], ...] = ()
    module_version: str | None = None   # MODULE_VERSION, where it sets one
    # its device heap (harness.model.heap), by whether the device is npu4-class
    heap: Callable[[bool], HeapRule] = lambda npu4_class: heap.IN_TREE
    # what it does when the firmware stops taking contexts (harness.model.wedge)
    wedge: WedgeRule = wedge.IN_TREE
    # the xdna_job trace events it emits (harness.model.trace_tree)
    trace: TraceTree = trace_tree.IN_TREE
    # the most checks idle connected contexts can make it skip before it declares a hang
    # (the legacy tree: one for each other connected context, DriverBuild.worst_seconds_with)
    idle_skips: int = 0

    def seconds(self, setting: float | None = None) -> float:
        """The longest the driver takes to notice a hang, for this parameter setting (with
        the checks idle contexts make it skip, at the device's most)."""
        return (setting if setting is not None else self.default) * self.unit_s \
            * (self.silent_checks + self.idle_skips)


_RUN_LIST_ID = "reports the firmware's run_list_id as error_index"
# force_cmdlist as sysfs prints a bool: true in staging and the legacy tree (aie2_ctx.c at
# 856409ca, mode 0600) and in mainline from c68a6af400ca (FORCE_CMDLIST)
FORCE_CMDLIST_VALUE = "{force_cmdlist}"


# What kernel.org's amdxdna_pci_drv.c answers DRM_IOCTL_VERSION with, by the series whose
# merge window took each AMDXDNA_DRIVER_MINOR bump (the defines themselves came with 0.1)
MAINLINE_DRM_VERSIONS = (((7, 1), (0, 8)), ((6, 19), (0, 6)), ((6, 18), (0, 1)))
MAINLINE_DRM_SOURCE = (
    "no version before 'accel/amdxdna: Add ioctl DRM_IOCTL_AMDXDNA_GET_ARRAY' (dri-devel "
    "2025-09-02, '0.0: Initial version', '0.1'; 6.18: ROCm/FastFlowLM#536 flm validate on "
    "6.18.10 and amd/IRON#43 xrt-smi on 6.18.0 read 0.1); 0.6 from 3a0ff7b98af4 'Support "
    "preemption requests' (in 6.19, whose 6.19.7 backport of c68a6af400ca fixes it; 7.0 "
    "as xdna-driver 234824b1 imports it); 0.7 (81ad428e) and 0.8 (de954711, BO usage) "
    "in the xdna-driver tree in March 2026, and noamsto/nix-amd-ai#79 reads 0.8 from 7.1.3")


def mainline_drm_version(release: tuple[int, int, int]) -> tuple[int, int]:
    """The in-tree driver's DRM version on a kernel.org release (a distribution kernel may
    carry later bumps: the #712 machine's Ubuntu 7.0.0-31 reports 0.7)."""
    for series, version in MAINLINE_DRM_VERSIONS:
        if release[:2] >= series:
            return version
    return (0, 0)


def _mainline_build(row: Flavour, kernel: str, release: tuple[int, int, int]) -> DriverBuild:
    timeout = TIMEOUT_STATE.in_release(release)
    filled = FILLED_PAYLOAD.in_release(release)
    health = APP_HEALTH_QUERY.in_release(release)
    return DriverBuild(
        row.name, kernel, JOB_TIMER, row.default * row.unit_s, "push+completion",
        TIMEOUT if timeout else ABORT, ABORT, ABORT if timeout else NEW,
        "run_list_id" if health else "0",
        _RUN_LIST_ID if health else
        "ends a timed-out chain with error_index 0 (drm_sched's timeout, "
        "amdxdna_cmd_set_error)" if filled else
        "ends a timed-out chain without writing error_index (before 89ff45359abb): XRT "
        "reads what the chain buffer held, 0 in a new runlist" if timeout else
        "ends the hung job ABORT without writing error_index (before 6fb7f2988832): XRT "
        "reads what the chain buffer held, 0 in a new runlist",
        PAYLOAD_HEALTH_FF if health else PAYLOAD_FF if filled else PAYLOAD_KEPT, health,
        "Linux drivers/accel/amdxdna aie2_ctx.c aie2_sched_job_timedout, "
        "aie2_sched_cmdlist_resp_handler; 6fb7f2988832 (TIMEOUT), 89ff45359abb "
        "(amdxdna_cmd_set_error), 25854131c04a (7.1: app health, as xdna-driver "
        "f13c7f41 aie2_set_cmd_timeout)",
        single_protocol=not FIRMWARE_TABLE.in_release(release),
        single_cmdlist=FORCE_CMDLIST.in_release(release),
        # aie2_ctx.c aie2_alloc_resource from 7818618a09a0 (7.0; 6.19.4); before it every
        # context goes through the solver
        temporal_skips_solver=TEMPORAL_ONLY.in_release(release),
        # before 89ff45359abb only a firmware error's response writes error_index
        writes_timeout_index=filled,
        drm_version=mainline_drm_version(release))


def _staging_build(row: Flavour, kernel: str, release: tuple[int, int, int]) -> DriverBuild:
    new = release[:2] >= (6, 17)           # HAVE_6_17_drm_gpu_sched_stat_no_hang
    return DriverBuild(
        row.name, kernel, JOB_TIMER_DEVICE_STAMP if new else DEVICE_TWO_CHECKS,
        row.default * row.unit_s, "push+completion", TIMEOUT, ABORT, ABORT, "run_list_id",
        _RUN_LIST_ID, PAYLOAD_HEALTH_FF, True,
        "amd/xdna-driver drivers/accel/amdxdna aie2_ctx.c aie2_sched_job_timedout, "
        "aie2_tdr_detect, aie2_set_cmd_timeout; amdxdna_ctx.c amdxdna_cmd_set_error"
        + ("" if new else "; aie2_tdr.c aie2_tdr_stop_hwctx (kernels before 6.17)"),
        timeout_lines=(Printed("err", "aie2_tdr_detect", "TDR timeout detected"),)
        if new else (),
        check_lines=() if new else (
            Printed("err", "aie2_legacy_tdr_detect", "TDR timeout detected"),
            Printed("warn", "aie2_tdr_work_func", "Device isn't making progress")),
        # aie2_legacy_tdr_detect: no false positive when idle
        idle_check_passes=not new,
        # aie2_tdr.c aie2_tdr_stop_hwctx marks the first pending job timed out only when
        # aie2_query_app_health answered; without a report the stop cancels it (ABORT)
        timeout_needs_report=not new,
        drm_version=(0, 16))             # amdxdna_pci_drv.c at 856409ca


def _legacy_build(row: Flavour, kernel: str, release: tuple[int, int, int]) -> DriverBuild:
    return DriverBuild(
        row.name, kernel, DEVICE_TWO_CHECKS, row.default * row.unit_s, "push+completion",
        TIMEOUT, TIMEOUT, TIMEOUT, "run_list_id", _RUN_LIST_ID,
        PAYLOAD_HEALTH_FAILING, True,
        "amd/xdna-driver src/driver/amdxdna aie2_tdr.c aie2_tdr_work, "
        "aie2_ctx_runqueue.c aie2_rq_is_all_context_stuck, aie2_ctx.c aie2_dump_ctx, "
        "aie2_cmd_submit and aie2_sched_notify reset_tdr_timer (1471fd97), "
        "aie2_sched_cmdlist_resp_handler, aie2_ctx_cmd_health_data",
        check_lines=(Printed("warn", "aie2_tdr_work", "Device isn't making progress... "
                                                      "Count {count} timeout {timeout} "
                                                      "dump_only 0"),),
        dumps_contexts=True, idle_context_skips=True,
        drm_version=(1, 0))              # src/include/uapi/drm_local/amdxdna_accel.h


# The legacy tree's parameters as its PCI build defines them (856409ca src/driver/amdxdna,
# Kbuild: the amdxdna-y and PCI objects; AMDXDNA_DEVEL, which the Makefile always defines,
# adds mailbox_polling; the ve2 objects are the OF build's): name, sysfs default, mode
LEGACY_PARAMETERS = (
    ("aie2_control_flags", "0", 0o400), ("aie2_max_col", "128", 0o600),       # aie2_pci.c
    ("aie4_ctx_hysteresis_us", "1000", 0o644), ("aie4_max_col", "128", 0o600),  # aie4_pci.c
    ("autosuspend_ms", "5000", 0o644),                                     # amdxdna_pm.c
    ("carvedout_addr", "0", 0o444), ("carvedout_size", "0", 0o444),  # amdxdna_carvedout_buf.c
    ("context_limit", "{ctx_limit}", 0o444),                           # aie2_ctx_runqueue.c
    ("disable_fine_preemption", "N", 0o600),                               # aie2_pci.c
    ("enable_aie4_polling", "0", 0o644),                                   # aie4_pci.c
    ("force_cmdlist", FORCE_CMDLIST_VALUE, 0o600),                         # aie2_ctx.c
    ("force_iova", "N", 0o600),                                            # amdxdna_iommu.c
    ("fw_log_level", "0", 0o444), ("fw_log_size", "4194304", 0o444),      # amdxdna_dpt.c
    ("fw_reload", "0", 0o644),                                             # aie4_pci.c
    ("fw_trace_categories", "0", 0o444), ("fw_trace_size", "4194304", 0o444),
    ("hwctx_limit", "{hwctx_limit}", 0o444),                           # aie2_ctx_runqueue.c
    ("hws_debug_mode", "0", 0o644),                                        # aie4_pci.c
    ("kernel_mode_submission", "1", 0o600),                                # aie4_hwctx.c
    ("mailbox_polling", "0", 0o444),                                       # amdxdna_mailbox.c
    ("poll_fw_trace", "N", 0o444),                                         # amdxdna_dpt.c
    ("priv_load", "N", 0o644), ("start_col_index", "-1", 0o600),          # amdxdna_devel.c
    ("skip_fw_load", "0", 0o644), ("skip_work_buffer", "0", 0o644),       # aie4_pci.c
    ("sys_eff_factor", "2", 0o444),                                        # aie2_pm.c
    ("tdr_dump_ctx", "N", 0o644), ("timeout_in_sec", "2", 0o644),         # aie2_tdr.c
    ("time_quantum_ms", "30", 0o400),                                      # aie2_pci.c
    ("wait_update_parts", "Y", 0o600),                                 # aie2_ctx_runqueue.c
)
_STAGING = "amd/xdna-driver drivers/accel/amdxdna"
_LEGACY = "amd/xdna-driver src/driver/amdxdna"
_MAINLINE = "Linux drivers/accel/amdxdna"
# Linux's driver as amd/xdna-driver imports it (234824b1, "take drm-misc-fixes"; f13c7f41
# is 25854131c04a): where the mainline text is read
_MAINLINE_TREE = "amd/xdna-driver f13c7f41 drivers/accel/amdxdna"

# The default flavour first: `sim profiles` lists them in this order.
FLAVOURS = {f.name: f for f in (
    Flavour(
        "mainline", "in-tree amdxdna", "in-tree",
        "drm_sched 60 s job timeout, not tunable; the hung job ends TIMEOUT (ABORT before "
        "6.19, 6.18.2 and 6.17.13) and the rest of its context ABORT",
        None, 60.0, 1.0, 1, _mainline_build,
        "mainline, as released: drm_sched's 60 s timer per context, re-armed at every job "
        "push and completion; the hung job ends ABORT before 6fb7f2988832 (a single "
        "non-chain run the reset cancels stays NEW) and TIMEOUT with it (6.19; 6.17.13 and "
        "6.18.2 by stable backport, so 6.17.0 and 6.18.0 give ABORT), the rest of the "
        "context ABORT; before 89ff45359abb a timeout or abort writes no error_index, so XRT "
        "reads what the chain buffer held (0 in a new runlist, an earlier firmware error's "
        "index in one executed again); from 89ff45359abb (7.0; 6.19.7) every failed command "
        "goes through amdxdna_cmd_set_error: error_index 0, sub-command 0's payload (a single "
        "run's own) filled with 0xFF; 7.0 logs nothing on a timeout; 7.1 (25854131c04a) asks the "
        "firmware's app health report and, given one, prints the capture block, takes "
        "error_index from its run_list_id and writes its version-1 health data over "
        "sub-command 0 before the 0xFF, so XRT's message carries the health lines",
        f"{_MAINLINE} aie2_ctx.c aie2_sched_job_timedout, aie2_sched_resp_handler, "
        "aie2_sched_cmdlist_resp_handler; amdxdna_ctx.c amdxdna_cmd_set_error "
        "(89ff45359abb); Xilinx/XRT xrt_kernel.cpp runlist_impl::create_exec_buf and submit "
        "(the chain buffer zeroed once, then reused); "
        f"{_MAINLINE_TREE} aie2_ctx.c aie2_set_cmd_timeout; stable review mails "
        "'[PATCH 6.17 143/507]' (6.17.13-rc1), '[PATCH 6.18 167/614]' (6.18.2-rc1), "
        "'[PATCH 6.19 208/311]' (6.19.7-rc1), each assumed to reach its release; no "
        "backport of 25854131c04a found",
        parameters=(("aie2_max_col", "128", 0o600),
                    ("force_cmdlist", FORCE_CMDLIST_VALUE, 0o600))),
    Flavour(
        "staging", "DKMS amdxdna.ko", "staging",
        "no job pushed or completed on the context for tdr_timeout_ms (default 2000 ms) "
        "while nothing started or completed anywhere on the device either (kernels >= "
        "6.17; before, a device check every tdr_timeout_ms): the faulting job ends TIMEOUT "
        "with health data (from a firmware that reports it; before 6.17 ABORT without a "
        "report), the rest of the context ABORT",
        "tdr_timeout_ms", 2000.0, 0.001, 1, _staging_build,
        "staging on kernels >= 6.17: a context's timer fires tdr_timeout_ms (2000) after its "
        "last job push or completion; aie2_tdr_detect then declares a hang only if no job "
        "started or completed anywhere on the device for tdr_timeout_ms (else NO_HANG and "
        "the timer restarts), so one chain longer than 2 s times out though its "
        "sub-commands progress; before 6.17 the legacy check runs every tdr_timeout_ms and "
        "fires after two periods without a push or completion, resetting every context. The "
        "hung job ends TIMEOUT, error_index the firmware's run_list_id, the version-1 health "
        "data and then 0xFF written over sub-command 0 (not the failing run; 0xFF alone, "
        "error_index 0, when the firmware gives no report); the rest ABORT with "
        "sub-command 0 filled with 0xFF; before 6.17 the hung job ends TIMEOUT only when "
        "the firmware gave a report (aie2_tdr_stop_hwctx), ABORT with 0xFF without one",
        f"{_STAGING} aie2_ctx.c aie2_tdr_signal, aie2_tdr_detect, aie2_sched_job_timedout, "
        "aie2_set_cmd_timeout; aie2_tdr.c aie2_legacy_tdr_detect, aie2_tdr_stop_hwctx; "
        "amdxdna_ctx.c amdxdna_cmd_set_error (856409ca)",
        dkms=True, mailbox_function="aie_send_mgmt_msg_wait",
        parameters=(("aie2_max_col", "128", 0o600), ("force_cmdlist", FORCE_CMDLIST_VALUE,
                                                      0o600),
                    ("force_iova", "N", 0o600), ("tdr_timeout_ms", "2000", 0o400)),
        module_version="0.1", heap=heap.staging_rule, wedge=wedge.STAGING,
        trace=trace_tree.STAGING),
    Flavour(
        "oot", "out-of-tree amdxdna_legacy.ko", "out-of-tree",
        "device-wide check every timeout_in_sec (default 2 s) that fires when no job was "
        "submitted or completed during two whole periods (4-6 s after the last submit or "
        "completion, a first job after an idle spell included; a check that swaps out a "
        "connected context idle for three checks declares nothing, so each other connected "
        "context that went idle at a check of its own delays it a check: 12 s with four "
        "contexts, at most 36 s with the 16 a device connects): every connected context "
        "(one with work since it was made or last stopped) is dumped, stopped and "
        "restarted, every chain in flight ends TIMEOUT",
        "timeout_in_sec", 2.0, 1.0, 3, _legacy_build,
        "out-of-tree: a device check every timeout_in_sec (2 s from driver load) fires when "
        "no job was submitted or completed during the last two whole periods (a submit "
        "counts as progress: a first job after an idle spell times out 4-6 s later, not "
        "0-2); each check first counts every connected context with no job in flight one "
        "more idle check (one with work starts again from 0) and swaps out one that reaches "
        "RQ_CTX_IDLE_COUNT, 3, and a check that swaps one out declares no hang, so each "
        "other connected context whose count reaches 3 at a check of its own delays the hang "
        "a check: 8 s beside one idle context, 12 s beside three (FastFlowLM's four), at "
        "most 36 s with the 16 hardware contexts a device connects (hwctx_limit); every "
        "connected "
        "context (new contexts start disconnected and connect with their first job; a stop "
        "or a swap-out disconnects) is dumped "
        "(Dumping ctx, the capture block when the firmware gives a report, a JOB[seq % 4] "
        "block per pending job with its per-context seq and its mailbox message id, "
        "0x1D000000 | the channel's cyclic id, whose first id goes to aie2_config_cu on a "
        "context with CUs, an xclbin's), stopped and restarted; every chain in flight "
        "ends "
        "TIMEOUT with error_index the context's run_list_id; the first command to carry the "
        "context's health data gets it over that sub-command, later ones have it marked "
        "ABORT; without a report the context's data is the zeros it was allocated with (a "
        "version-0 report XRT prints as six zero lines), carried once",
        f"{_LEGACY} aie2_tdr.c aie2_tdr_detect, aie2_ctx_runqueue.c aie2_rq_handle_idle_ctx, "
        "part_handle_idle_ctx (RQ_CTX_IDLE_COUNT, per connected context), "
        "part->max_hwctx (npu4_family.h hwctx_limit 16), aie2_rq_is_all_context_stuck, "
        "aie2_rq_add "
        "(disconn_list), aie2_rq_dump_all and aie2_rq_stop_all (conn_list), aie2_ctx.c "
        "reset_tdr_timer in aie2_cmd_submit and aie2_sched_notify (1471fd97), "
        "aie2_ctx_connect and aie2_message.c aie2_config_cu (ctx->cus, set by XRT's "
        "hwctx_kmq CU config), aie2_dump_ctx (pending by get_job_idx(seq), j->msg_id), "
        "amdxdna_mailbox.c mailbox_acquire_msgid, "
        "aie2_sched_cmdlist_resp_handler, aie2_ctx_cmd_health_data; amdxdna_ctx.c "
        "(kzalloc'd ctx)",
        module="amdxdna_legacy", dkms=True, log_tree=LEGACY, chain_cap=64,
        context_prefix="ctx", virtual_contexts=True,
        parameters=LEGACY_PARAMETERS, heap=lambda npu4_class: heap.LEGACY,
        wedge=wedge.LEGACY, trace=trace_tree.LEGACY, idle_skips=MOST_CONNECTED - 1),
)}
DEFAULT_FLAVOUR = "mainline"   # the #712 machine: in-tree amdxdna on Linux 7.0


def slowest_seconds() -> float:
    """The longest any flavour takes to notice a hang at its defaults: what a deadline
    allows when the flavour is unknown."""
    return max(row.seconds() for row in FLAVOURS.values())


def driver_build(flavour: str, kernel: str = DEFAULT_KERNEL) -> DriverBuild:
    """What `flavour` does on `kernel`: a release (``6.18.3``) or a series (``6.18``, its
    first release) of one of KERNELS."""
    release = kernel_release(kernel)
    if release is None:
        raise ValueError(f"unknown kernel release {kernel!r}")
    row = FLAVOURS.get(flavour)
    if row is None:
        raise ValueError(f"unknown driver flavour {flavour!r}")
    return row.build(row, kernel, release)


def probed_build(facts: dict[str, Any], kernel: str | None) -> DriverBuild | None:
    """What a probed driver does on the machine's kernel (`facts`: the probe's driver
    facts; `kernel`: its release as the probe read it, e.g. ``6.17.0-1003-oem``), with its
    timeout parameter as set there; None when the flavour or the kernel series is not
    one this table knows."""
    row = FLAVOURS.get(facts.get("flavour") or "")
    match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", kernel or "")
    if row is None or match is None:
        return None
    series = f"{match[1]}.{match[2]}" + (f".{match[3]}" if match[3] else "")
    if kernel_release(series) is None:
        return None
    build = driver_build(row.name, series)
    setting = facts.get("timeout_setting")
    try:
        value = float(setting) if setting not in (None, UNREADABLE) else None
    except ValueError:
        value = None
    return build if value is None else build.with_period(value * row.unit_s)


def shortest_seconds() -> float:
    """The soonest any flavour declares a hang at its defaults, on any kernel modelled:
    what "well before any timer" is measured against when the flavour is unknown."""
    return min(driver_build(row.name, kernel).earliest_seconds
               for row in FLAVOURS.values() for kernel in KERNELS)


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
