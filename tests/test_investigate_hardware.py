"""`investigate` on the hardware path (issue 49.5): nothing can be injected, so it plans
from what can run on the machine, prints that plan with each step's device time against
the machine's timer before it starts (`--plan-only`: and stops there), refuses a simulator
hypothesis by name, and asks before a step that changes the machine.

The machine is fabricated (tests/machines.py: a Strix Halo with the staging driver, its
tdr_timeout_ms set to 500); pyxrt is tests/bare_pyxrt.py, built on nothing of the
harness's, or the simulator standing in where a failure must be played. Both say they
stand in, so nothing here is labelled hardware evidence."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from diagkit import completed_trial, failed_trial, hardware_report, of, plan
from machines import on_the_hardware_path, stand_in_pack, strix_halo

import harness.app.cli.investigate_cmd as investigate_cmd
from harness.app.cli import main
from harness.report.check import check_report_file
from harness.report.fileformat import load_report
from harness.search.machine_change import longer_timeout


@pytest.fixture
def machine(tmp_path):
    """A process of its own for each run: in it, the simulator was never imported."""
    tree = strix_halo(tmp_path, identity=False)
    pack = stand_in_pack(tmp_path / "pack", "Investigate")
    env = dict(os.environ, HARNESS_PYXRT="bare_pyxrt", HARNESS_ROOT=str(tree.root),
               PYTHONPATH=os.pathsep.join([str(Path(__file__).parent),
                                           os.environ.get("PYTHONPATH", "")]))

    def harness(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "harness", "investigate", *args,
                               "--xclbins", str(pack)], env=env, capture_output=True,
                              text=True, timeout=120, cwd=tmp_path)
    return harness


def test_plan_only_prints_real_experiments_against_the_machine_s_timer(machine, tmp_path):
    result = machine("--plan-only", "--longer-timeout", "20", "--kernel", "7.1.0")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "plan (the hardware path: real experiments only, nothing injected" in out
    # the probed 500 ms, not the flavour's 2 s default
    assert "staging on Linux 7.0.0: a trial that hangs costs up to 0.5 s" in out
    assert "three-way: 42 in one runlist, cut 21+21; first, 1 trial each; up to 2 trials, " \
        "at most 1.0 s of device time if each hangs" in out
    assert "the engine's own commands: not run by investigate: runlist-harness capture " \
        "record" in out
    # the change of the machine it allows is marked, with its commands and its own timer
    timer = next(line for line in out.splitlines() if "a longer driver timer" in line)
    assert "[changes the machine: the staging driver's tdr_timeout_ms from 500 to 20000" in \
        timer and "asked first]" in timer
    assert "modprobe amdxdna tdr_timeout_ms=20000 (undo: modprobe -r amdxdna && modprobe " \
        "amdxdna tdr_timeout_ms=500)" in timer
    assert "at most 80.0 s of device time if each hangs" in timer
    assert "kernel 7.1.0: not run by this investigation (a reboot brings it)" in out
    # nothing the simulator plays is offered
    assert "stood in" not in out and "stand-in for flm serve" not in out
    assert not (tmp_path / "reports").exists()          # the plan leaves no report


def test_a_simulator_hypothesis_on_the_hardware_path_is_refused_by_name(machine, tmp_path):
    result = machine("--plan-only", "--profile", "work-hang:8")
    assert result.returncode == 2
    assert "--profile work-hang:8: work-hang:8 is a simulator hypothesis, and this is the " \
        "hardware path, where nothing can be injected" in result.stderr
    assert "add --backend sim" in result.stderr
    assert not (tmp_path / "reports").exists()
    # asked for by name, the simulated stack rehearses it
    rehearsed = machine("--plan-only", "--backend", "sim", "--profile", "work-hang:8")
    assert rehearsed.returncode == 0, rehearsed.stderr


def _refused_on_the_hardware_path(tmp_path, monkeypatch):
    tree = strix_halo(tmp_path, identity=False)
    pack = stand_in_pack(tmp_path / "pack", "Firmware")
    on_the_hardware_path(monkeypatch, tree, profile="staging,reject-at:30")
    return tree, pack


@pytest.mark.parametrize("answer", [False, True])
def test_a_step_that_changes_the_machine_is_asked_first(tmp_path, monkeypatch, answer):
    """Every trial is refused at run 30 (the simulator standing in plays it); the user
    named firmware 1.1.2.70. Before the step the user is asked, with the commands; with a
    yes the harness reads the firmware the machine now runs before running the plans that
    failed again under it, and the verdict says what they did."""
    tree, pack = _refused_on_the_hardware_path(tmp_path, monkeypatch)
    out = tmp_path / "inv.yaml"
    asked = []

    def user(question: str) -> bool:
        asked.append(question)
        # nothing has run under the change yet
        assert not [p for p in load_report(out).plans if p.changed]
        if answer:             # the user installs it and reloads the driver
            (tree.root / "sys/class/accel/accel0/device/fw_version").write_text("1.1.2.70")
        return answer
    monkeypatch.setattr(investigate_cmd, "ask_the_user", user)
    result = CliRunner().invoke(main, ["investigate", "--no-isolate", "--xclbins", str(pack),
                                       "--firmware", "1.1.2.70", "--out", str(out)])
    assert result.exit_code == 1, result.output
    # the plan first, with the step it asks for, then the experiments
    err = result.stderr
    assert err.index("plan (the hardware path: real experiments only") < \
        err.index("three-way: the case's one runlist")
    assert "firmware 1.1.2.70 [changes the machine: the NPU firmware from 1.1.2.65" in err
    assert len(asked) == 1
    assert asked[0].startswith("This step changes the machine: the NPU firmware from "
                               "1.1.2.65 to 1.1.2.70")
    assert "modprobe -r amdxdna && modprobe amdxdna" in asked[0]
    report = load_report(out)
    log = report.sections["investigate"]["machine"]
    changed = [p for p in report.plans if p.changed]
    if answer:
        assert log[0]["taken"] is True and log[0]["verified"] is True
        assert [p.name for p in changed] == ["monolithic @ firmware 1.1.2.70"]
        assert all(len(p.finished()) == 2 for p in changed)
        assert ("with firmware 1.1.2.70: monolithic @ firmware 1.1.2.70 42: ERROR 2/2 "
                "(before the change: ERROR") in report.verdict["text"]
    else:
        assert log[0]["taken"] is False and not changed
        assert "not tried: firmware 1.1.2.70: the user did not agree" in \
            report.verdict["text"]
    assert check_report_file(str(out)).problems == []


def test_no_answer_is_no(tmp_path, monkeypatch):
    """No terminal, no input: the step is not made."""
    _, pack = _refused_on_the_hardware_path(tmp_path, monkeypatch)
    out = tmp_path / "inv.yaml"
    CliRunner().invoke(main, ["investigate", "--no-isolate", "--xclbins", str(pack),
                              "--firmware", "1.1.2.70", "--out", str(out)], input="")
    assert load_report(out).sections["investigate"]["machine"][0]["taken"] is False


def test_the_machine_s_change_must_show_before_its_step_runs(tmp_path, monkeypatch):
    """A yes the machine does not bear out (fw_version still reads the old firmware)."""
    _, pack = _refused_on_the_hardware_path(tmp_path, monkeypatch)
    monkeypatch.setattr(investigate_cmd, "ask_the_user", lambda question: True)
    out = tmp_path / "inv.yaml"
    CliRunner().invoke(main, ["investigate", "--no-isolate", "--xclbins", str(pack),
                              "--firmware", "1.1.2.70", "--out", str(out)])
    report = load_report(out)
    entry = report.sections["investigate"]["machine"][0]
    assert entry["taken"] is False and "reads 1.1.2.65" in entry["why_not"]
    assert not [p for p in report.plans if p.changed]


def test_the_driver_timeout_each_flavour_takes_and_how():
    """STACK.md 4: mainline's drm_sched 60 s is no parameter; staging's tdr_timeout_ms is
    mode 0400 (a module reload sets it); the out-of-tree timeout_in_sec is 0644 (written in
    place, as amd/xdna-driver#1083 set it to 20)."""
    assert "is not a module parameter" in str(longer_timeout({"flavour": "mainline"}, 20))
    staging = longer_timeout({"flavour": "staging", "timeout_setting": "2000"}, 20)
    assert not isinstance(staging, str)
    assert staging.commands == ("modprobe -r amdxdna", "modprobe amdxdna tdr_timeout_ms=20000")
    assert staging.timer_s == 20.0
    oot = longer_timeout({"flavour": "oot"}, 20)
    assert not isinstance(oot, str)
    assert oot.commands == ("echo 20 > /sys/module/amdxdna_legacy/parameters/timeout_in_sec",)
    # two silent checks after one, and a check more per other connected idle context
    assert oot.label == "timeout_in_sec=20" and oot.timer_s == 20.0 * (3 + 15)


def _timer_report(tmp_path, name: str, then: list) -> Path:
    """The staging driver's 2 s timer: the one runlist fails at it every trial, its cut
    completes; then the same runlist with tdr_timeout_ms 20000."""
    plans = [plan("monolithic", "42", [42], [
        failed_trial(i, 42, [24, 18], "TIMEOUT", wall_ms=2010.0) for i in range(3)]),
        plan("halves", "21+21", [21, 21], [completed_trial(i, [21, 21], ms_per_run=0.05)
                                            for i in range(3)])]
    again = plan("monolithic @ tdr_timeout_ms=20000", "42", [42], then)
    again["changed"] = {"kind": "timer", "label": "tdr_timeout_ms=20000", "of": "monolithic",
                        "timer_s": 20.0, "verified": None}
    return hardware_report(tmp_path, name, [*plans, again], flavour="staging",
                           kernel="6.18.0-1-generic", nop_only=False, case_kind="capture")


def test_a_longer_timer_tells_work_that_ran_long_from_a_hang(tmp_path):
    completes = of(_timer_report(tmp_path, "long", [
        completed_trial(i, [42], ms_per_run=150.0) for i in range(2)]))
    slow = completes.entry("slow-work")
    assert any("monolithic 42 failed at the timer every time; with the driver's timer at "
               "20 s (tdr_timeout_ms=20000) the same commands complete 2 of 2 trials"
               in f.text for f in slow.supports)
    assert completes.entry("work-hang").status == "contradicted"
    hangs = of(_timer_report(tmp_path, "hang", [
        failed_trial(i, 42, [24, 18], "TIMEOUT", wall_ms=20010.0) for i in range(2)]))
    assert any("still fail every trial" in f.text for f in hangs.entry("slow-work").against)
    assert any("still fail every trial" in f.text
               for f in hangs.entry("work-hang").supports)
