"""What an emulated ioctl answers: now (`IoctlReply`), or once the device has done something
(`Pending`, a wait the model process parks while it goes on answering others)."""

from __future__ import annotations

import errno
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class IoctlReply:
    ret: int                    # 0 (or a count), or -errno
    args: bytes                 # the argument struct as the driver leaves it
    extra: bytes = b""          # memory the driver writes back (or names, for an export)


@dataclass
class Pending:
    """Answered by `ready` once it returns a reply, or by `expire` at `deadline`
    (time.monotonic seconds; None: never)."""

    ready: Callable[[], IoctlReply | None]
    deadline: float | None
    expire: Callable[[], IoctlReply | None]        # None: still waiting


def patch(args: bytes, layout: struct.Struct, *values: object) -> bytes:
    """The argument struct with its leading fields replaced (a longer struct, such as a
    newer kernel's with a deadline field, keeps its tail)."""
    return layout.pack(*values) + args[layout.size:]


def wait(args: bytes, done: Callable[[], bool], deadline: float | None,
         reply: Callable[[], bytes] | None = None) -> IoctlReply | Pending:
    """Answer 0 once `done()`, or ETIME at `deadline` (a past deadline: at once)."""
    def answer() -> IoctlReply | None:
        return IoctlReply(0, reply() if reply else args) if done() else None
    first = answer()
    if first is not None:
        return first
    if deadline is not None and deadline <= time.monotonic():
        return IoctlReply(-errno.ETIME, args)
    return Pending(answer, deadline, lambda: answer() or IoctlReply(-errno.ETIME, args))


def copied_back(reply: IoctlReply | Pending, size: int) -> IoctlReply | Pending:
    """What the caller of a zero-extended struct sees of it: its own `size` bytes, as
    drm_ioctl copies back only the size the caller's ioctl number encodes."""
    if isinstance(reply, Pending):
        ready, expire = reply.ready, reply.expire
        return Pending(lambda: _cut(ready(), size), reply.deadline,
                       lambda: _cut(expire(), size))
    reply.args = reply.args[:size]
    return reply


def _cut(reply: IoctlReply | None, size: int) -> IoctlReply | None:
    if reply is not None and len(reply.args) > size:
        reply.args = reply.args[:size]
    return reply
