"""The causes below the runlist (harness.report.diagnosis.stack_judges, causes.STACK_CAUSES):
each named first on the lines that show it, citing FILE:LINE, with its falsifier and its
experiment as a command; none first on the absence of a line; the boundary between
resources and contention (the run's own demand against the device's hwctx_limit,
npu1_regs.c 6, npu4/5/6_regs.c 16); and the known-defects table with its version matcher
(harness/formats/known_defects.py, harness/data/known_defects.yaml)."""

from __future__ import annotations

import pytest
from diagkit import hardware_report, plan, setup_refused
from hypothesis import given
from hypothesis import strategies as st

from harness.formats import known_defects as kd
from harness.formats.yamlio import dump_yaml, load_yaml_text
from harness.model.errors import BadInput
from harness.report.diagnosis import diagnose
from harness.report.diagnosis.ranking import FIRST

BDF = "0000:c6:00.1"
ERR = f"amdxdna {BDF}: [drm] *ERROR* "


def diagnosis_of(tmp_path, *texts: str):
    paths = []
    for i, text in enumerate(texts):
        path = tmp_path / f"file-{i}"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return diagnose(paths)


def first(diagnosis) -> str:
    assert diagnosis.top.status == FIRST, [(e.id, e.status, e.score)
                                           for e in diagnosis.entries[:4]]
    return diagnosis.top.id


TIMEOUT_JSON = '{"error":"runlist failed execution (ERT_CMD_STATE_TIMEOUT)"}\n'


@pytest.mark.parametrize("cause, lines, command", [
    ("firmware-mismatch", [f"{ERR}aie2_init: failed to request_firmware "
                           "amdnpu/17f0_11/npu.sbin, ret -2",
                           f"{ERR}aie2_hw_start: firmware is not alive"], "probe"),
    ("iommu", [f"{ERR}amdxdna_sva_init: SVA bind device failed, ret -19"],
     "GRUB_CMDLINE_LINUX"),
    ("power-management", [f"{ERR}aie2_smu_exec: smu cmd 4 failed, 0xff",
                          f"{ERR}amdxdna_pm_resume_get: Resume failed: -110"], "power/control"),
    ("device-access", [f"{ERR}aie2_init: Running under hypervisor not supported"], "probe"),
    ("device-access", [f"amdxdna {BDF}: probe with driver amdxdna failed with error -110"],
     "render"),
    ("host-memory", [f"{ERR}aie2_hwctx_init: Map host buffer failed, ret -12"], "ulimit -l"),
    ("wrong-binary", [f"{ERR}aie2_hwctx_col_list: Invalid num_col 8"], "xclbin inspect"),
])
def test_each_stack_cause_is_first_on_its_own_lines(tmp_path, cause, lines, command):
    text = "\n".join(f"[{100 + i:5d}.000000] {line}" for i, line in enumerate(lines))
    # what the engine said: a device that is not there answers no runlist
    said = "RuntimeError:  No such device with index '0'\n" if cause == "device-access" \
        else TIMEOUT_JSON
    diagnosis = diagnosis_of(tmp_path, text + "\n", said)
    assert first(diagnosis) == cause
    top = diagnosis.top
    assert command in top.experiment and top.falsifier and top.predicts
    cites = [str(c) for f in top.supports for c in f.cites]
    assert any(c.startswith(f"{tmp_path / 'file-0'}:1: ") for c in cites), cites


def test_a_page_fault_storm_alone_leads_iommu_without_deciding_it(tmp_path):
    """IO_PAGE_FAULTs with the IOMMU on and no binding failure are the device touching what
    was not mapped for it: the driver's mapping as much as the IOMMU's setup (amd/IRON#43:
    a storm beside timeouts was a driver build's regression, found on a second build). So
    iommu leads but is not first, and the experiment is another driver build."""
    faults = "\n".join(f"[  100.00000{i}] AMD-Vi: Event logged [IO_PAGE_FAULT device=0000:c6:"
                       f"00.1 domain=0x000b address=0x{a:x} flags=0x0020]"
                       for i, a in enumerate((0x1000, 0x2000, 0x3000)))
    diagnosis = diagnosis_of(tmp_path, faults + "\n", TIMEOUT_JSON)
    assert diagnosis.top.id == "undetermined" and diagnosis.top.leading[0] == "iommu"
    assert "another build of the driver" in diagnosis.top.experiment
    # with the IOMMU's own binding failing beside them, it is first, and the setup is fixed
    with_setting = diagnosis_of(tmp_path, f"[   99.000000] {ERR}amdxdna_sva_init: SVA bind "
                                "device failed, ret -19\n" + faults + "\n", TIMEOUT_JSON)
    assert first(with_setting) == "iommu"
    assert "GRUB_CMDLINE_LINUX" in with_setting.top.experiment


