"""DRM syncobjs of the emulated driver: the timeline a hardware context signals as its jobs
end, and the ones programs create (XRT's fences), with the DRM core's ioctls on them
(`include/uapi/drm/drm.h`, `drivers/gpu/drm/drm_syncobj.c` semantics).

A context's timeline point N is reached once every job up to sequence number N has ended
(the driver adds each job's fence as point `seq` of a fence chain, and a chain link
signals after all before it); point 0 waits for the syncobj's current fence, the last job
submitted. A wait with WAIT_FOR_SUBMIT may name a point not yet submitted; without it,
that is EINVAL. A user syncobj's timeline is what TIMELINE_SIGNAL set; a binary one is
signaled or not. An exported syncobj is a file in the run folder, which names it again on
import.
"""

from __future__ import annotations

import errno
import itertools
import struct
from pathlib import Path
from typing import Any

from harness.emulator import uapi
from harness.emulator.memory import DriverError
from harness.emulator.objects import ClientFile, Syncobj
from harness.emulator.replies import IoctlReply, Pending, patch, wait

INFINITE_NS = (1 << 63) - 1
WAIT_ALL, WAIT_FOR_SUBMIT = 1, 2
CREATE_SIGNALED = 1
EXPORT_SYNC_FILE = 1


class Syncobjs:
    """Every syncobj of the device, and the ioctls on them."""

    def __init__(self, exports: Path) -> None:
        self.exports = exports
        exports.mkdir(exist_ok=True)
        self.table: dict[int, Syncobj] = {}
        self._ids = itertools.count(1)

    def handlers(self) -> dict[int, Any]:
        return {uapi.SYNCOBJ_CREATE: self.create, uapi.SYNCOBJ_DESTROY: self.destroy,
                uapi.SYNCOBJ_HANDLE_TO_FD: self.export, uapi.SYNCOBJ_FD_TO_HANDLE: self.imports,
                uapi.SYNCOBJ_WAIT: self.wait, uapi.SYNCOBJ_RESET: self.reset,
                uapi.SYNCOBJ_SIGNAL: self.signal, uapi.SYNCOBJ_TIMELINE_WAIT: self.timeline_wait,
                uapi.SYNCOBJ_QUERY: self.query, uapi.SYNCOBJ_TIMELINE_SIGNAL: self.timeline_signal}

    def new(self) -> Syncobj:
        sync = Syncobj(next(self._ids))
        self.table[sync.id] = sync
        return sync

    def drop(self, sync: Syncobj) -> None:
        sync.refs -= 1
        if sync.refs <= 0:
            self.table.pop(sync.id, None)
            if sync.path is not None:
                sync.path.unlink(missing_ok=True)

    # -- the ioctls -----------------------------------------------------------------------

    def create(self, file: ClientFile, args: bytes, extra: bytes) -> IoctlReply:
        _, flags = uapi.SYNCOBJ_CREATE_ARGS.unpack_from(args)
        sync = self.new()
        sync.signaled = bool(flags & CREATE_SIGNALED)
        return IoctlReply(0, patch(args, uapi.SYNCOBJ_CREATE_ARGS, file.add_syncobj(sync), flags))

    def destroy(self, file: ClientFile, args: bytes, extra: bytes) -> IoctlReply:
        handle = uapi.SYNCOBJ_CREATE_ARGS.unpack_from(args)[0]
        sync = file.syncobjs.pop(handle, None)
        if sync is None:
            raise DriverError(errno.EINVAL, f"no syncobj {handle}")
        self.drop(sync)
        return IoctlReply(0, args)

    def export(self, file: ClientFile, args: bytes, extra: bytes) -> IoctlReply:
        handle, flags, _, _ = uapi.SYNCOBJ_HANDLE_ARGS.unpack_from(args)
        if flags & EXPORT_SYNC_FILE:
            raise DriverError(errno.EOPNOTSUPP, "export as a sync file")
        sync = file.syncobj(handle)
        if sync.path is None:
            sync.path = self.exports / str(sync.id)
            sync.path.touch()
        return IoctlReply(0, args, str(sync.path).encode())

    def imports(self, file: ClientFile, args: bytes, extra: bytes) -> IoctlReply:
        _, flags, fd, pad = uapi.SYNCOBJ_HANDLE_ARGS.unpack_from(args)
        path = Path(extra.decode("utf-8", "replace"))
        sync = self.table.get(int(path.name)) if path.parent == self.exports and \
            path.name.isdigit() else None
        if sync is None or flags & EXPORT_SYNC_FILE:
            raise DriverError(errno.EINVAL, "not a syncobj of this device")
        sync.refs += 1
        handle = file.add_syncobj(sync)
        return IoctlReply(0, patch(args, uapi.SYNCOBJ_HANDLE_ARGS, handle, flags, fd, pad))

    def wait(self, file: ClientFile, args: bytes, extra: bytes) -> IoctlReply | Pending:
        _, timeout, count, flags, _, _ = uapi.SYNCOBJ_WAIT_ARGS.unpack_from(args)
        return self._wait_points(args, uapi.SYNCOBJ_WAIT_ARGS, 4,
                                 _points(file, extra, count, False), timeout, flags)

    def timeline_wait(self, file: ClientFile, args: bytes, extra: bytes) -> IoctlReply | Pending:
        _, _, timeout, count, flags, _, _ = uapi.TIMELINE_WAIT_ARGS.unpack_from(args)
        return self._wait_points(args, uapi.TIMELINE_WAIT_ARGS, 5,
                                 _points(file, extra, count, True), timeout, flags)

    @staticmethod
    def _wait_points(args: bytes, layout: struct.Struct, first_field: int,
                     points: list[tuple[Syncobj, int]], timeout_ns: int, flags: int
                     ) -> IoctlReply | Pending:
        targets = []
        for sync, point in points:
            ctx = sync.context
            if ctx is None:
                targets.append((sync, point))
                continue
            target = sync.target(point)
            if target >= ctx.next_seq + len(ctx.unsequenced) and not flags & WAIT_FOR_SUBMIT:
                raise DriverError(errno.EINVAL, "waiting for a point not submitted")
            targets.append((sync, target))
        every = bool(flags & WAIT_ALL)
        signaled: list[int] = []

        def done() -> bool:
            hit = [i for i, (sync, point) in enumerate(targets) if sync.reached(point)]
            signaled[:] = hit[:1]
            return len(hit) == len(targets) if every else bool(hit)

        def reply() -> bytes:
            fields = list(layout.unpack_from(args))
            fields[first_field] = signaled[0] if signaled else 0
            return patch(args, layout, *fields)
        deadline = None if timeout_ns >= INFINITE_NS else timeout_ns / 1e9
        return wait(args, done, deadline, reply)

    def reset(self, file: ClientFile, args: bytes, extra: bytes) -> IoctlReply:
        count = uapi.SYNCOBJ_ARRAY_ARGS.unpack_from(args)[1]
        for sync, _ in _points(file, extra, count, False):
            sync.signaled, sync.value = False, 0
        return IoctlReply(0, args)

    def signal(self, file: ClientFile, args: bytes, extra: bytes) -> IoctlReply:
        count = uapi.SYNCOBJ_ARRAY_ARGS.unpack_from(args)[1]
        for sync, _ in _points(file, extra, count, False):
            sync.signaled = True
        return IoctlReply(0, args)

    def timeline_signal(self, file: ClientFile, args: bytes, extra: bytes) -> IoctlReply:
        count = uapi.TIMELINE_ARRAY_ARGS.unpack_from(args)[2]
        for sync, point in _points(file, extra, count, True):
            if sync.context is not None:
                raise DriverError(errno.EINVAL, "a context's timeline is the driver's")
            sync.value = max(sync.value, point)
            sync.signaled = True
        return IoctlReply(0, args)

    def query(self, file: ClientFile, args: bytes, extra: bytes) -> IoctlReply:
        count = uapi.TIMELINE_ARRAY_ARGS.unpack_from(args)[2]
        points = _points(file, extra, count, True)
        return IoctlReply(0, args, b"".join(sync.payload().to_bytes(8, "little")
                                       for sync, _ in points))


def _points(file: ClientFile, extra: bytes, count: int, timeline: bool
            ) -> list[tuple[Syncobj, int]]:
    """The (syncobj, point) pairs an ioctl names: `count` handles, then `count` points."""
    base = count * 4
    if count == 0 or len(extra) < base + (count * 8 if timeline else 0):
        raise DriverError(errno.EINVAL, "no syncobjs given")
    handles = [int.from_bytes(extra[i * 4:i * 4 + 4], "little") for i in range(count)]
    points = [int.from_bytes(extra[base + i * 8:base + i * 8 + 8], "little")
              if timeline else 0 for i in range(count)]
    return [(file.syncobj(h), p) for h, p in zip(handles, points, strict=True)]
