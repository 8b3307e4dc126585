"""One writer per report, and reports that check what they claim: the lock is taken by the
file's identity; `report check` rejects a line given twice, a status its runlists
contradict, a trial numbered past its plan's trials and a NUL byte, each in one line, and
reads a report another tool wrote again (flow style, JSON, CRLF); continuing refuses
what it would otherwise change silently, naming only what was given, and never adds a
trial past the plan's count."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from harness.app.cli import main
from harness.report.fileformat import load_report
from harness.report.lock import ReportLock


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    """A finished run of two plans, two trials each; the timeout plan fails."""
    folder = tmp_path_factory.mktemp("made")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HARNESS_PYXRT", "none")
        patch.setenv("XDG_CACHE_HOME", str(folder / ".cache"))
        out = folder / "r.yaml"
        done = invoke("run", "minicpm5-2b-decode", "--plan", "42", "--plan", "21+21",
                      "--trials", "2", "--no-isolate", "--profile", "inflight-cap:40",
                      "--out", str(out))
        assert done.exit_code == 1, done.output
    return out


def unfinished(made: Path, target: Path) -> Path:
    text = made.read_text().replace("  trials: 2\n", "  trials: 3\n", 1)
    target.write_text(re.sub(r"\nfinished: .*\n", "\nfinished: null\n", text, count=1))
    return target


def checked(path: Path) -> list[str]:
    done = invoke("report", "check", str(path))
    return [line for line in done.stdout.splitlines() if ": note: " not in line]


def edit_trial(made: Path, target: Path, change, *, every: bool = False) -> Path:
    """`change` the first trial's outcome (`every`: each of its entries, in-flight too)."""
    head, journal = made.read_text().split("\njournal:\n")
    lines = []
    done = False
    for line in journal.splitlines():
        entry = json.loads(line[2:])
        trial = entry.get("trial")
        first = trial and trial["plan"] == "42" and trial["index"] == 0
        if first and (every or not done and trial["status"] != "in-flight"):
            change(trial)
            done = True
        lines.append("- " + json.dumps(entry, separators=(", ", ": ")))
    target.write_text(head + "\njournal:\n" + "\n".join(lines) + "\n")
    return target


# -- the lock ---------------------------------------------------------------------------

def test_two_hard_linked_names_of_one_report_are_one_writer(made, tmp_path):
    real = unfinished(made, tmp_path / "r.yaml")
    os.link(real, tmp_path / "same.yaml")
    held = ReportLock(real)
    held.acquire()
    try:
        refused = invoke("run", "--resume", str(tmp_path / "same.yaml"))
    finally:
        held.release()
    assert refused.exit_code == 2
    assert "another of its 2 names (hard links to one file)" in refused.output
    assert refused.output.count("\n") == 1


def test_a_lock_path_that_is_a_folder_is_named_as_such(tmp_path):
    (tmp_path / ".r.yaml.lock").mkdir()
    done = invoke("run", "minicpm5-2b-decode", "--plan", "42", "--trials", "1",
                  "--no-isolate", "--out", str(tmp_path / "r.yaml"))
    assert done.exit_code == 2
    assert done.output == (f"error: lock file {tmp_path}/.r.yaml.lock is a folder, not a "
                           "lock file: remove it (or choose another name for the report)\n")


# -- report check -----------------------------------------------------------------------

def test_a_journal_line_given_twice_is_rejected(made, tmp_path):
    text = made.read_text()
    lines = text.splitlines(keepends=True)
    trial_line = next(i for i, line in enumerate(lines) if '"status": "failed"' in line)
    twice = tmp_path / "twice.yaml"
    twice.write_text("".join(lines + [lines[trial_line]]))
    assert checked(twice) == [f"{twice}: line {len(lines) + 1}: the same entry as line "
                              f"{trial_line + 1}: a journal line given twice (a copy, or a "
                              "writer that ran twice)"]
    note = next(i for i, line in enumerate(lines) if line.startswith("- {\"note\"")) \
        if any(line.startswith("- {\"note\"") for line in lines) else None
    if note is not None:
        again = tmp_path / "note.yaml"
        again.write_text("".join(lines + [lines[note]]))
        assert "a journal line given twice" in checked(again)[0]


@pytest.mark.parametrize("change, words", [
    (lambda t: t.update(status="completed"), "status completed, but a runlist ended TIMEOUT"),
    (lambda t: [r.update(state="COMPLETED", state_code=4) for r in t["runlists"]],
     "status failed, but every runlist completed"),
    (lambda t: t.update(state="ABORT"), "state 'ABORT', but its status and runlists say "
                                        "'TIMEOUT'"),
])
def test_a_status_its_runlists_contradict_is_rejected(made, tmp_path, change, words):
    path = edit_trial(made, tmp_path / "r.yaml", change)
    problems = checked(path)
    assert any(words in p for p in problems), problems
    assert all(p.count("\n") == 0 for p in problems)


@pytest.mark.parametrize("index", [2, 7, 10**30])
def test_a_trial_index_past_the_plans_trials_is_rejected(made, tmp_path, index):
    path = edit_trial(made, tmp_path / "r.yaml", lambda t: t.update(index=index), every=True)
    problems = checked(path)
    assert any("is past the 2 trial(s) plan 42 holds" in p for p in problems), problems


