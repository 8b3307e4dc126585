"""A user's saved trace buffer (`cat /sys/kernel/tracing/trace`) with the amdxdna driver's
`xdna_job` events is read by `diagnose` as the kernel log's timeout lines are: a "job
timedout" is the driver's timer firing (the one record of a timeout on in-tree 7.0), the
event texts tell the tree (harness.model.trace_tree, per flavour row), and the time from
the job's send to its timeout is a time to failure. The texts are each tree's as the
sources print them (trace_tree's sources: Linux include/trace/events/amdxdna.h
``fence=(context:%llu, seqno:%lld), %s seq#:%lld %s``, staging's with ``, op=%u``)."""

from __future__ import annotations

from diagkit import invoke
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.model.trace_tree import FREE, IN_TREE, LEGACY, STAGING, TraceTree
from harness.report.diagnosis.artefacts import read_artefact
from harness.report.diagnosis.artefacts.artefact_text import ArtefactText
from harness.report.diagnosis.artefacts.trace_buffer import ENABLE, parse
from harness.report.diagnosis.vocabulary import HARDWARE, Observed, artefact_observed
from harness.report.model import SIMULATED
from harness.sim.trace_log import TraceLog

# ftrace's header as `cat trace` prints it with the irq-flags column (kernel/trace/trace.c
# print_func_help_header_irq)
HEADER = """# tracer: nop
#
# entries-in-buffer/entries-written: 5/5   #P:16
#
#                                _-----=> irqs-off/BH-disabled
#                               / _----=> need-resched
#                              | / _---=> hardirq/softirq
#                              || / _--=> preempt-depth
#                              ||| / _-=> migrate-disable
#                              |||| /     delay
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
"""
KERNEL_7_0 = "[    0.000000] Linux version 7.0.0-13-generic (buildd@lcy02) (gcc 15) #13\n"


def job(tree: TraceTree, what: str, at: str, seq: int, task: str = "flm-4242",
        columns: str = "[003] ..... ") -> str:
    op = ", op=0" if tree.with_op else ""
    return (f"  {task:>14} {columns} {at}: xdna_job: fence=(context:1025, seqno:{seq + 1}), "
            f"hwctx.1 seq#:{seq} {what}{op}\n")


def in_tree_timeout(columns: str = "[003] ..... ") -> str:
    """A completed job, then one sent and timed out 60.5 s later (drm_sched's worker)."""
    assert IN_TREE.fence is not None and IN_TREE.timedout is not None
    return (job(IN_TREE, IN_TREE.run, "1003.100000", 0, columns=columns)
            + job(IN_TREE, IN_TREE.fence, "1003.104000", 0, "kworker/3:1-88", columns)
            + job(IN_TREE, FREE, "1003.104100", 0, "kworker/3:1-88", columns)
            + job(IN_TREE, IN_TREE.run, "1003.200000", 1, columns=columns)
            + job(IN_TREE, IN_TREE.timedout, "1063.700000", 1, "kworker/u64:2-91", columns))


def test_an_in_tree_buffer_is_diagnosed_not_refused(tmp_path):
    """Before: "nothing to diagnose: none of its lines is ..."."""
    path = tmp_path / "trace.txt"
    path.write_text(HEADER + in_tree_timeout())
    result = invoke("diagnose", str(path))
    assert result.exit_code == 0, result.output
    assert "nothing to diagnose" not in result.output
    assert f"read: {path} as trace buffer (tracefs): 17 lines" in result.output
    assert "driver amdxdna (mainline: its trace events)" in result.output


def test_job_timedout_is_the_drivers_timeout_with_its_time_to_failure(tmp_path):
    path = tmp_path / "both.txt"
    # the kernel's release (a dmesg beside it) gives the in-tree driver's timer: 60 s
    path.write_text(KERNEL_7_0 + HEADER + in_tree_timeout())
    observed = read_artefact(path)
    assert isinstance(observed, Observed) and observed.source == HARDWARE
    timeouts = [s for s in observed.signs if s.kind == "driver-timeout"]
    assert [(s.cite.line, s.facts) for s in timeouts] == [(18, {"event": "job_timedout"})]
    assert "job timedout" in timeouts[0].cite.value
    assert observed.stack.flavour == "mainline"
    assert observed.timers.driver.earliest_s == 60.0
    (arm,) = observed.arms
    assert (arm.failed, arm.completed, arm.events["job_timedout"]) == (1, 0, 1)
    ((ms, kind),) = arm.ttf
    assert round(ms) == 60500 and kind == "driver-timer"


