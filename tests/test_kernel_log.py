"""Reading the kernel log (harness.logs.kernel_log) and understanding the driver's lines
(harness.logs.driver_lines), against records as /dev/kmsg and journalctl give them and the
driver's format strings as its sources write them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.execution.recovery import check_recovery, recovery_fix
from harness.formats.capped_run import Completed
from harness.logs.driver_lines import events, firmware_account, tree_note, trial_entry
from harness.logs.kernel_log import (
    MAX_KEPT_LINES,
    JournalReader,
    KmsgReader,
    LogRecord,
    Unreadable,
    escape,
    limit_lines,
    open_kernel_log,
    parse_journal,
    parse_kmsg,
)
from harness.model.ert import parse_xrt_error
from harness.report.evidence import xrt_account

BDF = "0000:c7:00.1"
DRM_ERR = f"amdxdna {BDF}: [drm] *ERROR* "
LEGACY = f"amdxdna {BDF}: "


def records(*texts: str) -> list[LogRecord]:
    return [LogRecord(3, 1_000_000 + i, t) for i, t in enumerate(texts)]


# -- /dev/kmsg records (Documentation/ABI/testing/dev-kmsg) --------------------------------

@given(st.text(max_size=80))
def test_kmsg_escaping_round_trips_any_text(text):
    """printk's msg_add_ext_text writes bytes < 0x20, >= 0x7f and '\\' as \\xNN."""
    line = f"3,7,1234,-;{escape(text)}"
    assert "\n" not in line
    (record,) = parse_kmsg(line + "\n")
    assert record.text == text and record.level == 3


def test_kmsg_skips_dictionary_lines_and_torn_records():
    text = ("6,1,100,-;amdxdna 0000:c7:00.1: [drm] Load firmware x\n SUBSYSTEM=pci\n"
            " DEVICE=+pci:0000:c7:00.1\nnot a record\n3,2,oops,-;bad time\n"
            "11,3,2500000,c;facility 1 level 3\n")
    parsed = parse_kmsg(text)
    assert [r.text for r in parsed] == ["amdxdna 0000:c7:00.1: [drm] Load firmware x",
                                        "facility 1 level 3"]
    assert parsed[1].level == 3 and parsed[1].shown() == "[    2.500000] facility 1 level 3"


def test_the_reader_marks_now_and_reads_only_what_came_after(tmp_path):
    kmsg = tmp_path / "kmsg"
    kmsg.write_text(f"3,1,1,-;{DRM_ERR}aie2_tdr_detect: TDR timeout detected\n")
    reader = KmsgReader(kmsg)
    reader.mark()
    with open(kmsg, "a") as log:
        log.write(f"3,2,2,-;{DRM_ERR}aie2_hwctx_init: Alloc hw resource failed, ret -22\n"
                  "6,3,3,-;usb 1-1: new device\n")
    reading = reader.read()
    assert [r.text.split(": ", 2)[-1] for r in reading.records] == [
        "Alloc hw resource failed, ret -22"]
    assert reading.dropped == 1 and reader.read().records == []
    reader.close()


def test_journalctl_is_read_with_a_time_window_and_byte_array_messages():
    """journalctl -o json: MESSAGE is a string, or an array of bytes when not UTF-8."""
    calls = []
    lines = [{"MESSAGE": f"{DRM_ERR}aie2_tdr_detect: TDR timeout detected", "PRIORITY": "3",
              "__REALTIME_TIMESTAMP": str(10**16), "_SOURCE_MONOTONIC_TIMESTAMP": "5000000"},
             {"MESSAGE": list(b"amdxdna 0000:c7:00.1: [drm] x: \xff"), "PRIORITY": "4",
              "__REALTIME_TIMESTAMP": str(10**16 + 1)},
             {"MESSAGE": "older", "__REALTIME_TIMESTAMP": "1"}]

    def run(argv, timeout):
        calls.append(argv)
        return Completed(0, "\n".join(json.dumps(x) for x in lines), "")
    reader = JournalReader("journalctl", run)
    reader._since_us = 10**16 - 5
    reading = reader.read()
    assert [r.usec for r in reading.records] == [5_000_000, 0]
    assert reading.records[1].text.endswith("\ufffd")
    assert calls[0][:3] == ["journalctl", "-k", "-o"] and "--since" in calls[0]
    assert parse_journal("{not json\n[1]\n") == []


