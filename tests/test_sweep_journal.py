"""A sweep's grid in the journal (report v4): its cells are journal entries, a later one for
a cell replacing an earlier one, its header holds only its rows and chunks, and the sweep
keeps nothing of a plan once it is measured but its counts; a v3 report, whose header holds
its cells, still reads, checks, renders and goes on with --replay."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from harness.app.cli import main
from harness.formats.yamlio import dump_yaml, load_yaml_text
from harness.report.fileformat import load_report
from harness.report.model import SCHEMA, SCHEMA_V3

SWEEP = ["sweep", "minicpm5-2b-decode", "--depths", "36..44:4", "--chunks", "21,42",
         "--trials", "1", "--no-isolate", "--profile", "inflight-cap:40"]
# 36 and 40 complete in one runlist (cap 40), 44 does not; every cut of 21 completes
GRID = {(36, 21): "COMPLETED", (36, 42): "COMPLETED", (40, 21): "COMPLETED",
        (40, 42): "COMPLETED", (44, 21): "COMPLETED", (44, 42): "TIMEOUT"}


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def journal_cells(path: Path) -> list[dict]:
    return [json.loads(line[2:])["cell"] for line in path.read_text().splitlines()
            if line.startswith('- {"cell": ')]


def header_of(path: Path) -> dict:
    return load_yaml_text(path.read_text().split("\njournal:\n")[0])


def grid_of(report) -> dict[tuple[int, int], str]:
    return {(c["depth"], c["chunk"]): next(iter(c["counts"]), "-")
            for c in report.sections["sweep"]["cells"]}


def test_a_sweep_s_cells_are_journal_entries_and_its_header_holds_none(tmp_path):
    out = tmp_path / "s.yaml"
    assert invoke(*SWEEP, "--out", str(out)).exit_code == 0
    header = header_of(out)
    assert header["schema"] == SCHEMA
    assert header["sweep"] == {"depths": [36, 40, 44], "chunks": [21, 42], "complete": True}
    cells = journal_cells(out)
    assert [(c["depth"], c["chunk"]) for c in cells] == list(GRID)
    assert cells[1] == {"depth": 36, "chunk": 42, "plan": "36", "counts": {"COMPLETED": 1}}
    assert grid_of(load_report(out)) == GRID            # readers put them back in the section
    assert invoke("report", "check", str(out)).stdout == f"{out}: valid\n"
    rendered = invoke("report", "render", str(out), "--format", "text").stdout
    assert "TIMEOUT" in rendered and "depth \\ chunk" in rendered


def test_a_replayed_sweep_s_cells_replace_those_its_stopped_run_wrote(tmp_path):
    out = tmp_path / "s.yaml"
    assert invoke(*SWEEP, "--max-trials", "2", "--out", str(out)).exit_code == 5
    stopped = journal_cells(out)
    assert len(stopped) == 6 and sum(1 for c in stopped if c["counts"]) == 2
    assert invoke("sweep", "--replay", str(out)).exit_code == 0
    assert len(journal_cells(out)) == 12                 # the stopped grid, then the whole
    report = load_report(out)
    assert grid_of(report) == GRID and len(report.sections["sweep"]["cells"]) == 6
    # a cell given again with the same counts is its newer entry, not a line given twice
    assert invoke("report", "check", str(out)).stdout == f"{out}: valid\n"


def as_v3(path: Path) -> None:
    """The report as the harness wrote it before v4: its cells in the header's sweep."""
    text = path.read_text()
    head, journal = text.split("\njournal:\n")
    comment = head.splitlines()[0]
    header = load_yaml_text(head)
    header["schema"] = SCHEMA_V3
    header["sweep"]["cells"] = journal_cells(path)
    kept = [line for line in journal.splitlines() if not line.startswith('- {"cell": ')]
    path.write_text(comment + "\n" + dump_yaml(header) + "journal:\n" + "\n".join(kept) + "\n")


def test_a_v3_sweep_report_with_its_grid_in_its_header_still_reads(tmp_path):
    out = tmp_path / "s.yaml"
    assert invoke(*SWEEP, "--out", str(out)).exit_code == 0
    as_v3(out)
    assert journal_cells(out) == [] and len(header_of(out)["sweep"]["cells"]) == 6
    report = load_report(out)
    assert report.schema == SCHEMA_V3 and grid_of(report) == GRID
    assert invoke("report", "check", str(out)).stdout == f"{out}: valid\n"
    assert "TIMEOUT" in invoke("report", "render", str(out), "--format", "text").stdout


def test_a_stopped_v3_sweep_goes_on_as_v4(tmp_path):
    out = tmp_path / "s.yaml"
    assert invoke(*SWEEP, "--max-trials", "3", "--out", str(out)).exit_code == 5
    as_v3(out)
    assert invoke("report", "check", str(out)).stdout == f"{out}: valid\n"
    assert invoke("sweep", "--replay", str(out)).exit_code == 0
    header = header_of(out)
    assert header["schema"] == SCHEMA and "cells" not in header["sweep"]
    assert grid_of(load_report(out)) == GRID
    assert invoke("report", "check", str(out)).stdout == f"{out}: valid\n"


def test_a_sweep_keeps_no_plan_nor_trial_once_measured(tmp_path):
    from harness.execution.backend import choose_backend
    from harness.execution.runner import RunOptions, open_run
    from harness.search.measure import Measurer
    from harness.search.sweep import depth_rows, run_sweep
    from harness.sources.load import load_case
    runner = open_run(load_case("minicpm5-2b-decode"), [], RunOptions(trials=2, isolate=False),
                      backend=choose_backend("sim", "inflight-cap:40"), xclbins_dir=None,
                      out=str(tmp_path / "s.yaml"), force=False, command="sweep")
    measurer = Measurer(runner, 2, None)
    grid, complete = run_sweep(measurer, depth_rows([36, 40, 44]), [21, 42], lambda text: None)
    assert complete and runner.report.plans == []        # the file holds them
    assert measurer.trials_held() == 2 * 6                # 6 distinct plans, 2 trials each
    assert {(c.depth, c.chunk): next(iter(c.counts)) for c in grid} == GRID
    # cells of one outcome share one mapping of counts
    assert grid[0].counts is grid[2].counts and grid[-1].counts is not grid[0].counts
    assert [c.plan.name for c in grid[4:]] == ["21+21+2", "42+2"]
