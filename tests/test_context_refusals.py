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


_REFUSED_EVENTS = [
    {"event": "mailbox_failure", "usec": 60_001_200, "function": "aie2_send_mgmt_msg_wait",
     "opcode": 2, "status": 0x2000003, "opcode_name": "CREATE_CONTEXT",
     "status_name": "MGMT_ERT_NOAVAIL"},
    {"event": "context_refused", "usec": 60_001_200, "function": "aie2_hwctx_init",
     "ret": -22}]


def test_a_context_refused_after_the_runlists_ran_is_not_the_set_up_s(tmp_path):
    """A trial whose runlist the device timed out made its contexts before it submitted
    it: a refusal in its kernel log is the driver making one again (its restart of the hung
    context, which in-tree 7.0 follows with no timeout line of its own: 234824b1
    aie2_ctx.c aie2_sched_job_timedout), not what failed the runlist. The same refusal in a
    trial whose set-up failed is the run's own: it speaks for the causes of contexts."""
    from diagkit import failed_trial, hardware_report, plan, setup_refused

    from harness.report.diagnosis import diagnose
    ran = [failed_trial(i, 42, [24, 18], "TIMEOUT", wall_ms=60001.2,
                        events=[dict(e) for e in _REFUSED_EVENTS]) for i in range(3)]
    after = diagnose([hardware_report(tmp_path, "ran", [plan("monolithic", "42", [42],
                                                             ran)])])
    for cause in ("resources", "contention"):
        assert not after.entry(cause).supports, cause
    refused = [dict(setup_refused(i, "DRM_IOCTL_AMDXDNA_CREATE_HWCTX IOCTL failed (err=-22):"
                                     " Invalid argument"),
                    kernel_log={"source": "/dev/kmsg", "lines": [],
                                "events": [dict(e) for e in _REFUSED_EVENTS]})
               for i in range(3)]
    before = diagnose([hardware_report(tmp_path, "set-up", [plan("monolithic", "42", [42],
                                                                 refused)])])
    assert before.entry("contention").supports
    assert any("MGMT_ERT_NOAVAIL" in f.text or "none left" in f.text
               for f in before.entry("contention").supports + before.entry("resources").supports)
