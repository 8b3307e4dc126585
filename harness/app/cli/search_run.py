"""What `bisect` and `sweep` do once their options are read (`harness.app.cli.search_cmd`
declares them)."""

from __future__ import annotations

import math
from pathlib import Path

import click

from harness.app import exits
from harness.app.cli.options import (
    RunRequest,
    diagnose_pointer,
    echo_json,
    make_backend,
    refuse_given,
    refuse_settings_on_resume,
    start_run,
    with_frame,
)
from harness.app.cli.progress import TrialBar, announce
from harness.execution.resume import recorded_case, reopen
from harness.execution.runner import Runner
from harness.model.errors import BadInput, PlanError, ReportError
from harness.report.fileformat import load_report
from harness.report.output_file import check_output_path
from harness.report.verdict import verdict_lines
from harness.search.bisect import BisectSettings, bisection_from_log, run_bisect
from harness.search.measure import Measurer
from harness.search.sweep import (
    Row,
    depth_rows,
    distinct_cells,
    estimate,
    finish_sweep,
    grid_text,
    parse_depths,
    parse_list,
    plot_grid,
    plot_title,
    require_matplotlib,
    run_sweep,
    sweep_section,
)
from harness.sources.case import CaseKind
from harness.sources.load import load_case

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"     # what --force may replace with a plot


def _finish(runner: Runner, as_json: bool, lines: list[str], command: str) -> int:
    """Print the outcome; a search its budget stopped says how to go on, and exits 5."""
    stopped = runner.report.finished is None
    if stopped:
        lines = lines + [f"stopped at the --max-trials budget; continue with "
                         f"`runlist-harness {command} --replay {runner.handle.path}`"]
    if as_json:
        echo_json(runner.handle.path)
    else:
        ending = [f"report: {runner.handle.path}"]
        if command == "bisect":
            ending.append(diagnose_pointer(runner.handle.path))
        click.echo("\n".join(lines + ending))
    return exits.for_search(stopped)


def bisect_command(case_ref, lo, hi, chunk_spec, chunks_at, flaky_as, max_trials, replay_path,
                   rerun, frame, allow_different_machine, request: RunRequest) -> int:
    """`bisect`, its options read (`harness.app.cli.search_cmd.bisect` says what it does)."""
    if replay_path and not rerun:
        refuse_given(click.get_current_context(),
                     {"case_ref": "CASE", "lo": "--lo", "hi": "--hi", "chunk_spec": "--chunk",
                      "chunks_at": "--chunks-at", "frame": "--frame", "flaky_as": "--flaky-as"},
                     "--replay continues the logged bisect (--rerun runs it again)")
        refuse_settings_on_resume(click.get_current_context(), replay_path, "--replay")
        runner, report = reopen(replay_path, kind="bisect",
                                allow_different_machine=allow_different_machine,
                                allow_outside_paths=request.allow_outside_paths)
        settings, bisection = _logged(report)
        announce(f"{runner.backend.describe()}\ncontinuing the bisect in {replay_path}",
                 runner.warnings, request.as_json)
        return _bisect(runner, settings, max_trials, request.as_json, bisection)
    backend = None
    if replay_path:
        report = load_report(replay_path, trials=False)
        settings, _ = _logged(report)
        case = with_frame(recorded_case(report, replay_path,
                                        allow_outside_paths=request.allow_outside_paths),
                          report.case.get("frame"))
        # a rerun runs on the report's backend
        backend = make_backend(report.backend["kind"], report.backend.get("profile"), False)
        if request.trials:
            settings.trials = request.trials
        if click.get_current_context().get_parameter_source("flaky_as") is \
                click.core.ParameterSource.COMMANDLINE:
            settings.flaky_as = flaky_as       # a rerun takes what it is told, as --trials
    else:
        if not case_ref:
            raise BadInput("give a CASE, or --replay REPORT")
        case = with_frame(load_case(case_ref, allow_outside_paths=request.allow_outside_paths),
                          frame)
        if case.order is not None and not chunks_at:   # a recipe's or frame's prefix
            lo, hi = lo or 1, hi or case.layers
        backend = make_backend(request.backend_kind, request.profile, request.realtime,
                               no_isolate=request.no_isolate)
        settings = _settings(lo, hi, chunk_spec, chunks_at, flaky_as, request.trials)
        if settings.mode == "chunk" and settings.depth is not None:
            bounded(case, settings.depth, "--chunks-at")
        else:
            bounded(case, settings.hi, "--hi")
    runner = start_run(request, case, [], "bisect", trials=settings.trials, backend=backend)
    if replay_path:
        runner.report.sections["bisect"] = {"settings": settings.to_dict(), "log": [],
                                            "replay_of": report.run_id}
    announce(runner.backend.describe(), runner.warnings, request.as_json)
    return _bisect(runner, settings, max_trials, request.as_json)


