"""Several machines at once (harness.report.diagnosis.cohort): each machine's stack, the
factors that separate the failing machines from the working ones with their counts, and
a plain word when the cohort is too small or its factors confounded; machines told apart
by what the files show (a report's machine id, xrt-smi examine's model, BIOS and
processor, a table's machine column), never by a file's name."""

from __future__ import annotations

import json

from diagkit import completed_trial, failed_trial, hardware_report, invoke, of, plan

from harness.formats.yamlio import dump_yaml, load_yaml_text
from harness.report.diagnosis.cohort import FAILING, WORKING, factor_rows, machines


def machine_report(tmp_path, name: str, machine_id: str, kernel: str, firmware: str,
                   failing: bool):
    trials = [failed_trial(i, 42, [24, 18], "TIMEOUT", wall_ms=60_000.0) for i in range(2)] \
        if failing else [completed_trial(i, [42], ms_per_run=0.05) for i in range(3)]
    path = hardware_report(tmp_path, name, [plan("monolithic", "42", [42], trials)],
                           kernel=kernel)
    doc = load_yaml_text(path.read_text())
    doc["environment"]["system"]["machine_id"] = machine_id
    doc["environment"]["npu"]["sysfs"] = {"fw_version": firmware}
    path.write_text(dump_yaml(doc))
    return path


def test_four_machines_where_the_firmware_separates_them(tmp_path):
    paths = [machine_report(tmp_path, "a", "m-a", "6.18.9", "1.1.2.65", True),
             machine_report(tmp_path, "b", "m-b", "7.0.0-31", "1.1.2.65", True),
             machine_report(tmp_path, "c", "m-c", "6.18.9", "1.0.0.63", False),
             machine_report(tmp_path, "d", "m-d", "7.0.0-31", "1.0.0.63", False)]
    diagnosis = of(*paths)
    found, _ = machines(diagnosis.reports)
    assert [m.outcome for m in found] == [FAILING, FAILING, WORKING, WORKING]
    rows = {r.factor: r for r in factor_rows(found)}
    assert rows["firmware"].separates and not rows["kernel"].separates
    assert rows["firmware"].failing == {"1.1.2.65": 2} and rows["firmware"].working == \
        {"1.0.0.63": 2}
    text = invoke("diagnose", *map(str, paths)).stdout
    assert "machines: 4 (2 failing, 2 working, 0 with no outcome)" in text
    assert "  firmware: failing 1.1.2.65 x2; working 1.0.0.63 x2 -> separates them" in text
    assert "confounded" not in text and "too few machines" not in text
    ranking = json.loads(invoke("diagnose", "--json", *map(str, paths)).stdout)
    cohort = ranking[0]["cohort"]
    assert [f["factor"] for f in cohort["factors"] if f["separates"]] == ["firmware"]


def test_two_machines_that_differ_in_two_ways_are_too_few_and_confounded(tmp_path):
    paths = [machine_report(tmp_path, "a", "m-a", "6.18.9", "1.1.2.65", True),
             machine_report(tmp_path, "c", "m-c", "7.0.0-31", "1.0.0.63", False)]
    text = invoke("diagnose", *map(str, paths)).stdout
    assert "too few machines to tell a factor from chance: 1 failing and 1 working" in text
    assert "confounded: kernel, firmware change together" in text


def test_the_same_machine_under_two_file_names_is_one_machine(tmp_path):
    first = machine_report(tmp_path, "a", "m-a", "6.18.9", "1.1.2.65", True)
    again = tmp_path / "renamed.yaml"
    again.write_text(first.read_text())
    found, _ = machines(of(first, again).reports)
    assert len(found) == 1 and found[0].files == [str(first), str(again)]


EXAMINE = ("System Configuration\n  Release              : {kernel}\n  Model                : "
           "{model}\n  BIOS Version         : 1.02\n  Processor            : AMD Ryzen AI\n\n"
           "XRT\n  Version              : 2.21.75\n  NPU Firmware Version : 1.1.2.65\n\n"
           "Device(s) Present\n|[0000:c6:00.1]  |NPU Strix Halo |\n")


def test_artefacts_join_the_machine_their_stack_agrees_with(tmp_path):
    """Two xrt-smi examine outputs tell two machines; each one's FastFlowLM output joins
    the machine whose kernel it shows; a JSON error with no stack cannot be placed."""
    files = {"e1": EXAMINE.format(kernel="6.18.9-arch1", model="Box A"),
             "e2": EXAMINE.format(kernel="7.0.0-31-generic", model="Box B"),
             "f1": "[Linux]  Kernel: 6.18.9-arch1\n[ERROR]  Failed to load model: "
                   "runlist failed execution (ERT_CMD_STATE_TIMEOUT)\n",
             "f2": "[Linux]  Kernel: 7.0.0-31-generic\n[Linux]  NPU FW Version: 1.1.2.65\n",
             "j": '{"error":"runlist failed execution (ERT_CMD_STATE_TIMEOUT)"}\n'}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    found, unattributed = machines(of(*[tmp_path / n for n in files]).reports)
    assert [(m.files, m.outcome) for m in found] == [
        ([str(tmp_path / "e1"), str(tmp_path / "f1")], FAILING),
        ([str(tmp_path / "e2"), str(tmp_path / "f2")], "no outcome")]
    assert unattributed == [str(tmp_path / "j")]


