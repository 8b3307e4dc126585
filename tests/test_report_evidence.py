"""The kernel log in simulated runs' reports, per driver flavour, and reports that fit an
issue: the render's 65,536-character budget and what it says it left out."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from harness.app.cli import main
from harness.report.digest import Digest
from harness.report.fileformat import load_report
from harness.report.render import MAX_BODY, REPORTER_ROOM, render_markdown

RUN = ["run", "minicpm5-2b-decode", "--plan", "42", "--trials", "1", "--no-isolate"]


@pytest.mark.parametrize("profile, kinds, tree", [
    # staging >= 6.17: aie2_ctx.c aie2_tdr_detect, then aie2_set_cmd_timeout's capture
    ("staging", ["tdr_timeout", "timeout_capture"], "drm"),
    # staging < 6.17: aie2_tdr.c aie2_legacy_tdr_detect + aie2_tdr_work_func's warning
    ("staging,kernel:6.16", ["tdr_timeout", "no_progress", "timeout_capture"], "drm"),
    # mainline 7.0 (6fb7f2988832, before the capture patch): nothing in the kernel log
    ("mainline,kernel:7.0", [], None),
    # mainline 7.1: aie2_set_cmd_timeout prints the capture block
    ("mainline,kernel:7.1", ["timeout_capture"], "drm"),
    # legacy: aie2_tdr_work, then aie2_dump_ctx per context with its jobs
    ("oot", ["no_progress", "context_dump", "timeout_capture", "job"], "legacy"),
])
def test_each_flavour_s_report_shows_the_lines_it_prints(tmp_path, profile, kinds, tree):
    out = tmp_path / "r.yaml"
    result = CliRunner().invoke(main, [*RUN, "--profile", f"{profile},hang-at:30",
                                       "--out", str(out)])
    assert result.exit_code == 1, result.output
    log = load_report(out).plans[0].trials[0].kernel_log
    assert log["source"] == "simulated /dev/kmsg"
    found = [e["event"] for e in log["events"]]
    assert [k for k in dict.fromkeys(found) if k in kinds] == kinds
    assert log.get("tree") == tree
    if not kinds:
        assert log["lines"] == [] and "printed nothing" in log["note"]
    md = CliRunner().invoke(main, ["report", "render", str(out)]).output
    assert ("printed nothing during this trial" in md) == (not kinds)


def test_a_passing_simulated_trial_keeps_no_log(tmp_path):
    out = tmp_path / "r.yaml"
    result = CliRunner().invoke(main, [*RUN, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert load_report(out).plans[0].trials[0].kernel_log is None


def sweep_like(tmp_path, depths: int, chunks: list[int]) -> dict:
    """A sweep report's data at the size of depths x chunks, built from a real small one
    (running 1,280 trials would take half a minute)."""
    out = tmp_path / "s.yaml"
    result = CliRunner().invoke(main, ["sweep", "minicpm5-2b-decode", "--depths", "40..41",
                                       "--chunks", "41", "--trials", "1", "--profile",
                                       "inflight-cap:40,oot", "--yes", "--out", str(out)])
    assert result.exit_code in (0, 1), result.output
    data = load_report(out).to_dict()
    plan, cell = data["plans"][-1], data["sweep"]["cells"][-1]
    data["plans"], data["sweep"]["cells"] = [], []
    for depth in range(1, depths + 1):
        for chunk in chunks:
            name = f"{depth}/{chunk}"
            # the sample's trials, each dict its own (the digest only reads them: a deep
            # copy of every plan renders the same body, in a second more)
            data["plans"].append({**plan, "name": name,
                                  "trials": [dict(trial) for trial in plan["trials"]]})
            # neighbouring depths differ, so that no band of the grid folds into one row
            data["sweep"]["cells"].append({**cell, "depth": depth, "chunk": chunk,
                                           "plan": name, "counts": {
                                               "TIMEOUT" if depth % 2 else "COMPLETED": 1}})
    data["sweep"].update(depths=list(range(1, depths + 1)), chunks=chunks)
    return data


def test_a_1_to_256_by_5_sweep_renders_within_an_issue_body(tmp_path):
    data = sweep_like(tmp_path, 256, [1, 8, 21, 24, 42])
    body = render_markdown(Digest.of_document(data).view(True),
                           bundle=["s.bundle.tar.gz", "README.md", "report.md"])
    # what a maintainer reads, and room for the reporter's own words: no YAML padding it
    # toward GitHub's limit (it once left a reporter 462 characters)
    assert MAX_BODY - len(body) >= REPORTER_ROOM == 8_000
    assert "*The full report (YAML, every trial) is in the attached bundle, not here" in body
    assert "```yaml" not in body
    assert body.rstrip().endswith("`README.md`, `report.md`.")
    assert "| 256 |" in body                                     # the whole grid is there
    assert "What the driver and the firmware said" in body


def test_the_yaml_is_left_out_when_nothing_else_leaves_room(tmp_path):
    data = sweep_like(tmp_path, 700, [1, 2, 3, 4, 5])         # the grid alone nearly fills it
    body = render_markdown(Digest.of_document(data).view(True))
    assert len(body) <= MAX_BODY
    assert "Cut here to fit an issue (the whole render is" in body
