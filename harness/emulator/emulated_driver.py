"""The emulated amdxdna driver: the ioctls of an open device file, answered over the one
driver and firmware model the simulated stack plays (`harness.sim.stack.Stack`, in real
time, with the profile's flavour, kernel, device and hypotheses).

What each ioctl does, as amd/xdna-driver `amdxdna_ctx.c`, `aie2_ctx.c` and
`amdxdna_gem.c` do it at the commit the shim is built from:

- CREATE_HWCTX needs the client's device heap (ENOENT without), takes the partition
  width from `num_tiles` over the core rows, and on success returns the context's id
  (device-wide, from 1) and a timeline syncobj the file owns; the driver carves four
  4 KiB command buffers for the context out of the heap. A context the firmware refuses
  (over `hwctx_limit`, or wider than the array) fails with EINVAL, as the model says.
- EXEC_CMD takes one command BO and its argument BOs; a chain's sub-commands are read
  from their BOs. The submit blocks while the context has 4 jobs in flight
  (`job_sem`), then returns the job's sequence number, counted from 0 per context; the
  job's fence is that point of the context's syncobj.
- When the model ends a job, its state (and a chain's error_index, and what the driver
  writes over a failed payload) is written into the command BO, then the syncobj's
  point signals; a point is reached once every job up to it has ended (a fence chain).
- WAIT_CMD and SYNCOBJ_(TIMELINE_)WAIT block until then, or fail with ETIME at their
  timeout (WAIT_CMD: milliseconds, 0 for ever; syncobj waits: an absolute
  CLOCK_MONOTONIC time). Timeline point 0 is the syncobj's current fence.
- Closing the file releases its contexts (their jobs end as the model ends a destroyed
  context's), buffers and syncobjs.
"""

from __future__ import annotations

import errno
import itertools
import logging
import time
from functools import partial
from pathlib import Path

from harness.emulator import info, uapi
from harness.emulator.device import CORE_ROWS, EmulatedDevice
from harness.emulator.kernels_by_pdi import KernelOfPdi, read_index
from harness.emulator.memory import DriverError, Memory
from harness.emulator.objects import ClientFile, HwContext
from harness.emulator.packets import Submission, read_submission
from harness.emulator.replies import IoctlReply, Pending, copied_back, patch, wait
from harness.emulator.syncobjs import Syncobjs
from harness.model.drivers import FLAVOURS
from harness.sim.clock import RealClock
from harness.sim.stack import (
    CTX_MAX_CMDS,
    MAX_CHAIN_CMDBUF_SIZE,
    REJECTED,
    ContextRefused,
    Stack,
)

log = logging.getLogger("harness.emulator")

INVALID_DOORBELL = 0xFFFFFFFF
# How long the host may make no driver call before the device's clock runs of its own. A
# program that polls `run.state()` makes none (on amdxdna the read is a load of the mapped
# command buffer: xdna-driver 856409ca src/shim/hwq.cpp `hwq::poll_command`), and on
# hardware its command progresses meanwhile. The gaps between XRT 2.26's chain submits of
# one runlist, measured under `emulate` (runlists of 42, 120 and 240 on a 2-core machine),
# were 0.7 to 1.4 ms (2.9 ms where a fifth chain waited for a slot, device time running):
# 100 ms is some seventy times the widest, so a burst stays simultaneous on a loaded
# machine (what `inflight-cap:N` counts), and a polling program waits 100 ms at most
# before its device moves.
HOST_IDLE_S = 0.1


