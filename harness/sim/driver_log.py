"""What the simulated driver prints to the kernel log, as each flavour prints it.

The staging and mainline trees print through `XDNA_ERR` -> `drm_err` and `XDNA_WARN` ->
`drm_warn` (`amdxdna_pci_drv.h`): ``amdxdna <bdf>: [drm] *ERROR* <func>: <text>`` and
``amdxdna <bdf>: [drm] <func>: <text>``. The legacy out-of-tree tree prints ``amdxdna
<bdf>: <func>: <text>`` through `dev_err_ratelimited` and `dev_warn` (`amdxdna_drm.h`);
a rate-limited call site prints at most 10 lines in 5 s (the kernel's default
`DEFINE_RATELIMIT_STATE`) and then ``<func>: N callbacks suppressed``. The records are
kept as `/dev/kmsg` gives them (``level,seq,usec,-;text``, escaped as the kernel escapes
them), so the harness reads the simulator's log with the same reader as a real
machine's; with a sink (a file standing in for /dev/kmsg under ``HARNESS_ROOT``) each
record is also appended there as it is printed. The simulated NPU's address and clock
are impossible ones (`BDF`, `BOOT_US`), and every line a report keeps of a simulated run is
marked SIMULATED as well (`harness.logs.kernel_log.mark_simulated`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.logs.kernel_log import SIMULATED_BOOT_US, escape
from harness.model import printed as levels
from harness.model.drivers import LEGACY, Flavour
from harness.model.firmware import NOT_MODELLED
from harness.model.printed import Printed

# An address and a clock no real machine has, so that a simulated line copied out of a
# report cannot pass for a machine's: PCI function numbers run 0-7 (three bits of devfn,
# printed as %d by dev_name), and the simulated NPU has been up 9e9 s (285 years).
BDF = "0000:00:00.9"
DEVICE = f"amdxdna {BDF}: "
ERR, WARNING, INFO = 3, 4, 6
BOOT_US = SIMULATED_BOOT_US
RATELIMIT_BURST, RATELIMIT_INTERVAL_US = 10, 5_000_000.0
# compiled on first use, by re's own cache: a start-up does not pay for it
_DIGITS = r"\d+"


@dataclass(frozen=True)
class KernelRecord:
    """A record the simulated driver wrote to its kernel log."""

    level: int
    seq: int
    usec: int
    text: str

    def kmsg(self) -> str:
        """The record as one read of /dev/kmsg returns it (without the newline)."""
        return f"{self.level},{self.seq},{self.usec},-;{escape(self.text)}"


class KernelLog:
    """The log one simulated driver prints, in its flavour's tree's format."""

    def __init__(self, flavour: Flavour, now: Callable[[], float], sink: Path | None = None
                 ) -> None:
        self.flavour = flavour
        self.legacy = flavour.log_tree == LEGACY
        self.now = now
        self.records: list[KernelRecord] = []
        self._sites: dict[str, tuple[float, int, int]] = {}   # begin, printed, missed
        self._sink: Path | None = None
        self.sink = sink
        # called after each record reaches the sink (harness.sim.machine_folder)
        self.after_emit: Callable[[], None] | None = None

    @property
    def sink(self) -> Path | None:
        return self._sink

    @sink.setter
    def sink(self, path: Path | None) -> None:
        """Append to `path` from now on, beginning with what was printed before (a driver
        that failed at probe printed its lines before anyone could read them)."""
        self._sink = path
        if path is not None and self.records:
            with open(path, "a", encoding="utf-8") as kmsg:
                kmsg.write(self.kmsg())

    def _emit(self, level: int, text: str) -> None:
        record = KernelRecord(level, len(self.records), int(BOOT_US + self.now()), text)
        self.records.append(record)
        if self._sink is not None:
            with open(self._sink, "a", encoding="utf-8") as kmsg:
                kmsg.write(record.kmsg() + "\n")
            if self.after_emit is not None:
                self.after_emit()

    def kmsg(self, start: int = 0) -> str:
        """The records from `start` on, as reads of /dev/kmsg return them."""
        return "".join(r.kmsg() + "\n" for r in self.records[start:])

    def err(self, func: str, text: str) -> None:
        if not self.legacy:
            self._emit(ERR, f"{DEVICE}[drm] *ERROR* {func}: {text}")
            return
        # dev_err_ratelimited: each call site keeps its own state
        site = f"{func}:{re.sub(_DIGITS, '#', text)}"
        now = self.now()
        begin, printed, missed = self._sites.get(site, (now, 0, 0))
        if now - begin >= RATELIMIT_INTERVAL_US:
            if missed:
                self._emit(WARNING, f"{func}: {missed} callbacks suppressed")
            begin, printed, missed = now, 0, 0
        if printed < RATELIMIT_BURST:
            self._emit(ERR, f"{DEVICE}{func}: {text}")
            printed += 1
        else:
            missed += 1
        self._sites[site] = (begin, printed, missed)

    def device_err(self, text: str) -> None:
        """A line of the driver core's own about the device (dev_err, no function), e.g.
        drivers/base/dd.c's "probe with driver amdxdna failed with error -22"."""
        self._emit(ERR, f"{DEVICE}{text}")

    def warn(self, func: str, text: str) -> None:
        self._emit(WARNING, f"{DEVICE}{'' if self.legacy else '[drm] '}{func}: {text}")

    def drm_err(self, text: str) -> None:
        """drm_err called directly (no function name): the DRM core's own form in every
        tree (staging's and the legacy tree's aie_smu.c print so)."""
        self._emit(ERR, f"{DEVICE}[drm] *ERROR* {text}")

    def line(self, printed: Printed, **values: object) -> None:
        """One line of the model (`harness.model.printed`), its fields filled in."""
        text = printed.text.format(**values) if values else printed.text
        if printed.level == levels.DEV:
            self.device_err(text)
        elif printed.level == levels.DRM_ERR:
            self.drm_err(text)
        else:
            (self.err if printed.level == levels.ERR else self.warn)(printed.function, text)

    def mgmt_failure(self, opcode: int, status: int | None, *, solver: bool = True,
                     ret: int = -22) -> None:
        """A context the firmware refused, as the in-tree and staging drivers log it on the
        way out: the mailbox's refusal (`aie_send_mgmt_msg_wait` in staging's aie.c,
        `aie2_send_mgmt_msg_wait` in Linux's aie2_message.c; none where the management
        channel is gone, `status` None), then, through the resource solver,
        `aie2_xrs_load` and `aie2_alloc_resource`, then `aie2_hwctx_init` and the ioctl
        itself (`amdxdna_drm_create_hwctx_ioctl` "Init hwctx failed": amdxdna_ctx.c at
        234824b1, f13c7f41 and 856409ca), each passing `ret` on. Without the solver (Linux
        7.0/7.1 with AIE2_TEMPORAL_ONLY firmware, `aie2_alloc_resource` calling
        `aie2_create_context` itself) the solver's two lines are not printed."""
        if status is not None:
            self.err(self.flavour.mailbox_function,
                     f"command opcode 0x{opcode:x} failed, status 0x{status:x}")
        if solver:
            self.err("aie2_xrs_load", f"create context failed, ret {ret}")
            self.err("aie2_alloc_resource", f"Allocate AIE resource failed, ret {ret}")
        self.err("aie2_hwctx_init", f"Alloc hw resource failed, ret {ret}")
        self.ioctl_refused(ret)

    def ioctl_refused(self, ret: int) -> None:
        """The create-context ioctl's own line on its way out (amdxdna_ctx.c)."""
        self.err("amdxdna_drm_create_hwctx_ioctl", f"Init hwctx failed, ret {ret}")

    def capture_block(self, func: str, health) -> None:
        """The "Firmware timeout state capture:" block (`aie2_set_cmd_timeout` in staging
        and Linux 7.1, `aie2_dump_ctx` in the legacy tree), one line per field,
        tab-indented; a field the model cannot know reads "not modelled"."""
        def hex_of(value: int | None) -> str:
            return NOT_MODELLED if value is None else f"0x{value:x}"

        def dec_of(value: int | None) -> str:
            return NOT_MODELLED if value is None else str(value)
        lines = ["Firmware timeout state capture:",
                 f"\tVersion: {health.major}.{health.minor}",
                 f"\tReport size: 0x{health.size:x}",
                 f"\tContext ID: {health.context_id}",
                 f"\tDPU PC: {hex_of(health.dpu_pc)}",
                 f"\tTXN OP ID: {hex_of(health.txn_op_id)}",
                 f"\tContext PC: {hex_of(health.ctx_pc)}",
                 f"\tFatal error type: {hex_of(health.fatal_type)}",
                 f"\tFatal error exception type: {hex_of(health.exception_type)}",
                 f"\tFatal error exception PC: {hex_of(health.exception_pc)}",
                 f"\tFatal error app module: {hex_of(health.app_module)}",
                 f"\tFatal error task ID: {dec_of(health.task_index)}",
                 f"\tTimed out sub command ID: {health.run_list_id}"]
        for line in lines:
            self.err(func, line)
