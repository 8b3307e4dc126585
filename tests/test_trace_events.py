"""The amdxdna driver's trace events around each trial: recorded where tracefs lets this
user read them, and otherwise the report says how to enable them (the events as the driver
sources declare them: harness.logs.trace_events)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from machines import NOBODY, Tree, on_the_hardware_path, stand_in_pack, strix_halo

from harness.app.cli import main
from harness.logs.trace_events import TraceReader, parse_trace, trial_entry
from harness.probe.readers import Identity
from harness.probe.trace_access import tracefs_facts
from harness.report.fileformat import load_report

ROOT = Identity(uid=0, gids=(0,), user="root", emulate=True)
HEADER = ("# tracer: nop\n#\n# entries-in-buffer/entries-written: 2/2   #P:32\n#\n"
          "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n"
          "#              | |         |   |||||     |         |\n")
# staging's xdna_job (its header has the opcode); the in-tree one ends at the text
JOB = "  python3-77  [001] d..1.  100.000100: xdna_job: fence=(context:4, seqno:1), " \
      "hwctx.1 seq#:1 job run, op=19\n"


def tracefs(tree: Tree, enabled: bool = True, mode: int = 0o644) -> None:
    for event in ("xdna_job", "amdxdna_debug_point", "mbox_set_tail"):
        tree.write(f"/sys/kernel/tracing/events/amdxdna/{event}/enable",
                   "1" if enabled else "0")
    tree.write("/sys/kernel/tracing/trace", HEADER + JOB, mode)


def test_the_buffer_is_read_as_ftrace_writes_it(tmp_path):
    lines = parse_trace(HEADER + JOB + "  <idle>-0  [000] ..s2.  101.5: sched_wakeup: x\n")
    assert [(x.timestamp, x.event) for x in lines] == [(100.0001, "xdna_job"),
                                                       (101.5, "sched_wakeup")]
    assert lines[0].text.endswith("job run, op=19")
    buffer = tmp_path / "trace"
    buffer.write_text(HEADER + JOB)
    reader = TraceReader(buffer)
    reader.mark()                                     # what came before is not this trial's
    with buffer.open("a") as out:
        out.write("  python3-77  [001] .....  102.000000: xdna_job: fence=(context:4, "
                  "seqno:2), hwctx.1 seq#:2 job timedout\n"
                  "  kworker-9  [002] .....  102.100000: sched_switch: not the driver's\n")
    entry = trial_entry(reader.read(), "/sys/kernel/tracing/trace", simulated=True)
    assert entry["counts"] == {"xdna_job": 1} and entry["timed_out"] == 1
    assert entry["lines"][0].startswith("SIMULATED python3-77  [001] .....  102.000000: "
                                        "xdna_job:")


def test_where_they_cannot_be_recorded_the_report_says_how(tmp_path):
    tree = Tree(tmp_path)
    absent = tracefs_facts(tree.sources(ROOT))
    assert absent["recording"] is False and "not mounted" in absent["why"]
    tracefs(tree, enabled=False)
    off = tracefs_facts(tree.sources(ROOT))
    assert off["recording"] is False and off["why"] == "the amdxdna trace events are off"
    assert off["fix"].startswith("enable them: `echo 1 | sudo tee "
                                 "/sys/kernel/tracing/events/amdxdna/enable`")
    assert off["events"] == ["amdxdna_debug_point", "mbox_set_tail", "xdna_job"]
    tracefs(tree, enabled=True, mode=0o600)
    (tree.root / "sys/kernel/tracing/events").chmod(0o700)
    hidden = tracefs_facts(tree.sources(NOBODY))          # a user, tracefs root-only
    (tree.root / "sys/kernel/tracing/events").chmod(0o755)
    assert hidden["recording"] is False and "not readable by this user" in hidden["why"]
    assert "run the harness as root" in hidden["fix"]
    on = tracefs_facts(tree.sources(ROOT))
    assert on["recording"] is True and on["enabled"] == on["events"]


def test_an_empty_tracing_folder_asks_for_a_mount_not_for_root(tmp_path):
    # root, and /sys/kernel/tracing there but empty (tracefs not mounted on it): the fix is
    # to mount it; running as root, which this already is, would change nothing
    tree = Tree(tmp_path)
    (tree.root / "sys/kernel/tracing").mkdir(parents=True)
    empty = tracefs_facts(tree.sources(ROOT))
    assert empty["recording"] is False
    assert empty["why"] == "tracefs is not mounted on /sys/kernel/tracing (the folder is empty)"
    assert empty["fix"] == "mount it: `sudo mount -t tracefs nodev /sys/kernel/tracing`"
    assert "root" not in empty["fix"] + empty["why"]


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    tree = strix_halo(tmp_path)
    pack = stand_in_pack(tmp_path / "pack", "Trace")
    on_the_hardware_path(monkeypatch, tree, pyxrt="trace_pyxrt")
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    sys.modules.pop("trace_pyxrt", None)
    return tree, pack


def run(pack: Path, out: Path):
    return CliRunner().invoke(main, ["run", "minicpm5-2b-decode", "--plan", "42", "--backend",
                                     "xrt", "--xclbins", str(pack), "--trials", "1",
                                     "--no-isolate", "--no-xrt-smi-validate",
                                     "--out", str(out)])


def test_each_trial_keeps_the_driver_s_events_where_they_are_readable(machine, tmp_path):
    tree, pack = machine
    tracefs(tree)
    out = tmp_path / "r.yaml"
    result = run(pack, out)
    assert result.exit_code == 1, result.output
    report = load_report(out)
    assert report.environment["trace_events"]["recording"] is True
    trace = report.plans[0].trials[0].trace_events
    assert trace["source"] == "/sys/kernel/tracing/trace" and trace["simulated"] is True
    # the runlist's "sent to device" and "job timedout", then the recovery check's "sent to
    # device"
    assert trace["counts"] == {"xdna_job": 3} and trace["timed_out"] == 1
    assert all(line.startswith("SIMULATED ") for line in trace["lines"])
    assert not any("sched_switch" in line for line in trace["lines"])    # not the driver's
    assert not any("100.000100" in line for line in trace["lines"])      # before the trial
    md = CliRunner().invoke(main, ["report", "render", str(out)]).output
    assert "<summary>Driver trace events of this trial (3 from /sys/kernel/tracing/trace; " \
           "job timedout: 1)</summary>" in md
    assert "| driver trace events | recorded around each trial (amdxdna_debug_point, " \
           "mbox_set_tail, xdna_job) |" in md


def test_without_them_the_report_says_how_to_enable_them(machine, tmp_path):
    tree, pack = machine
    tracefs(tree, enabled=False)
    out = tmp_path / "r.yaml"
    run(pack, out)
    report = load_report(out)
    assert report.plans[0].trials[0].trace_events is None
    md = CliRunner().invoke(main, ["report", "render", str(out)]).output
    row = next(x for x in md.splitlines() if x.startswith("| driver trace events |"))
    assert "the amdxdna trace events are off; enable them: `echo 1 \\| sudo tee " \
           "/sys/kernel/tracing/events/amdxdna/enable`" in row
    assert os.environ["HARNESS_ROOT"] == str(tree.root)
