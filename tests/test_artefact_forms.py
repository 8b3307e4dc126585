"""More of the forms the artefacts users post take, each pinned to its source's format:
the legacy tree's no-progress line before bc31fafa (amd/xdna-driver e3dca66f amdxdna_tdr.c,
7a1be8d3 aie2_tdr.c: "Device isn't making progress... Count %d"), the first driver's
suspend line (adfbafd4 amdxdna_drv.c: "suspend NPU firmware failed"), the CMA path's
refusal (52f63182 amdxdna_gem.c: "Heap BO is not supported on CMA platform", -EINVAL), a
syslog file's kernel lines with dmesg's stamp kept, a driver line quoted without its
prefix, XRT's console header and messages (Xilinx/XRT message.cpp console_dispatch), a
command state in a program's own words (pyxrt's ert_cmd_state enum), an ioctl refused to a
user with the errno printed positive (older shims), a locked mapping refused -EAGAIN
(Linux mm/mmap.c: MAP_LOCKED past RLIMIT_MEMLOCK), a client that cannot reach its server
(libcurl's CURLE_COULDNT_CONNECT text, glibc's ECONNREFUSED), FastFlowLM stopping its
server (ROCm/FastFlowLM main.cpp before a0306cd) and a Windows model folder. Files get
neutral names: a parser recognises content, never a name."""

from __future__ import annotations

import pytest
from test_artefacts import kinds, read
from test_stack_causes import TIMEOUT_JSON, diagnosis_of

from harness.formats.known_defects import package_component
from harness.logs.error_lines import STATE_NAMED, find_error_lines
from harness.report.diagnosis.artefacts import read_artefact
from harness.report.diagnosis.vocabulary import Observed

BDF = "0000:c5:00.1"
STAGING = f"amdxdna {BDF}: [drm] *ERROR* "
LEGACY = f"amdxdna {BDF}: "


@pytest.mark.parametrize("line", [
    "Device isn't making progress... Count 243",                       # e3dca66f .. bc31fafa
    "Device isn't making progress... Count 9 timeout 2 dump_only 0",    # bc31fafa on
    "Device isn't making progress"])                                     # staging aie2_tdr.c
def test_the_legacy_no_progress_line_in_each_of_its_forms(tmp_path, line):
    observed = read(tmp_path, f"[ 10.5] {LEGACY}aie2_tdr_work: {line}\n")
    assert kinds(observed) == ["driver-timeout"]


@pytest.mark.parametrize("line", ["amdxdna_do_suspend: suspend NPU firmware failed",
                                  "amdxdna_do_resume: resume IPU firmware failed",
                                  "aie2_resume: resume NPU firmware failed"])
def test_the_early_driver_s_suspend_and_resume_lines(tmp_path, line):
    assert kinds(read(tmp_path, f"[ 5.0] {LEGACY}{line}\n")) == ["suspend-resume-failed"]


def test_a_syslog_file_keeps_dmesg_s_stamp_after_its_kernel_prefix(tmp_path):
    text = ("2024-02-16T10:00:26.051836-08:00 box kernel: [  668.382497] "
            f"{LEGACY}amdxdna_do_suspend: suspend NPU firmware failed\n"
            "Feb 16 10:00:26 box kernel: [  668.478472] PM: suspend entry (s2idle)\n")
    observed = read(tmp_path, text)
    assert kinds(observed) == ["suspend-resume-failed", "system-suspend"]
    assert observed.read_as[0].startswith("kernel log (journalctl -k)")
    # cited by the record's text: no host name, no time stamp
    assert observed.signs[0].cite.value.startswith("amdxdna ")


def test_a_driver_line_quoted_without_its_prefix_is_read_by_its_format(tmp_path):
    observed = read(tmp_path, "aie2_init: Enable PASID failed, ret -19\n")
    assert kinds(observed) == ["sva-failed"]
    assert observed.read_as == ["kernel log (driver lines without their prefix): 1 line"]
    assert observed.stack.flavour is None          # the tree is not told by such a line
    # any other "name: message" line is no driver's
    (tmp_path / "other").write_text("main: could not open the config file\n")
    assert not isinstance(read_artefact(tmp_path / "other"), Observed)


