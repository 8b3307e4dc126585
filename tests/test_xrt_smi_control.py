"""On hardware, once the case failed, XRT's own `xrt-smi validate --run runlist-latency`
runs once as a control: bounded in time, named in the verdict, skipped with
`--no-xrt-smi-validate`. The hardware path runs on a fabricated Strix Halo with the
simulator standing in for pyxrt, and a fake `xrt-smi` on the tree's PATH that logs how it
was called."""

from __future__ import annotations

import tarfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from machines import on_the_hardware_path, stand_in_pack, strix_halo

from harness.app.cli import main
from harness.report.check import check_report_file
from harness.report.fileformat import load_report

FAKE = """#!/bin/sh
echo "$*" >> "{log}"
case "$1" in
  examine) echo "Device(s) Present"; exit 0 ;;
  validate) {validate} ;;
esac
"""
PASSED = ('sleep 0; echo "Test 1 [0000:c7:00.1]     : runlist-latency"; '
          'echo "    Test Status           : [PASSED]"; exit 0')
FAILED = ('echo "    Error(s)              : runlist failed execution"; '
          'echo "    Test Status           : [FAILED]"; exit 1')
HANGS = "exec sleep 30"


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    tree = strix_halo(tmp_path)
    pack = stand_in_pack(tmp_path / "pack", "Smi")
    on_the_hardware_path(monkeypatch, tree)
    log = tmp_path / "xrt-smi.log"

    def xrt_smi(validate: str) -> Path:
        tree.write("/usr/bin/xrt-smi", FAKE.format(log=log, validate=validate), 0o755)
        return log
    return tree, pack, xrt_smi


def run(pack: Path, out: Path, *extra: str):
    return CliRunner().invoke(main, ["run", "minicpm5-2b-decode", "--backend", "xrt",
                                     "--xclbins", str(pack), "--trials", "1", "--no-isolate",
                                     "--out", str(out), *extra])


def validate_calls(log: Path) -> list[str]:
    return [x for x in log.read_text().splitlines() if x.startswith("validate")] \
        if log.exists() else []


def test_a_failed_case_asks_xrt_s_own_deep_runlist_once_and_names_it(machine, tmp_path):
    tree, pack, xrt_smi = machine
    log = xrt_smi(PASSED)
    out = tmp_path / "r.yaml"
    result = run(pack, out, "--plan", "42", "--plan", "21+21")
    assert result.exit_code == 1, result.output
    assert validate_calls(log) == ["validate --device 0000:c7:00.1 --run runlist-latency"]
    report = load_report(out)
    control = report.sections["xrt_smi_control"]
    assert control["result"] == "PASSED" and control["exit_status"] == 0
    assert control["timeout_s"] == 120.0
    said = ("XRT's own control `xrt-smi validate --device 0000:c7:00.1 --run runlist-latency` "
            "(one runlist of 1000 NOP runs): PASSED -> XRT's own deep runlist completes on "
            "this machine")
    assert said in report.verdict["text"] and said in result.output
    assert check_report_file(str(out)).valid                    # the verdict checks
    md = CliRunner().invoke(main, ["report", "render", str(out)]).output
    assert "<summary>xrt-smi validate --device 0000:c7:00.1 --run runlist-latency (the " \
           "control: PASSED, exit 0)</summary>" in md
    bundled = CliRunner().invoke(main, ["report", "bundle", str(out)])
    assert bundled.exit_code == 0, bundled.output
    with tarfile.open(out.with_name("r.bundle.tar.gz")) as tar:
        text = tar.extractfile("r.bundle/xrt-smi.txt").read().decode()
    assert "== xrt-smi validate --device 0000:c7:00.1 --run runlist-latency (the control: " \
           "PASSED) (exit 0)" in text


def test_its_failure_is_named_too(machine, tmp_path):
    tree, pack, xrt_smi = machine
    xrt_smi(FAILED)
    out = tmp_path / "r.yaml"
    run(pack, out, "--plan", "42")
    assert "FAILED -> XRT's own deep runlist fails here too" in load_report(out).verdict["text"]


def test_no_xrt_smi_validate_skips_it_and_a_passing_case_never_asks(machine, tmp_path):
    tree, pack, xrt_smi = machine
    log = xrt_smi(PASSED)
    skipped = run(pack, tmp_path / "a.yaml", "--plan", "42", "--no-xrt-smi-validate")
    assert skipped.exit_code == 1, skipped.output
    report = load_report(tmp_path / "a.yaml")
    assert "xrt_smi_control" not in report.sections
    assert "XRT's own control" not in report.verdict["text"]
    assert report.settings["xrt_smi_control"] is False
    passing = run(pack, tmp_path / "b.yaml", "--plan", "21+21")
    assert passing.exit_code == 0, passing.output
    assert "xrt_smi_control" not in load_report(tmp_path / "b.yaml").sections
    assert validate_calls(log) == []


def test_it_is_bounded_in_time(machine, tmp_path, monkeypatch):
    from harness.probe import xrt_smi as probe_smi
    tree, pack, xrt_smi = machine
    xrt_smi(HANGS)
    monkeypatch.setattr(probe_smi, "RUNLIST_LATENCY_TIMEOUT_S", 0.5)
    out = tmp_path / "r.yaml"
    started = time.monotonic()
    run(pack, out, "--plan", "42")
    assert time.monotonic() - started < 20
    control = load_report(out).sections["xrt_smi_control"]
    assert control["result"] == "stopped" and control["note"] == "stopped after 0.5 s"
    assert "1000 NOP runs): stopped after 0.5 s; so it says nothing either way" in \
        load_report(out).verdict["text"]


# what XRT 2.26.0 (49612fa) prints when its validate suite has no runlist-latency for the
# device (an install without the xrt_smi_*.a archive): a usage error, exit 1
REFUSED = ('echo "USAGE: xrt-smi validate [-h] [-d arg] [-r arg]"; '
           "echo \"ERROR: Invalid test name: 'runlist-latency': Invalid argument\"; exit 1")


def test_an_xrt_smi_that_never_ran_the_test_answers_nothing_about_it(machine, tmp_path):
    """Only a test status says what XRT's deep runlist did; without one (the test is not in
    this XRT's suite, the device did not open) the control gave no answer, and the verdict
    claims nothing from it."""
    tree, pack, xrt_smi = machine
    xrt_smi(REFUSED)
    out = tmp_path / "r.yaml"
    run(pack, out, "--plan", "42")
    control = load_report(out).sections["xrt_smi_control"]
    assert control["result"] == "no answer" and control["exit_status"] == 1
    assert control["note"] == ("xrt-smi did not run the test (no test status in its output, "
                               "exit status 1): ERROR: Invalid test name: 'runlist-latency': "
                               "Invalid argument")
    verdict = load_report(out).verdict["text"]
    assert "fails here too" not in verdict
    assert "runlist-latency` (one runlist of 1000 NOP runs): no answer: xrt-smi did not run " \
           "the test (no test status in its output, exit status 1): ERROR: Invalid test " \
           "name: 'runlist-latency': Invalid argument; so it says nothing either way" in verdict
    assert check_report_file(str(out)).valid


def test_the_simulated_backend_never_asks(tmp_path):
    out = tmp_path / "r.yaml"
    result = CliRunner().invoke(main, ["run", "minicpm5-2b-decode", "--plan", "42",
                                       "--trials", "1", "--no-isolate", "--profile",
                                       "hang-at:30", "--out", str(out)])
    assert result.exit_code == 1
    assert "xrt_smi_control" not in load_report(out).sections
