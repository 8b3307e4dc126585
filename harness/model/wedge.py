"""A device that stays wedged: what each driver tree does, and prints, when the firmware
stops taking contexts after a timeout, and what clears it.

Each tree restarts a context after a hang; the restart goes through the firmware's
management mailbox, so it cannot work where the firmware no longer answers as it should:

- in-tree (Linux 7.0/7.1 as amd/xdna-driver 234824b1 and f13c7f41 import it, `aie2_ctx.c`):
  `aie2_sched_job_timedout` stops the context and calls `aie2_hwctx_restart`, which prints
  "Create hwctx failed, ret %d" (or "Map host buf failed", "Config cu failed") and leaves
  the context without a firmware channel; `aie2_sched_job_run` then returns no fence for
  every later job on it (`!hwctx->priv->mbox_chann`), so the job ends at once and its
  command keeps the NEW XRT wrote. A new context is refused by the firmware
  (`aie2_send_mgmt_msg_wait` "command opcode 0x2 failed, status 0x2000003", `aie2_hwctx_init`
  "Alloc hw resource failed, ret -22", `amdxdna_drm_create_hwctx_ioctl` "Init hwctx
  failed, ret -22"), as amd/xdna-driver PR #1585 shows on 7.0.0-29 once the device had
  degraded.
- staging (856409ca `aie2_ctx.c` `aie2_sched_job_timedout`): the same restart, and when it
  fails without a fatal report, "NPU context restart rejected (ret %d) without fatal report -
  not power-cycling"; when the firmware does not answer the health query at all it
  power-cycles the NPU instead ("NPU firmware unhealthy (ctx restart ret %d, health
  unresponsive) - power-cycling NPU", `aie2_pci.c` `aie2_hw_reset`, at most once per
  AIE2_HW_RESET_MIN_INTERVAL_MS, 60 s).
- legacy (856409ca `src/driver/amdxdna`): the device check stops every connected context;
  a context connects again with its next job (`aie2_ctx_runqueue.c` `part_ctx_start` ->
  `aie2_ctx_connect` -> `aie2_hwctx_start`), and when that fails it is marked
  CTX_STATE_DEAD ("%s connect failed, err %d"): every later submit on it fails -EIO
  (`aie2_rq_submit_enter`, "%s fatal error" from the slow path), which XRT's shim raises as
  "DRM_IOCTL_AMDXDNA_EXEC_CMD IOCTL failed (err=-5): Input/output error".

What clears it, as public reports saw it (one account, used by the recovery check, the
device after a recorded run, the diagnosis's next step and the docs): on a wedged Strix
Halo with the in-tree amdxdna 0.7 (1bit-MONSTER/1bit-MONSTER#1920) a module reload went
through but "only reloads firmware and does not reset the stuck AIE cores", and a PCI
function-level reset (the function's `reset` file) left the device "not ready after FLR"
and "aie2_hw_resume: Start hardware failed -22", its /dev/accel node gone; only a reboot
cleared it there. One report (amd/xdna-driver#1645) cleared a wedge by removing the PCI
function and rescanning the bus. The SMU lines of a failed probe ("smu cmd 4 failed, 0xff",
"Access power failed, ret -22", amd/xdna-driver#1257 and #1193) come from a probe that
failed for another reason (a driver that cannot use the firmware, on a cold boot), not from
a reload on a wedged device, so they are not played here. The driver's remove and probe
are the same for a reload and a PCI rescan; whether they clear a wedge is the reports'
to say: the simulator plays #1920 (a reload goes through and the device stays wedged), and
`wedge:N:reloads` plays #1645 (it clears).
"""

from __future__ import annotations

import errno
from dataclasses import dataclass

from harness.model.printed import ERR, WARN, Printed

MSG_OP_CREATE_CONTEXT, MGMT_ERT_NOAVAIL = 0x2, 0x2000003   # aie2_msg_priv.h
# the errno each firmware state gives the driver's own restart: a refusal comes back
# -EINVAL (aie2_send_mgmt_msg_wait on a status not SUCCESS), a silent firmware first
# -ETIME (xdna_send_msg_wait) and then, with the management channel destroyed, -ENODEV
REFUSED, TIMED_OUT, NO_CHANNEL = -errno.EINVAL, -errno.ETIME, -errno.ENODEV
EXEC_EIO = "DRM_IOCTL_AMDXDNA_EXEC_CMD IOCTL failed (err=-5): Input/output error"
WEDGE_SOURCES = (
    "amd/xdna-driver 234824b1 drivers/accel/amdxdna/aie2_ctx.c aie2_sched_job_timedout, "
    "aie2_hwctx_restart, aie2_sched_job_run; 856409ca drivers/accel/amdxdna/aie2_ctx.c "
    "aie2_sched_job_timedout, aie2_pci.c aie2_hw_reset; 856409ca src/driver/amdxdna/"
    "aie2_ctx_runqueue.c part_ctx_start, aie2_rq_submit_enter; aie2_smu.c / aie_smu.c; "
    "public reports amd/xdna-driver PR #1585 (7.0.0-29, refused contexts), #1645 (cleared by "
    "a PCI remove and rescan), 1bit-MONSTER/1bit-MONSTER#1920 (a reload went through and did "
    "not clear it, an FLR left it 'not ready after FLR'; a reboot did)")


