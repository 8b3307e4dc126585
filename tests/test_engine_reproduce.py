"""The engine's own commands as the main job: `capture record` of the stand-in engine, then
`reproduce_ert_timeout --capture`, then `report bundle`, under a hypothesis that makes the
42-run runlist fail and on the documented stack; and verdicts that say what NOOPs can and
cannot tell."""

from __future__ import annotations

import re
import sys
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from machines import engine_pack

from harness.app.cli import main
from harness.app.cli.run_cmd import reproduce
from harness.model.results import RunlistOutcome, TrialResult, TrialStatus
from harness.report.fileformat import load_report, read_document
from harness.report.model import PlanRecord
from harness.report.verdict import CASE_ONLY, CASE_ONLY_NOOPS, judge

ENGINE = str(Path(__file__).resolve().parent / "standin_engine.py")
HW = {"kind": "xrt", "simulated": False}
NOOP_CASE = {"name": "minicpm5-2b-decode", "kind": "case", "engine": "flm run minicpm5:2b",
             "workload": {"nop_only": True}}


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def captured(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("engine")
    pack = engine_pack(folder / "pack", "engine-reproduce")
    result = CliRunner().invoke(main, ["capture", "record", "--frames", "8", "--out",
                                       str(folder / "cap"), "--", sys.executable, ENGINE,
                                       str(pack)])
    assert result.exit_code == 0, result.output
    return folder / "cap"


@pytest.mark.parametrize("profile, code, answer, verdict", [
    ("staging,hang-at:30", 1,
     "42 in one runlist: TIMEOUT 3/3; cut 21+21: COMPLETED 3/3 -> the cut avoids it",
     ["reproduced with the engine's own commands (frame_1 of the capture, 42 runs): "
      "captured 42: TIMEOUT 3/3; cut 21+21: COMPLETED 3/3 -> the cut avoids the failure",
      "control depth-only 42: TIMEOUT 3/3 -> depth alone fails"]),
    ("staging", 0,
     "42 in one runlist: COMPLETED 3/3; cut 21+21: COMPLETED 3/3 -> not reproduced",
     ["not reproduced with the engine's own commands (frame_1 of the capture, 42 runs): "
      "captured 42: COMPLETED 3/3; cut 21+21: COMPLETED 3/3 -> the documented limits do not "
      "produce the failure; a hardware run is the test",
      "control depth-only 42: COMPLETED 3/3 -> nothing fails"])])
def test_the_three_way_on_the_engine_s_own_commands(captured, tmp_path, profile, code,
                                                    answer, verdict):
    out = tmp_path / "r.yaml"
    result = invoke("reproduce", "--capture", str(captured), "--profile", profile, "--out",
                    str(out))
    assert result.exit_code == code, result.output
    lines = result.stdout.splitlines()
    assert lines[1] == f"verdict: {answer} [SIMULATED]"
    reasons = [line[4:] for line in lines if line.startswith("  - ")]
    assert reasons[-2].startswith(verdict[0]) and reasons[-1] == verdict[1]
    # the first screen says these are the engine's own commands, and which: right below
    # the verdict and its reasons
    what = lines[2 + len(reasons)]
    # the capture is the SIMULATED stack's (its mark): never said to be XRT's
    assert what.startswith("what ran: the engine's own commands, as the SIMULATED stack "
                           "captured them (profile mainline): frame_1 of the 8 frames of "
                           "capture cap (replay.json sha256 ")
    assert "42 runs in one runlist in context hwctx_1, whose xclbin capture_" in what
    assert "5 buffers, 5 restored from the capture as they held when the frame started" \
        in what
    report = load_report(out)
    assert [p.name for p in report.plans] == ["captured", "cut 21+21", "depth-only"]
    assert report.case["captured"]["frame"] == "frame_1"
    assert report.case["captured"]["replay_sha256"] in what
    render = invoke("report", "render", str(out)).stdout
    assert "**What ran:** the engine's own commands, as the SIMULATED stack captured them " \
        "(profile mainline): frame_1" in render
    assert "as XRT captured them" not in render
    bundle = invoke("report", "bundle", str(out), "--out", str(tmp_path / "b.tar.gz"))
    assert bundle.exit_code == 0, bundle.output
    with tarfile.open(tmp_path / "b.tar.gz") as tar:
        body = next(tar.extractfile(m).read().decode() for m in tar.getmembers()
                    if m.name.endswith("report.md"))
        readme = next(tar.extractfile(m).read().decode() for m in tar.getmembers()
                      if m.name.endswith("README.md"))
    assert "What ran: the engine's own commands, as the SIMULATED stack" in readme
    assert "**What ran:** the engine's own commands, as the SIMULATED stack" in body
    assert invoke("report", "check", str(out)).exit_code == 0


def test_a_frame_and_any_cut_can_be_chosen(captured, tmp_path):
    out = tmp_path / "r.yaml"
    result = invoke("reproduce", "--capture", str(captured), "--frame", "4", "--plan",
                    "14+14+14", "--plan", "max:24", "--no-control", "--trials", "1",
                    "--no-isolate", "--out", str(out))
    assert result.exit_code == 0, result.output
    report = load_report(out)
    assert [(p.name, p.chunks) for p in report.plans] == [
        ("captured", [42]), ("cut 14+14+14", [14, 14, 14]), ("cut 24+18", [24, 18])]
    assert report.case["captured"]["frame"] == "frame_4"


@pytest.mark.parametrize("args, says", [
    (["minicpm5-2b-decode", "--capture", "cap"], "--capture runs the engine's own commands "
                                                 "instead of a case; drop CASE"),
    (["--frame", "3"], "give --capture; drop --frame"),
])
def test_capture_and_its_options_go_together(args, says):
    result = CliRunner().invoke(reproduce, args)
    assert result.exit_code == 2 and says in result.output, result.output


def test_a_case_is_not_a_capture(tmp_path):
    result = invoke("reproduce", "--capture", "nop-depth")
    assert result.exit_code == 2
    assert "nop-depth is a case, not an XRT capture" in result.output


# -- what NOOPs can and cannot tell ----------------------------------------------------------

def plan(name, chunks, expect, states, control=None):
    trials = [TrialResult(i, TrialStatus.COMPLETED if s == "COMPLETED" else
                          TrialStatus.FAILED, runlists=[RunlistOutcome(0, 1, [1], s)])
              for i, s in enumerate(states)]
    return PlanRecord(name, "-", list(chunks), expect, trials, control)


def test_noop_runlists_that_complete_on_hardware_point_at_the_engine_s_commands():
    plans = [plan("monolithic", [42], "TIMEOUT", ["COMPLETED"] * 3),
             plan("halves", [21, 21], "COMPLETED", ["COMPLETED"] * 3)]
    verdict = judge(plans, HW, NOOP_CASE)
    assert verdict.reproduced is False
    assert "does not show the failure" not in verdict.text
    assert ("-> the NOOP runlists complete: submission depth alone does not fail on this "
            "machine, so what fails in the engine must be in its own commands") in verdict.text
    assert ("runlist-harness capture record --frames 200 --out DIR -- flm run minicpm5:2b, "
            "then reproduce_ert_timeout --capture DIR") in verdict.text


def test_both_arms_of_noops_failing_only_with_the_case_name_its_xclbin_and_buffers():
    plans = [plan("monolithic", [42], "TIMEOUT", ["TIMEOUT"]),
             plan("depth-only", [42], None, ["COMPLETED"], control="the control")]
    verdict = judge(plans, HW, NOOP_CASE)
    assert verdict.control == CASE_ONLY
    assert verdict.reasons[-1].endswith(f"-> {CASE_ONLY_NOOPS}")
    captured = {"kind": "capture", "frame": "frame_1", "layers": 42, "workload": {}}
    assert judge(plans, HW, captured).reasons[-1].endswith(
        "-> depth fails only with the engine's own commands")


def test_a_control_that_could_not_run_is_said_in_the_verdict_and_the_render(tmp_path):
    plans = [plan("monolithic", [42], "TIMEOUT", ["TIMEOUT"])]
    # the runner records the reason in short (artifacts.control.why); the verdict quotes it
    verdict = judge(plans, HW, NOOP_CASE, "pack xrt-validate (validate.xclbin) not found")
    assert verdict.reasons[-1] == (
        "the depth-only control did not run (pack xrt-validate (validate.xclbin) not "
        "found), so nothing here separates depth alone from the case's commands")
    assert "beside the depth-only control" not in verdict.text


def test_the_verdict_reads_the_recorded_reason_and_falls_back_to_the_prose():
    from harness.report.verdict import _why_not
    why = "pack my;pack (validate.xclbin) not found"        # a ";" of its own: read whole
    assert _why_not({"not_run": f"{why}; searched: x", "why": why}) == why
    # a report from before the field: the first clause of the message, as it always was
    assert _why_not({"not_run": "pack v (validate.xclbin) not found; searched: x"}) == \
        "pack v (validate.xclbin) not found"


def test_without_the_validate_pack_the_run_says_the_control_did_not_run(tmp_path):
    # the hardware path on a fabricated machine with no XRT install: no validate.xclbin
    import os
    import subprocess

    from machines import stand_in_pack, strix_halo
    tree = strix_halo(tmp_path, identity=False)
    pack = stand_in_pack(tmp_path / "pack", "NoControl")
    env = dict(os.environ, HARNESS_PYXRT="harness.sim.pyxrt", HARNESS_ROOT=str(tree.root),
               HARNESS_SIM_PROFILE="staging")
    out = tmp_path / "r.yaml"
    done = subprocess.run([sys.executable, "-m", "harness", "reproduce", "--backend", "xrt",
                           "--xclbins", str(pack), "--trials", "1", "--out", str(out)],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    said = ("the depth-only control did not run (pack xrt-validate (validate.xclbin) not "
            "found), so nothing here separates depth alone from the case's commands")
    assert said in done.stdout
    # the reason in short is recorded beside the whole message, not cut from it
    control = read_document(out)["artifacts"]["control"]
    assert control["why"] == "pack xrt-validate (validate.xclbin) not found"
    assert control["not_run"].startswith(control["why"] + "; searched: ")
    render = invoke("report", "render", str(out)).stdout
    assert said in render
    assert "beside the depth-only control" not in render
    assert "the depth-only control did not run here" in render


def _three_way(captured: Path, tmp_path: Path) -> tuple[Path, str]:
    out = tmp_path / "r.yaml"
    result = invoke("reproduce", "--capture", str(captured), "--profile", "staging,hang-at:30",
                    "--trials", "1", "--no-isolate", "--out", str(out))
    assert result.exit_code == 1, result.output
    return out, invoke("report", "render", str(out)).stdout


def test_the_control_is_compared_with_the_captured_runs_as_they_ran(captured, tmp_path):
    """The render is public: the depth-only control is compared with the captured runs by
    the name of their xclbin within the capture (it said the path it has on this machine)
    and by the buffers the captured runs took (five 4 KiB buffers shared by all 42 runs:
    it said "no buffers"), and the control's xclbin is the stand-in that ran."""
    _, render = _three_way(captured, tmp_path)
    assert re.search(r"another xclbin: a synthesized stand-in for XRT's validate\.xclbin "
                     r"\(kernel DPU\) instead of capture_\d+\.bin \(MLIR_AIE\); five 20-byte "
                     r"buffers shared by all 42 runs instead of five 4 KiB buffers shared by "
                     r"all 42 runs\.", render), render
    assert f"{captured}/" not in render


def test_a_capture_run_s_scripts_are_named_as_export_writes_them(captured, tmp_path):
    """The run scripts are named as export writes them (`run_cut_21_21.sh` for plan `cut
    21+21`: the render said `sh run_cut 21+21.sh`), in the folder that holds them (in a
    bundle, its `recipes/`), and the recipes' README names the capture, not its path."""
    out, render = _three_way(captured, tmp_path)
    assert "cd r.recipes\nsh run_captured.sh\nsh run_cut_21_21.sh\n" in render
    assert (out.with_name("r.recipes") / "run_cut_21_21.sh").is_file()
    bundle = invoke("report", "bundle", str(out), "--out", str(tmp_path / "b.tar.gz"))
    assert bundle.exit_code == 0, bundle.output
    with tarfile.open(tmp_path / "b.tar.gz") as tar:
        files = {m.name.split("/", 1)[1]: tar.extractfile(m).read().decode(errors="replace")
                 for m in tar.getmembers() if m.isfile()}
    assert "in `recipes/` of the attached `b.tar.gz`" in files["report.md"]
    assert "cd recipes\nsh run_captured.sh\nsh run_cut_21_21.sh\n" in files["report.md"]
    readme = files["recipes/README.md"]
    assert f"Written by xdna-runlist-harness from the XRT capture {captured.name}: 42 runs. " \
        in readme
    assert str(captured) not in readme


# -- who wrote the capture: its mark beside replay.json -----------------------------------

def test_capture_show_and_import_say_the_simulated_stack_wrote_it(captured, tmp_path):
    shown = invoke("capture", "show", str(captured), "--no-redact")
    assert "written by: the SIMULATED stack (profile mainline; marked by " \
        "harness-origin.json)" in shown.output
    as_json = invoke("capture", "show", str(captured), "--json", "--no-redact")
    assert '"written_by": "SIMULATED"' in as_json.output
    imported = invoke("capture", "import", str(captured), "--cases", str(tmp_path / "cases"))
    assert imported.exit_code == 0, imported.output
    assert "written by: the SIMULATED stack" in imported.output
    import yaml
    case = yaml.safe_load(next((tmp_path / "cases").glob("*.yaml")).read_text())
    assert case["description"].startswith("SIMULATED stack's capture imported from")


def test_an_unmarked_capture_is_taken_for_a_machine_s(captured, tmp_path):
    import shutil
    copy = tmp_path / "copy"
    shutil.copytree(captured, copy)
    (copy / "harness-origin.json").unlink()
    shown = invoke("capture", "show", str(copy), "--no-redact")
    assert "written by: XRT (no harness-origin.json mark: taken as a machine's capture)" \
        in shown.output


def test_report_check_refuses_a_simulated_capture_claimed_as_a_machine_s(captured, tmp_path):
    out = tmp_path / "r.yaml"
    result = invoke("reproduce", "--capture", str(captured), "--no-control", "--trials", "1",
                    "--no-isolate", "--plan", "42", "--out", str(out))
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert "written_by: SIMULATED" in text
    assert invoke("report", "check", str(out)).exit_code == 0
    out.write_text(text.replace("written_by: SIMULATED", "written_by: XRT"))
    checked = invoke("report", "check", str(out))
    assert checked.exit_code != 0
    assert "says the capture is a machine's XRT's, but" in checked.output
    assert "harness-origin.json says SIMULATED (profile mainline) wrote it" in checked.output


def test_emulate_marks_the_capture_folders_xrt_wrote(tmp_path, monkeypatch):
    import time

    from harness.formats.capture_origin import capture_origin
    from harness.sources.emulated_captures import mark_emulated_captures
    began = time.time()
    old, new, here = tmp_path / "old", tmp_path / "new", tmp_path / "here"
    for folder in (old, new, here):
        folder.mkdir()
    (old / "replay.json").write_text("{}")
    import os
    os.utime(old / "replay.json", (began - 60, began - 60))       # from an earlier run
    (new / "replay.json").write_text("{}")
    (here / "replay.json").write_text("{}")
    monkeypatch.chdir(here)                 # XRT's default capture folder, ./
    marked = mark_emulated_captures(("xrt-capture", "--output-dir", str(new), "--",
                                     "app", "--output-dir", str(old)), began, "staging")
    assert sorted(marked) == sorted([new.resolve(), here.resolve()])
    assert capture_origin(new).stack == "EMULATED" and capture_origin(new).profile == "staging"
    assert capture_origin(old).stack == "XRT"