def test_the_cma_path_s_refusal_weighs_against_host_memory(tmp_path):
    diagnosis = diagnosis_of(
        tmp_path, f"{LEGACY}amdxdna_gem_create_cma_object: Heap BO is not supported on CMA "
        "platform\n", "[xrt-smi] ERROR: DRM_IOCTL_AMDXDNA_CREATE_BO IOCTL failed (err=-22): "
        "Invalid argument\n")
    memory = diagnosis.entry("host-memory")
    assert memory.against and "does not take the request" in memory.against[0].text
    assert diagnosis.top.id == "undetermined" and "driver-bug" in diagnosis.top.leading
    assert "another build of the driver" in diagnosis.top.experiment


@pytest.mark.parametrize("errno, short", [(-12, True), (-11, True), (-28, True), (-22, False)])
def test_a_buffer_refused_as_invalid_is_not_memory_the_stack_lacked(tmp_path, errno, short):
    diagnosis = diagnosis_of(tmp_path, "[xrt-smi] ERROR: DRM_IOCTL_AMDXDNA_CREATE_BO IOCTL "
                                       f"failed (err={errno}): whatever\n")
    memory = diagnosis.entry("host-memory")
    assert (memory.supports[0].weight == 3) is short
    assert (diagnosis.top.id == "host-memory") is short


def test_xrt_s_console_header_gives_its_version_and_xrt_smi_s_subcommand(tmp_path):
    header = ("XRT build version: 2.19.0\nBuild hash: 090e3fac\nBuild date: 2024-11-13 "
              "18:03:48\nGit branch: HEAD\nPID: 211877\nUID: 1000\n[Wed Nov 13 16:22:04 2024 "
              "GMT]\nHOST: somebox\nEXE: /opt/xilinx/xrt/bin/unwrapped/xrt-smi\n")
    error = ("[xrt-smi] ERROR: DRM_IOCTL_AMDXDNA_SET_STATE IOCTL failed (err=13): Permission "
             "denied\n")
    observed = read(tmp_path, "$ xrt-smi validate -d 0000:6a:00.1\n" + header + error)
    assert observed.stack.value("xrt") == "2.19.0"
    assert observed.read_as == ["xrt-smi validate (XRT's header and messages; no report "
                                "followed): 11 lines"]
    assert kinds(observed) == ["ioctl-failed", "ioctl-not-permitted"]
    # without its command line the subcommand is not known, and said so
    bare = read(tmp_path, header + error, "f2")
    assert bare.read_as[0].startswith("xrt-smi (its subcommand not shown")
    # the header's host and path are read, never quoted back
    assert all("somebox" not in s.cite.value for s in bare.signs)
    # another program's XRT messages are XRT's, not xrt-smi's
    other = read(tmp_path, header.replace("unwrapped/xrt-smi", "python3.12") +
                 "[XRT] ERROR: Failed to allocate host memory buffer (mmap(len=16777216, "
                 "prot=3, flags=8193, offset=4294967296) failed (err=11): Resource "
                 "temporarily unavailable)\n", "f3")
    assert other.read_as[0].startswith("XRT's messages")
    assert "memlock-refused" in kinds(other)


def test_a_root_only_ioctl_refused_to_a_user_is_a_known_defect_of_its_xrt(tmp_path):
    """amd/xdna-driver#307's form: XRT 2.19.0's validate stops at SET_STATE (EACCES, errno
    printed positive): the known defect fixed in 2.19.194 is first; the node was open, so
    no 'could not open' is claimed."""
    diagnosis = diagnosis_of(tmp_path, "XRT build version: 2.19.0\nEXE: /usr/bin/xrt-smi\n"
                             "[xrt-smi] ERROR: DRM_IOCTL_AMDXDNA_SET_STATE IOCTL failed "
                             "(err=13): Permission denied\n")
    assert diagnosis.top.id == "driver-bug" and "2.19.194" in diagnosis.top.experiment
    access = diagnosis.entry("device-access")
    assert access.supports and "root only" in access.supports[0].text
    assert all("could not be opened" not in f.text for f in access.supports)