def bounded(case, depth: int, option: str) -> None:
    """A recipe or a frame has so many runs; deeper cannot be cut from it."""
    if case.order is not None and depth > case.layers:
        what = f"frame {case.frame}" if case.frame else f"recipe {case.name}"
        raise BadInput(f"{option} {depth}: {what} has {case.layers} runs; keep it at or below "
                       f"{case.layers}")


def _settings(lo, hi, chunk_spec, chunks_at, flaky_as, trials) -> BisectSettings:
    if chunks_at:
        if chunk_spec:
            raise BadInput("--chunk and --chunks-at are two different searches; give one")
        lo, hi = lo or 1, hi or chunks_at
        if hi > chunks_at:
            raise BadInput(f"--chunks-at {chunks_at} --hi {hi}: a chunk size above the depth is "
                           f"one runlist of {chunks_at}; keep --lo and --hi at or below "
                           f"{chunks_at}")
        mode = "chunk"
    else:
        if lo is None or hi is None:
            raise BadInput("give --lo A --hi B: a depth believed to complete and one "
                           "believed to fail")
        mode = "depth"
    if lo >= hi:
        raise BadInput(f"--lo {lo} must be below --hi {hi}")
    settings = BisectSettings(mode, lo, hi, trials or 5, chunk_spec, chunks_at, flaky_as)
    try:
        settings.plan(hi)                 # a bad --chunk spec fails here, not mid-search
    except PlanError as err:
        raise BadInput(f"--chunk {chunk_spec!r}: {err}") from None
    return settings


def _logged(report) -> tuple[BisectSettings, object]:
    section = report.sections.get("bisect")
    if not section or "settings" not in section:
        raise ReportError("this report holds no bisect log (it was not written by `bisect`)")
    try:
        settings = BisectSettings(**section["settings"])
        return settings, bisection_from_log(settings, section, report.plans,
                                              int(report.settings.get("seed", 0)))
    except (TypeError, KeyError, ValueError) as err:
        raise ReportError(f"the bisect log in this report is malformed ({type(err).__name__}: "
                          f"{err})") from None


def _bisect(runner: Runner, settings: BisectSettings, max_trials, as_json, bisection=None):
    width = max(settings.hi - settings.lo, 2)
    estimate = (math.ceil(math.log2(width)) + 2) * settings.trials
    bar = TrialBar(min(estimate, max_trials or estimate), "bisect")
    runner.progress = bar
    try:
        answer = run_bisect(runner, settings, max_trials, bar.say, bisection)
    finally:
        bar.close()
    # the verdict: the answer first, labelled, then the hypothesis that made it
    lines = verdict_lines(runner.report.verdict) if runner.report.verdict else [answer.text]
    lines += [f"note: {n}" for n in answer.notes]
    return _finish(runner, as_json, lines, "bisect")