def test_an_unreadable_log_says_why_and_how_to_allow_it(tmp_path):
    def refused(argv, timeout):
        return Completed(1, "", "No journal files were opened due to insufficient "
                                "permissions.")
    reader = open_kernel_log(tmp_path / "absent", "journalctl", refused)
    assert isinstance(reader, Unreadable)
    assert "/dev/kmsg is absent" in reader.why and "insufficient permissions" in reader.why
    assert "kernel.dmesg_restrict=0" in reader.fix and "systemd-journal" in reader.fix
    assert trial_entry(reader, "staging", failed=True)["unreadable"] == reader.why
    assert trial_entry(reader, "staging", failed=False) is None


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_a_kmsg_this_user_cannot_open_falls_back_to_the_journal(tmp_path):
    kmsg = tmp_path / "kmsg"
    kmsg.write_text("")
    kmsg.chmod(0)
    reader = open_kernel_log(kmsg, "journalctl", lambda argv, t: Completed(0, "", ""))
    assert isinstance(reader, JournalReader)


def test_a_trial_keeps_at_most_the_first_and_last_lines():
    many = records(*[f"{DRM_ERR}f: line {i}" for i in range(MAX_KEPT_LINES + 50)])
    kept, omitted = limit_lines(many)
    assert len(kept) == MAX_KEPT_LINES and omitted == 50
    assert kept[0].endswith("line 0") and kept[-1].endswith(f"line {MAX_KEPT_LINES + 49}")


# -- the driver's lines --------------------------------------------------------------------