def test_no_stack_cause_is_first_on_a_failure_alone(tmp_path):
    """An engine's TIMEOUT and a kernel log with no driver error: every stack cause
    lacks a line of its own, so the answer is undetermined with the NOOP depth test (a
    cause is never first on the absence of a line)."""
    diagnosis = diagnosis_of(tmp_path, "[    0.000000] Linux version 7.0.0-31-generic (b@l)\n"
                             f"[    4.000000] amdxdna {BDF}: enabling device (0000 -> 0002)\n",
                             TIMEOUT_JSON)
    assert diagnosis.top.id == "undetermined"
    assert "reproduce_ert_timeout" in diagnosis.top.experiment
    assert "min of device time" in diagnosis.top.experiment
    for cause in ("firmware-mismatch", "iommu", "power-management", "device-access",
                  "host-memory", "contention", "wrong-binary"):
        assert not diagnosis.entry(cause).supports


def test_a_device_that_ran_commands_weighs_against_device_access(tmp_path):
    diagnosis = diagnosis_of(tmp_path, "[ERROR]  No NPU device found.\n[Linux]  Kernel: 7.0.0\n",
                             TIMEOUT_JSON)
    entry = diagnosis.entry("device-access")
    assert entry.supports and any("ran commands" in f.text for f in entry.against)


def test_a_firmware_the_driver_refused_explains_no_device(tmp_path):
    """Linux before f1eac46fe5f7 refuses protocol-7 firmware at probe: no node follows, so
    device-access does not lead on 'No NPU device found'."""
    diagnosis = diagnosis_of(
        tmp_path, "[    0.000000] Linux version 6.19.3-arch1 (x@y)\n"
        f"[    4.600000] {ERR}aie2_check_protocol: Incompatible firmware protocol major 7 "
        "minor 2\n", "[Linux]  Kernel: 6.19.3-arch1\n[ERROR]  No NPU device found.\n")
    assert first(diagnosis) == "driver-bug"
    assert any("follows from that" in f.text for f in diagnosis.entry("device-access").against)


# -- driver-bug and the known defects ----------------------------------------------------------

def test_a_known_defect_on_an_affected_release_is_named_with_its_fix(tmp_path):
    diagnosis = diagnosis_of(tmp_path, "[    0.000000] Linux version 6.18.9-arch1-1 (l@a)\n"
                             f"[    4.600000] {ERR}aie2_check_protocol: Incompatible firmware "
                             "protocol major 7 minor 2\n")
    assert first(diagnosis) == "driver-bug"
    top = diagnosis.top
    assert "mainline-protocol-7-2-refused" in top.supports[0].text
    assert [str(c) for c in top.supports[0].cites][1].startswith(f"{tmp_path / 'file-0'}:2: ")
    assert "boot Linux 7.0 or later" in top.experiment and "changes the machine" in \
        top.experiment
    assert any("known defect" in f.text for f in diagnosis.entry("firmware-mismatch").against)


def test_the_same_refusal_on_a_fixed_release_is_the_firmware_s(tmp_path):
    diagnosis = diagnosis_of(tmp_path, "[    0.000000] Linux version 7.0.0-31-generic (b@l)\n"
                             f"[    4.600000] {ERR}aie2_check_protocol: Incompatible firmware "
                             "protocol major 8 minor 0\n")
    assert first(diagnosis) == "firmware-mismatch"


