"""Reports as Markdown that pastes straight into a GitHub issue, or as plain text.

Both read a `ReportView` (`harness.report.digest`): the header, and what one pass over
the trials gathered, so that a report of any size renders in flat memory.

Markdown: a title that says SIMULATED (and the profile) when it was not
hardware, the verdict in one line, a table of plans and outcome counts (or
the bisect log, or the sweep grid), the failing runs, what the driver and the
firmware said about the first failure (kernel log, the firmware's timeout
report, recovery), the environment, the xclbin identities, and the report as
YAML in a collapsed `<details>`. The whole fits GitHub's 65,536-character issue
body: the YAML gets what room is left (whole, without per-trial detail, cut, or
left out, saying which), and the bundle (`harness.report.bundle`) carries everything.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from harness.formats.printable import escape_controls
from harness.formats.yamlio import dump_yaml, dump_yaml_within
from harness.logs.kernel_log import mark_simulated
from harness.model.plan import plan_file_stem, plan_label
from harness.model.results import counts_text, flow_text
from harness.report.digest import MAX_BODY, ReportView
from harness.report.evidence import (
    event_summary,
    firmware_rows,
    health_note,
    identity_rows,
    recovery_text,
)
from harness.report.failing import NOT_SAID, answering_driver, why_unnamed
from harness.report.header import (
    ReportHeader,
    as_header,
    mappings,
    read_environment,
    section,
)
from harness.report.model import (
    is_emulated,
    is_simulated,
    mapping,
    played_profile,
    source_tag,
)
from harness.report.placeholders import file_safe
from harness.report.provenance import (
    captured_note,
    control_notes,
    nop_note,
    sequence_note,
    stack_tables,
    what_ran_rows,
)
from harness.report.timing import timers_lines, trials_ttf_text
from harness.report.verdict import verdict_lines

MAX_FAILING_ROWS = 20
MAX_LOG_LINES = 80             # of the first failing trial's kernel log, in the render
MAX_EVENTS = 20
MAX_XRT_SMI = 3_000
YAML_EMBED_MAX = 8_000         # a short run's report is embedded whole; a longer one is not
REPORTER_ROOM = 8_000          # of an issue body's limit, left for what the reporter writes
BODY_BUDGET = MAX_BODY - REPORTER_ROOM


def title(data: ReportHeader | dict[str, Any]) -> str:
    header = as_header(data)
    case, backend = header.case.title_name, header.backend.raw
    if is_emulated(backend):
        version = header.backend.emulated_xrt_version or "?"
        return (f"{case}: {source_tag(backend)} NPU (XRT {version} over the emulated driver), "
                f"profile "
                f"{header.backend.profile} (not hardware evidence)")
    if is_simulated(backend):
        return (f"{case}: {source_tag(backend)} stack, profile {played_profile(backend)} "
                "(not hardware evidence)")
    if header.backend.kind == "flm-server":
        return f"{case}: through a running flm serve"
    generation = header.environment.npu.generation
    return f"{case}: hardware NPU" + (f" ({generation})" if generation else "")


def environment_rows(env: dict[str, Any]) -> list[tuple[str, str]]:
    """This machine as the probe read it, in full (the first screen's tables say which of
    it answered)."""
    typed = read_environment(env)
    npu, driver, xrt, system = typed.npu, typed.driver, typed.xrt, typed.system
    if npu.present is False:
        generation = "none on this machine"
    else:
        generation = npu.generation or "unknown"
    if driver.loaded:
        version = driver.version or npu.ioctl.driver_version or "version unknown"
        driver_text = f"{driver.module} {version}, flavour {driver.flavour}"
    else:
        driver_text = "not loaded" if driver.recorded else "not recorded"
    pyxrt = xrt.pyxrt
    xrt_text = (f"{pyxrt.xrt_version or 'version unknown'} ({pyxrt.file})"
                if pyxrt.recorded else (f"pyxrt does not import ({xrt.pyxrt_error})"
                                        if xrt.recorded else "not recorded"))
    return [
        ("NPU generation", generation),
        ("kernel", str(system.kernel or "?")),
        ("driver", driver_text),
        ("timeout rule", driver.timeout_rule or "-"),
        ("firmware", npu.firmware or "unknown"),
        ("power mode", npu.ioctl.power_mode or "unknown"),
        ("XRT", xrt_text),
        ("XRT libraries mapped", ", ".join(xrt.mapped) if xrt.mapped else "none"),
        ("memlock", f"soft {typed.memlock.soft}, hard {typed.memlock.hard}"),
        ("distribution", str(system.distribution or "?")),
        *identity_rows(typed.raw),
    ]


def failing_rows(view: ReportView) -> list[list[str]]:
    """One row per distinct failure: trials of a plan that failed alike share a row (their
    numbers in the trial column); for a bisect, the boundary's plans come first."""
    out = [[row.cells[0], _ranges(row.trials), *row.cells[1:], row.message]
           for row in view.failing]
    data = view.header
    bisect = view.typed.bisect
    first = bisect.first if bisect else None
    if bisect and first is not None:
        boundary = {str(e.get("plan")) for e in bisect.log
                    if e.get("x") in (first, first - 1)}
        labels = {record_label(p) for p in data.get("plans") or [] if p.get("name") in boundary}
        out.sort(key=lambda row: row[0] not in labels)
    return out