STAGING_TIMEOUT = [
    # drivers/accel/amdxdna/aie2_ctx.c aie2_tdr_detect, aie2_set_cmd_timeout
    f"{DRM_ERR}aie2_tdr_detect: TDR timeout detected",
    f"{DRM_ERR}aie2_set_cmd_timeout: Firmware timeout state capture:",
    f"{DRM_ERR}aie2_set_cmd_timeout: \tVersion: 1.0",
    f"{DRM_ERR}aie2_set_cmd_timeout: \tReport size: 0x30",
    f"{DRM_ERR}aie2_set_cmd_timeout: \tContext ID: 5",
    f"{DRM_ERR}aie2_set_cmd_timeout: \tDPU PC: 0x1a0",
    f"{DRM_ERR}aie2_set_cmd_timeout: \tTXN OP ID: 0x2c",
    f"{DRM_ERR}aie2_set_cmd_timeout: \tContext PC: 0x40",
    f"{DRM_ERR}aie2_set_cmd_timeout: \tFatal error type: 0x0",
    f"{DRM_ERR}aie2_set_cmd_timeout: \tFatal error exception type: 0x0",
    f"{DRM_ERR}aie2_set_cmd_timeout: \tFatal error exception PC: 0x0",
    f"{DRM_ERR}aie2_set_cmd_timeout: \tFatal error app module: 0x0",
    f"{DRM_ERR}aie2_set_cmd_timeout: \tFatal error task ID: 0",
    f"{DRM_ERR}aie2_set_cmd_timeout: \tTimed out sub command ID: 17",
    # aie2_ctx.c aie2_sched_job_timedout, aie2_pci.c aie2_hw_reset
    f"amdxdna {BDF}: [drm] aie2_sched_job_timedout: NPU context restart rejected (ret -5) "
    "without fatal report - not power-cycling",
    f"amdxdna {BDF}: [drm] aie2_hw_reset: NPU firmware unhealthy: power-cycling NPU",
    # aie2_tdr.c aie2_tdr_work_func (staging on kernels before 6.17)
    f"amdxdna {BDF}: [drm] aie2_tdr_work_func: Device isn't making progress",
    # aie2_pci.c aie2_init: XDNA_INFO names no function
    f"amdxdna {BDF}: [drm] Load firmware amdnpu/17f0_11/npu_7.sbin",
    f"{DRM_ERR}aie2_init: failed to request_firmware amdnpu/17f0_11/, ret -2",
    # drivers/iommu/amd/iommu.c, the older form naming the device
    "AMD-Vi: Event logged [IO_PAGE_FAULT device=c7:00.1 domain=0x000b "
    "address=0xfffff000 flags=0x0020]",
]
LEGACY_DUMP = [
    # src/driver/amdxdna/aie2_tdr.c aie2_tdr_work, aie2_ctx.c aie2_dump_ctx
    f"{LEGACY}aie2_tdr_work: Device isn't making progress... Count 2 timeout 2 dump_only 0",
    f"{LEGACY}aie2_dump_ctx: Dumping ctx ctx.1.1, hwctx 1, sub=0, comp=0",
    f"{LEGACY}aie2_dump_ctx: Firmware timeout state capture:",
    f"{LEGACY}aie2_dump_ctx: \tContext ID: 1",
    f"{LEGACY}aie2_dump_ctx: Dumping ctx ctx.1.2, hwctx 2, sub=3, comp=1",
    f"{LEGACY}aie2_dump_ctx: Firmware timeout state capture:",
    f"{LEGACY}aie2_dump_ctx: \tContext ID: 2",
    f"{LEGACY}aie2_dump_ctx: \tTimed out sub command ID: 4",
    f"{LEGACY}aie2_dump_ctx: JOB[0]:",
    f"{LEGACY}aie2_dump_ctx: \tseq: 3",
    f"{LEGACY}aie2_dump_ctx: \top: 0x13",
    f"{LEGACY}aie2_dump_ctx: \tmsg: 0x3",
    f"{LEGACY}aie2_dump_ctx: \tfence: unsignaled",
    f"{LEGACY}aie2_dump_ctx: \tout_fence: not-exist",
    # aie2_ctx.c aie2_sched_cmdlist_resp_handler; aie2_message.c aie2_send_mgmt_msg_wait
    f"{LEGACY}aie2_sched_cmdlist_resp_handler: Invalid run_list_id 30, command count 24",
    f"{LEGACY}aie2_send_mgmt_msg_wait: command opcode 0x10 failed, status 0x4000003",
    "aie2_dump_ctx: 12 callbacks suppressed",
]


def test_the_staging_timeout_lines_become_events_with_fields():
    found = events(records(*STAGING_TIMEOUT))
    assert [e["event"] for e in found] == [
        "tdr_timeout", "timeout_capture", "restart_rejected", "firmware_unhealthy",
        "no_progress", "firmware_loaded", "firmware_request_failed", "iommu_page_fault"]
    capture = found[1]
    assert capture["function"] == "aie2_set_cmd_timeout" and capture["version"] == "1.0"
    assert (capture["dpu_pc"], capture["txn_op_id"], capture["context_pc"]) == (0x1a0, 0x2c,
                                                                                0x40)
    assert capture["timed_out_sub_command_id"] == 17 and capture["context_id"] == 5
    assert found[2]["ret"] == -5 and found[5]["file"] == "amdnpu/17f0_11/npu_7.sbin"
    assert found[7]["device"] == "c7:00.1" and found[7]["address"] == "0xfffff000"
    assert "function" not in found[5]                       # XDNA_INFO: no function name


def test_the_legacy_dump_becomes_events_and_the_busy_context_gives_the_account():
    found = events(records(*LEGACY_DUMP))
    kinds = [e["event"] for e in found]
    assert kinds == ["no_progress", "context_dump", "timeout_capture", "context_dump",
                     "timeout_capture", "job", "invalid_run_list_id", "mailbox_failure",
                     "callbacks_suppressed"]
    assert found[0] == {"event": "no_progress", "usec": 1_000_000, "function": "aie2_tdr_work",
                        "count": 2, "timeout": 2, "dump_only": 0}
    assert found[5]["op"] == 0x13 and found[5]["out_fence"] == "not-exist"
    assert found[7]["status_name"] == "INVALID_PARAM" and found[7]["opcode_name"] == "EXEC_DPU"
    assert found[8]["count"] == 12
    # every context is dumped; the one with work in flight (sub 3 > comp 1) hung
    assert firmware_account(found) == {"context_id": 2, "timed_out_sub_command_id": 4}


