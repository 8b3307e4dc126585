"""`diagnose` of a `capture record` report (its `engine_run` section), as the other reports
are read: within the run's kernel log and then the check afterwards, the lines from where a
wedge begins are the wedge's (docs/diagnosis.md, "A wedged device": the contexts a wedged
firmware refuses are not `resources` or `contention`), and every finding of the engine's
run cites the field it was read from (`engine_run.time_to_failure`, not a plan the report
does not have). The simulated stack plays the wedge (`wedge:1`: amd/xdna-driver PR #1585's
firmware refusing every context after a timeout) through `sim exec`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from test_recorded_run import record, sim_exec, xclbin  # noqa: F401 (a fixture)

from harness.app.cli import main
from harness.report.diagnosis import diagnose
from harness.report.fileformat import load_report


# every flavour's wedge: in-tree 7.0 logs no timeout line (234824b1 aie2_ctx.c
# aie2_sched_job_timedout), so only the program's TIMEOUT says the firmware's refusal of a
# context came after the commands ran (the driver's restart of the hung one)
@pytest.fixture(params=["staging", "mainline", "oot"])
def wedged_run(xclbin, tmp_path, request):  # noqa: F811 (the fixture above)
    result = record("--no-capture", "--profile", f"{request.param},hang-at:30,wedge:1",
                    "--out", "run", "--", *sim_exec(xclbin))
    assert result.exit_code == 3, result.output
    return tmp_path / "run" / "report.yaml"


def test_the_wedge_s_own_refusals_are_no_evidence_of_contexts_held(wedged_run):
    diagnosis = diagnose([wedged_run])
    assert diagnosis.wedged
    for cause in ("resources", "contention"):
        assert not diagnosis.entry(cause).supports, cause
    cited = [str(c) for f in diagnosis.wedged for c in f.cites]
    # the legacy tree's check afterwards fails on a dead context, which its restart's own
    # lines say ("connect failed", part_ctx_start)
    assert any("engine_run.device_after.state" in c for c in cited) or any(
        "engine_run.device_after.kernel_log.events = context_connect_failed" in c
        for c in cited)


def test_the_engine_s_run_is_cited_by_the_fields_it_was_read_from(wedged_run):
    entries = json.loads(CliRunner().invoke(main, ["diagnose", str(wedged_run),
                                                   "--json"]).stdout)
    cites = [c for e in entries for side in ("for", "against") for f in e.get(side, [])
             for c in f["cites"]]
    assert any("engine_run.time_to_failure = driver-timer" in c for c in cites), cites
    assert not any("plans[" in c or "trials[" in c for c in cites), cites


def test_the_device_afterwards_reads_wedged_on_every_flavour(wedged_run):
    """The check afterwards names the wedge from what the device answered it (the legacy
    tree's dead context: every submit -EIO, aie2_ctx_runqueue.c aie2_rq_submit_enter; the
    in-tree and staging firmware refusing the context, PR #1585), not from the simulated
    trial's own `wedged` mark, and offers a reboot, never a reload or a rescan first
    (harness.model.wedge)."""
    after = load_report(wedged_run).sections["engine_run"]["device_after"]
    assert after["answers"] is False
    assert after["wedged"] is True and after["state"].startswith("wedged")
    assert after["recovery"]["last_error"] != "wedged"
    assert "modprobe" not in after["fix"] and after["fix"].startswith(
        ("reboot", "close every other program"))
    assert "reboot" in after["clears"]