@pytest.mark.parametrize("flags, memlock", [(8209, True), (1, False)])
def test_a_locked_mapping_refused_eagain_is_the_memlock_limit(tmp_path, flags, memlock):
    text = (f"[xrt-smi] ERROR: mmap(addr=0x7f2dd0000000, len=67108864, prot=3, flags={flags}, "
            "offset=4294967296) failed (err=-11): Resource temporarily unavailable\n")
    observed = read(tmp_path, text)
    assert ("memlock-refused" in kinds(observed)) is memlock
    assert "buffer-alloc-failed" in kinds(observed)


def test_a_state_in_a_program_s_own_words_is_a_failed_run_of_its_console(tmp_path):
    line = "RuntimeError: decode dispatch pos6 state=ert_cmd_state.ERT_CMD_STATE_TIMEOUT"
    found = find_error_lines([line, "state=ert_cmd_state.ERT_CMD_STATE_COMPLETED"])
    assert [(e.xrt, e.state) for e in found] == [(STATE_NAMED, "TIMEOUT")]
    observed = read(tmp_path, line + "\n")
    assert observed.read_as == ["an application's console: 1 line"]
    assert observed.signs[0].kind == "runlist-failed"
    assert observed.signs[0].facts["state"] == "TIMEOUT"


@pytest.mark.parametrize("line", [
    "[HttpClient ERROR] CURL error: Could not connect to server",
    "curl: (7) Failed to connect to 127.0.0.1 port 52625 after 0 ms: Couldn't connect to server",
    "requests.exceptions.ConnectionError: HTTPConnectionPool(host='localhost', port=52625): "
    "Max retries exceeded (Caused by NewConnectionError('Failed to establish a new "
    "connection: [Errno 111] Connection refused'))"])
def test_a_client_that_cannot_reach_its_server(tmp_path, line):
    assert "server-unreachable" in kinds(read(tmp_path, line + "\n"))


def test_a_server_that_stopped_itself_is_not_the_npu_path(tmp_path):
    """FastFlowLM printing that it stops its server, then a client that cannot reach it,
    and no XRT state anywhere: not the NPU path. An XRT state beside it weighs against."""
    console = ("[FLM]  Loading model: /home/u/models/Qwen3-4B-NPU2\n[FLM]  Stopping server...\n"
               "[HttpClient ERROR] CURL error: Could not connect to server\n")
    diagnosis = diagnosis_of(tmp_path, console)
    assert diagnosis.top.id == "not-npu-path" and diagnosis.top.status == "first"
    with_state = diagnosis_of(tmp_path, console, TIMEOUT_JSON)
    assert with_state.top.id != "not-npu-path"
    assert with_state.entry("not-npu-path").against


def test_a_windows_model_folder_keeps_only_its_last_part(tmp_path):
    observed = read(tmp_path, "[FLM]  Loading model: D:\\env\\flm-models\\models\\"
                              "Qwen3.5-9B-NPU2\n")
    assert observed.stack.value("model") == "Qwen3.5-9B-NPU2"


def test_a_context_refused_for_an_xdna2_pack_on_an_npu_no_file_names(tmp_path):
    """A context refused on another OS's shim ("Failed to create context"): resources,
    contention and a pack built for another generation stay open; the probe decides."""
    diagnosis = diagnosis_of(tmp_path, "[FLM]  Loading model: C:\\m\\Qwen3.5-9B-NPU2\n"
                             "[ERROR]  Failed to load model: Failed to create context virtual "
                             "(0xc01e0009): There was an error while creating context\n")
    assert diagnosis.top.id == "undetermined" and "probe" in diagnosis.top.experiment
    assert diagnosis.entry("wrong-binary").supports
    assert {"resources", "contention"} <= set(diagnosis.top.leading)