def test_a_version_match_without_its_lines_only_supports(tmp_path, monkeypatch):
    """A defect with no symptom (the table's symptomless entries, here one of the in-tree
    driver) on an affected release supports driver-bug, weakly, and never ranks it first."""
    table = kd.read_defects(
        "schema: xdna-runlist-harness/known-defects/v1\ndefects:\n"
        "  - id: mainline-test-defect\n    component: amdxdna-mainline\n"
        "    summary: a test defect\n    affects: \">=6.14,<7.0\"\n    fixed_in: \"7.0\"\n"
        "    symptoms: []\n    source: https://example.org/linux/1\n")
    monkeypatch.setattr("harness.report.diagnosis.defect_judge.known_defects", lambda: table)
    diagnosis = diagnosis_of(tmp_path, "[    0.000000] Linux version 6.18.9 (l@a)\n", TIMEOUT_JSON)
    entry = diagnosis.entry("driver-bug")
    assert entry.supports and entry.score == 1 and diagnosis.top.id != "driver-bug"


def test_an_entry_of_any_component_is_matched_by_its_version_and_symptom(tmp_path, monkeypatch):
    """The table is data: an XRT entry (another engineer's kind) is found from xrt-smi
    examine's XRT version and a line of the engine's output."""
    table = kd.read_defects(
        "schema: xdna-runlist-harness/known-defects/v1\ndefects:\n"
        "  - id: xrt-test-defect\n    component: xrt\n    summary: a test defect\n"
        "    affects: \">=2.20,<2.21.75\"\n    fixed_in: \"2.21.75\"\n"
        "    symptoms: [\"qds_device::wait\\\\(\\\\) unexpected command state\"]\n"
        "    source: https://example.org/xrt/1\n")
    monkeypatch.setattr("harness.report.diagnosis.defect_judge.known_defects", lambda: table)
    examine = ("System Configuration\n  Release              : 7.0.0\n  Model                : "
               "Box\n\nXRT\n  Version              : 2.21.21\n\nDevice(s) Present\n")
    diagnosis = diagnosis_of(tmp_path, examine, '{"error":"qds_device::wait() unexpected '
                                                'command state"}\n')
    assert first(diagnosis) == "driver-bug"
    assert "install XRT 2.21.75 or later" in diagnosis.top.experiment


def test_the_shipped_table_reads_and_every_entry_is_well_formed():
    table = kd.known_defects()
    assert "mainline-protocol-7-2-refused" in {d.id for d in table}
    for defect in table:
        assert defect.component in kd.COMPONENTS and defect.source.startswith("https://")


@pytest.mark.parametrize("change, message", [
    (lambda e: e.pop("fixed_in"), "missing fixed_in"),
    (lambda e: e.update(affects=">6.x"), "affects clause"),
    (lambda e: e.update(component="kernel"), "component 'kernel'"),
    (lambda e: e.update(symptoms=["(unclosed"]), "symptoms"),
    (lambda e: e.update(source="http://x"), "https"),
    (lambda e: e.update(id="Bad Id"), "slug"),
])
def test_a_malformed_entry_is_refused_naming_it(change, message):
    raw = load_yaml_text(kd.TABLE.read_text())
    change(raw["defects"][0])
    with pytest.raises(BadInput, match=message):
        kd.read_defects(dump_yaml(raw))


@given(st.lists(st.integers(0, 30), min_size=1, max_size=4),
       st.lists(st.integers(0, 30), min_size=1, max_size=4))
def test_the_version_clauses_agree_with_tuple_order(version, bound):
    text = ".".join(map(str, version))
    clause = ".".join(map(str, bound))
    width = max(len(version), len(bound))
    left = tuple(version) + (0,) * (width - len(version))
    right = tuple(bound) + (0,) * (width - len(bound))

    def affected(op: str) -> bool:
        defect = kd.KnownDefect("x", "xrt", "", kd.parse_affects(f"{op}{clause}", "t"), "",
                                "", (), "https://x")
        return defect.affects_version(text + "-suffix")
    assert affected("<") == (left < right) and affected(">=") == (left >= right)
    assert affected("==") == (left == right) and affected("<=") == (left <= right)


