"""DRM ioctls on the NPU node, through fcntl.ioctl and ctypes buffers (no compiled code).

- ``DRM_IOCTL_VERSION`` (0xC0406400): driver name and major.minor.patch;
- ``DRM_IOCTL_AMDXDNA_GET_INFO`` (0xC0106447, ``{u32 param; u32 buffer_size; u64
  buffer}``): firmware version (param 8), AIE metadata with the column count
  (param 1), power mode (param 9). STACK.md 4; amd/xdna-driver
  `include/uapi/drm/amdxdna_accel.h`.

The probe only sees the `DrmQuery` protocol, so tests hand it canned answers.
"""

from __future__ import annotations

import fcntl
import os
import struct
from dataclasses import dataclass
from typing import Protocol

DRM_IOCTL_VERSION = 0xC0406400
DRM_IOCTL_AMDXDNA_GET_INFO = 0xC0106447
QUERY_AIE_METADATA = 1
QUERY_FIRMWARE_VERSION = 8
GET_POWER_MODE = 9
POWER_MODES = ("default", "powersaver", "balanced", "performance", "turbo")

_VERSION_STRUCT = "<iii4xQQQQQQ"        # struct drm_version on 64-bit Linux
_STRING = 128


@dataclass(frozen=True)
class DrmVersion:
    """What DRM_IOCTL_VERSION answers for a device node: the driver's name and version."""

    name: str
    major: int
    minor: int
    patch: int


class DrmQuery(Protocol):
    def version(self, node: str) -> DrmVersion | None: ...

    def get_info(self, node: str, param: int, size: int) -> bytes | None: ...


class RealDrm:
    """Answers from the kernel; None wherever the node or the ioctl refuses."""

    def _call(self, node: str, request: int, arg: bytearray) -> bool:
        try:
            fd = os.open(node, os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            fcntl.ioctl(fd, request, arg, True)
            return True
        except OSError:
            return False
        finally:
            os.close(fd)

    def version(self, node: str) -> DrmVersion | None:
        # imported here: only a real node is asked (the simulated stack has none), and
        # every start-up would pay for it
        import ctypes
        name = ctypes.create_string_buffer(_STRING)
        date = ctypes.create_string_buffer(_STRING)
        desc = ctypes.create_string_buffer(_STRING)
        arg = bytearray(struct.pack(_VERSION_STRUCT, 0, 0, 0,
                                    _STRING, ctypes.addressof(name),
                                    _STRING, ctypes.addressof(date),
                                    _STRING, ctypes.addressof(desc)))
        if not self._call(node, DRM_IOCTL_VERSION, arg):
            return None
        major, minor, patch, name_len = struct.unpack_from("<iii4xQ", arg)
        text = name.raw[:min(name_len, _STRING)].split(b"\0", 1)[0]
        return DrmVersion(text.decode("ascii", "replace"), major, minor, patch)

    def get_info(self, node: str, param: int, size: int) -> bytes | None:
        import ctypes
        buffer = ctypes.create_string_buffer(size)
        arg = bytearray(struct.pack("<IIQ", param, size, ctypes.addressof(buffer)))
        if not self._call(node, DRM_IOCTL_AMDXDNA_GET_INFO, arg):
            return None
        return buffer.raw


# -- decoding the answers (shared by real and canned sources) -------------------------

FIRMWARE_SIZE = 16          # struct amdxdna_drm_query_firmware_version
AIE_METADATA_SIZE = 40      # col_size, cols, rows, version, core/mem/shim tile metadata
POWER_MODE_SIZE = 8


def firmware(raw: bytes | None) -> str | None:
    if not raw or len(raw) < FIRMWARE_SIZE:
        return None
    return "{}.{}.{}.{}".format(*struct.unpack_from("<IIII", raw))


def columns(raw: bytes | None) -> int | None:
    if not raw or len(raw) < 8:
        return None
    return struct.unpack_from("<IHH", raw)[1]


def power_mode(raw: bytes | None) -> str | None:
    if not raw:
        return None
    mode = raw[0]
    return POWER_MODES[mode] if mode < len(POWER_MODES) else f"unknown ({mode})"
