"""A struct shorter than an ioctl's own, as the DRM core treats it: `drm_ioctl` (Linux
drivers/gpu/drm/drm_ioctl.c) copies in the size the caller's ioctl number encodes,
zero-extends it to the size the driver declared (`ksize = max(in_size, out_size,
drv_size)`, `memset(kdata + in_size, 0, ksize - in_size)`) and copies back the caller's
size only. So the handler answers a short struct as it answers zeros there; the emulated
device's server answered EIO and logged a fault of its own instead (127 times under
random frames). Pure Python: the driver and its server without the preload library."""

from __future__ import annotations

import logging
import random

import pytest

from harness.emulator import uapi
from harness.emulator.device import EmulatedDevice
from harness.emulator.emulated_driver import EmulatedDriver
from harness.emulator.replies import IoctlReply
from harness.emulator.server import OP_IOCTL, OP_OPEN, ClientConnection, Server
from harness.sim.profiles import parse_profile


def driver(folder) -> EmulatedDriver:
    folder.mkdir(exist_ok=True)
    return EmulatedDriver(EmulatedDevice(parse_profile("staging")), folder)


@pytest.mark.parametrize("nr", sorted(uapi.DECLARED), ids=lambda nr: uapi.NAMES[nr])
def test_a_short_struct_gets_what_zeros_there_get_and_only_its_own_size_back(tmp_path, nr):
    layout = uapi.DECLARED[nr]
    for given in (0, layout.size // 2, layout.size - 1):
        short = driver(tmp_path / f"short{given}")
        zeros = driver(tmp_path / f"zeros{given}")
        cmd = uapi.iowr(nr, given)
        got = short.ioctl(short.open(1), cmd, bytes(given), b"")
        want = zeros.ioctl(zeros.open(1), uapi.iowr(nr, layout.size), bytes(layout.size), b"")
        assert isinstance(got, IoctlReply) and isinstance(want, IoctlReply)
        assert got.ret == want.ret, (uapi.NAMES[nr], given)
        assert len(got.args) == given
        assert got.args == want.args[:given]


def test_a_short_struct_with_no_context_is_einval_as_the_driver_answers(tmp_path):
    emulated = driver(tmp_path)
    file = emulated.open(1)
    for nr in (uapi.DESTROY_HWCTX, uapi.WAIT_CMD, uapi.EXEC_CMD):
        assert emulated.ioctl(file, uapi.iowr(nr, 4), bytes(4), b"").ret == -22


class _Socket:
    def sendall(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        pass


def test_random_frames_get_the_driver_s_answers_and_no_fault_of_the_model(tmp_path, caplog):
    server = Server(tmp_path, driver(tmp_path), None)
    connection = ClientConnection(_Socket())          # type: ignore[arg-type]
    server._handle(connection, OP_OPEN, 0, 1, 0, b"", b"")
    rng = random.Random(51)
    known = sorted(uapi.DECLARED)
    with caplog.at_level(logging.ERROR, logger="harness.emulator"):
        for _ in range(2000):
            size = rng.randrange(0, 72)
            cmd = uapi.iowr(rng.choice(known), size)
            args = bytes(rng.randrange(256) if rng.random() < 0.5 else 0 for _ in range(size))
            extra = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 48)))
            server._handle(connection, OP_IOCTL, connection.file_id or 0, 1, cmd, args, extra)
    assert server.faults == 0
    assert not [r for r in caplog.records if "the model failed" in r.getMessage()]