def test_a_table_s_machine_column_makes_the_machines(tmp_path):
    (tmp_path / "t").write_text("machine | model | depth | result | trials\n"
                                "---|---|---|---|---\n"
                                "halo | minicpm5 | 42 | TIMEOUT | 3/3\n"
                                "point | minicpm5 | 42 | TIMEOUT | 2/2\n"
                                "krackan | qwen3 | 36 | ok | 5/5\n"
                                "halo2 | qwen3 | 36 | ok | 5/5\n")
    text = invoke("diagnose", str(tmp_path / "t")).stdout
    assert "machines: 4 (2 failing, 2 working" in text
    assert "  model: failing minicpm5 x2; working qwen3 x2 -> separates them" in text


def test_one_machine_s_comparison_that_changes_depth_and_model_is_confounded(tmp_path):
    """ROCm/FastFlowLM#712: the 42-layer model fails where the 36-layer one works, but the
    two differ in the model too: the table cannot tell depth from the model's commands."""
    (tmp_path / "t").write_text("layers  model      result   trials\n"
                                "42      minicpm5   TIMEOUT  3/3\n36      qwen3-4b   ok       3/3\n"
                                "28      qwen3-1.7b ok       3/3\n")
    text = invoke("diagnose", str(tmp_path / "t")).stdout
    assert "confounded: what fails (minicpm5 at 42) and what completes" in text
    assert "differ in depth and in model at once" in text and "reproduce_ert_timeout" in text


def test_one_user_s_files_whose_driver_facts_differ_only_in_form_are_one_machine(tmp_path):
    """amd/xdna-driver#704's two dmesg snippets of one boot (DRM's "Initialized
    amdxdna_accel_driver 0.0.0", then a [drm] line that tells only the tree), and
    ROCm/FastFlowLM#655's kernel log beside its `flm validate` ("amdxdna version: 0.8", the
    DRM version): a DRM version, a package's version and a tree's form are not values of one
    kind, so they do not tell machines apart."""
    files = {"a": "[   31.844769] [drm] Initialized amdxdna_accel_driver 0.0.0 for "
                  "0000:c5:00.1 on minor 0\n",
             "b": "[ 2497.518269] amdxdna 0000:c5:00.1: [drm] *ERROR* amdxdna_drm_open: SVA "
                  "bind device failed, ret -19\n",
             "c": "[Linux]  Kernel: 7.1.3\n[Linux]  amdxdna version: 0.8\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    for names in (("a", "b"), ("b", "c")):
        paths = [str(tmp_path / n) for n in names]
        found, _ = machines(of(*paths).reports)
        assert len(found) == 1, names
        assert "machines:" not in invoke("diagnose", *paths).stdout
    # two versions of one kind still tell two machines apart
    (tmp_path / "d").write_text("[Linux]  Kernel: 7.1.3\n[Linux]  amdxdna version: 0.6\n")
    found, _ = machines(of(tmp_path / "c", tmp_path / "d").reports)
    assert len(found) == 2


def test_machines_whose_model_and_depth_change_together_are_confounded(tmp_path):
    """ROCm/FastFlowLM#712's trap across machines: the failing ones run the 42-layer model,
    the working ones the 36-layer one; the model separating them says nothing apart from
    the depth, in the text and in --json."""
    (tmp_path / "t").write_text("machine | depth | result  | model\n"
                                "halo-a  | 42    | TIMEOUT | minicpm5:2b\n"
                                "halo-b  | 42    | TIMEOUT | minicpm5:2b\n"
                                "halo-c  | 36    | ok      | qwen3:4b\n"
                                "halo-d  | 36    | ok      | qwen3:4b\n")
    text = invoke("diagnose", str(tmp_path / "t")).stdout
    assert "  depth: failing 42 x2; working 36 x2 -> separates them" in text
    assert "confounded: model, depth change together" in text
    assert "NOOP depth test at the failing depth" in text
    notes = json.loads(invoke("diagnose", "--json", str(tmp_path / "t")).stdout)[0][
        "cohort"]["notes"]
    assert any(note.startswith("confounded: model, depth") for note in notes)


def test_one_machine_s_confounded_comparison_is_in_the_json_too(tmp_path):
    (tmp_path / "t").write_text("layers | result  | model\n42 | TIMEOUT | minicpm5:2b\n"
                                "36 | ok | qwen3:4b\n")
    first = json.loads(invoke("diagnose", "--json", str(tmp_path / "t")).stdout)[0]
    assert first["confounded"][0].startswith("confounded: what fails (minicpm5:2b at 42)")
