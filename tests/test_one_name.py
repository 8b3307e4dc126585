"""One name, one definition: what reads as bad input is bad input, and a bug is a fault."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from harness.app.cli import main
from harness.search.bisect import BisectSettings


def test_a_bug_behind_a_chunk_spec_is_a_fault_not_bad_input(monkeypatch, tmp_path):
    def broken(self, x):
        raise RuntimeError("a bug in the harness")
    monkeypatch.setattr(BisectSettings, "plan", broken)
    result = CliRunner().invoke(main, ["bisect", "minicpm5-2b-decode", "--lo", "1", "--hi",
                                       "8", "--chunk", "4", "--no-isolate", "--out",
                                       str(tmp_path / "r.yaml")])
    assert result.exit_code == 4, result.output
    assert "--chunk" not in result.output


def test_a_bad_chunk_spec_is_bad_input(tmp_path):
    result = CliRunner().invoke(main, ["bisect", "minicpm5-2b-decode", "--lo", "1", "--hi",
                                       "8", "--chunk", "even:0", "--no-isolate", "--out",
                                       str(tmp_path / "r.yaml")])
    assert result.exit_code == 2 and "--chunk 'even:0'" in result.output


def test_no_two_modules_share_a_name_and_none_is_named_as_a_package():
    """A module's file name says what it is: no two packages hold a module of one name
    (three kernel_log.py once), and no module is named as a package (probe/sources.py
    beside sources/)."""
    from pathlib import Path
    package = Path(__file__).resolve().parents[1] / "harness"
    names = [p.stem for p in package.rglob("*.py") if p.stem != "__init__"]
    packages = {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    assert sorted({n for n in names if names.count(n) > 1}) == []
    # report/model.py (a report's data model) is the one left: its package is being
    # reworked, and a rename of it waits for that
    assert sorted(set(names) & packages) == ["model"]


def test_no_two_classes_share_a_name():
    """One name, one definition: a simulator profile and a recipe's profile, a captured
    kernel and an xclbin's, a report's problems and the schema's, each have a name of
    their own (private helpers aside)."""
    import ast
    from pathlib import Path
    package = Path(__file__).resolve().parents[1] / "harness"
    seen: dict[str, list[str]] = {}
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                seen.setdefault(node.name, []).append(str(path.relative_to(package)))
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}


def test_one_trial_deserialiser_reads_a_workers_answer_and_a_reports_entry():
    from harness.model.results import RunlistOutcome, TrialResult, TrialStatus
    from harness.report import model
    trial = TrialResult(2, TrialStatus.FAILED, 12.5, 7, [
        RunlistOutcome(0, 42, [24, 18], "TIMEOUT", 8, 24, 1, "device"),
        RunlistOutcome(1, 42, [24, 18], skipped=True)], error=None)
    assert TrialResult.from_json(trial.to_json()) == trial                 # from a worker
    kept = {**model.trial_dict(trial), "plan": "monolithic"}               # a v2 entry
    assert kept["state"] == "TIMEOUT"
    assert TrialResult.from_json(kept) == trial
    assert not hasattr(model, "trial_from_dict")


def test_each_schema_version_is_named_once():
    import re
    from pathlib import Path
    package = Path(__file__).resolve().parents[1] / "harness"
    named = [m for path in package.rglob("*.py")
             for m in re.findall(r'^(\w+) = "xdna-runlist-harness/report/v\d+"$',
                                 path.read_text(), re.M)]
    assert sorted(named) == ["SCHEMA", "SCHEMA_V1", "SCHEMA_V2", "SCHEMA_V3"]


def test_one_registry_of_clean_ups_that_the_command_line_runs(monkeypatch):
    from harness.app import exits
    from harness.execution import isolation
    from harness.model import cleanups
    from harness.report import lock
    assert lock.release_all in cleanups._CLEANUPS and isolation.shutdown in cleanups._CLEANUPS
    undone: list[str] = []
    monkeypatch.setattr(cleanups, "_CLEANUPS", [])
    cleanups.at_exit(lambda: undone.append("once"))
    assert exits.run(lambda: 0, []) == 0
    assert undone == ["once"]
    assert not hasattr(exits, "_CLEANUPS")


def test_kinds_are_enums_and_reports_keep_their_words(tmp_path):
    from harness.execution.backend import BackendKind, choose_backend
    from harness.formats.yamlio import dump_yaml
    from harness.model.drivers import Detection, driver_build
    from harness.search.boundary import AnswerKind, Bisection, Classification, classify
    from harness.sources.case import CaseKind
    from harness.sources.load import load_case
    assert load_case("minicpm5-2b-decode").kind is CaseKind.CASE
    assert load_case("xrt-validate:cmd_chain_latency").kind is CaseKind.RECIPE
    assert choose_backend("sim").kind is BackendKind.SIM
    assert driver_build("oot").detection is Detection.DEVICE_TWO_CHECKS
    assert classify({"COMPLETED": 2, "TIMEOUT": 1}) is Classification.FLAKY
    bisection = Bisection(1, 4, "bad")               # as a report's log names it
    assert bisection.flaky_as is Classification.BAD
    bisection.record(4, {"TIMEOUT": 1})
    assert bisection.answer().kind is AnswerKind.EXACT
    # written as their words, read back as strings
    assert dump_yaml({"kind": CaseKind.CAPTURE, "class": Classification.SKIP}) == \
        "kind: capture\nclass: skip\n"
    out = tmp_path / "r.yaml"
    done = CliRunner().invoke(main, ["run", "xrt-validate:cmd_chain_latency", "--plan",
                                     "max:500", "--trials", "1", "--no-isolate", "--out",
                                     str(out)])
    assert done.exit_code == 0, done.output
    from harness.report.fileformat import load_report
    report = load_report(out)
    assert type(report.case["kind"]) is str and report.case["kind"] == "recipe"
    assert type(report.backend["kind"]) is str and report.backend["kind"] == "sim"


def test_a_run_the_driver_overwrote_stays_a_run_and_is_whole_once_each_word_is_set(tmp_path):
    """The simulator keeps no second class of run: an overwritten run is a pyxrt.run whose
    arguments note which are set again (XRT's set_arg rewrites their regmap words)."""
    from simkit import Rig

    import harness.sim.pyxrt as pyxrt
    rig = Rig(tmp_path, "mainline,hang-at:0")
    rl, runs = rig.runlist(1)
    with pytest.raises(RuntimeError, match="TIMEOUT"):
        rl.execute()
        rl.wait()
    r = runs[0]
    assert type(r) is pyxrt.run and r._over is not None
    values = [3, rig.instr, rig.words, *rig.bufs]
    for i, value in enumerate(values[:-1]):
        r.set_arg(i, value)
    assert r._over is not None                     # one overwritten argument not set yet
    r.set_arg(len(values) - 1, values[-1])
    assert r._over is None and type(r) is pyxrt.run and type(r._args) is list