@pytest.mark.parametrize("text", ["No NPU device found.",
                                  "There are no the XDNA NPU devices found."])
def test_a_tool_that_found_no_npu(tmp_path, text):
    assert kinds(read(tmp_path, f"$ some-tool\n{text}\n")) == ["no-device"]


def test_smu_lines_after_a_firmware_that_did_not_come_up_are_its_unwinding(tmp_path):
    """amd/xdna-driver#389's shape: the first error is the firmware's; the SMU's power-off
    and the probe fail after it, as the driver leaves its start (aie2_hw_start, then
    aie2_smu_fini, amdxdna_probe)."""
    log = "\n".join(f"[    5.{i}] {line}" for i, line in enumerate([
        f"{STAGING}aie2_get_mgmt_chann_info: Invalid mbox magic 0x30ec000",
        f"{STAGING}aie2_hw_start: firmware is not alive",
        f"{STAGING}aie2_smu_exec: smu cmd 4 failed, 0xff",
        f"{STAGING}aie2_smu_fini: Power off failed, ret -22",
        f"{STAGING}amdxdna_probe: Hardware init failed, ret -22",
        f"amdxdna {BDF}: probe with driver amdxdna failed with error -22"])) + "\n"
    diagnosis = diagnosis_of(tmp_path, log)
    assert diagnosis.top.id == "firmware-mismatch"
    assert diagnosis.entry("power-management").against
    # the SMU failing first, with no firmware failure before it, is power management's
    alone = diagnosis_of(tmp_path, f"[ 5.0] {STAGING}aie2_smu_exec: smu cmd 4 failed, 0xff\n"
                         f"[ 5.1] {STAGING}aie2_smu_fini: Power off failed, ret -22\n")
    assert alone.top.id == "power-management"


@pytest.mark.parametrize("version, tree", [
    ("amdxdna 2.21.0_20251207 (DKMS)", "amdxdna-legacy"),       # branch 1.7 and before
    ("amdxdna 2.26.1_20260801 (DKMS)", "amdxdna-staging"),      # branch 1.9
    ("amdxdna_legacy 2.26.1_20260801", "amdxdna-legacy"),       # its legacy module beside
    ("amdxdna 2.23.0_20260301", "amdxdna-legacy"),              # main before e9a3bef5
    ("amdxdna 2.23.0_20260601", "amdxdna-staging"),             # main after it
    ("amdxdna 0.1", None)])
def test_a_dkms_build_s_tree_is_told_by_its_version_and_module(version, tree):
    assert package_component(version) == tree


def test_version_matches_without_lines_weigh_one_weak_finding_together(tmp_path):
    """A DKMS legacy build of the 2.20 package (the package's own version: amd/xdna-driver
    CMake/pkg_driver_source.cmake) with XRT 2.20.0 matches symptomless defects: those that
    make something fail weigh one weak finding together, the staging tree's are not held
    against a legacy build, and those whose entry says they fail nothing (`fails: false`:
    XRT leaving the state out of its message, the legacy tree naming run 0 on a timeout)
    are not counted: a failure is not put down to them."""
    examine = ("System Configuration\n  Release              : 6.18.0-5-cachyos\n\nXRT\n"
               "  Version              : 2.20.0\n  amdxdna              : 2.20.0_20250901, "
               "71dd5c67\n  NPU Firmware Version : 255.0.5.35\n\nDevice(s) Present\n"
               "|[0000:05:00.1]  |NPU Krackan  |\n")
    diagnosis = diagnosis_of(tmp_path, examine, TIMEOUT_JSON)
    entry = diagnosis.entry("driver-bug")
    assert entry.score == 1 and len(entry.supports) == 1
    text = entry.supports[0].text
    assert "staging-" not in text and "legacy-context-churn-hang" in text
    assert "legacy-timeout-blames-first-run" not in text
    assert "xrt-runlist-error-omits-state" not in text


