"""A hardware context the driver refused, read by what its errno can say. Every status the
firmware refuses a command with becomes -EINVAL (amd/xdna-driver 856409ca
drivers/accel/amdxdna/aie.c aie_send_mgmt_msg_wait: MGMT_ERT_NOAVAIL, none left, as much as
any other), and so does a request the resource solver does not take (aie2_solver.c
sanity_check: a partition wider than the device, a QoS it cannot meet): CREATE_HWCTX -22
alone does not say none was left; the kernel log's status does ("status 0x2000003"). -ENOENT
(the legacy tree's "Not allow more than %d context(s)"), -ENODEV (no free partition:
aie2_solver.c get_free_partition), -EBUSY and -ENOSPC (Xilinx/mlir-aie#2333: the columns
held by another application) do."""

from __future__ import annotations

import pytest
from test_artefacts import kinds, read
from test_stack_causes import diagnosis_of

HWCTX = "[ERROR]  Failed to load model: DRM_IOCTL_AMDXDNA_CREATE_HWCTX IOCTL failed " \
        "(err={}): {}\n"
NOAVAIL = ("[84319.443131] amdxdna 0000:c2:00.1: [drm] *ERROR* aie2_send_mgmt_msg_wait: "
           "command opcode 0x2 failed, status 0x2000003\n")


@pytest.mark.parametrize("errno, why, sign", [
    ("-22", "Invalid argument", "context-refused"),
    ("-2", "No such file or directory", "context-unavailable"),
    ("-19", "No such device", "context-unavailable"),
    ("28", "No space left on device", "context-unavailable"),
])
def test_the_errno_says_how_much_is_known(tmp_path, errno, why, sign):
    observed = read(tmp_path, "[FLM]  Loading model: /m/Llama-3.2-1B-NPU2\n"
                              + HWCTX.format(errno, why))
    assert kinds(observed) == ["ioctl-failed", sign]


def test_einval_alone_is_not_said_to_be_none_left(tmp_path):
    """fastflow/fastflow#58's paste (an NPU2 pack, the NPU's generation not shown): the
    three open causes say what the errno says, and the probe (its generation, its other
    holders) is what decides."""
    diagnosis = diagnosis_of(tmp_path, "[FLM]  Loading model: /root/.config/flm/models/"
                                       "Llama-3.2-1B-NPU2\n" + HWCTX.format("-22",
                                                                          "Invalid argument"))
    assert diagnosis.top.id == "undetermined"
    assert set(diagnosis.top.leading) == {"resources", "contention", "wrong-binary"}
    said = " ".join(f.text for e in diagnosis.entries for f in e.supports)
    assert "none left (whose demand" not in said and "none left, or a request" in said
    assert "this NPU's generation" in diagnosis.top.experiment


def test_the_firmware_s_noavail_beside_it_says_none_was_left(tmp_path):
    diagnosis = diagnosis_of(tmp_path, NOAVAIL + "[84319.443143] amdxdna 0000:c2:00.1: [drm] "
                             "*ERROR* aie2_hwctx_init: Alloc hw resource failed, ret -22\n")
    assert "refused with none left" in diagnosis.entry("contention").supports[0].text
