"""`runlist-harness investigate`: the three-way, then the experiments the diagnosis asks
for, within a budget of device time, into one report ending with the diagnosis
(harness.search.investigate). On the simulated clock (trials in this process), each
cause's hypothesis is named first, the documented stack says nothing fails, the budget
stops it, Ctrl-C keeps what ran and --resume goes on."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from diagkit import invoke

from harness.app.cli import main
from harness.report.check import check_report_file
from harness.report.diagnosis import diagnose
from harness.report.fileformat import load_report


def investigate(tmp_path, profile: str | None, *more: str):
    out = tmp_path / "inv.yaml"
    args = ["investigate", "minicpm5-2b-decode", "--no-isolate", "--out", str(out), *more]
    if profile:
        args += ["--profile", profile]
    return invoke(*args), out


@pytest.mark.parametrize("profile, cause", [
    ("inflight-cap:40", "depth-limit"),
    ("work-hang:30", "work-hang"),
    ("work-hang:8", "work-hang"),
    ("slow:layer:2800000", "slow-work"),
    ("reject-at:30", "refused"),
    ("flaky:0.3", "nondeterministic"),
    ("staging,inflight-cap:30", "depth-limit"),
    ("oot,work-hang:5", "work-hang"),
    ("held-contexts:13", "contention"),
    ("oot,held-contexts:30", "contention"),
    ("serve-fault:error", "not-npu-path"),
    ("oot,serve-fault:drop", "not-npu-path"),
])
def test_each_cause_s_hypothesis_is_named_first_with_its_evidence_and_falsifier(
        tmp_path, profile, cause):
    result, out = investigate(tmp_path, profile)
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[1].startswith("evidence: ") and "SIMULATED" in lines[1]
    assert lines[2].startswith(f"diagnosis: {cause}: ")
    assert lines[3].startswith("  for: ") and "[" in lines[3] and str(out) in lines[3]
    assert any(line.startswith("  falsified by: ") for line in lines)
    assert lines[-1].startswith(f"diagnose: runlist-harness diagnose {out}")
    # one report holds every experiment, checks, and diagnoses the same from its file
    assert check_report_file(str(out)).problems == []
    report = load_report(out)
    section = report.sections["investigate"]
    assert section["steps"][0]["experiment"] == "three-way"
    assert section["answer"]["top"] == cause and section["answer"]["determined"]
    assert diagnose([out]).top.id == cause
    # a context refused at set-up: no runlist ran, which the first line says before all
    said = "could not start: " if cause in ("resources", "contention") else f"{cause}: "
    assert report.verdict["answer"].startswith(said)
    assert report.verdict["text"].splitlines()[1 if "SIMULATED: " in report.verdict["text"]
                                               else 0].startswith(f"investigated: {cause}: ")


def test_work_hang_is_found_in_the_work_stood_in_where_noops_complete(tmp_path):
    """The shipped case's runs carry NOOPs: work-hang cannot fail them, so investigate runs
    the case's plans again with the simulator's stand-in work stream (said so in the
    report), and a shallower depth where no runlist of the work completed."""
    result, out = investigate(tmp_path, "work-hang:8")
    report = load_report(out)
    experiments = [s["experiment"] for s in report.sections["investigate"]["steps"]]
    assert experiments[:2] == ["three-way", "the work, stood in"]
    assert "a shallower depth" in experiments
    stood_in = [p for p in report.plans if p.work == "stand-in"]
    assert stood_in and all(p.name.startswith("work ") for p in stood_in)
    assert "stand-in work stream" in result.stderr


def test_on_the_documented_stack_it_says_nothing_fails_and_what_hardware_would_decide(
        tmp_path):
    result, out = investigate(tmp_path, None, "--backend", "sim")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[2].startswith("diagnosis: nothing-fails: no trial failed")
    assert "a hardware run decides: reproduce_ert_timeout on the machine" in lines[3]
    report = load_report(out)
    steps = report.sections["investigate"]["steps"]
    # nothing failed in NOOPs: the work stood in, the stand-in server asked once, then
    # enough trials for a rare failure
    assert [s["experiment"] for s in steps] == ["three-way", "the work, stood in",
                                                 "the server", "more trials"]
    assert all(len(p.finished()) >= 10 for p in report.plans)
    server = report.sections["server"]
    assert [r["outcome"] for r in server["requests"]] == ["success"]
    # its decode was a trial of the engine's runlist (the work stood in), recorded as one
    assert server["stand_in"]["decoded_by"] == {"plan": "work monolithic", "trial": 1,
                                             "state": "COMPLETED"}
    asked = steps[2]
    assert (asked["plans"], asked["trials"]) == (["work monolithic"], 1)


def test_the_budget_of_device_time_stops_it_and_says_so(tmp_path):
    """Mainline's 60 s timer: a one-minute budget pays for the first failing trial only."""
    result, out = investigate(tmp_path, "inflight-cap:40", "--budget", "1")
    report = load_report(out)
    answer = report.sections["investigate"]["answer"]
    assert answer["stopped"] == "the budget of 1 min of device time is spent"
    assert answer["device_s"] == pytest.approx(60.0, abs=0.1)
    assert "stopped: the budget of 1 min of device time is spent" in result.stderr
    assert report.finished


