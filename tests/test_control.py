"""reproduce's depth-only control and its three-way verdict, and the recipes it writes
beside its report (STACK.md 8: XRT's runlist-latency is one runlist of NOP ELF runs on
validate.xclbin; a hardware pass there means depth alone does not fail)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import SHARED_REFERENCE

from harness.app.cli import main
from harness.model.results import RunlistOutcome, TrialResult, TrialStatus
from harness.report.fileformat import load_report
from harness.report.model import PlanRecord
from harness.report.verdict import (
    CASE_ONLY,
    CASE_ONLY_NOOPS,
    DEPTH_ALONE,
    INCONCLUSIVE,
    NOTHING,
    judge,
)


def reproduce(tmp_path, *args: str):
    out = tmp_path / "r.yaml"
    result = CliRunner().invoke(main, ["reproduce", "--no-isolate", "--trials", "1", "--out",
                                       str(out), *args])
    return result, out


@pytest.mark.parametrize("profile, kind", [
    ("staging", NOTHING),
    ("inflight-cap:40", DEPTH_ALONE),
    # the case's kernel is slow, the NOP control is not: a chain of 24 commands of 2.6 s
    # outlasts mainline's 60 s job timeout, a runlist of 21 does not
    ("mainline,slow:MLIR_AIE:2600000", CASE_ONLY),
])
def test_the_three_way_verdict(tmp_path, profile, kind):
    result, out = reproduce(tmp_path, "--profile", profile)
    report = load_report(out)
    assert report.verdict["control"] == kind, result.output
    # the answer first; the control's conclusion on a line of its own below it (both arms
    # ran NOOPs: what differs is the xclbin and the buffers, not the commands)
    lines = result.output.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("verdict:"))
    said = CASE_ONLY_NOOPS if kind == CASE_ONLY else kind
    assert [line for line in lines[at:] if line.startswith("  - control ")] == [
        f"  - control depth-only 42: {report.plans[-1].counts_text()} -> {said}"]


def test_the_control_is_nop_elf_runs_on_validate_at_the_case_depth(tmp_path):
    result, out = reproduce(tmp_path)
    report = load_report(out)
    control = report.plans[-1]
    assert control.name == "depth-only" and control.chunks == [42]
    # no XRT install here: the simulated stack ran a stand-in, and says so (not "XRT's")
    assert ("NOP runs (nop.elf, ELF flow) on a synthesized stand-in for XRT's validate.xclbin "
            "in one runlist") in control.control
    assert ("another xclbin: a synthesized stand-in for XRT's validate.xclbin (kernel DPU) "
            "instead of layer.xclbin (MLIR_AIE)") in control.control
    assert control.trials[0].runlists[0].chains == [24, 18]
    assert report.artifacts["control"]["case"] == "nop-depth"
    [xclbin] = report.artifacts["control"]["xclbins"]
    assert xclbin["kernels"] == ["DPU"] and xclbin["partition_columns"] == 4
    assert "depth-only 42" in result.output


def test_the_control_plan_lands_in_the_header_with_what_resume_needs(tmp_path):
    # one header write carries the control plan, its artifacts and the exports: the
    # journal holds trials only, and a resume finds the control's pack where it looks
    import yaml
    _, out = reproduce(tmp_path, "--trials", "1")
    header_text, journal_text = out.read_text().split("\njournal:\n", 1)
    header = yaml.safe_load(header_text)
    assert [p["name"] for p in header["plans"]][-1] == "depth-only"
    assert header["artifacts"]["control"]["case"] == "nop-depth"
    assert header["exports"]["plans"] and '{"plan": {' not in journal_text


def test_a_plan_declared_for_the_header_after_journaled_ones_is_refused(tmp_path):
    from harness.report.journal import ReportFile
    from harness.report.model import Report
    report = Report(command="bisect", harness={}, backend={"simulated": True}, case={},
                    settings={})
    handle = ReportFile.create(report, out=str(tmp_path / "r.yaml"))
    handle.add_plan(PlanRecord("step 1", "1", [1]))
    with pytest.raises(ValueError, match="add_plan"):
        handle.declare_plan(PlanRecord("control", "1", [1]))
    handle.close()


def test_the_control_runs_xrts_own_validate_xclbin_when_installed(tmp_path, monkeypatch):
    from machines import ar_archive
    real = SHARED_REFERENCE / "xrt-validate-strx" / "validate_strx.xclbin"
    if not real.is_file():
        pytest.skip(f"{real} not present")
    bins = tmp_path / "xrt" / "share" / "amdxdna" / "bins"
    bins.mkdir(parents=True)
    (bins / "xrt_smi_strx.a").write_bytes(ar_archive({"validate.xclbin": real.read_bytes()}))
    monkeypatch.setenv("XILINX_XRT", str(tmp_path / "xrt"))
    _, out = reproduce(tmp_path)
    report = load_report(out)
    control = report.artifacts["control"]
    assert control["pack"]["stand_ins"] is False
    assert ("NOP runs (nop.elf, ELF flow) on XRT's validate.xclbin in one runlist"
            in report.plans[-1].control)
    assert control["xclbins"][0]["sha256"] == \
        "6c61ea528602c436d6c3317325c62cd542591f7256024f72f4d22aaf6a28fc58"


def test_no_control_skips_it(tmp_path):
    _, out = reproduce(tmp_path, "--no-control")
    report = load_report(out)
    assert [p.name for p in report.plans] == ["monolithic", "halves"]
    assert "control" not in report.verdict and "control" not in report.artifacts


def test_a_stopped_reproduce_resumes_its_control_with_the_controls_runs(tmp_path,
                                                                        ctrl_c_once):
    specs = ctrl_c_once(lambda spec, n: spec.plan == "depth-only")
    first, out = reproduce(tmp_path)
    assert first.exit_code == 130
    again = CliRunner().invoke(main, ["run", "--resume", str(out)])
    assert again.exit_code == 0, again.output
    control_spec = specs[-1]
    assert control_spec.plan == "depth-only"
    assert control_spec.per_layer[0].kernel == "DPU" and control_spec.per_layer[0].flow == "elf"
    assert control_spec.per_layer[0].buffers == [20] * 5
    assert load_report(out).verdict["control"] == NOTHING


def plan(name, states, control=None, chunks=(42,)):
    # a failed trial carries the runlist that failed (without one its set-up failed)
    trials = [TrialResult(i, TrialStatus.COMPLETED if s == "COMPLETED" else
                          TrialStatus.FAILED if s != "deadline" else TrialStatus.DEADLINE,
                          runlists=[RunlistOutcome(0, chunks[0], [chunks[0]], state=s)]
                          if s not in ("COMPLETED", "deadline") else [])
              for i, s in enumerate(states)]
    record = PlanRecord(name, "-", list(chunks), None, trials, control)
    return record


def test_judge_separates_the_three_and_says_when_it_cannot():
    sim = {"kind": "sim", "profile": "x"}
    cases = [
        ([plan("m", ["COMPLETED"]), plan("c", ["COMPLETED"], "control")], NOTHING),
        ([plan("m", ["COMPLETED"]), plan("c", ["TIMEOUT"], "control")], DEPTH_ALONE),
        ([plan("m", ["TIMEOUT"]), plan("c", ["COMPLETED"], "control")], CASE_ONLY),
        ([plan("m", ["TIMEOUT"]), plan("c", ["deadline"], "control")], INCONCLUSIVE),
        ([plan("m", ["deadline"]), plan("c", ["COMPLETED"], "control")], INCONCLUSIVE),
        # a chunked plan failing says nothing about the full depth
        ([plan("m", ["COMPLETED"]), plan("h", ["TIMEOUT"], chunks=(21, 21)),
          plan("c", ["COMPLETED"], "control")], NOTHING),
    ]
    for plans, kind in cases:
        verdict = judge(plans, sim)
        assert verdict.control == kind, (kind, verdict.text)
        assert verdict.reasons[-1].endswith(f"-> {kind}")
        assert verdict.reasons[-2].endswith("[SIMULATED, profile x]")
    assert judge([plan("m", ["COMPLETED"])], sim).control is None


def test_reproduce_writes_recipes_beside_its_report(tmp_path):
    result, out = reproduce(tmp_path)
    folder = tmp_path / "r.recipes"
    report = load_report(out)
    assert report.sections["exports"]["folder"] == str(folder)
    assert sorted(report.sections["exports"]["recipes"]) == sorted(
        p.name for p in folder.glob("recipe_*.json"))
    schema = SHARED_REFERENCE / "xrt" / "recipe.schema.json"
    if schema.is_file():
        import jsonschema
        import xrt_runner
        for recipe in folder.glob("recipe_*.json"):
            jsonschema.validate(json.loads(recipe.read_text()),
                                xrt_runner.schema_as_runner_reads(schema))
    md = CliRunner().invoke(main, ["report", "render", str(out)]).output
    assert "### Reproduce with XRT's own tools" in md
    assert "cd r.recipes" in md and "sh run_monolithic.sh" in md and "sh run_halves.sh" in md
    assert "Not included (copy in first): layer.xclbin." in md


def test_force_replaces_the_recipes_too_and_nothing_else_is_overwritten(tmp_path):
    _, out = reproduce(tmp_path)
    stale = tmp_path / "r.recipes" / "stale.txt"
    stale.write_text("old")
    refused, _ = reproduce(tmp_path)
    assert refused.exit_code == 2 and stale.exists()
    again, _ = reproduce(tmp_path, "--force")
    assert again.exit_code == 0, again.output
    assert not stale.exists() and (tmp_path / "r.recipes" / "profile.json").is_file()


def test_the_control_s_buffers_are_compared_as_sizes_not_as_the_words_for_them():
    """What the control keeps of the case is read from the buffers each run takes (their
    sizes, in any order), not from the sentence that describes them."""
    from dataclasses import replace

    from harness.sources.depth_control import VALIDATE_BUFFERS, control_for
    from harness.sources.load import load_case
    from harness.sources.workload import run_buffer_sizes
    case = load_case("minicpm5-2b-decode")
    assert run_buffer_sizes(case) == [4096] * 5
    control, _, what = control_for(case)
    assert run_buffer_sizes(control) == list(VALIDATE_BUFFERS)
    assert "five 20-byte buffers shared by all 42 runs instead of five 4 KiB" in what
    # a case on the validate buffers themselves: the control changes nothing of them
    same = replace(case, per_layer=(replace(case.per_layer[0], buffers=(20,) * 5),))
    assert "buffers" not in control_for(same)[2].split("; but ")[1]
    mixed = replace(case, per_layer=(replace(case.per_layer[0], buffers=(4096, 20)),
                                     replace(case.per_layer[0], buffers=(20, 4096))))
    assert run_buffer_sizes(mixed) is None                 # two commands: not one set


def test_a_control_refused_at_its_first_run_is_no_depth_result_on_npu1(tmp_path):
    """npu1 (Phoenix) has validate artefacts of its own (xrt_smi_phx.a: Xilinx/XRT
    963c58ee smi.cpp get_validate_archive_path); the control runs Strix's nop.elf, an AIE2P
    stream (dev_gen 4) the npu1 firmware model refuses at once, its first run ERROR. A
    failure at run 0 is what a runlist of any depth meets, so the verdict reads it as the
    control's commands refused, never as "depth alone fails"."""
    result, out = reproduce(tmp_path, "--profile", "mainline,device:npu1")
    control = load_report(out).plans[-1]
    assert control.control and control.trials[0].runlists[0].failing_run == 0
    assert load_report(out).verdict["control"] == INCONCLUSIVE
    line = next(x for x in result.output.splitlines() if "control depth-only" in x)
    assert DEPTH_ALONE not in line and "ERROR at run 0" in line
    assert "xrt_smi_phx.a" in line


def test_judge_reads_a_first_run_error_as_refused_and_a_later_one_as_depth():
    sim = {"kind": "sim", "profile": "x"}
    refused = plan("c", ["ERROR"], "control")
    refused.trials[0].runlists[0].failing_run = 0
    verdict = judge([plan("m", ["TIMEOUT"]), refused], sim)
    assert verdict.control == INCONCLUSIVE and "ERROR at run 0" in verdict.reasons[-1]
    assert "xrt_smi_phx.a" not in verdict.reasons[-1]      # not an npu1 device
    deep = plan("c", ["ERROR"], "control")
    deep.trials[0].runlists[0].failing_run = 30           # a run only a deep runlist has
    assert judge([plan("m", ["TIMEOUT"]), deep], sim).control == DEPTH_ALONE
