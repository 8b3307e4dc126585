"""What the amdxdna driver's kernel-log lines say, as fields.

Every pattern here is a format string of the driver, cited by file and function
(amd/xdna-driver: ``drivers/accel/amdxdna`` is the staging tree the DKMS package
builds and Linux's in-tree driver follows; ``src/driver/amdxdna`` is the legacy
out-of-tree tree). The prefix tells the trees apart: the in-tree and staging
``XDNA_ERR``/``XDNA_WARN`` go through ``drm_err``/``drm_warn`` and print
``amdxdna <bdf>: [drm] *ERROR* <func>: ...`` (``amdxdna_pci_drv.h``); the legacy
tree's go through ``dev_err_ratelimited``/``dev_warn`` and print ``amdxdna <bdf>:
<func>: ...`` (``amdxdna_drm.h``). ``XDNA_INFO`` names no function in either.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from harness.logs.kernel_log import LogRecord, Reading, Unreadable, limit_lines
from harness.logs.stack_lines import STACK_EVENTS
from harness.model.drivers import DRM, FLAVOURS, LEGACY

_PREFIX = re.compile(r"^(?P<driver>amdxdna(?:_legacy)?) (?P<bdf>[0-9a-fA-F:.]+): "
                     r"(?P<drm>\[drm\] (?P<error>\*ERROR\* )?)?(?P<rest>.*)$")
_FUNC = r"^(?P<func>[a-z_][a-z0-9_]*): (?P<message>.*)$"        # compiled on first use
# lib/ratelimit.c ___ratelimit (a rate-limited call site)
_SUPPRESSED = re.compile(r"^(?P<func>\w+): (?P<count>\d{1,20}) callbacks suppressed$")
# drivers/iommu/amd/iommu.c amd_iommu_report_page_fault
_PAGE_FAULT = re.compile(r"AMD-Vi: Event logged \[IO_PAGE_FAULT "
                         r"(?:device=(?P<device>[0-9a-f:.]+) )?domain=(?P<domain>0x[0-9a-f]+) "
                         r"address=(?P<address>0x[0-9a-f]+) "
                         r"flags=(?P<flags>0x[0-9a-f]+)\]")


# staging aie2_msg_priv.h: enum aie2_msg_opcode and enum aie2_msg_status
OPCODES = {0x2: "CREATE_CONTEXT", 0x3: "DESTROY_CONTEXT", 0x4: "GET_TELEMETRY",
           0x7: "SYNC_BO", 0xc: "EXECUTE_BUFFER_CF", 0xd: "QUERY_COL_STATUS",
           0xe: "QUERY_AIE_TILE_INFO", 0xf: "QUERY_AIE_VERSION", 0x10: "EXEC_DPU",
           0x11: "CONFIG_CU", 0x12: "CHAIN_EXEC_BUFFER_CF", 0x13: "CHAIN_EXEC_DPU",
           0x14: "CONFIG_DEBUG_BO", 0x18: "CHAIN_EXEC_NPU", 0x101: "SUSPEND",
           0x102: "RESUME", 0x103: "ASSIGN_MGMT_PASID", 0x104: "INVOKE_SELF_TEST",
           0x106: "MAP_HOST_BUFFER", 0x108: "GET_FIRMWARE_VERSION",
           0x10a: "SET_RUNTIME_CONFIG", 0x10b: "GET_RUNTIME_CONFIG",
           0x10c: "REGISTER_ASYNC_EVENT_MSG", 0x10f: "START_FW_TRACE",
           0x110: "STOP_FW_TRACE", 0x111: "SET_FW_TRACE_CATEGORIES",
           0x113: "UPDATE_PROPERTY", 0x114: "GET_APP_HEALTH", 0x115: "ADD_HOST_BUFFER",
           0x116: "CONFIG_FW_LOG", 0x117: "GET_DEV_REVISION", 0x119: "GET_COREDUMP",
           0x11c: "CALIBRATE_CLOCK", 0x203: "AIE_RW_ACCESS", 0x301: "GET_PROTOCOL_VERSION"}
_AIE_STATUS = ("SATURATION", "FP", "STREAM", "ACCESS", "BUS", "INSTRUCTION", "ECC", "LOCK",
               "DMA", "MEM_PARITY", "PWR_CFG", "BACKTRACK")
_MGMT_STATUS = ("SELF_TEST_FAILURE", "HASH_MISMATCH", "NOAVAIL", "INVALID_PARAM",
                "ENTER_SUSPEND_FAILURE", "BUSY", "APPLICATION_ACTIVE",
                "DRAM_BUFFER_SIZE_INVALID")
STATUSES = {0x0: "SUCCESS",
            **{0x1000001 + i: f"AIE_{name}_ERROR" for i, name in enumerate(_AIE_STATUS)},
            **{0x2000001 + i: f"MGMT_ERT_{name}" for i, name in enumerate(_MGMT_STATUS)},
            0x3000001: "APP_ERT_FIRST_ERROR", 0x3000002: "APP_INVALID_INSTR",
            0x3000003: "APP_LOAD_PDI_FAIL", 0x4000001: "INVALID_INPUT_BUFFER",
            0x4000002: "INVALID_COMMAND", 0x4000003: "INVALID_PARAM",
            0x4000006: "INVALID_OPERATION", 0x4000007: "ASYNC_EVENT_MSGS_FULL"}

# The firmware's timeout report, one name per field, whichever side printed it: the
# driver's "Firmware timeout state capture:" lines or XRT's health lines (harness.model.ert).
FIRMWARE_FIELDS = ("version", "report_size", "context_id", "dpu_pc", "txn_op_id",
                   "context_pc", "fatal_error_type", "fatal_error_exception_type",
                   "fatal_error_exception_pc", "fatal_error_app_module",
                   "fatal_error_task_id", "timed_out_sub_command_id")
# printed by staging aie2_ctx.c aie2_set_cmd_timeout and legacy aie2_ctx.c aie2_dump_ctx
_CAPTURE_FIELDS = {"Version": "version", "Report size": "report_size",
                   "Context ID": "context_id", "DPU PC": "dpu_pc", "TXN OP ID": "txn_op_id",
                   "Context PC": "context_pc", "Fatal error type": "fatal_error_type",
                   "Fatal error exception type": "fatal_error_exception_type",
                   "Fatal error exception PC": "fatal_error_exception_pc",
                   "Fatal error app module": "fatal_error_app_module",
                   "Fatal error task ID": "fatal_error_task_id",
                   "Timed out sub command ID": "timed_out_sub_command_id"}
# legacy aie2_ctx.c aie2_dump_ctx
_JOB_FIELDS = {"seq": "seq", "op": "op", "msg": "msg", "fence": "fence",
               "out_fence": "out_fence"}
# staging amdxdna_error.c (AIE error: + Tile/Module/Category/Event)
_AIE_FIELDS = {"Tile location (Row, Column)": "tile", "Module": "module",
               "Category": "category", "Event (ID)": "aie_event"}

# One line, one event: (kind, pattern on the message after "<func>: ", where it is printed);
# compiled on first use, by re's own cache: a start-up does not pay for it
_SINGLE: tuple[tuple[str, str, str], ...] = (
        ("tdr_timeout", r"^TDR timeout detected$",
         "staging aie2_ctx.c aie2_tdr_detect (>= 6.17), aie2_tdr.c aie2_legacy_tdr_detect"),
        ("no_progress", r"^Device isn't making progress(?:\.\.\. Count (?P<count>\d{1,20})"
                        r"(?: timeout (?P<timeout>\d{1,20}) dump_only "
                        r"(?P<dump_only>\d{1,20}))?)?$",
         "staging aie2_tdr.c aie2_tdr_work_func; legacy aie2_tdr.c aie2_tdr_work (\"... Count "
         "%d timeout %u dump_only %d\" from bc31fafa; \"... Count %d\" alone before it, from "
         "e3dca66f (2024-10, amdxdna_tdr.c amdxdna_tdr_work) and 7a1be8d3 (aie2_tdr.c))"),
        ("context_dump", r"^Dumping ctx (?P<context>\S+), hwctx (?P<hwctx>-?\d{1,20}), "
                         r"sub=(?P<submitted>-?\d{1,20}), comp=(?P<completed>-?\d{1,20})$",
         "legacy aie2_ctx.c aie2_dump_ctx"),
        ("mailbox_failure", r"^command opcode (?P<opcode>0x[0-9a-f]{1,16}) failed, status "
                            r"(?P<status>0x[0-9a-f]{1,16})$",
         "staging aie.c aie_send_mgmt_msg_wait; legacy aie2_message.c "
         "aie2_send_mgmt_msg_wait"),
        ("map_host_buffer_failed", r"^Map host buffer failed, ret (?P<ret>-?\d{1,20})$",
         "staging aie2_ctx.c; legacy aie2_hwctx.c"),
        ("firmware_unhealthy", r"^NPU firmware unhealthy(?: \(ctx restart ret (?P<ret>-?\d{1,20}), "
                               r"health (?P<health>[^)]+)\))?:? ?-? ?power-cycling NPU$",
         "staging aie2_ctx.c aie2_sched_job_timedout, aie2_pci.c aie2_hw_reset"),
        ("restart_rejected", r"^NPU context restart rejected \(ret (?P<ret>-?\d{1,20})\) without "
                             r"fatal report - not power-cycling$",
         "staging aie2_ctx.c aie2_sched_job_timedout"),
        ("invalid_run_list_id", r"^Invalid run_list_id (?P<run_list_id>-?\d{1,20}), command count "
                                r"(?P<count>\d{1,20})$",
         "legacy aie2_ctx.c aie2_sched_cmdlist_resp_handler"),
        ("firmware_loaded", r"^Load firmware (?P<file>\S+)$",
         "staging aie2_pci.c aie2_init (XDNA_INFO, no function name)"),
        ("firmware_request_failed", r"^failed to request_firmware (?P<file>\S+), ret "
                                    r"(?P<ret>-?\d{1,20})$",
         "aie2_pci.c aie2_init (both trees)"),
        ("firmware_protocol_refused", r"^Incompatible firmware protocol major (?P<major>\d+) "
                                      r"minor (?P<minor>\d+)$",
         "Linux aie2_pci.c aie2_check_protocol (6.19 and before, f1eac46fe5f7); seen refusing "
         "firmware 1.1.2.64/65 as 'major 7 minor 2'"),
        # a context the firmware will not take back (harness.model.wedge)
        ("restart_failed", r"^(?P<what>Create hwctx|Map host buf|Config cu) failed, ret "
                           r"(?P<ret>-?\d{1,20})$",
         "in-tree (234824b1) and staging (856409ca) aie2_ctx.c aie2_hwctx_restart"),
        ("context_init_failed", r"^Init (?:hwctx|ctx) failed, ret (?P<ret>-?\d{1,20})$",
         "amdxdna_ctx.c amdxdna_drm_create_hwctx_ioctl (every tree)"),
        ("context_connect_failed", r"^(?P<context>\S+) connect failed, err (?P<ret>-?\d{1,20})$",
         "legacy aie2_ctx_runqueue.c part_ctx_start (the context marked CTX_STATE_DEAD)"),
        ("context_dead", r"^(?P<context>\S+) fatal error$",
         "legacy aie2_ctx_runqueue.c rq_submit_enter_slow (the submit fails -EIO)"),
        ("mailbox_timeout", r"^Wait for completion timeout$",
         "amdxdna_mailbox_helper.c xdna_send_msg_wait (every tree)"),
        ("reset_skipped", r"^NPU reset skipped: last reset (?P<ms>\d{1,20}) ms ago$",
         "staging aie2_pci.c aie2_hw_reset (one power-cycle a minute)"),
        # the device heap (harness.model.heap; its other lines are stack_lines')
        ("heap_exists", r"^dev heap is already created$",
         "legacy amdxdna_gem.c amdxdna_drm_create_dev_heap_bo"),
)
CAPTURE_HEADER = "Firmware timeout state capture:"


@dataclass(frozen=True)
class DriverLine:
    """An amdxdna line split into its parts: driver, PCI address, tree, whether it is an
    error, the function that printed it, and the message."""

    driver: str
    bdf: str
    tree: str             # DRM or LEGACY
    error: bool
    func: str | None
    message: str


def split_line(text: str) -> DriverLine | None:
    """The parts of an amdxdna line; None for any other line."""
    match = _PREFIX.match(text)
    if not match:
        return None
    rest = match["rest"]
    func_match = re.match(_FUNC, rest)
    func, message = (func_match["func"], func_match["message"]) if func_match else (None, rest)
    return DriverLine(match["driver"], match["bdf"], DRM if match["drm"] else LEGACY,
                      bool(match["error"]), func, message)


def known_message(text: str) -> bool:
    """Whether `text`, a line with no driver prefix (``aie2_init: Enable PASID failed, ret
    -19``, as a maintainer quotes it), is ``<func>: <message>`` with a message this module
    knows the format string of: a driver line that lost its prefix, not any program's."""
    func_match = re.match(_FUNC, text)
    if func_match is None:
        return False
    message = func_match["message"]
    return message == CAPTURE_HEADER or any(re.match(pattern, message)
                                            for _, pattern, _ in _SINGLE + STACK_EVENTS)