def test_defects_that_fail_nothing_lend_no_support(tmp_path):
    """amd/xdna-driver#903's stack (XRT 2.21.0, a DKMS legacy build of 2025-12): the only
    defects its versions match are ones that garble a report (their entries: "The failure
    itself is not caused by this"), so the cause has no observation for it."""
    examine = ("System Configuration\n  Release              : 6.18.0-5-cachyos\n\nXRT\n"
               "  Version              : 2.21.0\n  amdxdna              : 2.21.0_20251207, "
               "71dd5c67\n\nDevice(s) Present\n|[0000:05:00.1]  |NPU Krackan  |\n")
    diagnosis = diagnosis_of(tmp_path, examine, TIMEOUT_JSON)
    assert not diagnosis.entry("driver-bug").supports
    assert "driver-bug" not in diagnosis.top.leading


@pytest.mark.parametrize("month", ["Nov", "nov", "mär", "déc."])
def test_journalctl_s_month_in_the_user_s_locale(tmp_path, month):
    """journalctl's short form prints the month by strftime's %b, in the locale."""
    observed = read(tmp_path, f"{month} 04 13:18:03 box kernel: {LEGACY}aie2_init: Enable "
                              "PASID failed, ret -19\n")
    assert kinds(observed) == ["sva-failed"]


def test_a_probe_that_fails_after_a_named_start_failure_is_its_unwinding(tmp_path):
    """amd/xdna-driver#299's log: PASID could not be enabled, then the probe fails: the
    IOMMU's, not a device the user cannot reach."""
    log = (f"nov 04 13:18:03 box kernel: {LEGACY}aie2_init: Enable PASID failed, ret -19\n"
           f"nov 04 13:18:03 box kernel: {LEGACY}amdxdna_probe: Hardware init failed, ret -19\n")
    diagnosis = diagnosis_of(tmp_path, log)
    assert diagnosis.top.id == "iommu" and diagnosis.top.status == "first"
    assert "the IOMMU's PASID or SVA" in diagnosis.entry("device-access").against[0].text


def test_a_rust_program_s_panic_is_how_it_ended(tmp_path):
    observed = read(tmp_path, "FW Version: 1.0.0.166\nthread 'main' panicked at src/dump.rs:20:"
                              "35:\ncalled `Result::unwrap()` on an `Err` value\n")
    assert kinds(observed) == ["app-crash"]


@pytest.mark.parametrize("mark", ["*ERROR* ", "[drm] *ERROR* "])
def test_driver_lines_grepped_without_the_device_keep_their_drm_marks(tmp_path, mark):
    """A paste that kept drm_err's marks and lost `amdxdna <bdf>: ` (amdxdna_pci_drv.h
    XDNA_ERR; hpenedones/fastflowlm-docker#4 posts it so): read by its format strings, the
    [drm] tree told, cited as pasted."""
    observed = read(tmp_path, f"{mark}aie2_check_protocol: Incompatible firmware protocol "
                              f"major 7 minor 2\n{mark}aie2_hw_start: firmware is not alive\n")
    assert kinds(observed) == ["firmware-refused", "firmware-boot-failed"]
    assert observed.read_as == ["kernel log (driver lines without their prefix): 2 lines"]
    assert observed.stack.value("driver") == "amdxdna ([drm] lines: staging or in-tree)"
    assert all(s.cite.value.startswith(mark.strip()) for s in observed.signs)
    assert not any("0000:00:00.0" in str(s.cite) for s in observed.signs)
    diagnosis = diagnosis_of(tmp_path, f"{mark}aie2_check_protocol: Incompatible firmware "
                                       "protocol major 7 minor 2\n")
    assert diagnosis.top.id == "firmware-mismatch"