def test_a_plan_with_more_trials_than_the_run_asked_for_is_rejected(made, tmp_path):
    text = made.read_text().replace("  trials: 2\n", "  trials: 1\n", 1)
    path = tmp_path / "r.yaml"
    path.write_text(text)
    assert any("holds 2 trials, past the 1 the run asks for" in p for p in checked(path))


@pytest.mark.parametrize("where", ["header", "journal"])
def test_a_nul_byte_is_a_one_line_problem(made, tmp_path, where):
    text = made.read_text()
    if where == "header":
        text = text.replace("command: run", "command: r\0un", 1)
    else:
        text += '- {"note": {"at": "x", "note": "a\0b"}}\n'
    path = tmp_path / "r.yaml"
    path.write_bytes(text.encode())
    problems = checked(path)
    assert len(problems) == 1 and "a NUL byte: no report holds one" in problems[0], problems
    rendered = invoke("report", "render", str(path))
    assert rendered.exit_code == 2 and rendered.output.count("\n") == 1


@pytest.mark.parametrize("layout", ["flow", "json", "crlf"])
def test_a_report_written_again_in_another_layout_is_read(made, tmp_path, layout):
    text = made.read_text()
    document = yaml.safe_load(text)
    path = tmp_path / f"r-{layout}.yaml"
    if layout == "flow":
        path.write_text(yaml.safe_dump(document, default_flow_style=True, sort_keys=False))
    elif layout == "json":
        path.write_text(json.dumps(document))
    else:
        path.write_bytes(text.replace("\n", "\r\n").encode())
    assert checked(path) == [f"{path}: valid"]
    rendered = invoke("report", "render", str(path))
    assert rendered.exit_code == 0, rendered.output
    assert "TIMEOUT 2/2" in rendered.stdout
    assert load_report(path).plans[0].trials[1].state == "TIMEOUT"


def test_an_unfinished_report_written_as_json_resumes_in_the_harness_layout(made, tmp_path):
    source = unfinished(made, tmp_path / "u.yaml")
    path = tmp_path / "r.json"
    path.write_text(json.dumps(yaml.safe_load(source.read_text())))
    done = invoke("run", "--resume", str(path))
    assert done.exit_code == 1, done.output
    assert '\njournal:\n- {"' in path.read_text()
    assert [len(p.trials) for p in load_report(path).plans] == [3, 3]


# -- continuing ----------------------------------------------------------------------------

def test_resume_refuses_xrt_smi_validate(made, tmp_path):
    path = unfinished(made, tmp_path / "r.yaml")
    before = path.read_bytes()
    done = invoke("run", "--resume", str(path), "--xrt-smi-validate")
    assert done.exit_code == 2
    assert "drop --xrt-smi-validate (the report's machine was probed once" in done.output
    assert path.read_bytes() == before


def test_resume_refuses_another_worker_start(made, tmp_path, monkeypatch):
    path = unfinished(made, tmp_path / "r.yaml")
    path.write_text(path.read_text().replace("  isolate: false\n  worker_start: null\n",
                                             "  isolate: true\n  worker_start: fork-server\n"))
    monkeypatch.setenv("HARNESS_WORKER_START", "spawn")
    done = invoke("run", "--resume", str(path))
    assert done.exit_code == 2
    assert "drop HARNESS_WORKER_START=spawn (the report's workers: fork-server)" in done.output


def test_a_refusal_names_only_what_was_given(made, tmp_path):
    path = unfinished(made, tmp_path / "r.yaml")
    done = invoke("run", "--resume", str(path), "--plan", "42")
    assert done.output == ("error: --resume takes its case and plans from the report; drop "
                           "--plan\n")
    bisect = tmp_path / "b.yaml"
    assert invoke("bisect", "minicpm5-2b-decode", "--lo", "30", "--hi", "33", "--trials",
                  "1", "--no-isolate", "--out", str(bisect)).exit_code == 0
    done = invoke("bisect", "--replay", str(bisect), "--lo", "3")
    assert done.output == ("error: --replay continues the logged bisect (--rerun runs it "
                           "again); drop --lo\n")
    done = invoke("bisect", "--replay", str(bisect), "--flaky-as", "bad")
    assert "drop --flaky-as" in done.output


def test_continuing_after_a_stop_adds_no_trial_past_the_plans_count(tmp_path, ctrl_c_once):
    calls = ctrl_c_once(lambda spec, n: n == 2)
    out = tmp_path / "r.yaml"
    first = invoke("run", "minicpm5-2b-decode", "--plan", "42", "--trials", "2",
                   "--no-isolate", "--out", str(out))
    assert first.exit_code == 130
    assert [t.status for t in load_report(out).plans[0].trials] == ["completed", "interrupted"]
    done = invoke("run", "--resume", str(out))
    assert done.exit_code == 0, done.output
    trials = load_report(out).plans[0].trials
    assert [(t.index, t.status) for t in trials] == [(0, "completed"), (1, "completed")]
    # the interrupted trial, again in its place
    assert [spec.trial for spec in calls] == [0, 1, 1]
    assert checked(out) == [f"{out}: valid"]