def _value(text: str) -> Any:
    """0x1f -> 31, 12 -> 12, 1.3 stays text, anything else stays text; so does a number
    longer than 64 bits' digits (a corrupted line is recorded, never a run stopped)."""
    text = text.strip()
    if len(text) > 20:
        return text
    try:
        return int(text, 16) if text.lower().startswith("0x") else int(text)
    except ValueError:
        return text


def _block_field(event: dict[str, Any], names: dict[str, str], message: str) -> bool:
    if not message.startswith("\t"):
        return False
    label, sep, value = message[1:].partition(": ")
    if not sep or label not in names:
        return False
    event[names[label]] = value if label in ("Version", "Module", "Category", "Event (ID)",
                                              "Tile location (Row, Column)", "fence",
                                              "out_fence") else _value(value)
    return True


def events(records: Iterable[LogRecord]) -> list[dict[str, Any]]:
    """The driver's and IOMMU's events in `records`, each with its fields."""
    return [event for _, event in indexed_events(records)]


def indexed_events(records: Iterable[LogRecord]) -> list[tuple[int, dict[str, Any]]]:
    """The events of `records`, each with the position of the record that starts it."""
    found: list[tuple[int, dict[str, Any]]] = []
    block: tuple[dict[str, str], dict[str, Any]] | None = None
    for index, record in enumerate(records):
        page_fault = _PAGE_FAULT.search(record.text)
        if page_fault:
            found.append((index, {"event": "iommu_page_fault", "usec": record.usec,
                                  **{k: v for k, v in page_fault.groupdict().items() if v}}))
            block = None
            continue
        suppressed = _SUPPRESSED.match(record.text)
        if suppressed:
            found.append((index, {"event": "callbacks_suppressed", "usec": record.usec,
                                  "function": suppressed["func"],
                                  "count": int(suppressed["count"])}))
            continue
        line = split_line(record.text)
        if line is None:
            continue
        if block is not None and _block_field(block[1], block[0], line.message):
            continue
        block = None
        event: dict[str, Any] = {"usec": record.usec, "function": line.func}
        if line.message == CAPTURE_HEADER:
            found.append((index, {"event": "timeout_capture", **event}))
            block = (_CAPTURE_FIELDS, found[-1][1])
            continue
        if line.message == "AIE error:":
            found.append((index, {"event": "aie_error", **event}))
            block = (_AIE_FIELDS, found[-1][1])
            continue
        job = re.match(r"^JOB\[(\d{1,20})\]:$", line.message)
        if job:
            found.append((index, {"event": "job", **event, "slot": int(job[1])}))
            block = (_JOB_FIELDS, found[-1][1])
            continue
        for kind, pattern, _ in _SINGLE + STACK_EVENTS:
            match = re.match(pattern, line.message)
            if match:
                fields = {k: _value(v) if k not in ("file", "health", "context", "what") else v
                          for k, v in match.groupdict().items() if v is not None}
                found.append((index, {"event": kind, **event, **fields}))
                break
    for _, event in found:
        if event["event"] == "mailbox_failure":
            event["opcode_name"] = OPCODES.get(event["opcode"], "unknown")
            event["status_name"] = STATUSES.get(event["status"], "unknown")
        if event.get("function") is None:
            event.pop("function", None)
    return found