def test_ctrl_c_keeps_what_ran_and_resume_goes_on(tmp_path, ctrl_c_once):
    started = ctrl_c_once(lambda spec, n: n == 4)
    out = tmp_path / "inv.yaml"
    stopped = CliRunner().invoke(main, ["investigate", "--no-isolate", "--profile",
                                        "inflight-cap:40", "--out", str(out)])
    assert stopped.exit_code == 130
    assert f"continue with `runlist-harness investigate --resume {out}`" in stopped.output
    kept = load_report(out)
    assert not kept.finished and sum(len(p.finished()) for p in kept.plans) == 3
    resumed = invoke("investigate", "--resume", str(out))
    assert resumed.exit_code == 1, resumed.output
    assert f"continuing the investigation in {out}" in resumed.stdout
    assert "diagnosis: depth-limit:" in resumed.stdout
    report = load_report(out)
    assert report.finished and report.sections["investigate"]["answer"]["top"] == \
        "depth-limit"
    assert check_report_file(str(out)).problems == []
    # the trial Ctrl-C cut was run again in its place, not added beside it
    assert all(t.status.finished for p in report.plans for t in p.trials)
    assert len(started) == sum(len(p.trials) for p in report.plans) + 1


def test_resume_raises_a_spent_budget(tmp_path):
    """An investigation its budget ended goes on with a larger one (--resume --budget), as
    one Ctrl-C stopped does; without one it is refused, untouched, naming the budget."""
    first, out = investigate(tmp_path, "inflight-cap:40", "--budget", "1")
    before = load_report(out)
    assert before.sections["investigate"]["answer"]["stopped"] and before.finished
    for more in ([], ["--budget", "1"]):
        refused = CliRunner().invoke(main, ["investigate", "--resume", str(out), *more])
        assert refused.exit_code == 2, refused.output
        assert "budget of 1 min of device time was spent; give --budget more than 1" in \
            refused.output
        assert load_report(out).finished == before.finished
    resumed = invoke("investigate", "--resume", str(out), "--budget", "30")
    assert resumed.exit_code == 1, resumed.output
    after = load_report(out)
    answer = after.sections["investigate"]["answer"]
    assert answer["top"] == "depth-limit" and "stopped" not in answer
    assert answer["device_s"] > before.sections["investigate"]["answer"]["device_s"]
    assert check_report_file(str(out)).problems == []
    # a report that finished on its answer is not continued
    again = CliRunner().invoke(main, ["investigate", "--resume", str(out), "--budget", "60"])
    assert again.exit_code == 2 and "already finished" in again.output


def test_json_prints_the_report(tmp_path):
    result, out = investigate(tmp_path, "reject-at:30", "--json")
    document = json.loads(result.stdout)
    assert document["command"] == "investigate"
    assert document["investigate"]["answer"]["top"] == "refused"


def test_the_stand_in_work_never_runs_on_a_device(tmp_path):
    """A plan of the stand-in work stream on the hardware path is refused, naming it."""
    from harness.execution.backend import HardwareBackend
    from harness.execution.runner import Runner
    from harness.model.errors import BadInput
    from harness.report.model import PlanRecord
    runner = Runner.__new__(Runner)
    runner.backend = HardwareBackend(xrt=None)          # type: ignore[arg-type]
    runner.case = runner.pack = runner.options = None    # type: ignore[assignment]
    with pytest.raises(BadInput, match="never runs on a device"):
        runner._workload(PlanRecord("work monolithic", "42", [42], work="stand-in"))


def test_a_capture_of_the_engine_s_own_commands_shows_a_hang_in_the_work(tmp_path):
    """The engine's own commands (a capture of tests/standin_engine.py, whose layer kernel's
    control code carries work) hang at their 30th run under work-hang:30, while the NOOP
    control at the same depth completes: named first, from the capture's frame, its cut and
    the control, with no stand-in."""
    import sys
    from pathlib import Path

    from machines import engine_pack

    from harness.formats.elf_writer import control_code_elf
    from harness.formats.txn import work_stream
    pack = engine_pack(tmp_path / "pack", "engine-investigate")
    (pack / "layer.elf").write_bytes(control_code_elf(work_stream(8)))
    engine = str(Path(__file__).resolve().parent / "standin_engine.py")
    recorded = CliRunner().invoke(main, ["capture", "record", "--frames", "8", "--out",
                                         str(tmp_path / "cap"), "--", sys.executable, engine,
                                         str(pack)])
    assert recorded.exit_code == 0, recorded.output
    out = tmp_path / "inv.yaml"
    result = invoke("investigate", str(tmp_path / "cap"), "--no-isolate", "--profile",
                    "staging,work-hang:30", "--out", str(out))
    assert result.stdout.splitlines()[2].startswith("diagnosis: work-hang: "), result.output
    report = load_report(out)
    assert [p.name for p in report.plans][:3] == ["captured", "cut 21+21", "depth-only"]
    assert not any(p.work for p in report.plans)
    assert report.case["kind"] == "capture"