@dataclass(frozen=True)
class WedgeRule:
    """What one driver tree does with a firmware that stopped taking contexts: whether it
    restarts the hung context in its timeout handler (else with the context's next job),
    the lines that restart prints when the firmware refuses it ({ret}, {name} filled in),
    the errno a submit on the dead context gets (None: it is taken and the job ends at
    once, never sent), and what a silent firmware's messages print."""

    restarts_at_timeout: bool
    restart_failed: tuple[Printed, ...]
    rejected_note: tuple[Printed, ...] = ()    # after a refused restart with no fatal report
    dead_submit_errno: int | None = None
    dead_submit_lines: tuple[Printed, ...] = ()
    power_cycles: bool = False      # staging: an unanswered health query power-cycles
    # an app health query the firmware left unanswered ({ret} filled in): the status is
    # the response's initial value, which the firmware never overwrote (the tree's
    # DECLARE_*_MSG)
    health_failed: Printed | None = None
    # the stop's DESTROY_CONTEXT message failing ({ret}, {name}); `quiet_nodev`: a channel
    # already gone (-ENODEV) prints only a debug line
    destroy_failed: tuple[Printed, ...] = ()
    quiet_nodev: bool = True


# aie2_destroy_context_req (234824b1 aie2_message.c, 856409ca drivers/accel/amdxdna
# aie2_message.c): XDNA_WARN unless the channel was already gone (-ENODEV: XDNA_DBG only)
_DESTROY_FAILED = (Printed(WARN, "aie2_destroy_context_req", "Destroy context failed, ret {ret}"),)
# aie2_query_app_health: 7.1's DECLARE_AIE2_MSG starts the status at MAX_AIE2_STATUS_CODE
# (0x4000009, f13c7f41 aie2_msg_priv.h); staging's DECLARE_AIE_MSG at -1 (856409ca aie.h)
IN_TREE = WedgeRule(
    True, (Printed(ERR, "aie2_hwctx_restart", "Create hwctx failed, ret {ret}"),),
    health_failed=Printed(ERR, "aie2_query_app_health",
                          "Get app health failed, ret {ret} status 0x4000009"),
    destroy_failed=_DESTROY_FAILED)
STAGING = WedgeRule(
    True, (Printed(ERR, "aie2_hwctx_restart", "Create hwctx failed, ret {ret}"),),
    rejected_note=(Printed(WARN, "aie2_sched_job_timedout",
                           "NPU context restart rejected (ret {ret}) without fatal report - "
                           "not power-cycling"),),
    power_cycles=True,
    health_failed=Printed(ERR, "aie2_query_app_health",
                          "Get app health failed, ret {ret} status 0xffffffff"),
    destroy_failed=_DESTROY_FAILED)
# 856409ca src/driver/amdxdna: aie2_hwctx.c aie2_load_hwctx / aie2_hwctx_start and
# aie2_unload_hwctx, aie2_message.c aie2_destroy_context (any error) and
# aie2_get_app_health (its DECLARE_AIE2_MSG's MAX_AIE2_STATUS_CODE is 0x400000d there)
LEGACY = WedgeRule(
    False, (Printed(ERR, "aie2_load_hwctx", "create context failed, ret {ret}"),
            Printed(ERR, "aie2_hwctx_start", "Alloc hw resource failed, ret {ret}"),
            Printed(ERR, "part_ctx_start", "{name} connect failed, err {ret}")),
    dead_submit_errno=errno.EIO,
    dead_submit_lines=(Printed(ERR, "rq_submit_enter_slow", "{name} fatal error"),),
    health_failed=Printed(ERR, "aie2_get_app_health", "Get app health got status 0x400000d"),
    destroy_failed=(Printed(WARN, "aie2_destroy_context",
                            "{name} destroy context failed, ret {ret}"),
                    Printed(ERR, "aie2_unload_hwctx", "destroy context failed, ret {ret}")),
    quiet_nodev=False)

# staging's power-cycle (aie2_sched_job_timedout, aie2_pci.c aie2_hw_reset)
POWER_CYCLE = (Printed(WARN, "aie2_sched_job_timedout",
                       "NPU firmware unhealthy (ctx restart ret {ret}, health unresponsive) - "
                       "power-cycling NPU"),
               Printed(WARN, "aie2_hw_reset", "NPU firmware unhealthy: power-cycling NPU"))
# amdxdna_mailbox_helper.c xdna_send_msg_wait: a message the firmware never answers
MAILBOX_TIMEOUT = Printed(ERR, "xdna_send_msg_wait", "Wait for completion timeout")

# What clears a wedged device and what does not, as the reports above saw it: the one
# account every piece of advice and every report section gives
RELOAD_DID_NOT = ("a module reload: it went through but \"only reloads firmware and does not "
                  "reset the stuck AIE cores\" (1bit-MONSTER/1bit-MONSTER#1920)")
FLR_DID_NOT = ("a function-level reset (the PCI function's reset file): it left the device "
               "\"not ready after FLR\" and without its /dev/accel node (the same report)")
RESCAN_DID = ("one report cleared a wedge by removing the PCI function and rescanning the "
              "bus (amd/xdna-driver#1645)")
WEDGE_CLEARS = ("a reboot (a full power-off where a reboot does not): the only recovery in "
                f"1bit-MONSTER/1bit-MONSTER#1920; {RESCAN_DID}")
WEDGE_DOES_NOT_CLEAR = f"{RELOAD_DID_NOT}; {FLR_DID_NOT}; nor does waiting"
# the advice: a reboot, and why not a reload or a reset
REBOOT_FIX = ("reboot the machine (a full power-off if a reboot does not clear it): in "
              "1bit-MONSTER/1bit-MONSTER#1920 a module reload \"only reloads firmware and does "
              "not reset the stuck AIE cores\" and a function-level reset left the device "
              f"\"not ready after FLR\"; {RESCAN_DID}")
