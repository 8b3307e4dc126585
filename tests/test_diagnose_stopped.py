"""A run that stopped before its trials answered is not evidence that nothing fails: the
diagnosis of it is `undetermined`, with the command that finishes the run (issue 54.2)."""

from __future__ import annotations

from click.testing import CliRunner
from diagkit import invoke, of, simulated

from harness.app.cli import main


def test_ctrl_c_in_the_first_trial_is_undetermined_with_the_resume_command(
        tmp_path, ctrl_c_once):
    ctrl_c_once(lambda spec, n: n == 1)
    out = tmp_path / "r.yaml"
    stopped = CliRunner().invoke(main, ["reproduce", "--no-isolate", "--backend", "sim",
                                        "--out", str(out)])
    assert stopped.exit_code == 130
    result = invoke("diagnose", str(out))
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[1].startswith("diagnosis: undetermined: too few trials answered"), lines
    assert "(0 answered in 1 report" in lines[1]
    assert "the run stopped before its trials were done" in lines[1]
    assert lines[2] == f"  next: runlist-harness run --resume {out}"
    assert "nothing-fails" not in lines[1]


def test_an_investigation_stopped_early_names_its_own_resume(tmp_path, ctrl_c_once):
    ctrl_c_once(lambda spec, n: n == 2)
    out = tmp_path / "inv.yaml"
    CliRunner().invoke(main, ["investigate", "--no-isolate", "--backend", "sim", "--out",
                              str(out)])
    top = of(out).top
    assert top.id == "undetermined"
    assert top.experiment == f"runlist-harness investigate --resume {out}"


def test_one_finished_trial_is_too_few_to_say_nothing_fails(tmp_path):
    report = simulated(tmp_path, "one", "minicpm5-2b-decode", "--plan", "monolithic",
                       "--trials", "1", command="run")
    top = of(report).top
    assert top.id == "undetermined"
    assert "1 answered in 1 report" in top.why
    assert top.experiment.startswith("runlist-harness run minicpm5-2b-decode --trials 3")


def test_enough_answered_trials_of_a_stopped_run_say_nothing_fails_and_how_to_finish(
        tmp_path, ctrl_c_once):
    ctrl_c_once(lambda spec, n: n == 5)
    out = tmp_path / "r.yaml"
    CliRunner().invoke(main, ["reproduce", "--no-isolate", "--backend", "sim", "--out",
                              str(out)])
    top = of(out).top
    assert top.id == "nothing-fails" and "(4 answered in 1 report)" in top.why
    assert top.experiment.endswith(f"the run stopped before its trials were done: "
                                   f"runlist-harness run --resume {out}")
