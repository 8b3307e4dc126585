"""Each artefact kind's parser (harness.report.diagnosis.artefacts), over text as the
sources print it: the amdxdna driver's format strings (amd/xdna-driver 856409ca
drivers/accel/amdxdna, the staging tree; the Linux driver as imported at 234824b1, 7.0;
src/driver/amdxdna, the legacy tree) in every form a kernel log is pasted, FastFlowLM's
console and JSON (ROCm/FastFlowLM src/src/main.cpp sanity_check_npu_stack,
debug_utils.hpp header_print, rest_handler.cpp), XRT's xrt-smi examine and validate
(ReportHost.cpp, XBUtilities.cpp fill_xrt_versions, SubCmdValidate.cpp), XRT's exception
texts, an application's end, and the typed outcomes table. Files get neutral names: a
parser recognises content, never a name."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.report.diagnosis.artefacts import Unread, read_artefact
from harness.report.diagnosis.artefacts.outcomes_table import header_of, read_row, split_cells
from harness.report.diagnosis.vocabulary import NOOP, UNKNOWN_WORK, WORK, Observed

BDF = "0000:c6:00.1"
STAGING = f"amdxdna {BDF}: [drm] *ERROR* "        # XDNA_ERR: drm_err with the function
LEGACY = f"amdxdna {BDF}: "                        # legacy XDNA_ERR: dev_err, "%s: "


def read(tmp_path, text: str, name: str = "evidence-1") -> Observed:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    found = read_artefact(path)
    assert isinstance(found, Observed), found
    return found


def kinds(observed: Observed) -> list[str]:
    return [s.kind for s in observed.signs]


# -- the kernel log, in each form it is pasted -----------------------------------------

DRIVER_LINES = [
    f"{STAGING}aie2_init: failed to request_firmware amdnpu/17f0_11/npu.sbin, ret -2",
    f"{STAGING}amdxdna_sva_init: SVA bind device failed, ret -19",
    f"{STAGING}aie2_smu_exec: smu cmd 4 failed, 0xff",
    f"{STAGING}aie2_xdna_reset: Resume firmware failed",
    f"{STAGING}aie2_hwctx_init: Map host buffer failed, ret -12",
    f"{STAGING}aie2_hwctx_init: Alloc hw resource failed, ret -22",
    f"{STAGING}aie2_init: Running under hypervisor not supported",
    f"{STAGING}aie2_hwctx_col_list: Invalid num_col 8",
    f"{STAGING}aie2_tdr_detect: TDR timeout detected",
]
SIGNS = ["firmware-missing", "sva-failed", "smu-failed", "suspend-resume-failed",
         "host-map-failed", "context-refused", "hypervisor", "wrong-columns",
         "driver-timeout"]


@pytest.mark.parametrize("form, prefix", [
    ("dmesg", lambda i: f"[{100 + i:5d}.{i:06d}] "),
    ("dmesg -T", lambda i: f"[Mon Dec  1 10:0{i}:00 2025] "),
    ("dmesg", lambda i: f"<3>[{100 + i:5d}.123456] "),                  # dmesg -r
    ("dmesg -x", lambda i: f"kern  :err   : [{100 + i:5d}.123456] "),
    ("journalctl -k", lambda i: f"Dec 01 10:00:0{i} strix kernel: "),
    ("journalctl -k", lambda i: f"2025-12-01T10:00:0{i}+0100 strix kernel: "),   # short-iso
    ("journalctl -k", lambda i: f"[{100 + i:5d}.123456] strix kernel: "),  # short-monotonic
    ("kernel: prefix", lambda i: "kernel: "),
    ("driver lines", lambda i: ""),
])
def test_every_form_of_the_kernel_log_gives_the_same_signs(tmp_path, form, prefix):
    text = "\n".join(prefix(i) + line for i, line in enumerate(DRIVER_LINES))
    observed = read(tmp_path, text)
    assert kinds(observed) == SIGNS
    assert observed.read_as == [f"kernel log ({form}): {len(DRIVER_LINES)} lines"]
    assert [s.cite.line for s in observed.signs] == list(range(1, len(DRIVER_LINES) + 1))
    cite = str(observed.signs[1].cite)
    assert cite.startswith(f"{tmp_path / 'evidence-1'}:2: amdxdna {BDF}: ")
    assert "strix" not in cite            # a journal's host name is not evidence


def test_the_legacy_tree_s_lines_and_the_kernel_s_own(tmp_path):
    text = "\n".join([
        "[    0.000000] Linux version 6.18.9-arch1-1 (linux@archlinux) #1 SMP PREEMPT_DYNAMIC",
        "[    0.000000] Command line: BOOT_IMAGE=/vmlinuz-linux rw amd_iommu=off",
        "[    3.100000] amdxdna: loading out-of-tree module taints kernel.",
        f"[   40.000000] {LEGACY}aie2_tdr_work: Device isn't making progress... Count 2 "
        "timeout 2 dump_only 0",
        f"[   40.000100] {LEGACY}aie2_rq_add: Not allow more than 32 context(s)",
        f"[   41.000000] {LEGACY}amdxdna_drm_open: Enable PASID failed, ret -22",
        "[   42.000000] AMD-Vi: Event logged [IO_PAGE_FAULT device=0000:c6:00.1 "
        "domain=0x000b address=0x1000 flags=0x0020]",
        "[   50.000000] PM: suspend entry (s2idle)",
        "[   60.000000] Out of memory: Killed process 4242 (flm) total-vm:1kB",
        f"[   61.000000] amdxdna {BDF}: probe with driver amdxdna failed with error -110",
        "[   62.000000] amdgpu 0000:c4:00.0: [drm] *ERROR* ring gfx_0.0.0 timeout",
    ])
    observed = read(tmp_path, text)
    assert kinds(observed) == ["driver-timeout", "context-unavailable", "sva-failed",
                               "iommu-page-fault", "iommu-mode", "system-suspend", "oom",
                               "driver-probe-failed", "gpu-fault"]
    assert observed.stack.value("kernel") == "6.18.9-arch1-1"
    assert observed.stack.flavour == "oot"              # no [drm]: the legacy tree
    assert next(s for s in observed.signs if s.kind == "iommu-mode").facts["setting"] == \
        "amd_iommu=off"


def test_drm_s_initialized_line_names_the_in_tree_driver_by_its_version(tmp_path):
    """DRM versions per build (harness.model.drivers): in-tree 7.0 is 0.6, staging 0.16."""
    observed = read(tmp_path, "Dec 01 10:00:00 h kernel: Linux version 7.0.0-31-generic (b@l)\n"
                    "Dec 01 10:00:02 h kernel: [drm] Initialized amdxdna_accel_driver 0.6.0 for "
                    f"{BDF} on minor 0\n")
    assert observed.stack.flavour == "mainline" and observed.timers.driver.window == (60, 60)


def test_a_simulated_kernel_log_is_the_simulated_stack_s(tmp_path):
    observed = read(tmp_path, f"SIMULATED [9000000000.000000] {STAGING}aie2_tdr_detect: TDR "
                    "timeout detected\n")
    assert observed.source == "SIMULATED" and kinds(observed) == ["driver-timeout"]


@settings(max_examples=60)
@given(st.lists(st.sampled_from(DRIVER_LINES), min_size=1, max_size=12),
       st.integers(0, 99999), st.sampled_from(["dmesg", "journal", "bare"]))
def test_any_mix_of_driver_lines_in_any_form_is_read_line_by_line(lines, seconds, form):
    import tempfile
    from pathlib import Path
    shown = {"dmesg": f"[{seconds:5d}.000001] ", "journal": "Jan 02 03:04:05 host kernel: ",
             "bare": ""}[form]
    with tempfile.TemporaryDirectory() as folder:
        observed = read(Path(folder), "\n".join(shown + line for line in lines))
    expected = [SIGNS[DRIVER_LINES.index(line)] for line in lines]
    assert kinds(observed) == expected


# -- FastFlowLM --------------------------------------------------------------------------

def test_flm_validate_as_each_release_prints_it(tmp_path):
    """The first releases (2025-06: 'Kernel Version:', 'Found AMD NPU at'), and today's,
    in colour (header_print_g green, header_print_r red)."""
    old = read(tmp_path, "[Linux]  Kernel Version: 7.0.0-rc1\n[Linux]  Found AMD NPU at "
               "/dev/accel/accel0\n[Linux]  NPU FW Version: 1.1.2.64\n", "a")
    assert (old.stack.value("kernel"), old.stack.value("firmware")) == ("7.0.0-rc1", "1.1.2.64")
    new = read(tmp_path, "[Linux]  Kernel: 6.19.8-1-cachyos\n"
               "\x1b[31m[ERROR]  NPU firmware version on /dev/accel/accel0 is incompatible. "
               "Please update NPU firmware!\x1b[0m\n"
               "\x1b[32m[Linux]  NPU: /dev/accel/accel0 with 8 columns\x1b[0m\n"
               "\x1b[32m[Linux]  NPU FW Version: 1.0.0.63\x1b[0m\n"
               "\x1b[32m[Linux]  amdxdna version: 0.6\x1b[0m\n"
               "[Linux]  Memlock Limit: 64 MB\n", "b")
    assert kinds(new) == ["memlock-low", "firmware-too-old"]
    assert new.stack.value("driver") == "DRM 0.6" and new.stack.npu.value == "8 columns"
    assert new.signs[1].cite.line == 2


def test_flm_serve_s_load_failure_and_its_permission_error(tmp_path):
    observed = read(tmp_path, "FLM v1.0.3\n[FLM]  Loading model: /home/u/.config/flm/models/"
                    "Gemma4-E4B-IT-NPU2\n[ERROR]  Failed to load model: "
                    "DRM_IOCTL_AMDXDNA_CREATE_HWCTX IOCTL failed (err=-22): Invalid argument\n"
                    "[ERROR]  Error code: -1 on /dev/accel/accel0\n"
                    "Failed to get firmware version: Permission denied\n")
    assert observed.stack.value("flm") == "1.0.3"
    assert observed.stack.value("model") == "Gemma4-E4B-IT-NPU2"     # never the user's path
    # CREATE_HWCTX -EINVAL: none left or a request refused, the errno does not say which
    assert kinds(observed) == ["permission-denied", "ioctl-failed", "context-refused",
                               "exception"]


@pytest.mark.parametrize("body, kind", [
    ('{"error":"runlist failed execution (ERT_CMD_STATE_TIMEOUT)"}', "runlist-failed"),
    (json.dumps({"error": {"message": "qds_device::wait() unexpected command state",
                           "type": "server_error"}}, indent=2), "unexpected-state"),
    ('{"error": "Failed to load minicpm5:2b model!"}', "exception"),
])
def test_a_json_error_body_whole_or_indented(tmp_path, body, kind):
    observed = read(tmp_path, body + "\n")
    assert kinds(observed) == [kind] and "JSON error body" in observed.read_as[0]


def test_flm_validate_json_checks_become_signs(tmp_path):
    doc = {"object": "npu_stack_validation", "platform": "linux", "kernel": "6.18.7-generic",
           "kernel_ok": True, "drm_version": "0.6", "devices": [
               {"device": "/dev/accel/accel0", "fw_major": 1, "fw_minor": 0, "fw_patch": 0,
                "fw_build": 63, "fw_ok": False, "cols": 8}],
           "amd_device_found": True, "all_fw_ok": False, "enough_cols": True,
           "memlock_limit": "infinity", "memlock_ok": True, "ready": False}
    observed = read(tmp_path, json.dumps(doc, indent=4))
    assert kinds(observed) == ["firmware-too-old"]
    assert observed.stack.value("firmware") == "1.0.0.63"
    assert observed.read_as[0].startswith("flm validate --json")


# -- xrt-smi -------------------------------------------------------------------------------

EXAMINE = """System Configuration
  OS Name              : Linux
  Release              : 6.18.1-061801-generic
  Machine              : x86_64
  CPU Cores            : 24
  Memory               : 93354 MB
  Distribution         : Ubuntu 25.10
  GLIBC                : 2.42
  Model                : AI Series
  BIOS Vendor          : American Megatrends International, LLC.
  BIOS Version         : 1.02
  Processor            : AMD Ryzen AI 9 HX 370 w/ Radeon 890M

