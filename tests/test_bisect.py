"""The bisection logic: exact answers, the probe budget, skips, flaky depths, the log."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.search.boundary import BAD, FLAKY, GOOD, SKIP, Bisection, classify

OK, TO, DL = {"COMPLETED": 1}, {"TIMEOUT": 1}, {"deadline": 1}


def drive(bisection: Bisection, outcome) -> int:
    probes = 0
    while (x := bisection.next_x()) is not None:
        probes += 1
        bisection.record(x, outcome(x), confirmation=bisection.confirming)
        assert probes < 1000
    return probes


def test_classify():
    assert classify({"COMPLETED": 5}) == GOOD
    assert classify({"TIMEOUT": 3, "ABORT": 2}) == BAD
    assert classify({"COMPLETED": 4, "TIMEOUT": 1}) == FLAKY
    assert classify({"deadline": 2, "crashed": 1}) == SKIP
    assert classify({"COMPLETED": 2, "deadline": 1}) == GOOD


@settings(max_examples=400, deadline=None)
@given(lo=st.integers(1, 50), width=st.integers(1, 300), data=st.data())
def test_deterministic_boundary_found_within_log2_plus_2_probes(lo, width, data):
    hi = lo + width
    first = data.draw(st.integers(lo, hi + 1))         # hi + 1: nothing fails
    bisection = Bisection(lo, hi)
    probes = drive(bisection, lambda x: TO if x >= first else OK)
    assert probes <= math.ceil(math.log2(hi - lo)) + 2 if hi - lo > 1 else probes <= 2
    answer = bisection.answer()
    if first > hi:
        assert answer.kind == "none"
    elif first <= lo:
        assert answer.kind == "at-or-below" and answer.high == lo
    else:
        assert answer.kind == "exact" and answer.first == first
    assert set(bisection.order) <= set(range(lo, hi + 1))


def test_1_to_128_takes_nine_probes():
    bisection = Bisection(1, 128)
    assert drive(bisection, lambda x: TO if x >= 38 else OK) == 9     # ceil(log2 128) + 2
    assert bisection.answer().text == \
        "first failing depth 38 (37: COMPLETED 2/2; 38: TIMEOUT 2/2)"


def test_skipped_neighbour_makes_the_answer_a_range():
    bisection = Bisection(1, 64)
    drive(bisection, lambda x: DL if x == 37 else (TO if x >= 38 else OK))
    answer = bisection.answer()
    assert answer.kind == "range" and (answer.low, answer.high) == (37, 38)
    assert "37 skipped" in answer.text


def test_skips_away_from_the_boundary_are_stepped_around():
    bisection = Bisection(1, 64)
    drive(bisection, lambda x: DL if x in (32, 33, 31) else (TO if x >= 38 else OK))
    assert bisection.answer().first == 38


@pytest.mark.parametrize("flaky_as, expected", [("good", 38), ("bad", 20)])
def test_flaky_depths_count_as_chosen(flaky_as, expected):
    def outcome(x):
        if x >= 38:
            return TO
        return {"COMPLETED": 1, "TIMEOUT": 1} if x >= 20 else OK
    bisection = Bisection(1, 128, flaky_as)
    drive(bisection, outcome)
    answer = bisection.answer()
    assert answer.first == expected
    assert any(note.startswith(f"flaky (mixed outcomes, counted as {flaky_as})")
               for note in answer.notes)


def test_flaky_as_skip_gives_a_range_when_flaky_touches_the_boundary():
    bisection = Bisection(1, 128, "skip")
    drive(bisection, lambda x: TO if x >= 38 else ({"COMPLETED": 1, "TIMEOUT": 1}
                                                   if x >= 30 else OK))
    answer = bisection.answer()
    assert answer.kind == "range" and answer.low <= 30 and answer.high == 38


def test_a_confirmation_that_flips_moves_the_boundary():
    calls: dict[int, int] = {}

    def outcome(x):
        calls[x] = calls.get(x, 0) + 1
        if x == 38 and calls[x] == 1:
            return TO
        return TO if x >= 40 else OK
    bisection = Bisection(1, 128)
    drive(bisection, outcome)
    # 38 failed once then completed on re-test: mixed, counted as good; 40 is the answer
    assert bisection.answer().first == 40


def test_non_monotone_results_are_noted():
    bisection = Bisection(1, 64)
    bisection.record(38, TO)
    bisection.record(50, OK)            # e.g. from a replayed log
    drive(bisection, lambda x: TO if x >= 38 else OK)
    answer = bisection.answer()
    assert answer.first == 38
    assert any("depth 50 completed above the first failing depth 38" in n
               for n in answer.notes)


def test_incomplete_answer():
    bisection = Bisection(1, 128)
    bisection.record(64, TO)
    answer = bisection.answer(complete=False)
    assert answer.kind == "incomplete" and "in 2..64 so far" in answer.text


def test_bad_arguments():
    with pytest.raises(ValueError):
        Bisection(5, 5)
    with pytest.raises(ValueError):
        Bisection(1, 5, "maybe")


@pytest.mark.parametrize("first", [40, 50, 64])
def test_after_a_skip_the_next_point_is_chosen_as_git_does(first):
    # Depths 28..36 cannot be tested (deadline) inside 1..64. Stepping to the untested point
    # nearest the middle probes all nine, each K trials of ~107 s on mainline; git's biased
    # choice leaves the stretch sooner. Over 200 seeds every answer is right, and on average
    # well under half the stretch is tested.
    untestable = range(28, 37)
    skipped = []
    for seed in range(200):
        bisection = Bisection(1, 64, seed=seed)
        drive(bisection, lambda x: DL if x in untestable else (TO if x >= first else OK))
        assert bisection.answer().first == first
        skipped.append(len([x for x in bisection.order if x in untestable]))
    assert sum(skipped) / len(skipped) < len(untestable) / 2


def test_the_skip_choice_is_reproducible_per_seed():
    def probes(seed):
        bisection = Bisection(1, 200, seed=seed)
        drive(bisection, lambda x: DL if 80 <= x <= 120 else (TO if x >= 150 else OK))
        return bisection.order
    assert probes(3) == probes(3) and probes(3) != probes(4)