def trees(records: Iterable[LogRecord]) -> set[str]:
    """The trees the lines tell: [drm] says in-tree/staging; ``<func>: `` without it says
    legacy. A line with neither (the IOMMU's dev_err on the device, legacy XDNA_INFO)
    tells nothing."""
    found = set()
    for record in records:
        line = split_line(record.text)
        if line is not None and (line.tree == DRM or line.func is not None):
            found.add(line.tree)
    return found


def tree_note(records: Iterable[LogRecord], flavour: str | None) -> tuple[str | None, str | None]:
    """Which driver tree printed these lines, and how that compares with the probed
    flavour: (tree, note)."""
    seen = trees(records)
    if not seen:
        return None, None
    if len(seen) > 1:
        return "mixed", "lines from both the legacy and the in-tree/staging driver"
    tree = seen.pop()
    row = FLAVOURS.get(flavour or "")
    expected = row.log_tree if row is not None else None
    what = ("in-tree or staging ([drm] prefix)" if tree == DRM
            else "legacy out-of-tree (no [drm] prefix)")
    if expected is None:
        return tree, f"{what}; the probe could not tell the flavour"
    if expected == tree:
        return tree, f"{what}, as the {flavour} driver prints"
    return tree, f"{what}, but the driver was taken for {flavour}: the module that printed " \
                 "these lines may not be the one the probe read"