XRT
  Version              : 2.21.0
  Branch               : HEAD
  Hash                 : 0123456789abcdef0123456789abcdef01234567
  Hash Date            : 2026-01-08 10:00:00
  {driver}
  NPU Firmware Version : 1.1.2.64

Device(s) Present
|BDF             |Name          |
|----------------|--------------|
|[0000:c6:00.1]  |NPU Strix     |
"""


@pytest.mark.parametrize("driver, shown, flavour", [
    ("amdxdna Version      : 2.21.75_20251107", "amdxdna 2.21.75_20251107 (DKMS)", None),
    ("amdxdna              : 2.19.0_20250330, 7c1d273ef9946848a9f236f1216cfda10d9465cb",
     "amdxdna 2.19.0_20250330 (DKMS)", None),
    ("amdxdna Version      : 6.18.1-061801-generic", "amdxdna 6.18.1-061801-generic "
     "(in-tree)", "mainline"),
])
def test_xrt_smi_examine_gives_the_stack_and_the_machine(tmp_path, driver, shown, flavour):
    observed = read(tmp_path, EXAMINE.replace("{driver}", driver))
    stack = observed.stack
    assert (stack.value("kernel"), stack.value("xrt"), stack.value("firmware"),
            stack.value("driver"), stack.npu.value, stack.flavour) == \
        ("6.18.1-061801-generic", "2.21.0", "1.1.2.64", shown, "NPU Strix", flavour)
    assert stack.identity and "AI Series" not in stack.identity      # compared, never shown
    assert observed.signs == [] and observed.failures == 0


def test_xrt_smi_examine_with_no_device(tmp_path):
    text = EXAMINE.split("Device(s) Present")[0].replace("{driver}", "") + \
        "Device(s) Present\n  0 devices found\n"
    assert kinds(read(tmp_path, text)) == ["no-device"]


def test_xrt_smi_validate_names_the_deep_runlist_test_and_its_error(tmp_path):
    text = """Validate Device           : [0000:c6:00.1]
    Platform              : NPU Strix Halo
    Power Mode            : Default
