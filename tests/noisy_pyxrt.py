"""The simulated pyxrt, standing in on the hardware path, on a machine whose kernel log
has more to say than the simulated driver: when a runlist fails, lines a real machine
may log around it (an IOMMU page fault, a refused mailbox command, a failed host-buffer
map, the firmware power-cycle, an AIE error report, a rate-limit note, an unrelated
line) are appended to the fabricated /dev/kmsg, each in the driver's own format."""

from __future__ import annotations

import os
from pathlib import Path

import harness.sim.pyxrt as _sim
from harness.logs.kernel_log import escape
from harness.sim.pyxrt import *  # noqa: F403

__harness_stand_in__ = True
BDF = "0000:c7:00.1"
ERR = f"amdxdna {BDF}: [drm] *ERROR* "
EXTRA = [
    (3, f"amdxdna {BDF}: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x000b "
        "address=0xfffff000 flags=0x0020]"),
    (3, f"{ERR}aie_send_mgmt_msg_wait: command opcode 0x2 failed, status 0x2000003"),
    (3, f"{ERR}aie2_map_host_buf: Map host buffer failed, ret -22"),
    (4, f"amdxdna {BDF}: [drm] aie2_sched_job_timedout: NPU firmware unhealthy (ctx restart "
        "ret -5, health fatal+rejected) - power-cycling NPU"),
    (3, f"{ERR}aie2_error_worker: AIE error:"),
    (3, f"{ERR}aie2_error_worker: \tTile location (Row, Column): (2, 1)"),
    (3, f"{ERR}aie2_error_worker: \tModule: core"),
    (3, f"{ERR}aie2_error_worker: \tCategory: memory"),
    (3, f"{ERR}aie2_error_worker: \tEvent (ID): DM_ECC_ERROR_2BIT (64)"),
    (4, "aie2_error_worker: 3 callbacks suppressed"),
    (6, "usb 1-1: new high-speed USB device number 2 using xhci_hcd"),
]


def _append() -> None:
    kmsg = Path(os.environ["HARNESS_ROOT"]) / "dev" / "kmsg"
    with open(kmsg, "a", encoding="utf-8") as log:
        for seq, (level, text) in enumerate(EXTRA, 900):
            log.write(f"{level},{seq},2000000000,-;{escape(text)}\n SUBSYSTEM=pci\n")


class runlist(_sim.runlist):
    def wait(self, *args, **kwargs):
        try:
            return super().wait(*args, **kwargs)
        except RuntimeError:
            _append()
            raise
