"""A pyxrt as small as the hardware path uses, built on nothing of the harness's: every
runlist completes at once. It lets a test drive the hardware path without the simulator
in the process, to show that path never imports it (tests/test_layout.py). It says it
stands in (`__harness_stand_in__`), so its results are labelled simulated all the same.
"""

from __future__ import annotations

import enum
import types
import uuid as _uuid

__harness_stand_in__ = True


class xrt_info_device(enum.Enum):        # noqa: N801 - pyxrt's own names
    name = 0


class xclBOSyncDirection(enum.Enum):     # noqa: N801
    XCL_BO_SYNC_BO_TO_DEVICE = 0
    XCL_BO_SYNC_BO_FROM_DEVICE = 1


class ert_cmd_state(enum.IntEnum):       # noqa: N801
    ERT_CMD_STATE_NEW = 1
    ERT_CMD_STATE_COMPLETED = 4


class uuid:                              # noqa: N801
    def __init__(self) -> None:
        self.value = _uuid.uuid4()


class xclbin:                            # noqa: N801
    def __init__(self, path: str) -> None:
        self.path = path
        self._uuid = uuid()

    def get_uuid(self) -> uuid:
        return self._uuid


class device:                            # noqa: N801
    def __init__(self, index: int) -> None:
        self.index = index

    def register_xclbin(self, x: xclbin) -> uuid:
        return x.get_uuid()

    def get_info(self, key: xrt_info_device) -> str:
        return "RyzenAI-npu5"


class hw_context:                        # noqa: N801
    def __init__(self, dev: device, what: object) -> None:
        self.dev = dev


class elf:                               # noqa: N801
    def __init__(self, path: str) -> None:
        self.path = path


class module:                            # noqa: N801
    def __init__(self, e: elf) -> None:
        self.elf = e


class kernel:                            # noqa: N801
    def __init__(self, ctx: hw_context, *rest: object) -> None:
        self.ctx = ctx

    def group_id(self, index: int) -> int:
        return index


class bo:                                # noqa: N801
    host_only, cacheable = 1 << 24, 1 << 25

    def __init__(self, dev: device, size: int, flags: int, group: int) -> None:
        self.size = size

    @staticmethod
    def flags(value: int) -> int:
        return value

    def write(self, data: object, offset: int) -> None:
        pass

    def sync(self, direction: xclBOSyncDirection) -> None:
        pass


class run:                               # noqa: N801
    def __init__(self, k: kernel) -> None:
        self.kernel = k

    def set_arg(self, index: int, value: object) -> None:
        pass

    def state(self) -> ert_cmd_state:
        return ert_cmd_state.ERT_CMD_STATE_NEW    # as XRT leaves members of a runlist


class runlist:                           # noqa: N801
    def __init__(self, ctx: hw_context) -> None:
        self.runs: list[run] = []

    def add(self, r: run) -> None:
        self.runs.append(r)

    def execute(self) -> None:
        pass

    def wait(self) -> None:
        pass


ext = types.SimpleNamespace(kernel=kernel, bo=bo)