def test_fastflowlm_s_header_with_its_two_spaces_collapsed_to_one(tmp_path):
    """A thread's page collapses FastFlowLM's two spaces after the header
    (debug_utils.hpp header_print) as ROCm/FastFlowLM#678 shows it."""
    observed = read(tmp_path, "[FLM] Prefill chunk 1/1 with 13 tokens\n"
                              "[Linux] NPU FW Version: 1.0.0.63\n")
    assert observed.read_as[0] == "FastFlowLM output (flm serve, run or validate): 2 lines"
    assert observed.stack.value("firmware") == "1.0.0.63"


def test_xrt_s_own_error_message_and_a_program_s_error_line_are_failures(tmp_path):
    """ROCm/FastFlowLM#555's Windows console: XRT's `[XRT] ERROR: ...` in words no rule
    reads (message.cpp console_dispatch) and the program's own `ERROR: ...` line are
    failures; what the answer says is not that too few trials answered."""
    console = ("ERROR: Invalid Control Code. No block-write opcode present before the patch "
               "opcode for address 0x601d1e0: Unzul ssige Funktion.\n"
               "XRT build version: 2.19.0\nBuild hash: 77c7088d\nPID: 48780\n"
               "[XRT] ERROR: Failed to destroy allocation (0xc000000d): Falscher Parameter.\n")
    observed = read(tmp_path, console)
    assert kinds(observed) == ["xrt-error", "exception"]
    diagnosis = diagnosis_of(tmp_path, console)
    assert "too few trials" not in diagnosis.top.why
    assert "runlist-harness run CASE" not in diagnosis.top.experiment


def test_drm_s_driver_version_is_not_a_dkms_package_s(tmp_path):
    """DRM's "Initialized amdxdna_accel_driver 1.0.0" (amd/xdna-driver#62) or "0.6.0"
    (ROCm/FastFlowLM#403, an out-of-tree build) is the DRM driver's own version, not the
    package's (CMake/pkg_driver_source.cmake: <xrt version>_<date>): no package release is
    held against the known defects by it."""
    for log in ("[  255.101933] [drm] Initialized amdxdna_accel_driver 1.0.0 20240124 for "
                "0000:65:00.1 on minor 0\n",
                "[   12.785607] amdxdna: loading out-of-tree module taints kernel.\n"
                "[   14.811460] [drm] Initialized amdxdna_accel_driver 0.6.0 for 0000:c4:00.1 on "
                "minor 0\n"):
        diagnosis = diagnosis_of(tmp_path, log + "[  278.109565] amdxdna 0000:65:00.1: "
                                 "amdxdna_drm_open: SVA bind device failed, ret -28\n")
        assert not diagnosis.entry("driver-bug").supports, log
        assert diagnosis.top.id == "iommu"


def test_the_lines_no_parser_took_are_named(tmp_path):
    observed = read(tmp_path, "$ flm run llama3.2:1b\nsome words of the shell\n"
                              "[FLM]  Loading model: /m/Llama-3.2-1B-NPU2\n\nmore words\n")
    assert observed.read_as[-1] == "3 lines not read (lines 1-2, 5)"


def test_a_single_run_that_fails_is_decided_by_a_longer_timer_not_a_cut(tmp_path):
    """Xilinx/mlir-air#1824's table: one run, failing every attempt at the same time: no
    runlist to cut and no depth to vary; the longer timer tells work that outlasts it from a
    hang (amd/xdna-driver#1083), by the driver the log's prefix names."""
    table = ("attempt | depth | result  | seconds | workload\n1 | 1 | timeout | 6.144 | engine\n"
             "2 | 1 | timeout | 6.144 | engine\n")
    log = f"[ 10.5] {LEGACY}aie2_tdr_work: Device isn't making progress... Count 2\n"
    experiment = diagnosis_of(tmp_path, table, log).top.experiment
    assert experiment.startswith("the failing run alone under a longer driver timer")
    assert "a cut of it" not in experiment and "1 runs" not in experiment
    assert "sudo modprobe amdxdna timeout_in_sec=20" in experiment