@pytest.mark.parametrize("lines, flavour, tree, words", [
    (STAGING_TIMEOUT, "staging", "drm", "as the staging driver prints"),
    (STAGING_TIMEOUT, "mainline", "drm", "as the mainline driver prints"),
    (LEGACY_DUMP, "oot", "legacy", "as the oot driver prints"),
    (LEGACY_DUMP, "staging", "legacy", "may not be the one the probe read"),
    (STAGING_TIMEOUT + LEGACY_DUMP, "staging", "mixed", "both"),
    (STAGING_TIMEOUT, None, "drm", "could not tell"),
])
def test_the_prefix_tells_the_tree_and_is_compared_with_the_flavour(lines, flavour, tree,
                                                                     words):
    """[drm] *ERROR* from drm_err (staging/in-tree amdxdna_pci_drv.h) vs dev_err (legacy
    amdxdna_drm.h)."""
    found, note = tree_note(records(*lines), flavour)
    assert found == tree and words in note


@pytest.mark.parametrize("message, fields, identity", [
    # XRT 2.20.197 amend_aie_error_message: V0 layout, headline + "\n" first
    ("runlist failed execution\ntxn_op_idx = 0x0000002C\nctx_pc = 0x00000040\n"
     "fatal_error_type = 0x00000000\nfatal_error_exception_type = 0x00000000\n"
     "fatal_error_exception_pc = 0x00000000\nfatal_error_app_module = 0x00000000\n",
     {"txn_op_id": 0x2c, "context_pc": 0x40, "fatal_error_type": 0}, {}),
    # XRT master aie_error_message_v1: kernel and ELF identity before the same fields
    ("runlist failed execution (ERT_CMD_STATE_TIMEOUT)\nKernel Instance: dpu:{dpu_1}\n"
     "ELF File:        /opt/model/layer.elf\nELF UUID:        ab12\ntxn_op_idx = 0x00000001\n"
     "ctx_pc = 0x00000002\nfatal_error_type = 0x00000003\n",
     {"txn_op_id": 1, "context_pc": 2, "fatal_error_type": 3},
     {"Kernel Instance": "dpu:{dpu_1}", "ELF File": "/opt/model/layer.elf",
      "ELF UUID": "ab12"}),
])
def test_xrt_health_lines_map_to_the_driver_s_field_names(message, fields, identity):
    trial = {"runlists": [{"state": "TIMEOUT", "message": message}]}
    carried, named = xrt_account(trial)
    assert {k: carried[k] for k in fields} == fields and named == identity
    assert parse_xrt_error(message).identity == identity


# -- recovery ------------------------------------------------------------------------------

class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_recovery_retries_with_backoff_and_says_after_how_long():
    clock, answers = Clock(), iter(["wait() timed out", "hw_context: busy", None])
    result = check_recovery(lambda: next(answers), "one NOP run", "fix it", sleep=clock.sleep,
                            clock=lambda: clock.now)
    assert (result.status, result.attempts, result.recovered) == ("recovered after 6 s", 3,
                                                                  True)


def test_a_device_that_never_answers_is_not_recovered_with_the_fix():
    clock = Clock()
    result = check_recovery(lambda: "no answer", "one NOP run",
                            recovery_fix("amdxdna", BDF), sleep=clock.sleep,
                            clock=lambda: clock.now)
    assert result.status == "not recovered" and result.attempts == 5 and clock.now == 30
    assert "sudo modprobe -r amdxdna && sudo modprobe amdxdna" in result.fix
    assert f"/sys/bus/pci/devices/{BDF}/remove" in result.fix and "rescan" in result.fix
    assert result.to_json()["last_error"] == "no answer"


def test_an_unrelated_path_reads_as_no_log(tmp_path: Path):
    assert isinstance(open_kernel_log(tmp_path / "none", None), Unreadable)