def test_without_the_kernel_the_time_is_kept_and_the_timer_unknown(tmp_path):
    path = tmp_path / "trace.txt"
    path.write_text(HEADER + in_tree_timeout())
    observed = read_artefact(path)
    assert isinstance(observed, Observed)
    ((ms, kind),) = observed.arms[0].ttf
    assert round(ms) == 60500 and kind == "timer-unknown"


def test_the_columns_ftrace_and_trace_cmd_print(tmp_path):
    """Without the irq-flags column (options/irq-info off), with the TGID column
    (options/record-tgid), and trace-cmd report's spacing: the same timeout, read."""
    for columns in ("[003] ", "(   4242) [003] ..... ", " [003]  d..1. "):
        observed = artefact(tmp_path, in_tree_timeout(columns))
        assert [s.kind for s in observed.signs] == ["driver-timeout"], columns
        assert round(observed.arms[0].ttf[0][0]) == 60500


def test_a_timeout_whose_send_left_the_buffer_has_no_time(tmp_path):
    assert IN_TREE.timedout is not None
    observed = artefact(tmp_path, job(IN_TREE, IN_TREE.timedout, "1063.7", 1))
    (arm,) = observed.arms
    assert arm.failed == 1 and arm.ttf == []


def test_staging_traces_no_timeout_and_is_told_by_its_texts(tmp_path):
    """Staging's xdna_job: "job run" and "job free" with the opcode, its job queue apart;
    aie2_sched_job_timedout traces nothing, so no timeout is read from it."""
    queue = "  flm-4242 [003] ..... 1003.100100: xdna_job_queue: sent to device\n"
    observed = artefact(tmp_path, job(STAGING, STAGING.run, "1003.1", 0) + queue
                        + job(STAGING, FREE, "1003.2", 0))
    assert observed.stack.flavour == "staging"
    assert observed.signs == [] and observed.arms == []


def test_the_legacy_tree_is_told_by_its_fence_text(tmp_path):
    assert LEGACY.fence is not None
    observed = artefact(tmp_path, job(LEGACY, LEGACY.run, "1003.1", 0)
                        + job(LEGACY, LEGACY.fence, "1003.2", 0))
    assert observed.stack.flavour == "oot"


def test_texts_both_drm_trees_trace_leave_the_tree_unsaid(tmp_path):
    """"job run, op=0" and "job free, op=0" alone: staging or legacy."""
    observed = artefact(tmp_path, job(STAGING, STAGING.run, "1003.1", 0)
                        + job(STAGING, FREE, "1003.2", 0))
    assert observed.stack.flavour is None


def test_the_simulated_drivers_buffer(tmp_path):
    """The simulated driver's buffer as its report keeps it (each line marked SIMULATED):
    the simulated stack's, never a machine's."""
    clock = [0.0]
    log = TraceLog(IN_TREE, lambda: clock[0], 4242)
    log.ended("hwctx.1", 0, 0, 0.0, True)
    clock[0] = 2_000_000.0
    log.timedout("hwctx.1", 0, 1)
    lines = log.text().splitlines()
    marked = "\n".join(f"SIMULATED {x}" if not x.startswith("#") else x for x in lines)
    observed = artefact(tmp_path, marked + "\n")
    assert observed.source == SIMULATED
    assert [s.kind for s in observed.signs] == ["driver-timeout"]
    plain = artefact(tmp_path, log.text())
    assert plain.source == HARDWARE and [s.kind for s in plain.signs] == ["driver-timeout"]


def test_a_buffer_without_the_drivers_events_says_how_to_turn_them_on(tmp_path):
    observed = artefact(tmp_path, HEADER + "  <idle>-0  [000] ..s2.  101.5: sched_wakeup: x\n")
    assert any(ENABLE in read for read in observed.read_as)
    assert observed.signs == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=80),
                max_size=12))
def test_any_text_is_read_or_left_whole(lines):
    """The parser takes only trace lines and headers, and never fails on other text."""
    text = ArtefactText("f.txt", lines)
    free = {i for i, line in enumerate(lines) if line.strip()}
    claim = parse(text, free, artefact_observed("f.txt"))
    if claim is not None:
        assert claim.lines <= free


def artefact(tmp_path, body: str) -> Observed:
    path = tmp_path / "trace.txt"
    path.write_text(body)
    observed = read_artefact(path)
    assert isinstance(observed, Observed), observed
    return observed


def test_a_root_prompt_in_the_paste_is_not_the_buffers_header(tmp_path):
    """A paste from a root shell: its prompt starts with `#` too."""
    path = tmp_path / "paste.txt"
    path.write_text("# cat /sys/kernel/tracing/trace\n" + HEADER + in_tree_timeout())
    observed = read_artefact(path)
    assert isinstance(observed, Observed)
    assert observed.read_as == ["trace buffer (tracefs): 17 lines", "1 line not read (line 1)"]
