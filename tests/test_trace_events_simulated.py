"""What a simulated run records of its driver's trace events, as each tree emits them
(harness.model.trace_tree), and how the report and the diagnosis read them.

Facts pinned: the in-tree driver (Linux 7.0/7.1 as amd/xdna-driver 234824b1 and f13c7f41
import it, aie2_ctx.c) traces xdna_job "sent to device", "signaled fence", "job free" and
"job timedout", and 7.0 prints nothing to the kernel log on a timeout, so "job timedout"
is its one record (STACK.md 4, round 4); staging (856409ca aie2_ctx.c) traces "job run"
and "job free" with ", op=N" and nothing on a timeout; the legacy tree (856409ca
src/driver/amdxdna/aie2_ctx.c, TRACE_SYSTEM amdxdna_trace) "job run", "signaling fence",
"job free". The line format is include/trace/events/amdxdna.h's TP_printk.
"""

from __future__ import annotations

import pytest
from simkit import Rig, outcome

from harness.logs.trace_events import parse_trace
from harness.report.fileformat import load_report


def events(rig: Rig) -> list[str]:
    """Each event of the buffer as "SEQ TEXT" (what follows the context's name)."""
    return [line.text.split(" seq#:")[1] for line in parse_trace(rig.stack.trace.text())]


@pytest.mark.parametrize("profile, expected", [
    ("mainline", ["0 sent to device", "1 sent to device", "0 signaled fence", "0 job free",
                  "1 job timedout", "1 signaled fence", "1 job free"]),
    ("staging", ["0 job run, op=0", "1 job run, op=0", "0 job free, op=0", "1 job free, op=0"]),
    ("oot", ["0 job run, op=0", "1 job run, op=0", "0 signaling fence, op=0",
             "0 job free, op=0", "1 signaling fence, op=0", "1 job free, op=0"]),
])
def test_each_tree_emits_its_own_job_events(tmp_path, profile, expected):
    rig = Rig(tmp_path, f"{profile},hang-at:30")
    assert "TIMEOUT" in outcome(rig.runlist(42)[0])       # chains 24 + 18; the second hangs
    assert events(rig) == expected
    lines = parse_trace(rig.stack.trace.text())
    assert all(line.event == "xdna_job" for line in lines)
    assert lines[0].text.startswith("fence=(context:") and \
        f"{rig.stack.contexts[0].name} seq#:0" in lines[0].text


def test_the_default_profile_s_timeout_shows_its_trace_event_marked_simulated(tmp_path):
    from click.testing import CliRunner

    from harness.app.cli import main
    out = tmp_path / "r.yaml"
    done = CliRunner().invoke(main, ["reproduce", "--profile", "hang-at:30", "--trials", "1",
                                     "--no-control", "--out", str(out)])
    assert done.exit_code == 1, done.output
    report = load_report(out)
    failed, completed = report.plans[0].trials[0], report.plans[1].trials[0]
    # Linux 7.0 logs nothing on a timeout: its one record is the trace event
    assert not (failed.kernel_log or {}).get("events")
    trace = failed.trace_events
    assert trace["simulated"] and trace["timed_out"] == 1 and trace["source"] == \
        "simulated tracefs"
    assert all(line.startswith("SIMULATED ") for line in trace["lines"])
    assert any(line.endswith(" job timedout") for line in trace["lines"])
    assert completed.trace_events is None                 # kept for failed trials
    # the environment says the simulated driver records them, not this machine's tracefs
    recorded = report.environment["trace_events"]
    assert recorded["simulated"] and recorded["recording"] and "fix" not in recorded
    # and the diagnosis reads the event as it reads the driver's timeout lines
    import json

    from harness.report.diagnosis import diagnose
    assert "trace_events.timed_out = 1" in json.dumps(diagnose([out]).to_json())
