"""The outcomes table's `timer` column and the same trials said twice (docs/diagnosis.md,
"The outcomes table"): a row's driver timer as seconds, milliseconds, a module parameter
as set (read by the flavour row whose parameter it is: the legacy tree's timeout_in_sec in
seconds, staging's tdr_timeout_ms in milliseconds, harness.model.drivers) or only "longer
than N"; the same commands failing under one timer and completing under a longer one are
slow work, never a hang (amd/xdna-driver#1083: the maintainer's 2 s timer, the kernel
done under timeout_in_sec=20; PR #51: ABORT at the 16 s scheduler timeout, passing once it
was raised); and k/n rows of one plan whose k add up to n are one set of n trials."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.report.diagnosis import diagnose
from harness.report.diagnosis.artefacts import read_artefact
from harness.report.diagnosis.artefacts.outcomes_table import RowTimer, timer_of
from harness.report.diagnosis.vocabulary import Observed


def read(tmp_path, text: str) -> Observed:
    path = tmp_path / "t1"
    path.write_text(text, encoding="utf-8")
    found = read_artefact(path)
    assert isinstance(found, Observed), found
    return found


@pytest.mark.parametrize("text, seconds, longer", [
    ("2", 2.0, False), ("20s", 20.0, False), ("2000ms", 2.0, False), ("2.5 s", 2.5, False),
    ("timeout_in_sec=20", 20.0, False), ("tdr_timeout_ms=2000", 2.0, False),
    (">16", 16.0, True), ("> 16s", 16.0, True)])
def test_a_timer_cell_in_each_form(text, seconds, longer):
    timer = timer_of(text)
    assert isinstance(timer, RowTimer)
    assert (timer.seconds, timer.longer) == (seconds, longer)


@pytest.mark.parametrize("text, why", [("soon", "neither seconds"),
                                       ("timeout_in_min=2", "names no driver's timeout"),
                                       ("0", "out of range")])
def test_a_timer_that_cannot_be_read_says_why(text, why):
    found = timer_of(text)
    assert isinstance(found, str) and why in found


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=1, max_value=999_999), st.sampled_from(["", "s", "ms"]))
def test_every_whole_timer_reads_as_its_seconds(value, unit):
    timer = timer_of(f"{value}{unit}")
    assert isinstance(timer, RowTimer)
    assert timer.seconds == pytest.approx(value / 1000 if unit == "ms" else value)


def test_a_row_timer_makes_its_own_plan_and_reads_its_times(tmp_path):
    observed = read(tmp_path, "depth,result,seconds,timer\n1,TIMEOUT,2.1,2\n1,TIMEOUT,2.0,2\n"
                              "1,ok,,20\n")
    assert [(a.label, a.failed, a.completed) for a in observed.arms] == [
        ("1 (timer 2)", 2, 0), ("1 (timer 20)", 0, 1)]
    assert {kind for _, kind in observed.arms[0].ttf} == {"driver-timer"}


def test_a_line_with_a_bad_timer_is_named(tmp_path):
    observed = read(tmp_path, "depth,result,timer\n1,TIMEOUT,2\n1,ok,sometime\n")
    assert any("line 3 was not read: timer 'sometime'" in part for part in observed.read_as)


@pytest.mark.parametrize("rows", [
    "1 | 1 | timeout | timeout_in_sec=2  | engine\n2 | 1 | ok | timeout_in_sec=20 | engine\n",
    "1 | 1 | ABORT   | 16                | engine\n2 | 1 | ok | >16               | engine\n"])
def test_work_that_completes_under_a_longer_timer_is_slow_work(tmp_path, rows):
    path = tmp_path / "t1"
    path.write_text("attempt | depth | result | timer | workload\n" + rows, encoding="utf-8")
    diagnosis = diagnose([path])
    assert diagnosis.top.id == "slow-work" and diagnosis.top.status == "first"
    hang = diagnosis.entry("work-hang")
    assert hang.status == "contradicted" and "outlasts any timer" in hang.contradictions[0].text
    assert diagnosis.entry("nondeterministic").status != "first"
    # what is left to do is the fix itself: a single run has no cut to offer
    assert diagnosis.top.experiment.startswith("keep the driver's timer as long as it was")
    assert "sweep" not in diagnosis.top.experiment


def test_without_the_timer_the_same_two_attempts_are_a_coin_toss(tmp_path):
    """What the column adds: with no timer said, one failure and one completion of the same
    runs is all the table shows (a rate), never slow work."""
    path = tmp_path / "t1"
    path.write_text("attempt | depth | result | workload\n1 | 1 | timeout | engine\n"
                    "2 | 1 | ok | engine\n", encoding="utf-8")
    assert diagnose([path]).entry("slow-work").status != "first"


def test_a_timer_that_completes_nothing_longer_says_nothing_of_slow_work(tmp_path):
    path = tmp_path / "t1"
    path.write_text("depth | result | timer\n1 | timeout | 2\n1 | timeout | 20\n",
                    encoding="utf-8")
    diagnosis = diagnose([path])
    assert not any("longer one" in f.text for f in diagnosis.entry("slow-work").supports)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=1, max_value=60), st.data())
def test_k_of_n_rows_that_add_up_to_n_are_n_trials(tmp_path_factory, n, data):
    k = data.draw(st.integers(min_value=0, max_value=n))
    folder = tmp_path_factory.mktemp("rows")
    observed = read(folder, f"depth | result | trials\n4 | TIMEOUT | {k}/{n}\n"
                            f"4 | COMPLETED | {n - k}/{n}\n")
    (arm,) = observed.arms
    assert (arm.failed, arm.completed) == (k, n - k)
    assert sum(arm.states.values()) == n and len(arm.failing_depths) == k


def test_two_failing_states_of_the_same_trials(tmp_path):
    observed = read(tmp_path, "depth result trials\n8 TIMEOUT 3/10\n8 ERROR 7/10\n")
    (arm,) = observed.arms
    assert (arm.failed, arm.completed) == (10, 0)
    assert dict(arm.states) == {"TIMEOUT": 3, "ERROR": 7}