STOPPED_TEXT = {"interrupted": "interrupted", "in-flight": "in flight when the harness stopped"}


def stopped_text(view: ReportView) -> str | None:
    """The trials the harness stopped (or died during), which count neither as answers nor
    as failures; None when there were none."""
    if not view.stopped_count:
        return None
    named = "; ".join(f"{label} trial {number} ({STOPPED_TEXT.get(status, status)})"
                      for label, number, status in view.stopped)
    more = view.stopped_count - len(view.stopped)
    return ("Not counted (no answer from the stack, and not a failure): " + named
            + (f"; and {more} more" if more > 0 else ""))


def _ranges(numbers: list[int]) -> str:
    """``1-3, 5``: trial numbers, runs collapsed."""
    parts: list[str] = []
    for n in sorted(set(numbers)):
        if parts and parts[-1].split("-")[-1] == str(n - 1):
            parts[-1] = parts[-1].split("-")[0] + f"-{n}"
        else:
            parts.append(str(n))
    return ", ".join(parts)


def command_line(data: ReportHeader | dict[str, Any]) -> str:
    """The command that made the report, quoted for a POSIX shell so that it pastes and
    runs as it is."""
    header = as_header(data)
    argv = header.harness.argv or []
    if not isinstance(argv, list) or not argv:
        return f"runlist-harness {header.command}"
    # argv[0] is a path, `python -m harness`'s __main__.py or the entry point's name
    program = "reproduce_ert_timeout" if Path(str(argv[0])).name == \
        "reproduce_ert_timeout" else "runlist-harness"
    return shlex.join([program, *map(str, argv[1:])])


def harness_made_by(data: ReportHeader | dict[str, Any]) -> str:
    """Which harness wrote the report: its version, and its source commit when it ran from
    a git checkout."""
    harness = as_header(data).harness
    commit = harness.commit
    return (f"xdna-runlist-harness {harness.version}, "
            + (f"source commit {commit}" if commit else "source commit unknown (not run from "
               "a git checkout)"))


def command_markdown(command: str, made_by: str) -> list[str]:
    """The **Command:** lines: a code span that pastes as it is; a fenced block when the
    command holds a line break, which a code span would turn into a space."""
    if "\n" not in command and "\r" not in command:
        return [f"**Command:** {code_span(command)} ({_cell(made_by)})", ""]
    fence = "`" * max(3, _longest_backticks(command) + 1)
    return [f"**Command** ({_cell(made_by)}):", "", f"{fence}sh", command, fence, ""]