def sweep_command(case_ref, depths_text, frames_text, chunks_text, plot_path, max_trials,
                  replay_path, yes, allow_different_machine, request: RunRequest) -> int:
    """`sweep`, its options read (`harness.app.cli.search_cmd.sweep` says what it does)."""
    if plot_path:
        require_matplotlib()
        from harness.formats.output_paths import Replaceable
        check_output_path(Path(plot_path), force=request.force, what="--plot",
                          replaces=Replaceable("a PNG image (a plot)",
                                               lambda head: head.startswith(PNG_SIGNATURE)))
    if replay_path:
        refuse_given(click.get_current_context(),
                     {"case_ref": "CASE", "depths_text": "--depths", "frames_text": "--frames",
                      "chunks_text": "--chunks"},
                     "--replay continues the sweep its report asked for")
        refuse_settings_on_resume(click.get_current_context(), replay_path, "--replay")
        runner, report = reopen(replay_path, kind="sweep",
                                allow_different_machine=allow_different_machine,
                                allow_outside_paths=request.allow_outside_paths)
        asked = report.sections.get("sweep") or {}
        chunks = list(asked.get("chunks") or [])
        case = runner.case
        rows = (frame_rows(case, asked["frames"]) if asked.get("frames")
                else depth_rows(list(asked.get("depths") or [])))
        if not rows or not chunks:
            raise ReportError(f"{replay_path} does not say which depths and chunks it sweeps")
        # the grid so far (a v3 header's, or the journal's cells) is measured again whole
        runner.report.sections["sweep"] = sweep_section(rows, chunks, False)
        announce(f"{runner.backend.describe()}\ncontinuing the sweep in {replay_path}",
                 runner.warnings, request.as_json)
    else:
        if not case_ref or not (depths_text or frames_text) or not chunks_text:
            raise BadInput("give CASE --depths ... --chunks ... (or --frames on a capture), "
                           "or --replay REPORT")
        if depths_text and frames_text:
            raise BadInput("--depths or --frames: rows are depths or captured frames, not both")
        chunks = parse_list(chunks_text, "--chunks")
        case = load_case(case_ref, allow_outside_paths=request.allow_outside_paths)
        if frames_text:
            rows = frame_rows(case, parse_frames(case, frames_text))
        else:
            rows = depth_rows(parse_depths(depths_text))
            bounded(case, max(r.depth for r in rows), "--depths")
        work = estimate(rows, chunks, request.trials or 3, case.runs_per_layer)
        if work.over() and not yes:
            raise BadInput(f"this sweep would take {work.text()}: past "
                           + "; ".join(work.over()) + ". Narrow --depths or --chunks, or "
                           "pass --yes to run it")
        runner = start_run(request, case, [], "sweep", trials=request.trials or 3)
        runner.report.sections["sweep"] = sweep_section(rows, chunks, False)
        runner.handle.rewrite()          # what was asked is on disk before the first trial
        announce(runner.backend.describe(), runner.warnings, request.as_json)
    k = runner.options.trials
    total = len(distinct_cells(rows, chunks)) * k
    kept = sum(len(plan.trials) for plan in runner.report.plans)
    bar = TrialBar(min(total, kept + max_trials if max_trials else total), "sweep", done=kept)
    runner.progress = bar
    measurer = Measurer(runner, k, max_trials)
    try:
        cells, complete = run_sweep(measurer, rows, chunks, bar.say)
    finally:
        bar.close()
    summary = finish_sweep(runner, case.name, cells, rows, chunks, complete,
                           measurer.trials_held())
    lines = [summary, grid_text(cells, rows, chunks)]
    if plot_path:
        report = runner.report
        plot_grid(cells, rows, chunks, plot_path, plot_title(case.name, report.backend))
        lines.append(f"plot: {plot_path}")
    return _finish(runner, request.as_json, lines, "sweep")


def parse_frames(case, text: str) -> list[str]:
    """--frames: names or numbers, 'runlists' or 'all', of a capture case."""
    if case.kind is not CaseKind.CAPTURE:
        raise BadInput(f"--frames picks frames of an XRT capture; {case.name} is a {case.kind}")
    from harness.sources.capture import load_capture
    capture = load_capture(case.capture or "")
    if text.strip() in ("all", "runlists"):
        frames = [f.name for f in capture.frames if text.strip() == "all" or f.depth > 1]
        if not frames:
            raise BadInput(f"--frames runlists: {case.name} has no frame of more than one run")
        return frames
    return [capture.frame(part.strip()).name for part in text.split(",") if part.strip()]


def frame_rows(case, frames: list[str]) -> list[Row]:
    from harness.sources.capture import load_capture
    capture = load_capture(case.capture or "")
    return [Row(name, capture.frame(name).depth, name) for name in frames]
