"""The kernel's trace buffer as a user saves it (`cat /sys/kernel/tracing/trace`, its `#`
header block and one line an event, ``TASK-PID [CPU] FLAGS TIMESTAMP: EVENT: TEXT`` with
or without the irq-flags and TGID columns; `trace-cmd report` prints the same columns),
holding the amdxdna driver's events (`harness.logs.trace_events` reads the lines, as a
trial on hardware does).

A "job timedout" event is read as the kernel log's timeout lines are: the driver's timer
fired (in-tree 7.0 prints no kernel-log line on a timeout: the event is its one record).
Which tree traced the jobs is told by the `xdna_job` texts each tree traces
(`harness.model.trace_tree`, one per flavour row): in-tree "sent to device" / "signaled
fence" / "job timedout" without ``, op=N``; staging "job run" with it, and its
`xdna_job_queue` events; the legacy tree "job run" and "signaling fence" with it (and the
legacy-only events). Each timed-out job whose send the buffer still holds gives a time to
failure, from its "sent to device" or "job run" to its "job timedout", the two stamps of
the same clock (`harness.logs.trace_events.trace_jobs` pairs them by fence). A
simulated run's events, as its report keeps them, carry the SIMULATED mark: such a buffer
is the simulated stack's, never a machine's.
"""

from __future__ import annotations

from harness.logs.kernel_log import SIMULATED_MARK
from harness.logs.trace_events import EVENTS, TraceLine, parse_trace_line, trace_jobs
from harness.model.drivers import FLAVOURS
from harness.model.trace_tree import FREE, TraceTree
from harness.report.diagnosis.artefacts.artefact_text import ArtefactText, Claim
from harness.report.diagnosis.artefacts.outcomes_table import TIMER_UNKNOWN
from harness.report.diagnosis.vocabulary import UNKNOWN_WORK, Arm, Observed
from harness.report.model import SIMULATED
from harness.report.timing import AT_ONCE, classify

KIND = "trace-buffer"
HEADER = "# tracer:"
JOB_EVENT = "xdna_job"
# events only one tree declares (trace_events' docstring: staging's job queue, the legacy
# tree's poll handler and trace point)
TREE_ONLY_EVENTS = {"xdna_job_queue": "staging", "uc_irq_handle": "staging",
                    "mbox_poll_handle": "oot", "__amdxdna_trace_point": "oot"}
ENABLE = "echo 1 | sudo tee /sys/kernel/tracing/events/amdxdna/enable"


def parse(text: ArtefactText, free: set[int], observed: Observed) -> Claim | None:
    header = _header_lines(text, free)
    events: list[tuple[int, TraceLine]] = []
    simulated = False
    for index in sorted(free):
        shown = text.lines[index]
        marked = shown.startswith(SIMULATED_MARK + " ")
        # a simulated run's events as its report keeps them (trace_events.trial_entry)
        line = parse_trace_line(shown[len(SIMULATED_MARK) + 1:] if marked else shown)
        if line is not None:
            events.append((index, line))
            simulated = simulated or (marked and line.event in EVENTS)
    driver = [(i, x) for i, x in events if x.event in EVENTS]
    traced = bool(header)
    if not driver and not traced:
        return None
    claim = Claim("trace buffer (tracefs)" if traced else "trace events",
                  {i for i, _ in events} | header)
    if simulated:
        observed.source = SIMULATED
    if not driver:
        claim.notes.append(f"it holds no amdxdna event (they are off unless turned on: "
                           f"{ENABLE})")
        return claim
    _tree(text, driver, observed)
    _timeouts(text, driver, observed)
    return claim


def _header_lines(text: ArtefactText, free: set[int]) -> set[int]:
    """The `#` block ftrace prints from its ``# tracer:`` line on (a root shell's prompt
    elsewhere in a paste starts with `#` too, and is not the buffer's)."""
    out: set[int] = set()
    for index in sorted(free):
        if text.lines[index].startswith(HEADER) or (index - 1 in out and
                                                    text.lines[index].startswith("#")):
            out.add(index)
    return out


def _tree(text: ArtefactText, driver: list[tuple[int, TraceLine]], observed: Observed
          ) -> None:
    """The flavour whose tree traces what the buffer shows, where only one does."""
    jobs = [(i, x) for i, x in driver if x.event == JOB_EVENT]
    names = {TREE_ONLY_EVENTS[x.event] for _, x in driver if x.event in TREE_ONLY_EVENTS}
    rows = [row for row in FLAVOURS.values()
            if (not names or names == {row.name}) and jobs
            and all(_traces(row.trace, x.text) for _, x in jobs)]
    if len(rows) != 1 and not (names and len(names) == 1 and not jobs):
        return
    row = rows[0] if len(rows) == 1 else FLAVOURS[names.pop()]
    observed.stack.flavour = observed.stack.flavour or row.name
    first = (jobs or driver)[0][0]
    observed.stack.set("driver", f"amdxdna ({row.name}: its trace events)",
                       text.cite(first))


def _traces(tree: TraceTree, job_text: str) -> bool:
    """Whether `tree` traces an `xdna_job` event of this text (its texts, and ``, op=N``
    at the end where the tree prints it)."""
    has_op = ", op=" in job_text
    texts = {tree.run, FREE} | {t for t in (tree.fence, tree.timedout) if t}
    body = job_text.rsplit(", op=", 1)[0] if has_op else job_text
    return has_op == tree.with_op and any(body.endswith(" " + t) for t in texts)


def _timeouts(text: ArtefactText, driver: list[tuple[int, TraceLine]], observed: Observed
              ) -> None:
    """Each "job timedout" as the driver's timeout sign, and one arm of the traced jobs
    that timed out, each with its time from send to timeout where the buffer has both."""
    jobs, timeouts = trace_jobs([x for _, x in driver])
    if not timeouts:
        return
    # the lines trace_jobs read as timeouts, in its order
    timed_lines = [i for i, x in driver if trace_jobs([x])[1]]
    sent = {job.key: job.sent_s for job in jobs}
    arm = Arm(file=text.file, position=len(observed.arms), name="traced jobs",
              label="the traced jobs", workload=UNKNOWN_WORK, stand_in=False,
              group=f"{text.file}#trace", runs=[], line=timed_lines[0] + 1)
    for index, (at, key) in zip(timed_lines, timeouts, strict=True):
        observed.sign("driver-timeout", text.cite(index), event="job_timedout")
        arm.failed += 1
        arm.states["TIMEOUT"] += 1
        arm.events["job_timedout"] += 1
        if key in sent and at >= sent[key]:
            ms = (at - sent[key]) * 1000.0
            kind = classify(ms, observed.timers)
            if observed.timers.driver.window is None and kind != AT_ONCE:
                kind = TIMER_UNKNOWN
            arm.ttf.append((ms, kind))
    observed.arms.append(arm)