def firmware_account(found: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """The timeout capture's fields by FIRMWARE_FIELDS name, or None. The legacy tree
    dumps every context; the one that had work in flight (sub > comp) is the one that
    hung, so its capture is preferred over the first."""
    first = busy = None
    dump: dict[str, Any] | None = None
    for event in found:
        if event["event"] == "context_dump":
            dump = event
        elif event["event"] == "timeout_capture":
            first = first or event
            if busy is None and dump is not None and \
                    dump.get("submitted") != dump.get("completed"):
                busy = event
    chosen = busy or first
    if chosen is None:
        return None
    return {name: chosen[name] for name in FIRMWARE_FIELDS if name in chosen}


def boot_firmware(records: Iterable[LogRecord]) -> tuple[str | None, tuple[int, int] | None]:
    """From the driver's start-up lines: the firmware file it loaded last, and the mailbox
    protocol (major, minor) of the last firmware it refused as incompatible."""
    loaded, refused = None, None
    for event in events(records):
        if event["event"] == "firmware_loaded":
            loaded = event["file"]
        elif event["event"] == "firmware_protocol_refused":
            refused = (event["major"], event["minor"])
    return loaded, refused


def trial_entry(reading: Reading | Unreadable, flavour: str | None, failed: bool, *,
                simulated: bool = False) -> dict[str, Any] | None:
    """What a trial keeps of the kernel log: the lines kept (capped, and how many left
    out), their events, the tree that printed them. None when there is nothing to say
    (a passing trial with no driver lines). `simulated`: the simulated stack printed
    them (also on the hardware path, when it stands in for pyxrt): each line is marked."""
    if isinstance(reading, Unreadable):
        return reading.to_json() if failed else None
    if not reading.records and not failed and not reading.lost:
        return None
    lines, omitted = limit_lines(reading.records, simulated=simulated)
    entry: dict[str, Any] = {"source": reading.source, "lines": lines,
                             "events": events(reading.records), "dropped": reading.dropped}
    if simulated:
        entry["simulated"] = True
    tree, note = tree_note(reading.records, flavour)
    if tree is not None:
        entry.update(tree=tree, tree_note=note)
    if omitted:
        entry["omitted"] = omitted
    if reading.lost:
        entry["lost"] = reading.lost
    if reading.truncated:
        entry["truncated"] = True
    if not reading.records:
        entry["note"] = "the driver printed nothing during this trial"
    return entry