def test_versions_are_read_as_their_components_print_them():
    assert kd.version_of("6.18.9-arch1-1") == (6, 18, 9)
    assert kd.version_of("amdxdna 2.21.75_20251107 (DKMS)") == (2, 21, 75)
    assert kd.version_of("202610.2.21.21") == (2, 21, 21)
    assert kd.version_of("v1.0.3") == (1, 0, 3) and kd.version_of("none") is None


# -- resources against contention -----------------------------------------------------------

def test_a_refused_context_alone_leaves_resources_and_contention_to_the_probe(tmp_path):
    """A kernel log says a context was refused with none left, but not whose demand used
    them up: both stay open, and the probe (who else holds the NPU) decides."""
    diagnosis = diagnosis_of(tmp_path, f"[   40.000100] amdxdna {BDF}: aie2_rq_add: Not allow "
                             "more than 32 context(s)\n", TIMEOUT_JSON)
    assert diagnosis.top.id == "undetermined"
    assert set(diagnosis.top.leading) == {"resources", "contention"}
    assert "runlist-harness probe" in diagnosis.top.experiment


def test_a_run_whose_own_contexts_exceed_the_device_s_is_resources(tmp_path):
    """Seven xclbins (a context each) on an npu1, which gives six: the run's own demand."""
    refused = [setup_refused(i, "DRM_IOCTL_AMDXDNA_CREATE_HWCTX IOCTL failed (err=-22): "
                                "Invalid argument") for i in range(3)]
    path = hardware_report(tmp_path, "hw", [plan("monolithic", "42", [42], refused)])
    doc = load_yaml_text(path.read_text())
    doc["environment"]["npu"]["generation"] = "npu1"
    xclbins = doc["artifacts"]["xclbins"]
    doc["artifacts"]["xclbins"] = [dict(xclbins[i % len(xclbins)], role=f"r{i}")
                                   for i in range(7)]
    path.write_text(dump_yaml(doc))
    diagnosis = diagnose([path])
    assert first(diagnosis) == "resources"
    assert any("asks 7 contexts and the device gives 6" in f.text
               for f in diagnosis.top.supports)


# -- the runlist causes, from what artefacts say -------------------------------------------

VALIDATE = ("Validate Device           : [0000:c6:00.1]\n    Platform              : NPU Strix\n"
            "Test 1 [0000:c6:00.1]     : runlist-latency\n"
            "    Test Status           : [{status}]\n")


def test_xrt_smi_validate_s_deep_runlist_test_speaks_to_a_depth_limit(tmp_path):
    failed = diagnosis_of(tmp_path, VALIDATE.format(status="FAILED"))
    assert failed.entry("depth-limit").supports and failed.top.id == "undetermined"
    passed = diagnosis_of(tmp_path, VALIDATE.format(status="PASSED"), TIMEOUT_JSON)
    assert "completes there" in passed.entry("depth-limit").against[0].text


def test_an_error_state_supports_a_refusal_and_a_timed_out_job_weighs_against_it(tmp_path):
    error = diagnosis_of(tmp_path, '{"error":"runlist failed execution (ERT_CMD_STATE_ERROR)"}')
    assert "ended ERROR" in error.entry("refused").supports[0].text
    timed = diagnosis_of(tmp_path, f"[  50.000000] {ERR}aie2_tdr_detect: TDR timeout detected\n",
                         TIMEOUT_JSON)
    assert timed.entry("refused").against


def test_the_deciding_experiment_names_how_this_driver_s_timer_is_lengthened(tmp_path):
    legacy = diagnosis_of(tmp_path, f"[  50.0] amdxdna {BDF}: aie2_tdr_work: Device isn't making "
                          "progress... Count 2 timeout 2 dump_only 0\n", TIMEOUT_JSON)
    experiment = legacy.top.experiment
    # the prefix is the module's name (amdxdna_pci_drv.c: .name = KBUILD_MODNAME): amdxdna
    assert "sudo modprobe amdxdna timeout_in_sec=20" in experiment
    # nine trials, each held at most until the legacy check's longest (36 s: three checks
    # and one per other connected idle context, 16 a device)
    assert "changes the machine" in experiment and "at most 5.4 min of device time" in experiment
