"""The answer claims only what the files showed: what a table's runs carried where it does
not say, what a program's own report of a failure tells of its contexts, why no cause leads
when nothing speaks for any, and that plain artefacts which show no failure and no run are
no trials (docs/diagnosis.md: "claims nothing it did not observe")."""

from __future__ import annotations

import sys

from click.testing import CliRunner
from test_stack_causes import diagnosis_of

from harness.app.cli import main
from harness.report.diagnosis import diagnose

TABLE = ("machine | depth | result  | model\nhalo-a  | 42    | TIMEOUT | minicpm5:2b\n"
         "halo-c  | 36    | ok      | qwen3:4b\n")
EXAMINE = ("System Configuration\n  Release              : 6.14.0-15-generic\n  Model       "
           "         : Laptop 13\n\nXRT\n  Version              : 2.19.0\n  NPU Firmware "
           "Version : 1.0.0.63\n\nDevice(s) Present\n|[0000:c2:00.1]  |RyzenAI-npu4  |\n")


def test_a_table_that_does_not_say_what_its_runs_carried_is_not_said_to_hold_noops(tmp_path):
    diagnosis = diagnosis_of(tmp_path, TABLE)
    for cause in ("depth-limit", "work-hang"):
        untested = diagnosis.entry(cause).untested or ""
        assert "no plan is known to have run" in untested, cause
        assert "every run carried NOOPs" not in untested, cause


def test_a_failure_a_table_or_a_program_reports_is_not_said_to_have_shown_every_context(
        tmp_path):
    against = diagnosis_of(tmp_path, TABLE).entry("resources").against
    assert against and "every context was made" not in against[0].text
    assert "the device gave it a state (TIMEOUT, as the table's row says)" in against[0].text
    program = tmp_path / "fails.py"
    program.write_text("import sys\nprint('[FLM]  Loading model: /m/MiniCPM5-2B-NPU2')\n"
                       "print('[ERROR]  runlist failed execution (ERT_CMD_STATE_TIMEOUT)', "
                       "file=sys.stderr)\nsys.exit(1)\n")
    out = tmp_path / "run"
    CliRunner().invoke(main, ["capture", "record", "--after", "0", "--no-capture", "--out",
                              str(out), "--", sys.executable, str(program)])
    against = diagnose([out / "report.yaml"]).entry("resources").against
    assert against and "every context was made" not in against[0].text
    assert "as the program's error names it" in against[0].text


def test_where_nothing_speaks_for_any_cause_the_answer_says_that(tmp_path):
    """Xilinx/mlir-aie#2501's what(): a failure no row reads."""
    diagnosis = diagnosis_of(tmp_path, "terminate called after throwing an instance of "
                                       "'std::runtime_error'\n  what():  qds_device::wait() "
                                       "unexpected command state\n")
    assert diagnosis.top.why == ("something failed, but nothing in these files speaks for "
                                 "any cause of the table")


def test_plain_artefacts_that_show_no_failure_and_no_run_are_not_trials(tmp_path):
    for texts, said in (((EXAMINE, EXAMINE.replace("Laptop 13", "Box")),
                         "none of these 2 files shows a failure or a run"),
                        (("[Linux]  Kernel: 7.1.3\n[Linux]  NPU FW Version: 1.1.2.64\n",),
                         "this file shows neither a failure nor a run")):
        top = diagnosis_of(tmp_path, *texts).top
        assert top.id == "undetermined" and top.why.startswith(said), top.why
        assert "answered in" not in top.why and "--trials" not in top.experiment
        assert "capture record --no-capture" in top.experiment