def code_span(text: str) -> str:
    """`text` as one Markdown code span whatever backticks it holds (CommonMark: a fence
    longer than any run inside, padded by a space when the text starts or ends with one)."""
    fence = "`" * (_longest_backticks(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _opt(value: Any) -> str:
    return "-" if value is None else str(value)


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0][:160] if text and text.strip() else "-"


def record_label(plan: dict[str, Any]) -> str:
    """A report's plan entry labelled as `harness.model.plan.plan_label` does."""
    return plan_label(str(plan.get("name")), plan.get("chunks") or [])


def _counts(plan: dict[str, Any]) -> str:
    summary = plan.get("summary") or {}
    by_state = summary.get("by_state") or {}
    if by_state:
        return counts_text(by_state)
    statuses = set(summary.get("by_status") or {})
    if "in-flight" in statuses:
        return "in flight when the harness stopped"
    if "interrupted" in statuses:
        return "interrupted before any trial finished"
    return "untested"


def plan_rows(view: ReportView) -> list[list[str]]:
    """plan | trials (those that got an answer: a stopped trial is not one) | outcome |
    expected | time to failure."""
    timers = view.typed.timers
    ttfs = view.plan_ttfs or [[] for _ in view.plan_trials]
    return [[record_label(p), str((p.get("summary") or {}).get("trials", trials)), _counts(p),
             "(control)" if p.get("control") else p.get("expect") or "-",
             trials_ttf_text(failed, timers) or "-"]
            for p, trials, failed in zip(view.header.get("plans") or [], view.plan_trials, ttfs,
                                         strict=False)]


def timers_markdown(header: ReportHeader) -> list[str]:
    """The timers the trials met, each with its source (reports before 0.3 have none)."""
    timers = header.timers
    if timers is None:
        return []
    return ["**Timers:** " + "; ".join(_cell(line) for line in timers_lines(timers)) + ".", ""]


def bisect_rows(section: dict[str, Any]) -> list[list[str]]:
    return [[str(i + 1), str(e.get("x")), str(e.get("plan")),
             "confirmation" if e.get("confirmation") else "bisection",
             counts_text(e.get("counts") or {}), str(e.get("class"))]
            for i, e in enumerate(section.get("log") or [])]


def sweep_table(section: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    chunks = section.get("chunks") or []
    frames = section.get("frames")
    cells = {(c.get("frame") or c["depth"], c["chunk"]): counts_text(c.get("counts") or {})
             for c in section.get("cells") or []}
    header = [("frame" if frames else "depth") + " \\ chunk"] + [str(c) for c in chunks]
    rows = [[str(r)] + [cells.get((r, c), "-") for c in chunks]
            for r in (frames or section.get("depths") or [])]
    return header, fold_rows(rows)


def fold_rows(rows: list[list[str]]) -> list[list[str]]:
    """Neighbouring rows whose cells are all alike become one, labelled ``first-last``
    (``1-37``; ``8-42 (3 tested)`` when not every depth between was): a sweep of a thousand
    depths reads as the few bands where it changes."""
    bands: list[tuple[list[str], list[str]]] = []        # labels, cells
    for row in rows:
        if bands and bands[-1][1] == row[1:]:
            bands[-1][0].append(row[0])
        else:
            bands.append(([row[0]], row[1:]))
    return [[_band(labels), *cells] for labels, cells in bands]


def _band(labels: list[str]) -> str:
    if len(labels) == 1:
        return labels[0]
    span = f"{labels[0]}-{labels[-1]}"
    numbers = [int(x) for x in labels if x.isdigit()]
    whole = len(numbers) == len(labels) and numbers[-1] - numbers[0] + 1 == len(numbers)
    return span if whole else f"{span} ({len(labels)} tested)"


def xclbin_rows(header: ReportHeader) -> list[list[str]]:
    rows = []
    for x in header.artifacts.xclbins:
        names = x.get("known_as") or []
        if names:
            known = names[0] + (f" (and {len(names) - 1} more)" if len(names) > 1 else "")
        else:
            known = "synthetic stand-in" if x.get("synthetic") else "-"
        rows.append([str(x.get("role")), str(x.get("uuid")), str(x.get("sha256")), known])
    return rows


def _yaml_for_embedding(view: ReportView, room: int) -> str:
    """The report as YAML when it is whole within `room` characters, else "": the render
    carries what a maintainer reads, and the report file and the bundle carry the rest (a
    YAML cut or stripped to fill an issue is padding, and leaves its reporter no room).
    Trials are measured one at a time and the count stops once they cannot fit, so a report
    of thousands of trials is never dumped whole."""
    text, complete = dump_yaml_within(view.header, room)
    if not complete:
        return ""
    left = room - len(text)
    for _, trial in view.kept or []:
        left -= len(dump_yaml([trial]))
        if left < 0:
            return ""
    whole = view.whole_document()
    if whole is None:
        return ""
    text = dump_yaml(whole)
    return text if len(text) <= room else ""


# -- Markdown ---------------------------------------------------------------------------

def _cell(value: Any) -> str:
    # "<" opens an HTML tag on GitHub: placeholders like <user-1> must stay visible.
    return str(value).replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;") \
        .replace("\n", "<br>")


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |",
             "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def render_markdown(view: ReportView, bundle: list[str] | None = None,
                    report_name: str | None = None) -> str:
    """The report as an issue body of at most BODY_BUDGET characters (GitHub's limit less
    room for the reporter's own words); `bundle` is the
    bundle's file name and the files in it, when one exists to attach; else, given the
    report's file name, the body says how to make one."""
    data = view.header
    typed = view.typed
    backend = typed.backend.raw
    lines = [f"## xdna-runlist-harness: {title(typed)}", ""]
    if is_simulated(backend):
        nature = ("the documented stack" if typed.backend.documented
                  else "the documented stack plus the hypothesis "
                  + ", ".join(typed.backend.deviations))
        if is_emulated(backend):
            lines += [f"> **{source_tag(backend)}.** XRT's own libraries answered, over the "
                      "harness's "
                      f"emulated driver: the driver and firmware are its model of {nature}, "
                      "not an NPU.", ""]
        else:
            lines += [f"> **{source_tag(backend)}.** These results come from the harness's "
                      "model of "
                      f"{nature}, not from an NPU.", ""]
    first, *reasons = verdict_lines(data.get("verdict"))
    lines += [f"**Verdict:** {_cell(first)}", ""]
    if reasons:
        lines += [f"- {_cell(reason)}" for reason in reasons] + [""]
    note = nop_note(data)
    if note:
        lines += [f"**What this tests:** {note}", ""]
    captured = captured_note(data)
    if captured:
        lines += [f"**What ran:** {_cell(captured)}.", ""]
    lines += [*command_markdown(command_line(typed), harness_made_by(typed))]
    lines += first_screen_markdown(view)
    if typed.bisect:
        section = data["bisect"]
        lines += ["### Bisect", "", f"**Answer:** {_cell(typed.bisect.answer_text)}", ""]
        lines += md_table(["step", "tested", "plan", "kind", "outcome", "class"],
                          bisect_rows(section)) + [""]
    elif data.get("sweep"):
        header, rows = sweep_table(data["sweep"])
        lines += ["### Sweep", ""] + md_table(header, rows) + [""]
    elif data.get("plans"):
        lines += ["### Plans", ""] + md_table(["plan", "trials", "outcome", "expected",
                                               "time to failure"], plan_rows(view)) + [""]
    engine = mapping(data.get("engine_run"))
    if engine:                            # capture record's report: its own timers' words
        from harness.report import engine_run_render
        lines += engine_run_render.markdown(engine, typed.timers, is_simulated(backend),
                                            cell=_cell, table=md_table,
                                            longest=_longest_backticks)
    else:
        lines += timers_markdown(typed)
    stopped = stopped_text(view)
    if stopped:
        lines += [_cell(stopped) + ".", ""]
    if data.get("server"):
        lines += server_markdown(data["server"])
    failing = failing_rows(view)
    if failing:
        shown = failing[:MAX_FAILING_ROWS]
        lines += ["### Failing runs", ""]
        lines += md_table(["plan", "trials", "runlist", "runs (chains)", "failing run",
                           "chain", "state", "from", "message"], shown)
        if len(failing) > len(shown):
            lines.append(f"\n{len(failing) - len(shown)} more distinct failures in the report"
                         + (f", and {view.failing_beyond} more failing runs" if
                            view.failing_beyond else "") + ".")
        if view.located:
            lines += ["", "Failing run located as: " + "; ".join(_cell(n) for n in view.located)
                      + "."]
        if view.unnamed:
            lines += ["", f"Where a row says \"not said\", {NOT_SAID}: "
                      + _cell(why_unnamed(*answering_driver(typed))) + "."]
        lines.append("")
    lines += evidence_markdown(view, MAX_LOG_LINES)
    lines += trace_markdown(view)
    lines += export_markdown(data.get("exports"), any(
        isinstance(p, dict) and p.get("control") for p in data.get("plans") or []), bundle)
    lines += ["### This machine in full (the probe's fingerprint)", ""] + md_table(
        ["", ""], [list(r) for r in environment_rows(typed.environment.raw)]) + [""]
    lines += xrt_smi_markdown(typed.environment.raw, data.get("xrt_smi_control"))
    xclbins = xclbin_rows(typed)
    if xclbins:
        stand_ins = typed.artifacts.stand_ins
        lines += ["### xclbins", ""]
        if stand_ins:
            lines += ["Synthesized stand-ins with the kernel signatures of the pack (no real "
                      "pack was present).", ""]
        lines += md_table(["role", "uuid", "sha256", "known as"], xclbins) + [""]
    footer = bundle_markdown(bundle) if bundle else how_to_bundle(report_name)
    head = "\n".join(lines)
    # the YAML only when it is short and whole, and never into the reporter's room
    room = min(YAML_EMBED_MAX, BODY_BUDGET - len(head) - len("\n".join(footer)) - 200)
    yaml_text = _yaml_for_embedding(view, room)
    if yaml_text:
        fence = "`" * max(3, _longest_backticks(yaml_text) + 1)
        tail = ["<details>", "<summary>Full report (YAML)</summary>", "", f"{fence}yaml",
                yaml_text.rstrip("\n"), fence, "", "</details>", ""]
    else:
        holder = "the attached bundle" if bundle else "the report file and its bundle"
        tail = [f"*The full report (YAML, every trial) is in {holder}, not here: this body "
                "carries what a maintainer reads first, and leaves room for yours.*", ""]
    # a kernel log or xrt-smi's output may carry ESC sequences: shown, never obeyed
    head = escape_controls(head)
    body = "\n".join([head, *tail, *footer])
    return body if len(body) <= BODY_BUDGET else _cut_to_fit(head, footer, len(body))


def _cut_to_fit(head: str, footer: list[str], size: int) -> str:
    """Tables alone too big for an issue (a sweep of thousands of cells): cut at a line,
    close what the cut left open, and say so."""
    note = ["", f"*Cut here to fit an issue (the whole render is {size} characters); the "
                "report and the bundle's report.md hold all of it.*", ""]
    keep = head[:BODY_BUDGET - len("\n".join(note + footer)) - 40]
    keep = keep[:keep.rfind("\n")]
    if keep.count("```") % 2:
        keep += "\n```"
    if keep.count("<details>") > keep.count("</details>"):
        keep += "\n</details>"
    return "\n".join([keep, *note, *footer])


def _labels(view: ReportView) -> dict[str, str]:
    return {str(p.get("name")): record_label(p) for p in view.header.get("plans") or []
            if isinstance(p, dict)}


def worker_libraries(view: ReportView) -> list[Any]:
    """XRT libraries a trial's worker mapped (the hardware path records them per trial)."""
    trials = [t for _, t in view.kept or []]
    if view.first_failure is not None:
        trials.insert(0, view.first_failure[1])
    for trial in trials:
        libraries = (trial.get("worker") or {}).get("xrt_libraries") \
            if isinstance(trial.get("worker"), dict) else None
        if libraries:
            return list(libraries)
    return []


def first_screen_markdown(view: ReportView) -> list[str]:
    """What ran, how it was submitted, and the stack that answered, each fact with its
    source (`harness.report.provenance`)."""
    data = view.header
    lines: list[str] = []
    rows = what_ran_rows(data, _labels(view))
    if rows:
        lines += ["### What ran", *md_table(["plans", "control code", "buffers", "xclbins"],
                                            rows), ""]
    sequence = sequence_note(data, _labels(view))
    if not data.get("engine_run"):        # a recorded program's submissions are its own
        lines += [f"Submitted as {_cell(flow_text(_flow(view.typed)))}."
                  + (f" {_cell(sequence[0].upper() + sequence[1:])}." if sequence else "")
                  + "".join(f" The {_cell(n)}." for n in control_notes(data)), ""]
    for table in stack_tables(data, worker_libraries(view)):
        lines += [f"### {_cell(table.title)}", *md_table(["", "", "from"],
                                                         [list(r) for r in table.rows]), ""]
    return lines


def evidence_markdown(view: ReportView, max_lines: int) -> list[str]:
    """The driver's and the firmware's account of the first failure, and recovery."""
    found = view.first_failure
    if found is None:
        return []
    plan, trial = found
    failures = view.failed
    number = int(trial.get("index") or 0) + 1
    lines = ["### What the driver and the firmware said", "",
             f"First failing trial: plan {_cell(plan)}, trial {number} "
             f"({trial.get('status')}; {failures} failed trial(s) in all)."]
    recovery = recovery_text(trial)
    if recovery:
        lines.append(f"Recovery: {_cell(recovery)}.")
    users = (trial.get("device_users") or {}).get("users")
    if users is not None:
        lines.append("Other NPU/GPU users then: " + (", ".join(
            f"{u.get('pid')} {_cell(u.get('command') or '?')}" for u in users) or "none") + ".")
    lines.append("")
    simulated = is_simulated(view.typed.backend.raw)
    rows = firmware_rows(trial)
    note = health_note(view.header)
    if note:
        # health lines XRT's message may still carry are not this firmware's account
        lines += [f"Firmware's account of the timeout: none, {_cell(note)}.", ""]
    elif rows:
        lines += ["Firmware's account of the timeout" + (" (SIMULATED: as the simulated driver "
                                                         "and XRT wrote it)" if simulated
                                                         else "") + ":", ""]
        lines += md_table(["field", "kernel log", "XRT message"], rows) + [""]
    log = trial.get("kernel_log")
    if not log:
        lines += ["No kernel log was kept for this trial.", ""]
        return lines
    if "unreadable" in log:
        lines += [f"Kernel log: not readable ({_cell(log['unreadable'])}); "
                  f"{_cell(log.get('fix'))}.", ""]
        return lines
    events = event_summary(trial)
    if events:
        lines += ["Driver events" + (" (SIMULATED)" if simulated else "") + ":", ""] \
            + [f"- {_cell(e)}" for e in events[:MAX_EVENTS]]
        if len(events) > MAX_EVENTS:
            lines.append(f"- ... {len(events) - MAX_EVENTS} more in the report")
        lines.append("")
    if log.get("tree_note"):
        lines += [f"Driver tree by its log prefix: {_cell(log['tree_note'])}.", ""]
    shown = shown_log_lines(log, simulated)
    if not shown:
        lines += [f"Kernel log ({_cell(log_source(log, simulated))}): the driver printed "
                  "nothing during this trial.", ""]
        return lines
    left_out = len(shown) - max_lines + int(log.get("omitted") or 0)
    text = "\n".join(shown[:max_lines])
    fence = "`" * max(3, _longest_backticks(text) + 1)
    summary = (f"Kernel log of this trial ({len(shown) + int(log.get('omitted') or 0)} "
               f"amdxdna/IOMMU lines from {log_source(log, simulated)})")
    lines += ["<details>", f"<summary>{_cell(summary)}</summary>", "", f"{fence}text", text,
              fence]
    if left_out > 0:
        lines += ["", f"{left_out} more lines are in kernel-log.txt of the bundle."]
    lines += ["", "</details>", ""]
    return lines


def trace_markdown(view: ReportView) -> list[str]:
    """The driver's trace events during the first failing trial, collapsed."""
    found = view.first_failure
    trace = (found[1].get("trace_events") if found else None)
    if not isinstance(trace, dict):
        return []
    shown = [str(x) for x in trace.get("lines") or []][:MAX_LOG_LINES]
    if "unreadable" in trace:
        return [f"Driver trace events: the buffer could not be read "
                f"({_cell(trace['unreadable'])}).", ""]
    if not shown:
        return [f"Driver trace events ({_cell(trace.get('source'))}): none during this "
                "trial.", ""]
    counts = trace.get("counts") or {}
    summary = (f"Driver trace events of this trial ({sum(counts.values())} from "
               f"{trace.get('source')}" + (f"; job timedout: {trace['timed_out']}"
                                           if trace.get("timed_out") else "") + ")")
    text = "\n".join(shown)
    fence = "`" * max(3, _longest_backticks(text) + 1)
    return ["<details>", f"<summary>{_cell(summary)}</summary>", "", f"{fence}text", text,
            fence, "", "</details>", ""]


def shown_log_lines(log: dict[str, Any], simulated: bool) -> list[str]:
    """A trial's kernel-log lines as every output shows them: a simulated run's each
    marked SIMULATED (reports written before the mark was stored get it here)."""
    lines = [str(line) for line in log.get("lines") or []]
    return [mark_simulated(line) for line in lines] if simulated else lines


def log_source(log: dict[str, Any], simulated: bool) -> str:
    source = str(log.get("source"))
    if simulated and "simulated" not in source:
        return f"{source}, SIMULATED: printed by the simulated driver standing in"
    return source


def xrt_smi_markdown(env: dict[str, Any], control: Any = None) -> list[str]:
    """xrt-smi's output, collapsed: the probe's runs, and the runlist-latency control."""
    lines = []
    runs = [(f"xrt-smi {name} (exit {run.get('exit_status')})", run)
            for name, run in read_environment(env).xrt_smi.items()]
    if isinstance(control, dict):
        runs.append((f"{control.get('command')} (the control: {control.get('result')}, exit "
                     f"{control.get('exit_status')})", control))
    for summary, run in runs:
        if "output" not in run:
            continue
        text = str(run["output"])
        cut = len(text) > MAX_XRT_SMI
        text = text[:MAX_XRT_SMI]
        fence = "`" * max(3, _longest_backticks(text) + 1)
        lines += ["<details>", f"<summary>{_cell(summary)}</summary>", "", f"{fence}text",
                  text, fence]
        if cut:
            lines += ["", "Cut here; the whole output is in the report."]
        lines += ["", "</details>", ""]
    return lines


def bundle_markdown(bundle: list[str] | None) -> list[str]:
    """Names the bundle and each file in it, so a maintainer knows what the attachment
    holds (GitHub attaches files, not folders)."""
    if not bundle:
        return []
    name, *files = bundle
    return ["---", "", f"Attached: `{name}` (`runlist-harness report bundle`), holding "
            + ", ".join(f"`{f}`" for f in files) + ".", ""]


def how_to_bundle(report_name: str | None) -> list[str]:
    """No bundle exists yet: how to make the one file to attach beside this body."""
    if not report_name:
        return []
    bundle = file_safe(Path(report_name).stem) + ".bundle.tar.gz"     # as `bundle` names it
    return ["---", "", "No bundle attached yet: "
            f"{code_span(shlex.join(['runlist-harness', 'report', 'bundle', report_name]))} "
            f"writes `{bundle}` beside the report (the report, every trial's kernel log and "
            "the plans as XRT recipes): attach it to this issue.", ""]


def server_heading(server: dict[str, Any]) -> str:
    return "Server" + (" (SIMULATED: the simulated stack's stand-in for flm serve, not a "
                       "real server)" if server.get("stand_in") else "")


def server_markdown(server: dict[str, Any]) -> list[str]:
    rows = [[str(r.get("index")), str(r.get("model")), str(r.get("outcome")),
             _opt(r.get("state")), _opt(r.get("decoding_speed_tps")), _opt(r.get("wall_ms")),
             _first_line(r.get("error"))] for r in server.get("requests") or []]
    lines = [f"### {server_heading(server)}", ""]
    lines += md_table(["request", "model", "outcome", "state", "decode tok/s", "wall ms",
                       "error"], rows) + [""]
    checks = server.get("checks") or []
    if checks:
        lines += md_table(["check", "status", "detail"],
                          [[c.get("name", ""), c.get("status", ""), c.get("detail", "")]
                           for c in checks]) + [""]
    return lines


def _longest_backticks(text: str) -> int:
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return longest


# -- plain text -------------------------------------------------------------------------

def export_markdown(exports: dict[str, Any] | None, control_ran: bool = True,
                    bundle: list[str] | None = None) -> list[str]:
    """How to reproduce with XRT's own runner, from the recipes written beside the report
    (or in the bundle that carries them: `recipes/`), by the names `export` gives their
    scripts; XRT's own deep-runlist test named beside the depth-only control only when that
    ran."""
    if not exports:
        return []
    if bundle and any(name.rstrip("/") == "recipes" for name in bundle[1:]):
        folder = "recipes"
        where = f"in `{folder}/` of the attached `{bundle[0]}`"
    else:
        folder = Path(exports["folder"]).name
        where = f"in `{folder}/` beside this report (attach it)"
    lines = ["### Reproduce with XRT's own tools", "",
             f"The plans as XRT run recipes are {where}. With XRT installed, no Python "
             "needed:", "", "```sh", "source /opt/xilinx/xrt/setup.sh", f"cd {folder}"]
    lines += [f"sh run_{plan_file_stem(name)}.sh" for name in exports.get("plans") or []]
    lines += ["```", ""]
    if exports.get("missing"):
        lines += [f"Not included (copy in first): {', '.join(exports['missing'])}.", ""]
    lines += ["XRT's own test of a deep runlist, beside the depth-only control (the same "
              "NOP runs on the same validate.xclbin, 1000 deep): `xrt-smi validate --run "
              "runlist-latency`." if control_ran else
              "XRT's own test of a deep runlist (1000 NOP runs on XRT's validate.xclbin; the "
              "depth-only control did not run here): `xrt-smi validate --run "
              "runlist-latency`.", ""]
    return lines


def _flow(header: ReportHeader) -> str | None:
    return header.settings.flow or header.case.flow


def render_text(view: ReportView) -> str:
    data = view.header
    typed = view.typed
    answer, *reasons = verdict_lines(data.get("verdict"))
    engine = mapping(data.get("engine_run"))    # capture record's: no plans, its own runs
    lines = [title(typed), "verdict: " + answer, *[f"  - {reason}" for reason in reasons],
             "command: " + command_line(typed),
             "harness: " + harness_made_by(typed),
             *([] if engine else ["runs: " + flow_text(_flow(typed))])]
    lines += [f"ran ({r[0]}): {r[1]}; {r[2]}; xclbins: {r[3]}"
              for r in what_ran_rows(data, _labels(view))]
    sequence = sequence_note(data, _labels(view))
    if sequence:
        lines.append(f"in turn: {sequence}")
    note = nop_note(data)
    if note:
        lines.append(f"what this tests: {note}")
    captured = captured_note(data)
    if captured:
        lines.append(f"what ran: {captured}")
    if typed.bisect:
        lines += ["", f"bisect: {typed.bisect.answer_text}"]
        lines += [f"  {row[0]:>3}. {row[1]:>5} {row[3]:<12} {row[4]} -> {row[5]}"
                  for row in bisect_rows(data["bisect"])]
    elif data.get("sweep"):
        header, rows = sweep_table(data["sweep"])
        lines += ["", "  ".join(header)] + ["  ".join(r) for r in rows]
    elif not engine:
        lines += ["", "plans:"] + [f"  {r[0]:<24} {r[2]}" + (f"   (expected {r[3]})"
                                                            if r[3] != "-" else "")
                                   + (f"; {r[4]}" if r[4] != "-" else "")
                                   for r in plan_rows(view)]
    if engine:
        from harness.report import engine_run_render
        lines += engine_run_render.text(engine, typed.timers, is_simulated(typed.backend.raw))
    elif typed.timers is not None:
        lines += ["", "timers:"] + [f"  {line}" for line in timers_lines(typed.timers)]
    stopped = stopped_text(view)
    if stopped:
        lines += ["", stopped]
    failing = failing_rows(view)
    if failing:
        lines += ["", "failing runs:"]
        lines += [f"  {r[0]} trials {r[1]} runlist {r[2]}: {r[6]}, failing run {r[4]} "
                  f"(chain {r[5]}), from the {r[7]}: {r[8]}" for r in failing[:MAX_FAILING_ROWS]]
    if view.located:
        lines += ["  located as: " + "; ".join(view.located)]
    if view.unnamed:
        lines += [f"  {NOT_SAID}: {why_unnamed(*answering_driver(typed))}"]
    found = view.first_failure
    if found is not None:
        plan, trial = found
        log = trial.get("kernel_log") or {}
        lines += ["", f"first failure: plan {plan}, trial {int(trial.get('index') or 0) + 1}"]
        recovery = recovery_text(trial)
        if recovery:
            lines.append(f"  recovery: {recovery}")
        if "unreadable" in log:
            lines.append(f"  kernel log: not readable ({log['unreadable']}); {log.get('fix')}")
        elif log:
            simulated = is_simulated(typed.backend.raw)
            lines.append(f"  kernel log ({log_source(log, simulated)}): "
                         f"{len(log.get('lines') or [])} lines"
                         + (f"; {log['tree_note']}" if log.get("tree_note") else ""))
            lines += [f"    {event}" for event in event_summary(trial)[:MAX_EVENTS]]
    for table in stack_tables(data, worker_libraries(view)):
        lines += ["", f"{table.title}:"] + [f"  {fact:<28} {value}   [{source}]"
                                             for fact, value, source in table.rows]
    lines += ["", "this machine in full:"] + [f"  {k:<22} {v}" for k, v in environment_rows(
        typed.environment.raw)]
    xclbins = xclbin_rows(typed)
    if xclbins:
        lines += ["", "xclbins:"] + [f"  {r[0]:<8} {r[1]}  {r[3]}" for r in xclbins]
    server = section(data.get("server"))
    if server:
        # outcomes and states only: what a server wrote is withheld, as in the Markdown
        lines += ["", server_heading(server) + ":"] + [
            f"  request {r.get('index')} {r.get('model')}: {r.get('outcome')}"
            + (f" ({r['state']})" if r.get("state") else "")
            for r in mappings(server.get("requests"))]
    return escape_controls("\n".join(lines) + "\n")
