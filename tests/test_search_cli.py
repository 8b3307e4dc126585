"""`bisect` and `sweep` as a user runs them, on the simulated stack, trials in-process."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from harness.app.cli import main
from harness.model.errors import BadInput
from harness.report.fileformat import load_report
from harness.search.sweep import parse_depths

CAP = "inflight-cap:37"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def report_path(result) -> Path:
    return Path([x for x in result.stdout.splitlines() if x.startswith("report: ")][0][8:])


def trials_in(report) -> int:
    return sum(len(p.trials) for p in report.plans)


def test_bisect_finds_38_within_log2_plus_2_probes_of_k_trials():
    k = 3
    result = invoke("bisect", "minicpm5-2b-decode", "--lo", "1", "--hi", "128", "--trials",
                    str(k), "--profile", CAP, "--no-isolate")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith("backend: SIMULATED")
    # the answer first, labelled; the hypothesis that made it and the full label below
    assert lines[1:4] == [
        "first failing depth 38 (37: COMPLETED 6/6; 38: TIMEOUT 6/6) [SIMULATED]",
        f"SIMULATED: the outcome follows from the injected hypothesis by construction: {CAP} "
        "makes every runlist of more than 37 commands fail (the firmware wedges with more "
        "than 37 queued on one context).",
        f"[SIMULATED, profile mainline,{CAP}]"]
    report = load_report(report_path(result))
    assert trials_in(report) <= (math.ceil(math.log2(128)) + 2) * k
    section = report.sections["bisect"]
    assert section["answer"]["first"] == 38 and section["answer"]["kind"] == "exact"
    assert [e["x"] for e in section["log"]][-2:] == [38, 37]
    assert section["log"][-1]["confirmation"] is True
    assert "Bisecting: 125 depths left to test after this" in result.stderr
    assert "Confirming: re-testing depth 38" in result.stderr


def test_bisect_with_chunking_and_the_chunk_direction():
    chunked = invoke("bisect", "minicpm5-2b-decode", "--lo", "1", "--hi", "128", "--chunk",
                     "21", "--trials", "1", "--profile", CAP, "--no-isolate")
    assert "no failing depth in 1..128" in chunked.stdout
    largest = invoke("bisect", "minicpm5-2b-decode", "--chunks-at", "42", "--trials", "1",
                     "--profile", CAP, "--no-isolate")
    assert "largest chunk size that completes at depth 42: 37" in largest.stdout


def test_the_chunk_answer_carries_the_counts_not_the_depth_answers_prose():
    """Chunk mode words its own answer around the counts the bisection gives, taken as
    they are, not cut out of the depth answer's text at its first "(": that cut carried
    the depth answer's ": the boundary is at or below 38" into the sentence."""
    below = invoke("bisect", "minicpm5-2b-decode", "--chunks-at", "42", "--lo", "38",
                   "--trials", "1", "--profile", CAP, "--no-isolate")
    assert below.stdout.splitlines()[1] == (
        "even chunk size 38 fails at depth 42 (38: TIMEOUT 1/1); try a lower --lo "
        "[SIMULATED]")


def test_budget_stops_cleanly_and_replay_continues_without_rerunning(tmp_path):
    out = tmp_path / "b.yaml"
    first = invoke("bisect", "minicpm5-2b-decode", "--lo", "1", "--hi", "128", "--trials",
                   "2", "--profile", CAP, "--no-isolate", "--max-trials", "5", "--out",
                   str(out))
    assert first.exit_code == 5
    assert "stopped early: first failing depth in" in first.stdout
    assert f"continue with `runlist-harness bisect --replay {out}`" in first.stdout
    stopped = load_report(out)
    assert trials_in(stopped) == 5 and stopped.sections["bisect"]["answer"]["kind"] == \
        "incomplete"
    again = invoke("bisect", "--replay", str(out))
    assert "first failing depth 38" in again.stdout
    banner, continuing = again.stdout.splitlines()[:2]       # the banner it began with
    assert banner.startswith(f"backend: SIMULATED stack, profile mainline,{CAP} (hypothesis")
    assert continuing == f"continuing the bisect in {out}"
    done = load_report(out)
    # Depths measured before the stop are not measured again; only the two confirmations
    # re-test (the probe cut short by the budget is run whole).
    assert {p.name for p in done.plans if len(p.trials) == 4} == {"37", "38"}
    assert max(len(p.trials) for p in done.plans) == 4
    assert [len(done.plan(n).trials) for n in ("64", "32")] == [2, 2]


