"""Report files: versioned loading, atomic incremental writes, verdicts."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.formats.yamlio import write_atomic
from harness.model.errors import ReportError
from harness.model.results import RunlistOutcome, TrialResult
from harness.report.fileformat import load_report
from harness.report.journal import ReportFile
from harness.report.model import PlanRecord, Report
from harness.report.verdict import judge


def minimal_report() -> Report:
    return Report(command="run", harness={"version": "x"},
                  backend={"kind": "sim", "simulated": True, "profile": "staging"},
                  case={"name": "c"}, settings={"trials": 1})


def test_round_trip(tmp_path):
    report = minimal_report()
    trial = TrialResult(0, "failed", 1.5, 7, [RunlistOutcome(0, 42, [24, 18], "TIMEOUT", 8,
                                                             0, 0, "device")])
    report.plans = [PlanRecord("monolithic", "42", [42], "TIMEOUT", [trial])]
    handle = ReportFile.create(report, out=str(tmp_path / "r.yaml"))
    loaded = load_report(handle.path)
    assert loaded.plans[0].trials[0].runlists[0].chains == [24, 18]
    assert loaded.plans[0].trials[0].state == "TIMEOUT"
    assert handle.path.read_text().startswith("# xdna-runlist-harness report: SIMULATED")


def test_unknown_schema_is_refused_by_name(tmp_path):
    path = tmp_path / "future.yaml"
    path.write_text("schema: xdna-runlist-harness/report/v9\n")
    with pytest.raises(ReportError, match="unknown report schema 'xdna-runlist-harness/"
                                          "report/v9'"):
        load_report(path)


@pytest.mark.parametrize("text, words", [
    ("[1, 2]", "not a report"),
    ("schema: xdna-runlist-harness/report/v1\n", "its header has no command, harness"),
    ("key: [unclosed\n", "not valid YAML"),
])
def test_broken_reports(tmp_path, text, words):
    path = tmp_path / "broken.yaml"
    path.write_text(text)
    with pytest.raises(ReportError, match=words):
        load_report(path)


def test_extra_sections_survive(tmp_path):
    report = minimal_report()
    report.sections["sweep"] = {"depths": [1, 2]}
    handle = ReportFile.create(report, out=str(tmp_path / "r.yaml"))
    assert load_report(handle.path).sections["sweep"] == {"depths": [1, 2]}


def test_atomic_write_leaves_old_or_new_never_half(tmp_path, monkeypatch):
    path = tmp_path / "r.yaml"
    write_atomic(path, "old\n")

    def broken_fsync(fd):
        raise OSError("disk gone")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError):
        write_atomic(path, "new\n")
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["r.yaml"]      # no temp file left


@pytest.mark.parametrize("sync_every_s, synced_before_finish", [(0.0, True), (0.5, False)])
def test_a_batched_report_reaches_the_disk_at_its_end_a_hardware_one_at_each_write(
        tmp_path, monkeypatch, sync_every_s, synced_before_finish):
    """A hardware run's report is on disk after every write (a hang may take the machine);
    a simulated run's (nothing simulated can) syncs its header rewrites, like its entries,
    in batches, and is on disk once it finishes: atomic (a temp file renamed) either way."""
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real(fd))
    report = minimal_report()
    handle = ReportFile.create(report, out=str(tmp_path / "r.yaml"), sync_every_s=sync_every_s)
    handle.note("one")           # (a batch's first entry is synced at once)
    synced.clear()
    handle.rewrite()
    assert bool(synced) is synced_before_finish
    synced.clear()
    handle.finish()
    assert synced                                    # the last write is on disk either way
    handle.close()
    assert load_report(handle.path).finished
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == ["r.yaml"]


def test_write_atomic_without_overwrite_refuses(tmp_path):
    path = tmp_path / "r.yaml"
    write_atomic(path, "mine\n")
    with pytest.raises(FileExistsError):
        write_atomic(path, "theirs\n", overwrite=False)
    assert path.read_text() == "mine\n"


def plan(name, chunks, expect, states):
    trials = []
    for i, state in enumerate(states):
        status = {"COMPLETED": "completed", "deadline": "deadline"}.get(state, "failed")
        trials.append(TrialResult(i, status, runlists=[RunlistOutcome(0, 1, [1], state
                                                                      if status != "deadline"
                                                                      else None)]))
    return PlanRecord(name, "+".join(map(str, chunks)), chunks, expect, trials)


SIM = {"kind": "sim", "simulated": True, "profile": "staging", "documented": True}
HW = {"kind": "xrt", "simulated": False}


@pytest.mark.parametrize("plans, backend, reproduced, words", [
    ([plan("monolithic", [42], "TIMEOUT", ["TIMEOUT"] * 3),
      plan("halves", [21, 21], "COMPLETED", ["COMPLETED"] * 3)], HW, True,
     "reproduced: monolithic 42: TIMEOUT 3/3; halves 21+21: COMPLETED 3/3 -> the cut "
     "avoids the failure"),
    ([plan("monolithic", [42], "TIMEOUT", ["TIMEOUT"] * 3),
      plan("halves", [21, 21], "COMPLETED", ["TIMEOUT", "COMPLETED", "COMPLETED"])], HW,
     True, "the cut does not avoid the failure"),
    ([plan("monolithic", [42], "TIMEOUT", ["ABORT"] * 2)], HW, False,
     "a different failure (monolithic 42 expected TIMEOUT, saw ABORT): monolithic 42: "
     "ABORT 2/2"),
    ([plan("monolithic", [42], "TIMEOUT", ["TIMEOUT", "ABORT"])], HW, True,
     "reproduced: monolithic 42: ABORT 1/2, TIMEOUT 1/2 -> no cut was run "
     "(monolithic 42 expected TIMEOUT, saw ABORT)"),
    ([plan("a", [36], None, ["deadline"] * 3), plan("b", [21, 15], None, ["deadline"] * 3)],
     HW, None, "inconclusive: no trial got an answer from the stack (each hit its deadline or "
               "crashed): a 36: deadline 3/3; b 21+15: deadline 3/3"),
    ([plan("monolithic", [42], "TIMEOUT", ["COMPLETED"] * 3)], SIM, False,
     "the documented limits do not produce the failure; a hardware run is the test"),
    ([plan("monolithic", [42], "TIMEOUT", ["COMPLETED"] * 3)], HW, False,
     "the case's runlists complete on this machine with the commands it ran"),
    ([plan("monolithic", [42], "TIMEOUT", ["deadline"] * 2)], HW, None, "inconclusive"),
    ([plan("monolithic", [36], "COMPLETED", ["COMPLETED"] * 3)], HW, None,
     "all plans completed"),
    ([plan("monolithic", [36], "COMPLETED", ["TIMEOUT"] * 3)], HW, None,
     "expected to complete: monolithic 36"),
])
def test_verdicts(plans, backend, reproduced, words):
    verdict = judge(plans, backend)
    assert verdict.reproduced is reproduced
    assert words in verdict.text
    assert ("SIMULATED" in verdict.text) == backend["simulated"]


@pytest.mark.parametrize("plans, backend, reproduced, words", [
    # every cut must finish every trial: one of two with a deadline is not "avoids"
    ([plan("monolithic", [42], "TIMEOUT", ["TIMEOUT"] * 2),
      plan("halves", [21, 21], "COMPLETED", ["COMPLETED"] * 2),
      plan("thirds", [14, 14, 14], "COMPLETED", ["COMPLETED", "deadline"])], HW, True,
     "-> the cut did not finish every trial"),
    # one expected-fail plan saw its state, the other a different one: reproduced, noted
    ([plan("monolithic", [42], "TIMEOUT", ["TIMEOUT"] * 2),
      plan("deep", [42], "TIMEOUT", ["ABORT"] * 2)], HW, True,
     "(deep 42 expected TIMEOUT, saw ABORT)"),
    # neither saw its expected state: a different failure, naming each
    ([plan("monolithic", [42], "TIMEOUT", ["ABORT"] * 2),
      plan("deep", [42], "TIMEOUT", ["ERROR"] * 2)], HW, False,
     "a different failure (monolithic 42 expected TIMEOUT, saw ABORT; deep 42 expected "
     "TIMEOUT, saw ERROR)"),
    ([plan("monolithic", [42], "TIMEOUT", ["COMPLETED"] * 2)],
     {**SIM, "documented": False, "profile": "inflight-cap:60"}, False,
     "profile inflight-cap:60 does not produce it"),
])
def test_verdicts_of_several_expected_failures(plans, backend, reproduced, words):
    verdict = judge(plans, backend)
    assert verdict.reproduced is reproduced and words in verdict.text, verdict.text


# -- the answer first ------------------------------------------------------------------------

@pytest.mark.parametrize("plans, backend, answer", [
    ([plan("monolithic", [42], "TIMEOUT", ["TIMEOUT"] * 3),
      plan("halves", [21, 21], "COMPLETED", ["COMPLETED"] * 3)], SIM,
     "42 in one runlist: TIMEOUT 3/3; cut 21+21: COMPLETED 3/3 -> the cut avoids it "
     "[SIMULATED]"),
    ([plan("monolithic", [42], "TIMEOUT", ["TIMEOUT"] * 3),
      plan("halves", [21, 21], "COMPLETED", ["TIMEOUT"] * 3)], HW,
     "42 in one runlist: TIMEOUT 3/3; cut 21+21: TIMEOUT 3/3 -> the cut does not avoid it"),
    ([plan("1000", [1000], None, ["TIMEOUT"] * 3), plan("500+500", [500, 500], None,
                                                        ["COMPLETED"] * 3)], HW,
     "1000 in one runlist: TIMEOUT 3/3; cut 500+500: COMPLETED 3/3 -> the cut avoids it"),
    ([plan("monolithic", [42], "TIMEOUT", ["COMPLETED"] * 3)], HW,
     "42 in one runlist: COMPLETED 3/3 -> not reproduced"),
    # two plans of one shape are told apart by their names
    ([plan("frame_1 42", [42], None, ["COMPLETED"]), plan("frame_2 42", [42], None,
                                                           ["COMPLETED"])], HW,
     "frame_1 42: COMPLETED 1/1; frame_2 42: COMPLETED 1/1 -> all completed"),
])
def test_the_answer_comes_first_in_one_word_for_the_cut(plans, backend, answer):
    verdict = judge(plans, backend)
    assert verdict.answer == answer
    assert verdict.lines()[0] == answer and verdict.reasons
    for word in ("chunking", "chunked", "splitting", "halves 21"):
        assert word not in answer


STATES = st.sampled_from(["COMPLETED", "TIMEOUT", "ABORT", "ERROR", "deadline", "crash"])
CHUNKS = st.lists(st.integers(1, 100_000), min_size=1, max_size=40)


@given(st.lists(st.tuples(CHUNKS, st.lists(STATES, min_size=1, max_size=50)), min_size=1,
                max_size=8),
       st.sampled_from([SIM, HW, {**SIM, "emulated": {"xrt_version": "2.26.0"}}]),
       st.booleans())
def test_the_answer_always_fits_under_100_characters_with_its_label(shapes, backend, expect):
    plans = [plan(f"p{i}", chunks, ("TIMEOUT" if expect and i == 0 else None), states)
             for i, (chunks, states) in enumerate(shapes)]
    answer = judge(plans, backend).answer
    assert len("verdict: " + answer) < 100, answer
    assert answer.endswith(("[SIMULATED]", "[EMULATED]")) == bool(backend.get("simulated"))
