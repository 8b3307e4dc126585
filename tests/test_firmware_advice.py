"""What the firmware's refusal asks of the machine, by who refused what. FastFlowLM's own
check refuses NPU firmware older than 1.1 (ROCm/FastFlowLM src/src/main.cpp
sanity_check_npu_stack, STACK.md 5; #421 posts 1.0.0.63 refused, #536 1.0.0.166): its fix is
newer firmware, never the older one a driver without f1eac46fe5f7 takes. A driver that
refused the firmware's protocol (aie2_check_protocol: "Incompatible firmware protocol major
7 minor 2", the 1.1.2.64/65 firmware) takes a driver that speaks it, or the older firmware
where nothing needs 1.1 (amd/xdna-driver#1257: maxzhen's three remedies)."""

from __future__ import annotations

from test_stack_causes import diagnosis_of

VALIDATE_OLD = ("[Linux]  Kernel: 6.19.8-1-cachyos\n[ERROR]  NPU firmware version on "
                "/dev/accel/accel0 is incompatible. Please update NPU firmware!\n[Linux]  NPU: "
                "/dev/accel/accel0 with 8 columns\n[Linux]  NPU FW Version: 1.0.0.63\n")
REFUSED = ("amdxdna 0000:c5:00.1: [drm] *ERROR* aie2_check_protocol: Incompatible firmware "
           "protocol major 7 minor 2\n")
OLDER_FIRMWARE = "protocol 6 (firmware 1.0.0.63"


def test_firmware_fastflowlm_calls_too_old_is_answered_with_newer_firmware(tmp_path):
    diagnosis = diagnosis_of(tmp_path, VALIDATE_OLD)
    entry = diagnosis.entry("firmware-mismatch")
    assert "install NPU firmware 1.1 or later" in entry.experiment
    assert OLDER_FIRMWARE not in entry.experiment and "1.0.0.63, for one" not in \
        diagnosis.top.experiment


def test_a_driver_refusing_the_protocol_with_fastflowlm_on_it_needs_the_driver(tmp_path):
    diagnosis = diagnosis_of(tmp_path, REFUSED, VALIDATE_OLD)
    experiment = diagnosis.entry("firmware-mismatch").experiment
    assert "Linux 7.0 or later" in experiment and "the DKMS driver" in experiment
    assert OLDER_FIRMWARE not in experiment
    assert "FastFlowLM refuses NPU firmware below 1.1" in experiment


def test_a_driver_refusing_the_protocol_alone_may_take_the_older_firmware(tmp_path):
    experiment = diagnosis_of(tmp_path, REFUSED).entry("firmware-mismatch").experiment
    assert OLDER_FIRMWARE in experiment and "Linux 7.0 or later" in experiment