class EmulatedDriver:
    """The device's state, and the one entry point per ioctl (`ioctl`)."""

    def __init__(self, device: EmulatedDevice, folder: Path, clock_rate: float = 1.0) -> None:
        self.device = device
        self.profile = device.profile.with_realtime()
        # device time runs while a program waits on the device (the server says when),
        # as on the simulated clock: XRT's own time between its calls is not the device's
        self.clock = RealClock(clock_rate, host_paced=True)
        self.stack = Stack(self.profile, clock=self.clock)
        self.stack.keeps_heap = False        # the buffers are this driver's (memory.py)
        # the client's heap as the flavour keeps it (harness.model.heap)
        self.heap_rule = FLAVOURS[self.profile.flavour].heap(self.profile.device_model.npu4_class)
        self.kmsg = folder / "kmsg"
        self.kmsg.touch()
        self.stack.kernel_log.sink = self.kmsg
        self.memory = Memory(folder / "bo")
        self.syncobjs = Syncobjs(folder / "syncobj")
        self.files: dict[int, ClientFile] = {}
        self.contexts: dict[int, HwContext] = {}
        self._file_ids = itertools.count(1)
        self._context_ids = itertools.count(1)
        self.unanswered: dict[str, int] = {}
        self.pdis = read_index(folder)       # the xclbins `emulate --xclbins` named
        self.last_request = time.monotonic()
        self._handlers = {
            uapi.CREATE_HWCTX: self._create_hwctx, uapi.DESTROY_HWCTX: self._destroy_hwctx,
            uapi.CONFIG_HWCTX: self._config_hwctx, uapi.CREATE_BO: self._create_bo,
            uapi.GET_BO_INFO: self._get_bo_info, uapi.SYNC_BO: self._sync_bo,
            uapi.EXEC_CMD: self._exec_cmd, uapi.WAIT_CMD: self._wait_cmd,
            uapi.GEM_CLOSE: self._gem_close, uapi.PRIME_HANDLE_TO_FD: self._export_bo,
            uapi.PRIME_FD_TO_HANDLE: self._import_bo,
            uapi.VERSION: partial(info.version, device),
            uapi.GET_INFO: partial(info.get_info, device, self.contexts),
            uapi.GET_ARRAY: partial(info.get_array, self.contexts, self.files),
            uapi.SET_STATE: info.set_state,
            **self.syncobjs.handlers(),
        }

    # -- files ------------------------------------------------------------------------------

    def open(self, pid: int) -> int:
        file = ClientFile(next(self._file_ids), pid)
        self.files[file.id] = file
        return file.id

    def release(self, file_id: int) -> None:
        """The last reference to the file closed: what it held goes, as in
        `amdxdna_drm_close` (contexts first, then buffers and syncobjs)."""
        file = self.files.pop(file_id, None)
        if file is None:
            return
        self.tick()
        for ctx in list(file.contexts.values()):
            self._teardown(ctx)
        for sync in file.syncobjs.values():
            self.syncobjs.drop(sync)
        heap = file.handles.heap
        held = sorted(file.handles.table.values(), key=lambda b: b.kind == uapi.BO_DEV_HEAP)
        for buffer in held:                  # the heap goes last: device BOs live in it
            self.memory.drop(buffer, heap)

    # -- time -------------------------------------------------------------------------------

    def tick(self) -> None:
        """Run what the device has done by now, and write it back."""
        self.stack.run_due(lambda: False, 0.0)
        for ctx in self.contexts.values():
            ctx.settle()

    def waiting(self, waiters: bool) -> None:
        """Whether some program waits on the device now, or the host has made no driver
        call for HOST_IDLE_S (a program polling its command's state): its clock runs only
        then."""
        runs = waiters or self.seconds_to_idle() == 0.0
        if runs == self.clock.held:
            self.clock.run_while(runs)

    def seconds_to_idle(self) -> float:
        """How long until the host counts as idle (0 once it is)."""
        return max(0.0, self.last_request + HOST_IDLE_S - time.monotonic())

    def seconds_to_next_event(self) -> float | None:
        if self.clock.held:
            return None                  # nothing happens on the device until a wait
        due = self.stack.next_event_us()
        rate = self.clock.rate
        return None if due is None else max(0.0, (due - self.stack.now) / 1e6 / rate)

    # -- requests ---------------------------------------------------------------------------

    def ioctl(self, file_id: int, cmd: int, args: bytes, extra: bytes) -> IoctlReply | Pending:
        # any call ends the host's idle time: the server holds the clock again after it
        # (what the device did meanwhile is run by the tick below)
        self.last_request = time.monotonic()
        file = self.files.get(file_id)
        if file is None:
            return IoctlReply(-errno.EBADF, args)
        handler = self._handlers.get(uapi.ioc_nr(cmd)) if uapi.ioc_type(cmd) == \
            uapi.DRM_TYPE else None
        if handler is None:
            self._unanswered(f"ioctl {cmd:#x}")
            return IoctlReply(-errno.ENOTTY, args)
        self.tick()
        given = len(args)
        try:
            if given >= uapi.DECLARED[uapi.ioc_nr(cmd)].size:
                return handler(file, args, extra)
            # a struct shorter than the driver's: its missing fields read as 0 (drm_ioctl)
            return copied_back(handler(file, uapi.zero_extended(uapi.ioc_nr(cmd), args),
                                       extra), given)
        except DriverError as err:
            log.debug("%s: %s", uapi.NAMES.get(uapi.ioc_nr(cmd), hex(cmd)), err)
            self.stack.log_lines(err.lines)
            if err.code == errno.EOPNOTSUPP or err.unanswered:
                self._unanswered(str(err))
            return IoctlReply(-err.code, args)

    def _unanswered(self, what: str) -> None:
        """What the emulator has no answer for, counted for `emulate` to report."""
        self.unanswered[what] = self.unanswered.get(what, 0) + 1

    # -- contexts ---------------------------------------------------------------------------

    def _create_hwctx(self, file: ClientFile, args: bytes, extra: bytes) -> IoctlReply:
        fields = list(uapi.CREATE_HWCTX_ARGS.unpack_from(args))
        ext, ext_flags, _, _, _, _, num_tiles = fields[:7]
        if ext or ext_flags:
            raise DriverError(errno.EINVAL, "ext fields must be zero")
        heap = file.handles.heap
        if not heap.chunks:
            raise DriverError(errno.ENOENT, "the client dev heap object does not exist")
        width, rest = divmod(num_tiles, CORE_ROWS)
        if width == 0 or rest:
            raise DriverError(errno.EINVAL, f"num_tiles {num_tiles}")
        taken: list[int] = []
        for _ in range(CTX_MAX_CMDS):       # priv->cmd_buf: one chain buffer per job slot
            start = heap.take(MAX_CHAIN_CMDBUF_SIZE)
            if start is None:
                for offset in taken:
                    heap.give(offset, MAX_CHAIN_CMDBUF_SIZE)
                # the driver allocates them itself: nobody adds a heap object on EAGAIN
                full = self.memory.heap_full(heap, self.heap_rule)
                self.stack.log_lines(full.lines)
                self.stack.kernel_log.ioctl_refused(-full.code)
                raise DriverError(full.code, "no heap left for the command buffers")
            taken.append(start)
        self.stack.pid = file.pid
        try:
            sim = self.stack.create_context(f"hwctx {file.pid}", 0, width)
        except RuntimeError as err:
            for offset in taken:
                heap.give(offset, MAX_CHAIN_CMDBUF_SIZE)
            code = err.code if isinstance(err, ContextRefused) else errno.EINVAL
            raise DriverError(code, str(err)) from None
        sync = self.syncobjs.new()
        ctx = HwContext(next(self._context_ids), file, sim, width, sync, taken)
        sync.context = ctx
        self.contexts[ctx.id] = ctx
        file.contexts[ctx.id] = ctx
        fields[9] = ctx.id
        fields[10] = file.add_syncobj(sync)
        fields[8] = INVALID_DOORBELL         # a KMQ context has no user-mode queue
        return IoctlReply(0, patch(args, uapi.CREATE_HWCTX_ARGS, *fields))

    def _context(self, file: ClientFile, handle: int) -> HwContext:
        ctx = file.contexts.get(handle)
        if ctx is None:
            raise DriverError(errno.EINVAL, f"no hardware context {handle}")
        return ctx

    def _destroy_hwctx(self, file: ClientFile, args: bytes, extra: bytes) -> IoctlReply:
        handle, pad = uapi.DESTROY_HWCTX_ARGS.unpack_from(args)
        if pad:
            raise DriverError(errno.EINVAL, "pad must be zero")
        self._teardown(self._context(file, handle))
        return IoctlReply(0, args)

    def _teardown(self, ctx: HwContext) -> None:
        self.stack.destroy_context(ctx.sim)
        ctx.settle()
        for offset in ctx.buffers:
            ctx.file.handles.heap.give(offset, MAX_CHAIN_CMDBUF_SIZE)
        ctx.file.contexts.pop(ctx.id, None)
        self.contexts.pop(ctx.id, None)

    def _config_hwctx(self, file: ClientFile, args: bytes, extra: bytes) -> IoctlReply:
        handle, param, _, size, pad = uapi.CONFIG_HWCTX_ARGS.unpack_from(args)
        ctx = self._context(file, handle)
        if pad:
            raise DriverError(errno.EINVAL, "pad must be zero")
        if param in (uapi.HWCTX_ASSIGN_DBG_BUF, uapi.HWCTX_REMOVE_DBG_BUF):
            return IoctlReply(0, args)
        if param != uapi.HWCTX_CONFIG_CU or len(extra) < uapi.CU_CONFIG_HEAD.size:
            raise DriverError(errno.EINVAL, f"config parameter {param}")
        count = uapi.CU_CONFIG_HEAD.unpack_from(extra)[0]
        if count == 0 or uapi.CU_CONFIG_HEAD.size + count * uapi.CU_CONFIG.size > len(extra):
            raise DriverError(errno.EINVAL, f"{count} CUs in {len(extra)} bytes")
        cus = []
        kernels: list[tuple[KernelOfPdi, ...]] = []
        for index in range(count):
            bo, func = uapi.CU_CONFIG.unpack_from(extra, uapi.CU_CONFIG_HEAD.size
                                                  + index * uapi.CU_CONFIG.size)
            pdi = file.handles.get(bo)    # the PDI must be a buffer of this file
            cus.append((bo, func))
            kernels.append(self.pdis.kernels_of(pdi.read(0, pdi.size)) if self.pdis.sizes
                           else ())
        ctx.cus = cus
        ctx.cu_kernels = kernels
        ctx.sim.cu_configured = True
        return IoctlReply(0, args)

    def _latency(self, ctx: HwContext, cu: int | None) -> float:
        """A command's time: slow:STEM/KERNEL:US where its CU's PDI names the kernel
        (harness.emulator.kernels_by_pdi); the default where it names none, or several
        that the profile times differently (`emulate` warned)."""
        known = ctx.cu_kernels[cu] if cu is not None and cu < len(ctx.cu_kernels) else ()
        times = {self.stack.latency_for(k.stem, k.kernel) for k in known}
        return times.pop() if len(times) == 1 else self.stack.latency_for("", "")

    # -- buffers ----------------------------------------------------------------------------

    def _create_bo(self, file: ClientFile, args: bytes, extra: bytes) -> IoctlReply:
        flags, vaddr, size, kind, _ = uapi.CREATE_BO_ARGS.unpack_from(args)
        if flags:
            raise DriverError(errno.EINVAL, "flags must be zero")
        if vaddr:
            # a user-pointer BO pins the program's own pages, which the model cannot see
            raise DriverError(errno.EOPNOTSUPP, "CREATE_BO of user memory")
        buffer = self.memory.create(kind, size, file.handles.heap, self.heap_rule)
        handle = file.handles.add(buffer)
        return IoctlReply(0, patch(args, uapi.CREATE_BO_ARGS, flags, vaddr, size, kind, handle))

    def _get_bo_info(self, file: ClientFile, args: bytes, extra: bytes) -> IoctlReply:
        ext, ext_flags, handle, pad, *_ = uapi.GET_BO_INFO_ARGS.unpack_from(args)
        if ext or ext_flags or pad:
            raise DriverError(errno.EINVAL, "ext fields must be zero")
        buffer = file.handles.get(handle)
        return IoctlReply(0, patch(args, uapi.GET_BO_INFO_ARGS, ext, ext_flags, handle, pad,
                               buffer.map_offset, 0, buffer.xdna_addr))

    def _sync_bo(self, file: ClientFile, args: bytes, extra: bytes) -> IoctlReply:
        handle, direction, offset, size = uapi.SYNC_BO_ARGS.unpack_from(args)
        buffer = file.handles.get(handle)
        if direction not in (uapi.SYNC_TO_DEVICE, uapi.SYNC_FROM_DEVICE) or \
                offset + size > buffer.size:
            raise DriverError(errno.EINVAL, "sync outside the buffer")
        return IoctlReply(0, args)          # the run folder's memory is coherent: nothing to do

    def _gem_close(self, file: ClientFile, args: bytes, extra: bytes) -> IoctlReply:
        handle = uapi.GEM_CLOSE_ARGS.unpack_from(args)[0]
        buffer = file.handles.table.pop(handle, None)
        if buffer is None:
            raise DriverError(errno.EINVAL, f"no BO handle {handle}")
        self.memory.drop(buffer, file.handles.heap)
        return IoctlReply(0, args)

    def _export_bo(self, file: ClientFile, args: bytes, extra: bytes) -> IoctlReply:
        buffer = file.handles.get(uapi.PRIME_ARGS.unpack_from(args)[0])
        if buffer.path is None:
            raise DriverError(errno.EOPNOTSUPP, "PRIME export of a device BO")
        return IoctlReply(0, args, str(buffer.path).encode())

    def _import_bo(self, file: ClientFile, args: bytes, extra: bytes) -> IoctlReply:
        buffer = self.memory.by_path(extra.decode("utf-8", "replace"))
        if buffer is None:
            raise DriverError(errno.EINVAL, "not a buffer of this device")
        buffer.refs += 1
        handle = file.handles.add(buffer)
        _, flags, fd = uapi.PRIME_ARGS.unpack_from(args)
        return IoctlReply(0, patch(args, uapi.PRIME_ARGS, handle, flags, fd))

    # -- commands ---------------------------------------------------------------------------

    def _exec_cmd(self, file: ClientFile, args: bytes, extra: bytes) -> IoctlReply | Pending:
        ext, ext_flags, hwctx, kind, command, _, count, arg_count, _ = \
            uapi.EXEC_CMD_ARGS.unpack_from(args)
        if ext or ext_flags or kind != uapi.CMD_SUBMIT_EXEC_BUF or count != 1:
            raise DriverError(errno.EINVAL, "one EXEC_BUF command per submission")
        ctx = self._context(file, hwctx)
        try:
            buffer = file.handles.get(command & 0xFFFFFFFF)
            arguments = [file.handles.get(int.from_bytes(extra[i * 4:i * 4 + 4], "little"))
                         for i in range(min(arg_count, len(extra) // 4))]
        except DriverError:
            raise DriverError(errno.EINVAL, "command or argument BO lookup failed") from None
        sub = read_submission(buffer, file.handles, ctx.width, self.profile.device_model.dev_gen)
        count = len(sub.members)
        hangs: set[int] = set()
        if sub.chained:
            start = ctx.chain_start(sub, self.profile.xrt_chain, self.memory.newest)
            hangs = {k - start for k in self.profile.hang_at if start <= k < start + count}
            hangs |= self._work_hang(sub, ctx.works_before(sub))
            for position in self.profile.reject_at:
                if start <= position < start + count:
                    sub.faults.setdefault(position - start, REJECTED.format(position=position))
        latencies = [self._latency(ctx, cu) for cu in sub.cus]

        def take() -> None:
            try:
                sub.job = self.stack.submit(ctx.sim, latencies, sub.arg_bytes,
                                            sub.opcodes, sub.faults, hangs, sub.chained)
            except RuntimeError as err:
                # the legacy tree's dead context fails the submit -EIO (SubmitRefused)
                raise DriverError(getattr(err, "code", errno.EINVAL), str(err)) from None
            # the job holds its command BO and argument BOs until it ends (amdxdna_ctx.c
            # amdxdna_cmd_submit: amdxdna_gem_get_obj, amdxdna_arg_bos_lookup; put in
            # amdxdna_sched_job_cleanup): a GEM_CLOSE meanwhile drops the handle only
            held = [buffer, *arguments]
            for each in held:
                each.refs += 1

            def release() -> None:
                for each in held:
                    self.memory.drop(each, file.handles.heap)
            sub.release = release
            ctx.unsequenced.append(sub)
            ctx.unwritten.append(sub)
            ctx.settle()

        def answer() -> IoctlReply | None:
            if sub.job is None:
                # down_interruptible(&job_sem): with 4 jobs in flight the submit waits in the
                # ioctl; the model's own submit would wait inside the model, which answers
                # every client, so the ioctl is parked here until a slot is free
                if not self.stack.slot_free(ctx.sim):
                    return None
                try:
                    take()
                except DriverError as err:      # e.g. the context went while it waited
                    return IoctlReply(-err.code, args)
            return IoctlReply(0, patch(args, uapi.EXEC_CMD_ARGS, ext, ext_flags, hwctx, kind,
                                   command, *uapi.EXEC_CMD_ARGS.unpack_from(args)[5:8],
                                   sub.seq))
        return answer() or Pending(answer, None, answer)

    def _work_hang(self, sub: Submission, before: int) -> set[int]:
        """Where `work-hang:N` hangs this chain: at its runlist's Nth run carrying work,
        if that run is in it."""
        wanted = self.profile.work_hang
        if wanted is None or before >= wanted:
            return set()
        seen = before
        for index, works in enumerate(sub.works):
            seen += works
            if works and seen == wanted:
                return {index}
        return set()

    def _wait_cmd(self, file: ClientFile, args: bytes, extra: bytes) -> IoctlReply | Pending:
        hwctx, timeout_ms, seq = uapi.WAIT_CMD_ARGS.unpack_from(args)
        ctx = self._context(file, hwctx)
        if seq >= ctx.next_seq + len(ctx.unsequenced):
            raise DriverError(errno.EINVAL, f"no command {seq} on context {hwctx}")
        return wait(args, lambda: ctx.done_upto > seq,
                    time.monotonic() + timeout_ms / 1000 if timeout_ms else None)
