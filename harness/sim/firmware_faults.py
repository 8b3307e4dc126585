"""What the simulated driver does beyond one job: the client's device heap it carves buffers
from (`harness.model.heap`), and a firmware that stops taking contexts after the driver's
Nth timeout (`wedge:N`, `firmware-dead:N`: `harness.model.wedge`), counted over the
device's life (`harness.sim.device_life`), with a module reload on it. A part of `Stack`
(`harness.sim.stack`), kept apart from its per-job rules; its methods are the stack's.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from typing import Any, Protocol

from harness.model.drivers import Flavour
from harness.model.heap import CONTEXT_BUFFERS, HeapRefused, HeapSpace
from harness.model.printed import Printed
from harness.model.wedge import (
    EXEC_EIO,
    MAILBOX_TIMEOUT,
    MGMT_ERT_NOAVAIL,
    MSG_OP_CREATE_CONTEXT,
    NO_CHANNEL,
    POWER_CYCLE,
    REFUSED,
    TIMED_OUT,
)
from harness.sim.device_life import HANGS, REFUSES, SILENT, WORKS, DeviceLife
from harness.sim.driver_log import KernelLog
from harness.sim.profiles import DeviceModel, Profile


class ContextRefused(RuntimeError):
    """The driver refused a hardware context: the text is what XRT's shim says of it, `code`
    the errno the create ioctl returned (an emulated device returns it as such)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class SubmitRefused(RuntimeError):
    """The submit ioctl failed at once (the legacy tree's dead context: -EIO): the text is
    what XRT's shim says of it, `code` the errno."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def ioctl_error(name: str, ret: int) -> str:
    return f"DRM_IOCTL_AMDXDNA_{name} IOCTL failed (err={ret}): {os.strerror(-ret)}"




class _Context(Protocol):
    """What these rules use of a context (harness.sim.stack.Context)."""

    id: int
    name: str
    dead: bool


class _Driver(Protocol):
    """What these rules use of the stack."""

    profile: Profile
    flavour: Flavour
    device: DeviceModel
    life: DeviceLife
    kernel_log: KernelLog
    refused: tuple[Printed, ...]
    keeps_heap: bool
    _heap: HeapSpace | None
    _firmware_hangs: bool
    _channel_gone: bool
    _query_unanswered: bool

    @property
    def heap(self) -> HeapSpace: ...

    @property
    def contexts(self) -> Sequence[_Context]: ...

    def note(self, text: str) -> None: ...

    def _print(self, lines: tuple[Printed, ...]) -> None: ...

    def _mgmt_ret(self, *, say_refusal: bool = True) -> int: ...

    def _restart_fails(self, ctx: _Context) -> None: ...

    def _stop_message(self, ctx: _Context) -> None: ...

    def destroy_context(self, ctx: Any) -> None: ...


class FirmwareAndHeap:
    """The stack's heap and its firmware's life (see the module's note)."""

    _heap: HeapSpace | None = None
    # this timeout's app health query went unanswered (staging's fw_dead)
    _query_unanswered: bool = False

    # -- the device heap (harness.model.heap) -------------------------------------

    @property
    def heap(self: _Driver) -> HeapSpace:
        """The client's device heap (the simulated binding's process is the one client)."""
        heap = self._heap
        if heap is None:
            heap = self._heap = HeapSpace(self.flavour.heap(self.device.npu4_class))
        return heap

    def device_buffer(self: _Driver, size: int) -> int:
        """A cacheable buffer's place in the heap, as the driver and the shim give it;
        HeapRefused (what XRT raises) after the driver's lines."""
        try:
            return self.heap.allocate(size)
        except HeapRefused as refused:
            self._print(refused.lines)
            self.note(f"device buffer of {size} bytes refused: {refused}")
            raise

    def free_device_buffer(self: _Driver, offset: int, size: int) -> None:
        if self._heap is not None:
            self._heap.release(offset, size)

    def _context_buffers(self: _Driver) -> tuple[int, ...]:
        """aie2_hwctx_init's four command buffers, taken from the heap by the driver itself
        (no heap object is added on its EAGAIN): a context that finds no room is refused with
        the heap's errno. Not kept where the caller keeps the heap (the emulated driver)."""
        if not self.keeps_heap:
            return ()
        taken: list[int] = []
        try:
            for size in CONTEXT_BUFFERS:
                taken.append(self.heap.allocate(size, grow=False))
        except HeapRefused as refused:
            for offset, size in zip(taken, CONTEXT_BUFFERS, strict=False):
                self.heap.release(offset, size)
            self._print(refused.lines)
            self.kernel_log.ioctl_refused(-refused.code)
            raise ContextRefused(ioctl_error("CREATE_HWCTX", -refused.code),
                                 refused.code) from None
        return tuple(taken)

    def _refuse_submit(self: _Driver, ctx: _Context) -> None:
        """The legacy tree's submit on a context that cannot connect (aie2_rq_submit_enter):
        the first one connects it (part_ctx_start), the firmware refuses, and the context is
        marked CTX_STATE_DEAD ("connect failed"); that submit, waiting in the slow path,
        prints "fatal error", and it and every later one fail -EIO."""
        rule = self.flavour.wedge
        if not ctx.dead:
            ret = self._mgmt_ret()
            for line in rule.restart_failed:
                self.kernel_log.line(line, ret=ret, name=ctx.name)
            ctx.dead = True
            for line in rule.dead_submit_lines:
                self.kernel_log.line(line, name=ctx.name)
            self.note(f"context {ctx.id}: connect failed on a wedged device, context dead")
        raise SubmitRefused(EXEC_EIO, errno.EIO)

    def _mgmt_ret(self: _Driver, *, say_refusal: bool = True) -> int:
        """What a management message gets from a wedged firmware, with what the driver
        prints of it: a refusal -EINVAL (its mailbox line, unless the caller prints it), an
        unanswered message -ETIME the first time ("Wait for completion timeout", the channel
        then destroyed) and -ENODEV after (aie2_send_mgmt_msg_wait)."""
        if self.life.firmware == REFUSES:
            if not say_refusal:
                return REFUSED
            self.kernel_log.err(self.flavour.mailbox_function,
                                f"command opcode 0x{MSG_OP_CREATE_CONTEXT:x} failed, status "
                                f"0x{MGMT_ERT_NOAVAIL:x}")
            return REFUSED
        if not self._channel_gone:
            self._channel_gone = True
            self._print((MAILBOX_TIMEOUT,))
            return TIMED_OUT
        return NO_CHANNEL

    def _health_unanswered(self: _Driver) -> None:
        """The app health query a silent firmware never answers: the mailbox's timeout
        (then -ENODEV, the channel gone) and the query's own line (harness.model.wedge)."""
        ret = self._mgmt_ret()
        failed = self.flavour.wedge.health_failed
        if failed is not None:
            self.kernel_log.line(failed, ret=ret)
        self._query_unanswered = True

    def _stop_message(self: _Driver, ctx: _Context) -> None:
        """The stop's DESTROY_CONTEXT on a silent firmware (aie2_hwctx_stop ->
        aie2_destroy_context): the first unanswered message times out and takes the
        management channel with it, so the restart after it finds none (-ENODEV). A context
        left without a firmware channel sends nothing."""
        if self.life.firmware != SILENT or ctx.dead:
            return
        rule = self.flavour.wedge
        ret = self._mgmt_ret()
        if ret == NO_CHANNEL and rule.quiet_nodev:
            return
        for line in rule.destroy_failed:
            self.kernel_log.line(line, ret=ret, name=ctx.name)

    def _count_timeout(self: _Driver) -> None:
        """The driver's timer fired: counted over the device's life, where `wedge:N` and
        `firmware-dead:N` take effect (the Nth one's restart is the first to meet it)."""
        life = self.life
        life.timeouts += 1
        if life.firmware != WORKS:
            return
        wedge = self.profile.wedge
        if wedge is not None and life.timeouts >= wedge[0]:
            life.firmware = wedge[1]
            life.since = f"the driver's timeout {life.timeouts} (wedge:{wedge[0]})"
        elif self.profile.firmware_dead == life.timeouts:
            life.firmware = SILENT
            life.since = f"the driver's timeout {life.timeouts} (firmware-dead:{life.timeouts})"
        else:
            return
        self._firmware_hangs = life.firmware == HANGS
        self.note(f"the device is {life.state_text()}, since {life.since}")

    def _restart_fails(self: _Driver, ctx: _Context) -> None:
        """aie2_hwctx_restart on a firmware that takes no context: its lines, and the context
        left without a firmware channel; staging then power-cycles a firmware that answers
        nothing (its firmware-dead path) or says it will not (harness.model.wedge)."""
        rule = self.flavour.wedge
        ret = self._mgmt_ret()
        for line in rule.restart_failed:
            self.kernel_log.line(line, ret=ret, name=ctx.name)
        ctx.dead = True
        self.note(f"context {ctx.id}: the driver's restart failed ({ret}), no firmware channel")
        if not rule.power_cycles:
            return
        # aie2_sched_job_timedout's fw_dead: the health query went unanswered (a firmware
        # without AIE2_APP_HEALTH is not asked, -EOPNOTSUPP, so it is not power-cycled)
        if not self._query_unanswered:
            for line in rule.rejected_note:
                self.kernel_log.line(line, ret=ret)
            return
        for line in POWER_CYCLE:
            self.kernel_log.line(line, ret=ret)
        # aie2_hw_reset: the SMU power-cycles the NPU, the firmware is loaded again and
        # every context resumed (aie2_hwctx_resume)
        life = self.life
        life.firmware, life.power_cycles = WORKS, life.power_cycles + 1
        self._channel_gone = False
        for each in self.contexts:
            each.dead = False
        self.note("staging power-cycled the NPU (aie2_hw_reset): the firmware answers again")

    def reload_module(self: _Driver) -> None:
        """The driver removed and loaded again (`modprobe -r` and `modprobe`, or the PCI
        function removed and the bus rescanned: the same remove and probe). Every context
        goes, and the probe loads the firmware afresh (a new management channel, a new
        heap). A device `wedge:N` wedged stays wedged, as 1bit-MONSTER/1bit-MONSTER#1920's
        did ("only reloads firmware and does not reset the stuck AIE cores"), unless it
        plays `reloads` (amd/xdna-driver#1645: a PCI rescan cleared one); a firmware that
        only stopped answering (`firmware-dead:N`) works again."""
        for ctx in list(self.contexts):
            self.destroy_context(ctx)
        life = self.life
        wedge = self.profile.wedge
        self._channel_gone = False
        self._heap = None
        if life.firmware in (REFUSES, HANGS) and wedge is not None and not wedge[2]:
            self.note(f"module reload: the firmware was loaded again, and the device is "
                      f"still {life.state_text()} (the stuck array is not reset)")
            return
        life.firmware, life.since = WORKS, ""
        self._firmware_hangs = False
        self.note("module reload: the firmware was loaded afresh")