def test_a_bisect_stopped_mid_probe_replays_reusing_its_trials_and_the_log_accounts(
        tmp_path, ctrl_c_once):
    """Stopped in the middle of a probe (Ctrl-C here; a kill leaves the same in-flight
    trial, found interrupted on reopening): the replay uses the probe's finished trials,
    and every finished trial of every plan is one the log says a probe used."""
    ctrl_c_once(lambda spec, n: n == 5)            # the second trial of the second probe (K=3)
    out = tmp_path / "b.yaml"
    first = CliRunner().invoke(main, ["bisect", "minicpm5-2b-decode", "--lo", "1", "--hi",
                                      "128", "--trials", "3", "--profile", CAP,
                                      "--no-isolate", "--out", str(out)])
    assert first.exit_code == 130
    cut = load_report(out)
    assert [t.status for t in cut.plan("32").trials] == ["completed", "interrupted"]
    again = invoke("bisect", "--replay", str(out))
    assert "first failing depth 38" in again.stdout
    done = load_report(out)
    logged: dict[str, list[int]] = {}
    for entry in done.sections["bisect"]["log"]:
        logged.setdefault(entry["plan"], []).extend(entry["trials"])
    for plan in done.plans:
        finished = sorted(t.index for t in plan.finished())
        assert sorted(logged.get(plan.name, [])) == finished, plan.name
    assert len(done.plan("32").finished()) == 3      # 1 reused + 2 run, not 3 more


def test_replay_rerun_writes_a_new_report(tmp_path):
    out = tmp_path / "b.yaml"
    invoke("bisect", "minicpm5-2b-decode", "--lo", "30", "--hi", "45", "--trials", "1",
           "--profile", CAP, "--no-isolate", "--out", str(out))
    rerun = invoke("bisect", "--replay", str(out), "--rerun", "--no-isolate")
    fresh = load_report(report_path(rerun))
    assert report_path(rerun) != out
    assert fresh.sections["bisect"]["replay_of"] == load_report(out).run_id
    assert fresh.sections["bisect"]["answer"]["first"] == 38


@pytest.mark.parametrize("args, words", [
    (["--lo", "5", "--hi", "5"], "must be below"),
    (["--lo", "5"], "give --lo A --hi B"),
    (["--chunk", "21", "--chunks-at", "42"], "two different searches"),
    (["--lo", "1", "--hi", "9", "--chunk", "half"], "--chunk 'half'"),
])
def test_bisect_bad_input(args, words):
    result = CliRunner().invoke(main, ["bisect", "nop-depth", "--no-isolate", *args])
    assert result.exit_code == 2 and words in result.output


def test_replay_needs_a_bisect_report(tmp_path):
    run = invoke("run", "nop-depth", "--no-isolate", "--trials", "1")
    result = CliRunner().invoke(main, ["bisect", "--replay", str(report_path(run))])
    assert result.exit_code == 2 and "is a run report: continue it with `runlist-harness run " \
        "--resume" in result.output


def test_sweep_grid_and_report():
    result = invoke("sweep", "minicpm5-2b-decode", "--depths", "36..40:2", "--chunks",
                    "21,42", "--trials", "2", "--profile", CAP, "--no-isolate")
    assert result.exit_code == 0
    out = result.stdout
    assert "depth \\ chunk   21   42" in out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()
            if line.strip() and line.split()[0].isdigit()}
    assert rows == {"36": ["ok", "ok"], "38": ["ok", "TO"], "40": ["ok", "TO"]}
    report = load_report(report_path(result))
    section = report.sections["sweep"]
    assert section["complete"] is True and len(section["cells"]) == 6
    # 36@42 and 36@21... plans with chunk >= depth are measured once and shared
    assert trials_in(report) == 2 * len({c["plan"] for c in section["cells"]})


def test_sweep_mixed_cells_show_counts():
    result = invoke("sweep", "minicpm5-2b-decode", "--depths", "30", "--chunks", "30",
                    "--trials", "20", "--profile", "flaky:0.3,seed:4", "--no-isolate")
    line = [x for x in result.stdout.splitlines() if x.strip().startswith("30 ")][0]
    assert "ok" in line and "TO" in line and any(ch.isdigit() for ch in line.split()[1])


def test_sweep_budget():
    result = invoke("sweep", "minicpm5-2b-decode", "--depths", "1..10", "--chunks", "1,4",
                    "--trials", "2", "--max-trials", "7", "--no-isolate", "--backend", "sim")
    assert "stopped by the budget" in result.stdout and result.exit_code == 5
    assert trials_in(load_report(report_path(result))) == 7


def test_sweep_plot(tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "grid.png"
    result = invoke("sweep", "minicpm5-2b-decode", "--depths", "34..42", "--chunks", "21,42",
                    "--trials", "1", "--profile", CAP, "--no-isolate", "--plot", str(png))
    assert result.exit_code == 0 and f"plot: {png}" in result.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_sweep_plot_without_matplotlib_is_refused_before_running(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    result = CliRunner().invoke(main, ["sweep", "nop-depth", "--depths", "1..3", "--chunks",
                                       "1", "--plot", "x.png", "--no-isolate"])
    assert result.exit_code == 3 and "xdna-runlist-harness[plot]" in result.output
    assert not Path("reports").exists()


@given(st.integers(1, 500), st.integers(0, 500), st.integers(1, 50))
def test_parse_depths_ranges(lo, span, step):
    assert parse_depths(f"{lo}..{lo + span}:{step}") == list(range(lo, lo + span + 1, step))


@pytest.mark.parametrize("text", ["0..5", "9..3", "a..b", "1..5:0", "", "3,x"])
def test_parse_depths_rejects(text):
    with pytest.raises(BadInput):
        parse_depths(text)
