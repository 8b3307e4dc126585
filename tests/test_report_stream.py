"""Reports read a part at a time (harness.report.fileformat.ReportReader): the document
they put together is the one the journal describes, whatever order its entries came in;
the column-wise schema check accepts nothing the item walk refuses; the YAML dumped a
key at a time is the whole's beginning; `--json` streams what the file holds; a run holds
its trials in brief past a budget; and checking or rendering costs memory in proportion
to the largest trial, not to the report."""

from __future__ import annotations

import json
import math
import random
import re
import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_report_fixtures import _damage

from harness.app.cli import main
from harness.formats.yamlio import dump_yaml, dump_yaml_within, load_yaml_text
from harness.model.results import BriefTrial
from harness.report.check import check_report_file
from harness.report.digest import Digest
from harness.report.fileformat import entry_line, load_report, read_document
from harness.report.model import SCHEMA, SCHEMA_V2, Report, trial_dict
from harness.report.reader import ReportReader
from harness.report.schema import _check, check, report_schema, trial_schema

PLAN = "42"                  # the plan the header declares


@pytest.fixture(scope="module")
def header(tmp_path_factory) -> str:
    """A real report's header (of one plan, 42), unfinished: journals are made up below."""
    out = tmp_path_factory.mktemp("header") / "r.yaml"
    result = CliRunner().invoke(main, ["run", "minicpm5-2b-decode", "--plan", PLAN, "--trials",
                                       "1", "--no-isolate", "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    text = re.sub(r"(?m)^finished: .*$", "finished: null", text)
    return text[:text.index("\njournal:\n") + len("\njournal:\n")]


def runlist(index: int, state: str = "COMPLETED") -> dict:
    return {"index": index, "runs": 1, "chains": [1], "state": state, "state_code": 4,
            "device_ms": 0.05, "wall_ms": 0.1}


def trial(plan: str, index: int, status: str = "completed", runlists: int = 2,
          state: str = "COMPLETED") -> dict:
    return {"plan": plan, "index": index, "status": status, "seed": 1,
            "runlists": [runlist(i, state) for i in range(runlists)]}


def write(path: Path, header: str, entries: list[tuple[str, dict]], schema: str = SCHEMA
          ) -> Path:
    path.write_bytes(header.replace(SCHEMA, schema).encode()
                     + b"".join(entry_line(kind, body) for kind, body in entries))
    return path


# -- the document a journal describes ---------------------------------------------------------

NAMES = st.sampled_from([PLAN, "p1", "p2", "1+" * 300 + "1"])   # one past a line's head


@st.composite
def journals(draw) -> list[tuple[str, dict]]:
    entries: list[tuple[str, dict]] = []
    added = [PLAN]
    for _ in range(draw(st.integers(0, 25))):
        what = draw(st.sampled_from(["plan", "trial", "trial", "trial", "step", "note"]))
        if what == "plan":
            name = draw(NAMES)
            entries.append(("plan", {"name": name, "spec": "max:1", "chunks": [1] * 42,
                                     "expect": None}))
            if name not in added:
                added.append(name)
        elif what == "trial":
            name = draw(st.sampled_from(added))
            status = draw(st.sampled_from(["in-flight", "completed", "failed"]))
            entries.append(("trial", trial(name, draw(st.integers(0, 4)), status,
                                           runlists=0 if status == "in-flight" else 2,
                                           state="TIMEOUT" if status == "failed"
                                           else "COMPLETED")))
        elif what == "step":
            entries.append(("step" if draw(st.booleans()) else "probe",
                            {"x": draw(st.integers(1, 9)), "plan": PLAN}))
        else:
            entries.append(("note", {"at": "2026-12-01T00:00:00Z",
                                     "note": draw(st.text(max_size=5))}))
    return entries


def expected_problems(entries: list[tuple[str, dict]]) -> set[str]:
    """Which of report check's journal rules the made-up `entries` break (the header is a
    run asking for one trial): an entry given twice, a trial numbered past its plan's
    trials, a plan holding more trials than the run asked for."""
    found: set[str] = set()
    last: dict[tuple[str, int], dict] = {}
    seen: list[tuple[str, dict]] = []
    for kind, body in entries:
        if kind == "trial":
            key = (body["plan"], body["index"])
            if last.get(key) == body:
                found.add("twice")
            last[key] = body
        else:
            if (kind, body) in seen:
                found.add("twice")
            seen.append((kind, body))
    for plan in {name for name, _ in last}:
        indices = [index for name, index in last if name == plan]
        if max(indices) >= len(indices):
            found.add("past")
        if len(indices) > 1:
            found.add("holds")
    return found


def found_problems(problems: list[str]) -> set[str]:
    kinds = {"a journal line given twice": "twice", "(they are numbered from 0)": "past",
             "the run asks for (settings.trials)": "holds"}
    named = {kind for words, kind in kinds.items() for problem in problems if words in problem}
    assert len(named) <= len(problems) and all(any(w in p for w in kinds) for p in problems), \
        problems
    return named


def expected_document(entries: list[tuple[str, dict]]) -> dict:
    """What the journal says, put together the plain way: plans in the order declared,
    each trial's last entry, by index; steps and notes in order."""
    plans = {PLAN: {"name": PLAN, "spec": PLAN, "chunks": [42], "expect": None}}
    last: dict[tuple[str, int], dict] = {}
    steps, notes = [], []
    for kind, body in entries:
        if kind == "plan":
            plans.setdefault(body["name"], dict(body))
        elif kind == "trial":
            last[(body["plan"], body["index"])] = {k: v for k, v in body.items() if k != "plan"}
        elif kind in ("step", "probe"):
            steps.append(body)
        else:
            notes.append(body)
    doc_plans = [dict(p, trials=[t for (name, _), t in sorted(
        ((k, v) for k, v in last.items() if k[0] == p["name"]), key=lambda kv: kv[0][1])])
        for p in plans.values()]
    return {"plans": doc_plans, "steps": steps, "notes": notes}


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=journals())
def test_the_document_is_what_the_journal_says_in_any_order(tmp_path, header, entries):
    path = write(tmp_path / "r.yaml", header, entries)
    doc = read_document(path)
    want = expected_document(entries)
    assert doc["plans"] == want["plans"]
    assert doc.get("bisect", {}).get("log", []) == want["steps"]
    assert doc.get("notes", []) == want["notes"]
    if not want["steps"]:                  # steps made up here are no bisect's: not checked
        assert found_problems(check_report_file(str(path)).problems) == \
            expected_problems(entries)


def test_a_plan_named_past_a_lines_head_is_still_read_without_parsing(tmp_path, header):
    """A cut of 1,000 runs names its plan 1+1+...+1; its trials must land in it."""
    long = "+".join(["1"] * 1000)
    path = write(tmp_path / "r.yaml", header, [
        ("plan", {"name": long, "spec": "max:1", "chunks": [1] * 1000, "expect": None}),
        ("trial", trial(long, 0, "in-flight", runlists=0)), ("trial", trial(long, 0))])
    with ReportReader(path) as reader:
        found = list(reader.trials())
    assert [(e.plan, e.body["status"]) for e in found] == [(1, "completed")]


def test_a_trial_line_broken_after_its_head_is_a_problem_on_its_line(tmp_path, header):
    path = write(tmp_path / "r.yaml", header, [("trial", trial(PLAN, 0))])
    text = path.read_text()
    path.write_text(text[:-40] + "\n")                       # the head is intact
    problems = check_report_file(str(path)).problems
    assert len(problems) == 1 and problems[0].startswith(f"line {text.count(chr(10))}: ")
    with pytest.raises(Exception, match=r"r\.yaml:\d+: not valid YAML"):
        load_report(path)


def test_a_v2_bisect_reports_probe_entries_are_its_steps(tmp_path):
    """A bisect report as 0.2 wrote it (v2, steps named ``probe``) reads as this one's."""
    out = tmp_path / "b.yaml"
    result = CliRunner().invoke(main, ["bisect", "minicpm5-2b-decode", "--lo", "36", "--hi",
                                       "42", "--trials", "1", "--profile", "inflight-cap:38",
                                       "--no-isolate", "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert '- {"step": ' in text and '"probe"' not in text
    old = tmp_path / "old.yaml"
    old.write_text(text.replace(SCHEMA, SCHEMA_V2).replace('- {"step": ', '- {"probe": '))
    assert check_report_file(str(old)).valid
    mine, theirs = read_document(out), read_document(old)
    assert theirs["bisect"]["log"] == mine["bisect"]["log"] and len(mine["bisect"]["log"]) >= 3


# -- the column-wise check ------------------------------------------------------------------

VALUES = st.one_of(st.integers(-3, 5), st.floats(allow_nan=True, allow_infinity=False),
                   st.booleans(), st.none(), st.sampled_from(["COMPLETED", "device", "x", ""]),
                   st.lists(st.integers(-1, 3), max_size=3), st.dictionaries(
                       st.sampled_from(["a", "b"]), st.integers(-1, 2), max_size=2))
KEYS = st.sampled_from(["index", "runs", "chains", "state", "state_code", "source",
                        "device_ms", "health", "skipped", "message_form", "other"])


@settings(max_examples=400, deadline=None)
@given(items=st.lists(st.one_of(st.dictionaries(KEYS, VALUES, max_size=6), VALUES),
                      max_size=5))
def test_the_column_check_accepts_nothing_the_walk_refuses(items):
    root = report_schema()
    runlists = trial_schema(root)["properties"]["runlists"]
    walked: list = []
    for index, item in enumerate(items):      # the item walk alone, as without the fast path
        _check(item, root["$defs"]["runlist"], root, (index,), walked)
    assert (check(items, runlists, root=root) == []) == (walked == [])


TRIAL_KEYS = st.sampled_from(["index", "status", "state", "wall_ms", "seed", "started",
                              "error", "runlists", "kernel_log", "time_to_failure", "other"])


FIELD_VALUES = st.one_of(VALUES, st.sampled_from(["completed", "2026-12-07T12:49:25Z"]),
                        st.lists(st.dictionaries(KEYS, VALUES, max_size=6), max_size=3))
TRIALS = st.builds(lambda base, more: {**base, **more}, st.fixed_dictionaries({
    "index": st.integers(-1, 3), "status": st.sampled_from(["completed", "failed", "x"]),
    "runlists": st.just([]) | st.lists(st.builds(runlist, st.integers(-1, 2)), max_size=3)}),
    st.dictionaries(TRIAL_KEYS, FIELD_VALUES, max_size=3))


@settings(max_examples=400, deadline=None)
@given(trial=TRIALS)
def test_a_trial_checked_a_field_at_a_time_is_accepted_only_as_the_walk_accepts_it(trial):
    root = report_schema()
    walked: list = []                 # the walk alone, as without the fast path
    _check(trial, trial_schema(root), root, ("t",), walked)
    assert check(trial, trial_schema(root), ("t",), root) == walked


def test_a_trial_of_plain_fields_is_accepted_a_field_at_a_time():
    from harness.report.schema import _flat_items
    root = report_schema()
    trial = {"index": 0, "status": "completed", "wall_ms": 1.5, "seed": 7,
             "started": "2026-12-07T12:49:25Z", "state": "COMPLETED",
             "runlists": [runlist(0), runlist(1)]}
    assert _flat_items(root, trial_schema(root)).accepts_one(trial)
    assert not _flat_items(root, trial_schema(root)).accepts_one(dict(trial, seed=-1))


def test_a_nan_first_in_a_column_does_not_hide_a_negative_after_it():
    root = report_schema()
    runlists = trial_schema(root)["properties"]["runlists"]
    items = [dict(runlist(0), device_ms=math.nan), dict(runlist(1), device_ms=-1.0)]
    assert [p.where() for p in check(items, runlists, root=root)] == ["[1].device_ms"]


# -- the YAML a key at a time ------------------------------------------------------------------

@settings(max_examples=100, deadline=None)
@given(data=st.dictionaries(st.text(min_size=1, max_size=4), st.one_of(
    st.integers(), st.text(max_size=8), st.lists(st.dictionaries(
        st.text(min_size=1, max_size=3), st.one_of(st.integers(), st.text(max_size=5)),
        max_size=3), max_size=4)), max_size=5), limit=st.integers(0, 400))
def test_yaml_dumped_a_key_at_a_time_is_the_wholes_beginning(data, limit):
    whole = dump_yaml(data)
    part, complete = dump_yaml_within(data, limit)
    assert whole.startswith(part)
    assert complete == (part == whole)
    assert complete or len(part) > limit


# -- --json, brief trials ------------------------------------------------------------------------

def test_json_streams_exactly_what_the_report_holds(tmp_path):
    out = tmp_path / "r.yaml"
    result = CliRunner().invoke(main, ["run", "minicpm5-2b-decode", "--no-isolate", "--trials",
                                       "2", "--profile", "inflight-cap:40", "--json",
                                       "--out", str(out)])
    assert result.exit_code == 1
    assert result.stdout == json.dumps(load_report(out).to_dict(), indent=2) + "\n"


def test_a_run_holds_its_trials_in_brief_past_its_budget(tmp_path, monkeypatch):
    from harness.execution import runner as running
    monkeypatch.setattr(running, "HELD_RUNLISTS", 30)
    out = tmp_path / "s.yaml"
    result = CliRunner().invoke(main, ["sweep", "minicpm5-2b-decode", "--depths", "40..41",
                                       "--chunks", "1,41", "--trials", "2", "--profile",
                                       "inflight-cap:40", "--no-isolate", "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = load_report(out)                # the file has every runlist of every trial
    assert sum(len(t.runlists) for p in report.plans for t in p.trials) == 2 * (40 + 41 + 2)
    with pytest.raises(ValueError, match="held in brief"):
        trial_dict(report.plans[0].trials[0].brief())
    brief = load_report(out, detail=False)
    assert any(isinstance(t, BriefTrial) for p in brief.plans for t in p.trials)
    assert [p.counts_text() for p in brief.plans] == [p.counts_text() for p in report.plans]


def test_the_runner_keeps_trials_whole_only_within_its_budget(tmp_path, monkeypatch):
    from harness.execution import runner as running
    from harness.execution.backend import choose_backend
    from harness.sources.load import load_case
    monkeypatch.setattr(running, "HELD_RUNLISTS", 100)
    case = load_case("minicpm5-2b-decode")
    runner = running.open_run(case, list(case.plans_for(["max:1"])),
                              running.RunOptions(trials=3, isolate=False),
                              backend=choose_backend("sim", None), xclbins_dir=None,
                              out=str(tmp_path / "r.yaml"), force=False, command="run")
    runner.run()
    kinds = [type(t).__name__ for t in runner.report.plans[0].trials]
    assert kinds == ["TrialResult", "TrialResult", "BriefTrial"]        # 42 + 42, then over
    assert runner.held_runlists == 84


# -- flat memory -----------------------------------------------------------------------------------

def big_report(path: Path, header: str, trials: int, runlists: int) -> Path:
    entries: list[tuple[str, dict]] = []
    for index in range(trials):
        entries.append(("trial", trial(PLAN, index, "in-flight", runlists=0)))
        entries.append(("trial", trial(PLAN, index, runlists=runlists)))
    # a run that asked for as many trials as it holds
    return write(path, header.replace("  trials: 1\n", f"  trials: {trials}\n", 1), entries)


def peak_of(action) -> int:
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_checking_and_rendering_cost_the_largest_trials_memory_not_the_reports(tmp_path,
                                                                             header):
    small = big_report(tmp_path / "small.yaml", header, 40, 200)
    large = big_report(tmp_path / "large.yaml", header, 160, 200)   # four times the trials

    def render(path: Path) -> None:
        assert check_report_file(str(path)).valid
        with ReportReader(path) as reader:
            from harness.report.render import render_markdown
            render_markdown(Digest.of_reader(reader).view(True))
    peaks = [peak_of(lambda p=p: render(p)) for p in (small, large)]
    assert large.stat().st_size > 3.5 * small.stat().st_size
    assert peaks[1] < 1.5 * peaks[0], peaks           # flat: not four times


def test_a_report_object_holds_no_trial_it_was_not_given():
    """Report.from_dict of a document without trials is all `load_report(trials=False)`
    holds: what --replay and settings checks read, whatever the report's size."""
    report = Report.from_dict({"schema": SCHEMA, "run_id": "r", "created": "c",
                               "command": "run", "harness": {}, "backend": {}, "case": {},
                               "settings": {}, "plans": [{"name": "a", "spec": "1",
                                                          "chunks": [1]}]})
    assert report.plans[0].trials == []


def test_a_bundles_report_is_a_valid_report_with_no_identity_left(tmp_path):
    """The bundle redacts the report an entry at a time: what it ships still checks, in
    the harness's own layout, and holds no host, address or serial of the machine."""
    import tarfile
    out = tmp_path / "r.yaml"
    result = CliRunner().invoke(main, ["run", "minicpm5-2b-decode", "--plan", "42",
                                       "--trials", "1", "--no-isolate", "--profile",
                                       "inflight-cap:40", "--out", str(out)])
    assert result.exit_code == 1, result.output
    head, journal = out.read_text().split("\njournal:\n")
    head = re.sub(r"(?m)^    hostname: .*$", "    hostname: canary-host-7731", head)
    lines = []
    for line in journal.splitlines():
        entry = json.loads(line[2:])
        for outcome in entry.get("trial", {}).get("runlists", []):
            if outcome.get("message"):
                outcome["message"] += " on canary-host-7731 at 10.11.12.13"
        lines.append("- " + json.dumps(entry, separators=(", ", ": ")))
    out.write_text(head + "\njournal:\n" + "\n".join(lines) + "\n")
    assert CliRunner().invoke(main, ["report", "check", str(out)]).exit_code == 0
    bundled = CliRunner().invoke(main, ["report", "bundle", str(out)])
    assert bundled.exit_code == 0, bundled.output
    shipped = tmp_path / "shipped"
    with tarfile.open(tmp_path / "r.bundle.tar.gz") as tar:
        tar.extractall(shipped, filter="data")
    copy = shipped / "r.bundle" / "r.yaml"
    assert '\njournal:\n- {"' in copy.read_text()                    # the harness's layout
    assert CliRunner().invoke(main, ["report", "check", str(copy)]).stdout == f"{copy}: valid\n"
    for path in shipped.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert "canary-host-7731" not in text and "10.11.12.13" not in text, path.name
    assert "<hostname>" in copy.read_text() and "<ip-1>" in copy.read_text()


@settings(max_examples=200, deadline=None)
@given(status=st.sampled_from(["completed", "failed", "deadline", "in-flight"]),
       states=st.lists(st.sampled_from(["COMPLETED", "TIMEOUT", "ABORT", None]), max_size=6),
       heavy=st.booleans())
def test_a_trial_read_in_brief_is_the_brief_of_the_trial_read_whole(status, states, heavy):
    from harness.model.results import TrialResult
    from harness.report.model import brief_from_dict
    raw = {"index": 3, "status": status, "seed": 7, "error": "e",
           "runlists": [{k: v for k, v in dict(runlist(i), state=s).items() if v is not None}
                        for i, s in enumerate(states)]}
    if heavy:
        raw["kernel_log"] = {"source": "x", "lines": ["l"]}
    read, whole = brief_from_dict(raw), TrialResult.from_json(raw).brief()
    assert type(read) is type(whole) and read == whole
    assert read.state == TrialResult.from_json(raw).state


def test_a_render_keeps_a_bounded_number_of_distinct_failures(monkeypatch):
    """Distinct failing rows are kept up to a cap and the rest counted, so a report whose
    every runlist failed renders in bounded memory and says how many it did not list."""
    from harness.report import digest as digesting
    from harness.report.render import render_markdown
    monkeypatch.setattr(digesting, "MAX_ROWS", 30)
    plan = {"name": "p", "spec": "1", "chunks": [1], "trials": [
        {"index": i, "status": "failed", "runlists": [
            dict(runlist(0, "TIMEOUT"), failing_run=0, message=f"failure {i}")]}
        for i in range(100)]}
    view = Digest.of_document({"plans": [plan], "case": {"name": "c"}}).view(False)
    assert len(view.failing) == 30 and view.failing_beyond == 70
    assert "10 more distinct failures in the report, and 70 more failing runs." in \
        render_markdown(view)


@pytest.fixture(scope="module")
def failing_report(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("failing") / "r.yaml"
    result = CliRunner().invoke(main, ["reproduce", "--no-isolate", "--trials", "2",
                                       "--profile", "inflight-cap:40", "--out", str(out)])
    assert result.exit_code == 1, result.output
    return out


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32))
def test_a_damaged_journal_either_fails_its_check_or_renders(tmp_path, failing_report, seed):
    """Read a part at a time, a report whose journal lines were damaged (values replaced
    anywhere in them) is refused by name or rendered and bundled: never a harness fault."""
    rng = random.Random(seed)
    head, journal = failing_report.read_text().split("\njournal:\n")
    lines = journal.splitlines()
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(lines))
        lines[at] = "- " + json.dumps(_damage(json.loads(lines[at][2:]), rng),
                                      separators=(", ", ": "))
    damaged = tmp_path / f"d{seed}.yaml"
    damaged.write_text(head + "\njournal:\n" + "\n".join(lines) + "\n")
    want = 0 if CliRunner().invoke(main, ["report", "check", str(damaged)]).exit_code == 0 \
        else 2
    for args in (["render"], ["render", "--format", "text"], ["bundle", "--force"]):
        done = CliRunner().invoke(main, ["report", *args, str(damaged)])
        assert done.exit_code == want, (args, done.output)


# -- a trial's journal line, each runlist from a template where it says nothing else --------

def _outcomes():
    from harness.model.results import RunlistOutcome
    maybe_int = st.one_of(st.none(), st.integers(-3, 10**12), st.booleans())
    time_ms = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True),
                        st.floats(0, 1e6).map(lambda x: round(x, 3)), st.integers(0, 9))
    # what the template takes, and outcomes just beside it
    quiet = st.builds(RunlistOutcome, index=st.integers(0, 10**9), runs=st.integers(0, 99),
                      chains=st.lists(st.integers(0, 24), min_size=1, max_size=2),
                      state=st.sampled_from(["COMPLETED", "TIMEOUT"]),
                      state_code=st.sampled_from([4, 8]), device_ms=time_ms, wall_ms=time_ms,
                      skipped=st.booleans(), failing_run_named=st.none() | st.just(False))
    return quiet | st.builds(
        RunlistOutcome,
        index=st.one_of(st.integers(0, 10**9), st.booleans()),
        runs=st.integers(0, 10**6),
        chains=st.one_of(st.lists(st.integers(0, 24), max_size=3),
                         st.lists(st.booleans(), max_size=1)),
        state=st.one_of(st.just("COMPLETED"), st.none(), st.sampled_from(["TIMEOUT", "ok"]),
                        st.text(max_size=5)),
        state_code=st.one_of(st.just(4), maybe_int),
        failing_run=st.one_of(st.none(), maybe_int), failing_chain=st.none() | maybe_int,
        source=st.none() | st.just("device"), device_ms=time_ms, wall_ms=time_ms,
        message=st.none() | st.text(max_size=8), health=st.none() | st.just({"a": 1}),
        skipped=st.booleans(), message_form=st.none() | st.just("state in message"),
        located_by=st.none() | st.text(max_size=4),
        failing_run_named=st.none() | st.booleans())


@settings(max_examples=300, deadline=None)
@given(outcomes=st.lists(_outcomes(), max_size=6), plan=st.text(max_size=6))
def test_a_trial_s_journal_line_is_what_json_writes_byte_for_byte(outcomes, plan):
    # trial_line writes a completed runlist from a template (a sweep saves one per
    # runlist): whatever an outcome holds, the line is json.dumps's
    from harness.model.results import TrialResult, TrialStatus
    from harness.report.fileformat import trial_line
    trial = TrialResult(3, TrialStatus.COMPLETED, 1.5, 7, outcomes, started="2026-12-01T00Z")
    assert trial_line(plan, trial) == entry_line("trial", {"plan": plan, **trial_dict(trial)})


def test_a_completed_simulated_runlist_takes_the_template():
    from harness.model.results import RunlistOutcome
    from harness.report.fileformat import outcome_json
    outcome = RunlistOutcome(5, 1, [1], "COMPLETED", 4, device_ms=0.05, wall_ms=0.012)
    assert outcome_json(outcome) == ('{"index": 5, "runs": 1, "chains": [1], "state": '
                                     '"COMPLETED", "state_code": 4, "device_ms": 0.05, '
                                     '"wall_ms": 0.012}')


# -- a header with a sweep's grid, dumped a part at a time -------------------------------------

_SCALARS = st.one_of(st.integers(-10**6, 10**6), st.booleans(), st.none(),
                     st.text(alphabet="abc+_x 0123\n'\":#-", max_size=12))
_CELL = st.dictionaries(st.sampled_from(["depth", "chunk", "plan", "counts"]),
                        st.one_of(_SCALARS, st.dictionaries(
                            st.sampled_from(["COMPLETED", "TIMEOUT"]), st.integers(0, 9))))
_SECTION = st.dictionaries(st.text(alphabet="abcdefgh", min_size=1, max_size=6),
                           st.one_of(_SCALARS, st.lists(st.one_of(_SCALARS, _CELL),
                                                        max_size=9)), max_size=4)


@settings(max_examples=150, deadline=None)
@given(header=st.dictionaries(st.text(alphabet="abcdefgh_", min_size=1, max_size=8),
                              st.one_of(_SCALARS, _SECTION), max_size=4))
def test_a_header_dumped_in_parts_is_the_header_dumped_whole(header):
    from harness.formats import yamlio
    part = yamlio.LIST_PART
    yamlio.LIST_PART = 2                               # every list of 3 or more in parts
    try:
        assert "".join(yamlio.dump_yaml_parts(header)) == dump_yaml(header)
    finally:
        yamlio.LIST_PART = part


def test_a_sweep_s_grid_is_saved_without_its_whole_node_graph(monkeypatch):
    # the header of a 5,120-cell sweep is written a part of its rows at a time; its cells
    # are the journal's (v4), never the header's
    from harness.formats import yamlio
    from harness.report import fileformat
    report = Report("sweep", {}, {"kind": "sim", "simulated": True}, {}, {})
    report.sections["sweep"] = {"depths": list(range(1, 1025)), "chunks": [1, 4, 8, 16, 32],
                                "complete": True,
                                "cells": [{"depth": d, "chunk": c, "plan": f"{d}x{c}",
                                           "counts": {"COMPLETED": 3}}
                                          for d in range(1, 1025) for c in (1, 4, 8, 16, 32)]}
    largest = []
    real = yamlio.dump_yaml
    monkeypatch.setattr(yamlio, "dump_yaml", lambda data: largest.append(len(
        data if isinstance(data, list) else data.get("cells", ()) if isinstance(data, dict)
        else ())) or real(data))
    text = fileformat.header_text(report)
    assert max(largest) <= yamlio.LIST_PART
    assert load_yaml_text(text.split("\n" + "journal:")[0])["sweep"] == \
        {k: v for k, v in report.sections["sweep"].items() if k != "cells"}
