"""The model process of `runlist-harness emulate`: the emulated driver behind a unix
socket, run in a process of its own because pyxrt holds the GIL while it waits, so the
model cannot live in the interpreter of the program it answers.

The preload library greets the model once per process before the program's own code
runs (OP_HELLO: the model answers with what it is, and records the process, so that
`emulate` can tell the program really ran emulated), connects once per open device file
(that connection is the file: its end releases what the file held) and once per
concurrent ioctl, and asks whether the model still answers while a request waits long
(OP_PING). A frame is a
32-byte request {magic, op, file, pid, cmd, struct length, extra length} followed by the
ioctl's argument struct and the user memory it points to; the answer is a 16-byte head
{magic, result, struct length, extra length}, the struct as the driver leaves it and the
memory to copy back. A request that waits on the device (a full context's submit, a
command or syncobj wait) is answered when the model says, while the loop goes on
answering others. The device's clock runs while some request waits, and stands still
in between (`harness.sim.clock`): the time a program spends between its calls, over
this socket included, is not the device's.

Run as ``python -m harness.emulator.server FOLDER PROFILE PARENT_PID [CLOCK_RATE]``
(the device's clock runs CLOCK_RATE times faster than the wall clock); it stops on
SIGTERM, or when the process that started it is gone, and leaves ``model.json`` (what
it answered, what it could not, the processes it greeted, the requests its own faults
left unanswered) in FOLDER. A fault of the model is logged and answered EIO; it never
takes the device down.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import selectors
import signal
import socket
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.emulator.device import EmulatedDevice
from harness.emulator.emulated_driver import EmulatedDriver, IoctlReply, Pending
from harness.sim.profiles import parse_profile

MAGIC = 0x58444E41
OP_OPEN, OP_IOCTL, OP_HELLO, OP_PING = 1, 2, 3, 4
REQUEST = struct.Struct("<IIIIQII")
REPLY = struct.Struct("<IiII")
SOCKET_NAME = "model.sock"
SUMMARY_NAME = "model.json"
PARENT_CHECK_S = 0.5
MAX_FRAME = 80 << 20
MAX_GREETED = 4096            # processes remembered (a program that forks and execs many)

log = logging.getLogger("harness.emulator")


@dataclass(eq=False)
class ClientConnection:
    sock: socket.socket
    buffer: bytearray = field(default_factory=bytearray)
    file_id: int | None = None           # set on the connection that is a device file


def encode_reply(reply: IoctlReply) -> bytes:
    return REPLY.pack(MAGIC, reply.ret, len(reply.args), len(reply.extra)) + reply.args + \
        reply.extra


class Server:
    def __init__(self, folder: Path, driver: EmulatedDriver, parent: int | None,
                 clock_rate: float = 1.0) -> None:
        self.folder = folder
        self.driver = driver
        self.parent = parent
        self.clock_rate = clock_rate
        self.greeted: list[int] = []
        self.faults = 0
        self.selector = selectors.DefaultSelector()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        path = folder / SOCKET_NAME
        self.listener.bind(str(path) + ".new")
        self.listener.listen(128)
        os.replace(str(path) + ".new", path)      # the socket appears ready to connect
        self.selector.register(self.listener, selectors.EVENT_READ)
        self.parked: list[tuple[ClientConnection, Pending]] = []
        self.requests = 0
        self.stopping = False

    def serve(self) -> None:
        next_check = time.monotonic() + PARENT_CHECK_S
        while not self.stopping:
            for key, _ in self.selector.select(self._timeout(next_check)):
                if key.fileobj is self.listener:
                    self._accept()
                else:
                    self._read(key.data)
            try:
                self.driver.tick()
            except Exception:              # the device's time went wrong: said, not fatal
                self._fault("the device's clock")
            self._answer_parked()
            self.driver.waiting(bool(self.parked))
            if time.monotonic() >= next_check:
                next_check = time.monotonic() + PARENT_CHECK_S
                if self.parent is not None and os.getppid() != self.parent:
                    break

    def _timeout(self, next_check: float) -> float:
        now = time.monotonic()
        waits = [next_check - now]
        due = self.driver.seconds_to_next_event()
        if due is not None:
            waits.append(due)
        idle = self.driver.seconds_to_idle()
        if idle > 0.0:
            waits.append(idle)               # the device's clock runs from then on
        waits += [p.deadline - now for _, p in self.parked if p.deadline is not None]
        return max(0.0, min(waits))

    def _fault(self, what: str) -> None:
        self.faults += 1
        log.exception("the model failed at %s", what)

    def _accept(self) -> None:
        try:
            sock, _ = self.listener.accept()
        except OSError:
            return
        connection = ClientConnection(sock)
        self.selector.register(sock, selectors.EVENT_READ, connection)

    def _read(self, connection: ClientConnection) -> None:
        try:
            data = connection.sock.recv(1 << 16)
        except OSError:
            data = b""
        if not data:
            self._close(connection)
            return
        buffer = connection.buffer
        buffer += data
        while len(buffer) >= REQUEST.size:
            magic, op, file_id, pid, cmd, size, extra = REQUEST.unpack_from(buffer)
            total = REQUEST.size + size + extra
            if magic != MAGIC or total > MAX_FRAME:
                self._close(connection)
                return
            if len(buffer) < total:
                return
            args = bytes(buffer[REQUEST.size:REQUEST.size + size])
            more = bytes(buffer[REQUEST.size + size:total])
            del buffer[:total]
            self._handle(connection, op, file_id, pid, cmd, args, more)

    def _handle(self, connection: ClientConnection, op: int, file_id: int, pid: int, cmd: int,
                args: bytes, extra: bytes) -> None:
        self.requests += 1
        if op == OP_OPEN:
            connection.file_id = self.driver.open(pid)
            self._send(connection, IoctlReply(connection.file_id, args))
            return
        if op in (OP_HELLO, OP_PING):
            if op == OP_HELLO and len(self.greeted) < MAX_GREETED:
                self.greeted.append(pid)
            self._send(connection, IoctlReply(0, args, self._greeting() if op == OP_HELLO
                                              else b""))
            return
        try:
            result = self.driver.ioctl(file_id, cmd, args, extra) if op == OP_IOCTL \
                else IoctlReply(-errno.EINVAL, args)
        except Exception:                  # a bug of the model must not take the device down
            self._fault(f"ioctl {cmd:#x}")
            result = IoctlReply(-errno.EIO, args)
        if isinstance(result, Pending):
            self.parked.append((connection, result))
        else:
            self._send(connection, result)

    def _greeting(self) -> bytes:
        """What the model says to a process's handshake: who answers it."""
        return json.dumps({"model": "harness.emulator.server", "pid": os.getpid(),
                           "profile": self.driver.device.profile.name,
                           "clock_rate": self.clock_rate}).encode()

    def _answer_parked(self) -> None:
        if not self.parked:
            return
        now = time.monotonic()
        still = []
        for connection, pending in self.parked:
            try:
                reply = pending.ready()
                if reply is None and pending.deadline is not None and now >= pending.deadline:
                    reply = pending.expire()
            except Exception:
                self._fault("a waiting request")
                reply = IoctlReply(-errno.EIO, b"")
            if reply is None:
                still.append((connection, pending))
            else:
                self._send(connection, reply)
        self.parked = still

    def _send(self, connection: ClientConnection, reply: IoctlReply) -> None:
        try:
            connection.sock.sendall(encode_reply(reply))
        except OSError:
            self._close(connection)

    def _close(self, connection: ClientConnection) -> None:
        try:
            self.selector.unregister(connection.sock)
        except (KeyError, ValueError):
            pass
        connection.sock.close()
        self.parked = [(c, p) for c, p in self.parked if c is not connection]
        if connection.file_id is not None:
            self.driver.release(connection.file_id)

    def summary(self) -> dict:
        stack = self.driver.stack
        return {"profile": self.driver.profile.name, "requests": self.requests,
                "jobs": len(stack.jobs), "commands_completed": stack.completed_commands,
                "unanswered": dict(sorted(self.driver.unanswered.items())),
                "greeted": self.greeted, "faults": self.faults}


def main(argv: list[str]) -> None:
    folder, profile_text, parent = Path(argv[0]), argv[1], int(argv[2])
    rate = float(argv[3]) if len(argv) > 3 else 1.0
    logging.basicConfig(filename=folder / "model.log", level=logging.INFO,
                        format="%(asctime)s %(message)s")
    # Terminal signals belong to the program being emulated; SIGTERM is the stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    server: Server | None = None

    def stop(*_: object) -> None:
        if server is not None:
            server.stopping = True
    signal.signal(signal.SIGTERM, stop)
    driver = EmulatedDriver(EmulatedDevice(parse_profile(profile_text)), folder, rate)
    server = Server(folder, driver, parent, rate)
    try:
        server.serve()
    finally:
        (folder / SUMMARY_NAME).write_text(json.dumps(server.summary(), indent=1) + "\n",
                                           encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
