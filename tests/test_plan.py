"""Plan syntax and arithmetic (DESIGN.md "Cases": "42", "21+21", "even:K", "max:N")."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.model.errors import PlanError
from harness.model.plan import cut_text, make_plan, parse_plan, plan_for_depth, plan_label


def test_examples():
    assert parse_plan("42", 42) == (42,)
    assert parse_plan(42, 42) == (42,)
    assert parse_plan("21+21", 42) == (21, 21)
    assert parse_plan(" 14 + 14 +14 ", 42) == (14, 14, 14)
    assert parse_plan("even:3", 42) == (14, 14, 14)
    assert parse_plan("even:4", 42) == (11, 11, 10, 10)
    assert parse_plan("max:24", 42) == (24, 18)
    assert parse_plan("max:50", 42) == (42,)


@pytest.mark.parametrize("spec, words", [
    ("21+20", "covers 41 layers, the case has 42"),
    ("43", "covers 43"),
    ("0+42", "empty runlist"),
    ("even:0", "N >= 1"),
    ("even:43", "only 42 layers"),
    ("max:0", "N >= 1"),
    ("half", "does not parse"),
    ("21,21", "does not parse"),
    ("", "does not parse"),
    (True, "must be a string"),
    (4.5, "must be a string"),
])
def test_errors_name_the_plan(spec, words):
    with pytest.raises(PlanError, match=words):
        parse_plan(spec, 42)


def test_label():
    assert make_plan("halves", "21+21", 42).label == "halves 21+21"
    assert plan_for_depth(42).label == "42"
    assert plan_for_depth(42, 21).chunks == (21, 21)
    assert plan_for_depth(42, "even:3").chunks == (14, 14, 14)


def test_a_long_plan_named_by_its_plain_spec_is_labelled_by_its_short_cut():
    # a sweep's cell and a `--plan 1+1+...` spec are named by their chunks written out;
    # the label says the cut once, in short, whether or not a frame's name comes first
    ones = plan_for_depth(42, 1)
    assert ones.name == "+".join(["1"] * 42)
    assert ones.label == "42 x 1"
    assert plan_for_depth(200, 24).label == "8 x 24 + 8"
    assert plan_label("frame_2 " + ones.name, ones.chunks) == "frame_2 42 x 1"
    assert plan_label("frame_2 42 x 1", ones.chunks) == "frame_2 42 x 1"
    assert plan_label("ones", ones.chunks) == "ones 42 x 1"
    # up to six runlists the plain spec is the cut
    assert plan_for_depth(6, 1).label == "1+1+1+1+1+1"


chunk_lists = st.lists(st.integers(min_value=1, max_value=64), min_size=1, max_size=40)


@given(chunk_lists, st.sampled_from(["frame_0", "frame_12", "a b"]))
def test_plan_label_says_the_cut_once_after_any_other_name(chunks, frame):
    plain, cut = "+".join(map(str, chunks)), cut_text(chunks)
    assert plan_label(plain, chunks) == cut
    assert plan_label(cut, chunks) == cut
    assert plan_label(f"{frame} {plain}", chunks) == f"{frame} {cut}"
    assert plan_label(f"{frame} {cut}", chunks) == f"{frame} {cut}"
    assert plan_label("monolithic", chunks) == f"monolithic {cut}"


depths = st.integers(min_value=1, max_value=2000)


@given(depths, st.integers(min_value=1, max_value=2000))
def test_even_property(depth, k):
    if k > depth:
        with pytest.raises(PlanError):
            parse_plan(f"even:{k}", depth)
        return
    chunks = parse_plan(f"even:{k}", depth)
    assert len(chunks) == k and sum(chunks) == depth
    assert min(chunks) >= 1 and max(chunks) - min(chunks) <= 1
    assert list(chunks) == sorted(chunks, reverse=True)


@given(depths, st.integers(min_value=1, max_value=3000))
def test_max_property(depth, n):
    chunks = parse_plan(f"max:{n}", depth)
    assert sum(chunks) == depth and all(1 <= c <= n for c in chunks)
    assert all(c == n for c in chunks[:-1])
    assert len(chunks) == -(-depth // n)


@given(st.lists(st.integers(min_value=1, max_value=500), min_size=1, max_size=30))
def test_explicit_property(sizes):
    spec = "+".join(map(str, sizes))
    assert parse_plan(spec, sum(sizes)) == tuple(sizes)
    with pytest.raises(PlanError, match="covers"):
        parse_plan(spec, sum(sizes) + 1)


@given(st.text(max_size=30), depths)
def test_parser_only_raises_plan_error(text, depth):
    try:
        chunks = parse_plan(text, depth)
    except PlanError:
        return
    assert sum(chunks) == depth and all(c >= 1 for c in chunks)


def test_cut_text_writes_six_runlists_out_and_shortens_seven():
    from harness.model.plan import cut_text
    assert cut_text([7] * 6) == "7+7+7+7+7+7"                  # the boundary: still in full
    assert cut_text([6] * 7) == "7 x 6"
    assert cut_text([24] * 6 + [16]) == "6 x 24 + 16"          # XRT's chains
    assert cut_text([24, 23, 22, 21, 20, 19, 18]) == "24+23+...+18 (7 runlists)"


@pytest.mark.parametrize("layers", [0, -1])
def test_a_plan_needs_at_least_one_layer(layers):
    with pytest.raises(PlanError, match=f"at least 1, not {layers}"):
        parse_plan("max:1", layers)


def test_a_plan_past_the_layer_limit_is_refused_before_it_is_built():
    from harness.model.plan import MAX_LAYERS
    assert parse_plan("max:1", MAX_LAYERS) == (1,) * MAX_LAYERS
    with pytest.raises(PlanError, match="past the 100,000"):
        parse_plan("max:1", MAX_LAYERS + 1)


def test_a_max_plan_s_chunks_are_held_as_three_numbers_and_equal_their_tuple():
    # a sweep of depths 1..1024 holds thousands of these; as tuples they took most of its
    # memory (benchmarks/report_scale.py)
    from harness.model.plan import Cut
    plan = plan_for_depth(1024, 1)
    assert isinstance(plan.chunks, Cut) and plan.chunks == (1,) * 1024
    assert plan_for_depth(10, 4).chunks == (4, 4, 2) and plan_for_depth(10, 4).chunks == [4, 4, 2]
    assert hash(plan_for_depth(10, 4).chunks) == hash((4, 4, 2))
    cut = plan_for_depth(10, 4).chunks
    assert (len(cut), cut[0], cut[-1], cut[2], cut[:-1], list(cut)) == \
        (3, 4, 2, 2, (4, 4), [4, 4, 2])
    assert plan_for_depth(8, 4).chunks == (4, 4) and plan_for_depth(3, 4).chunks == (3,)
    assert plan_for_depth(1024, 1).label == "1024 x 1" and plan_for_depth(10, 4).depth == 10
    with pytest.raises(IndexError):
        cut[3]