-------------------------------------------------------------------------------
Test 1 [0000:c6:00.1]     : latency<sp>
    Details               : Average latency: 64.0 us
    Test Status           : [PASSED]
-------------------------------------------------------------------------------
Test 2 [0000:c6:00.1]     : runlist-latency<sp>
    Error(s)              : runlist failed execution
                            (ERT_CMD_STATE_TIMEOUT)
    Test Status           : [FAILED]
-------------------------------------------------------------------------------
Validation failed. Please run the command '--verbose' option for more details
""".replace("<sp>", " ")      # "%-26s: %s \n": XRT ends a test's line with a space
    observed = read(tmp_path, text)
    assert kinds(observed) == ["validate-passed", "runlist-test-failed", "runlist-failed"]
    assert observed.stack.npu.value == "NPU Strix Halo"
    assert observed.read_as == ["xrt-smi validate: 14 lines"]


# -- XRT's exceptions and an application's end ----------------------------------------------

def test_a_cpp_program_s_end_and_its_segfault(tmp_path):
    observed = read(tmp_path, "decode token 1\nterminate called after throwing an instance of "
                    "'xrt::runlist::aie_error'\n  what():  runlist failed execution "
                    "(ERT_CMD_STATE_TIMEOUT)\nSegmentation fault (core dumped)\n")
    assert kinds(observed) == ["runlist-failed", "app-crash"]
    assert observed.read_as[0].startswith("a C++ program's uncaught exception")
    assert observed.read_as[1].startswith("an application's console")


def test_a_file_no_parser_recognises_is_not_read_with_why(tmp_path):
    path = tmp_path / "notes"
    path.write_text("It fails after a while. I tried a few things.\n")
    found = read_artefact(path)
    assert isinstance(found, Unread) and "none of its 1 lines" in found.why
    binary = tmp_path / "blob"
    binary.write_bytes(b"\x7fELF\x00\x00\x01")
    assert "not text" in read_artefact(binary).why
    empty = tmp_path / "empty"
    empty.write_text("\n\n")
    assert read_artefact(empty).why == "it is empty"


# -- the outcomes table -----------------------------------------------------------------------

def test_the_documented_tables_per_depth_and_per_attempt(tmp_path):
    per_depth = read(tmp_path, "# from the thread\ndepth  plan   result     trials\n"
                     "42     42     TIMEOUT    3/3\n42     21+21  COMPLETED  3/3\n"
                     "36     36     COMPLETED  5/5\n", "a")
    arms = {a.label: a for a in per_depth.arms}
    assert set(arms) == {"42", "21+21", "36"}
    assert (arms["42"].failed, arms["42"].completed, arms["21+21"].completed,
            arms["21+21"].runs) == (3, 0, 3, [21, 21])
    assert all(a.workload == UNKNOWN_WORK for a in per_depth.arms)
    per_attempt = read(tmp_path, "attempt | depth | result  | seconds\n1       | 42    | "
                       "TIMEOUT | 2.1\n2       | 42    | ok      |\n", "b")
    (arm,) = per_attempt.arms
    assert (arm.failed, arm.completed, arm.ttf) == (1, 1, [(2100.0, "timer-unknown")])
    assert per_attempt.read_as == ["an outcomes table (per attempt): 3 lines"]


def test_a_markdown_table_with_layers_models_and_machines(tmp_path):
    observed = read(tmp_path, "| layers | model | result | trials | machine |\n"
                    "|---|---|---|---|---|\n| 42 | minicpm5 | ERT_CMD_STATE_TIMEOUT | 4/10 | "
                    "halo |\n| 36 | qwen3 | ok | 5 | halo |\n")
    bad, good = observed.arms
    assert (bad.workload, bad.failed, bad.completed, bad.machine, bad.model) == \
        (WORK, 4, 6, "halo", "minicpm5")
    assert (good.completed, good.failed) == (5, 0)


def test_rows_that_cannot_be_read_are_named_with_why(tmp_path):
    observed = read(tmp_path, "depth,result,plan,workload\n42,TIMEOUT,42,noop\n42,maybe,42,noop\n"
                    "40,ok,21+21,noop\n0,ok,,noop\n")
    (arm,) = observed.arms
    assert arm.workload == NOOP and arm.failed == 1
    notes = observed.read_as[0]
    assert "line 3 was not read: result 'maybe'" in notes
    assert "line 4 was not read:" in notes and "21+21" in notes
    assert "line 5 was not read: depth '0'" in notes


@settings(max_examples=80)
@given(st.lists(st.tuples(st.integers(1, 200), st.sampled_from(["TIMEOUT", "ok", "ERROR",
                                                                  "COMPLETED", "hang"]),
                          st.integers(0, 9), st.integers(0, 9)), min_size=1, max_size=8),
       st.sampled_from([" ", "\t", ",", " | "]))
def test_any_table_keeps_every_trial_it_states(rows, separator):
    header = separator.join(["depth", "result", "trials"])
    lines = [header] + [separator.join([str(d), r, f"{k}/{k + m}"]) for d, r, k, m in rows]
    columns = header_of(lines[0])
    assert columns == ["depth", "result", "trials"]
    read_rows = [read_row(i, split_cells(line), columns) for i, line in enumerate(lines[1:])]
    assert all(not isinstance(r, str) for r in read_rows)
    assert sum(r.ended_so + r.otherwise for r in read_rows) == sum(k + m for _, _, k, m in rows)
