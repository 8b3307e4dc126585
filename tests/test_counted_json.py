"""Journal lines read without a Python call per object (`loads_counted`): the same value as
`loads` for every text, and the same refusal, a key given twice above all, whatever the
strings hold (colons, escapes, white space before a colon)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from harness.app.cli import main
from harness.formats import jsonread
from harness.formats.jsonread import JsonShapeError, loads, loads_counted
from harness.report.reader import trial_colons

TEXT = st.text(alphabet=st.sampled_from('ab:"\\ \t\u00e9\u2603{}[],'), max_size=8)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=20)


def every_colon(value) -> int:
    """The most a lower bound can count: every key, and the colons of every string."""
    if isinstance(value, dict):
        return sum(1 + key.count(":") + every_colon(v) for key, v in value.items())
    if isinstance(value, list):
        return sum(map(every_colon, value))
    return value.count(":") if isinstance(value, str) else 0


def outcome(read, text: bytes):
    try:
        return "value", read(text)
    except JsonShapeError as err:
        return "refused", str(err)
    except ValueError as err:
        return "malformed", type(err).__name__


def with_a_key_twice(text: str) -> str:
    """The text with its first object's first key given again (a value of 1)."""
    at = text.index("{") + 1
    if text[at] == "}":
        return text
    end = json.JSONDecoder().raw_decode(text, at)[1]
    return text[:at] + text[at:end] + ": 1, " + text[at:]


@given(st.dictionaries(TEXT, VALUES, min_size=1, max_size=5), st.booleans(), st.booleans())
def test_a_counted_read_is_loads(value, ascii_only, spaced):
    text = json.dumps(value, ensure_ascii=ascii_only,
                      separators=(" , ", " : ") if spaced else (", ", ": "))
    for shown in (text, with_a_key_twice(text)):
        raw = shown.encode()
        assert outcome(lambda t: loads_counted(t, every_colon), raw) == outcome(loads, raw)
        assert outcome(lambda t: loads_counted(t, trial_colons), raw) == outcome(loads, raw)


def test_a_key_twice_is_refused_however_the_line_counts_its_colons():
    # the second "state" would replace the first unseen; a colon in a string does not hide it
    line = (b'{"trial": {"plan": "42", "index": 0, "status": "completed", "state": "TIMEOUT",'
            b' "started": "12:00:00", "state": "COMPLETED", "runlists": []}}')
    with pytest.raises(JsonShapeError, match="key 'state' appears twice"):
        loads_counted(line, trial_colons)
    fine = line.replace(b'"state": "COMPLETED", ', b"")
    assert loads_counted(fine, trial_colons) == loads(fine)


def test_the_harness_s_own_trial_lines_are_read_without_a_call_per_object(tmp_path,
                                                                          monkeypatch):
    out = tmp_path / "r.yaml"
    run = CliRunner().invoke(main, ["sweep", "minicpm5-2b-decode", "--depths", "40..42",
                                    "--chunks", "1,42", "--trials", "2", "--no-isolate",
                                    "--out", str(out)])
    assert run.exit_code == 0, run.output
    slow = []
    real = jsonread.loads
    monkeypatch.setattr(jsonread, "loads", lambda text: slow.append(text) or real(text))
    checked = CliRunner().invoke(main, ["report", "check", str(out)])
    assert checked.stdout == f"{out}: valid\n"
    trials = [line for line in Path(out).read_bytes().splitlines()
              if line.startswith(b'- {"trial": ')]
    assert len(trials) == 3 * 2 * 2 * 2 and not [t for t in slow if b'"trial"' in t]


LINES = st.lists(st.sampled_from([b'- {"note": {}}', b"- x: 1", b"", b"-  {", b"  - {", b"- {",
                                  b"- {" + b"x" * 9]), max_size=12)


@given(lines=LINES, torn=st.sampled_from([b"", b"- {", b"junk"]),
       block=st.integers(1, 12))
def test_a_journal_is_told_in_flow_by_counting_as_by_reading_each_line(tmp_path_factory,
                                                                       lines, torn, block):
    """Whether a YAML tool rewrote a report (a journal line that does not start `- {`),
    told by counting newlines a block at a time, as reading each whole line tells it."""
    from harness.report import reader as reading
    path = tmp_path_factory.mktemp("j") / "r.yaml"
    path.write_bytes(b"schema: x\njournal:\n" + b"".join(line + b"\n" for line in lines) + torn)
    with reading.ReportReader(path) as report:
        by_line = all(head.startswith(b"- {") for _, _, _, head in report._journal_lines())
        saved = reading._SCAN_BLOCK
        reading._SCAN_BLOCK = block
        try:
            assert report._entries_in_flow() == by_line
        finally:
            reading._SCAN_BLOCK = saved
