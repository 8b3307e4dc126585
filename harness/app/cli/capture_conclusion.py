"""What `capture record` says once the program has ended, and the report's `capture`
section: how it ended, what it printed, the evidence recorded, and XRT's capture (the
engine's runlists and what to run next) or why XRT wrote none; the exit that follows (3 for
a capture asked and not written or a device that no longer answers, 130 after Ctrl-C)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from harness.execution.capture_record import Recorded
from harness.formats.capture_origin import EMULATED, ORIGIN_FILE, mark_capture
from harness.formats.printable import escape_controls
from harness.model.errors import EnvironmentNotReady, Interrupted
from harness.probe.xrt_capture import WHERE_CAPTURE_IS, has_capture
from harness.report.model import Report
from harness.sources.capture import REPLAY, CaptureError, load_capture
from harness.sources.capture_view import runlist_lines, written_by
from harness.sources.emulated_captures import emulated_profile
from harness.sources.workload import approx_size


def capture_section(ended: Recorded, folder: Path, asked: bool) -> dict[str, Any]:
    """The report's `capture`: asked or not, written or why not, and what it holds."""
    if not asked:
        return {"asked": False}
    out: dict[str, Any] = {"asked": True, "written": ended.replay_written,
                           "files": ended.files, "bytes": ended.written}
    if not ended.replay_written:
        out["why_not"] = why_no_replay(ended, folder)
        return out
    emulated = emulated_profile()
    if emulated and not (folder / ORIGIN_FILE).exists():
        # real XRT wrote it, over the emulated device this process runs under
        mark_capture(folder, EMULATED, emulated)
    try:
        capture = load_capture(folder)
    except CaptureError as err:
        out.update(written=False, why_not=f"XRT wrote {REPLAY}, but it does not read as a "
                                          f"capture: {err}")
        return out
    deepest = capture.frame(None)
    out.update(frames=len(capture.frames),
               runlists=sum(1 for f in capture.frames if f.depth > 1),
               deepest={"frame": deepest.name, "runs": deepest.depth},
               sha256=capture.sha256, written_by=written_by(capture))
    return out


def conclude(ended: Recorded, folder: Path, report: Report, path: Path) -> None:
    from harness.app.cli.recorded_run import summary_lines
    if sys.stderr.isatty():
        click.echo("\r\033[K", err=True, nl=False)
    section = report.sections["engine_run"]
    captured = section.get("capture") or {}
    click.echo(f"ended: {ended.ended_by}; {ended.files} files, "
               f"{approx_size(ended.written) if ended.written else 'nothing'} written to "
               f"{folder}, {approx_size(ended.free)} free" if captured.get("asked")
               else f"ended: {ended.ended_by}")
    for line in ended.errors[:5]:
        click.echo(f"the program reported: {escape_controls(line)}")
    for line in summary_lines(report, path):
        click.echo(line)
    if captured.get("asked") and not captured.get("written"):
        why = f"{captured.get('why_not')}; the run's evidence is in {path}"
        if ended.interrupted:
            raise Interrupted(f"stopped by your Ctrl-C: {why}")
        raise EnvironmentNotReady(why)
    if captured.get("written"):
        capture_lines(folder)
    device = section.get("device_after") or {}
    if device.get("answers") is False and not ended.interrupted:
        raise EnvironmentNotReady(f"the NPU did not answer after the run: it is "
                                  f"{device.get('state')}; {device.get('fix')}. The run's "
                                  f"evidence is in {path}")
    if ended.interrupted:
        kept = (f"XRT wrote {REPLAY} at the program's exit, kept with what else it wrote in "
                f"{folder}" if captured.get("written") else f"the run's evidence is in {path}")
        raise Interrupted(f"stopped by your Ctrl-C ({ended.ended_by}); {kept}")


def capture_lines(folder: Path) -> None:
    capture = load_capture(folder)
    runlists = runlist_lines(capture)
    lists = sum(1 for f in capture.frames if f.depth > 1)
    click.echo(f"XRT wrote {folder / REPLAY}: {len(capture.frames)} frames, {lists} of them "
               "runlists")
    click.echo(f"written by: {written_by(capture)}")
    if runlists:
        click.echo("the engine's runlists:")
        for line in runlists:
            click.echo(f"  {line}")
        deepest = capture.frame(None)
        click.echo(f"next: reproduce_ert_timeout --capture {folder}   # {deepest.name} as "
                   f"captured ({deepest.depth} runs), its cut, and NOOPs at that depth")
    else:
        click.echo(f"no runlist among the {len(capture.frames)} frames captured (each is one "
                   "run); capture more frames (--frames) to reach the decode, or see them "
                   f"with: runlist-harness capture show {folder}")


def why_no_replay(ended: Recorded, folder: Path) -> str:
    kept = (f"; the {ended.files} files it wrote are kept in {folder}" if ended.files
            else "")
    if ended.signal is not None:
        return (f"no {REPLAY}: the program did not exit normally ({ended.ended_by}), and XRT "
                f"writes {REPLAY} only at a normal exit{kept}. Give it longer (--deadline), "
                "fewer frames, or a line that ends it (--end-with)")
    cores = [lib for lib in ended.xrt_libraries if lib.get("name") == "libxrt_coreutil"]
    without = [lib for lib in cores if has_capture(lib["path"]) is False]
    if without:
        lib = without[0]
        return (f"no {REPLAY}: the program loaded {lib['path']} (XRT "
                f"{lib.get('version') or 'of unknown version'}), which has no capture; "
                f"{WHERE_CAPTURE_IS}, and make the program load it")
    if not ended.xrt_libraries and not ended.files:
        return (f"no {REPLAY} and nothing captured: the program ({ended.ended_by}) mapped no "
                "XRT library while it was watched and submitted nothing XRT recorded; is it "
                "the program that uses the NPU, and did it get far enough?")
    said = f"{ended.stop}; it {ended.how}" if ended.stop else ended.how
    return (f"no {REPLAY} although the program {said}{kept}: "
            "XRT writes it when the program exits through the C library's exit; a program "
            "that leaves through _exit (or a Python program through os._exit) skips it, and "
            "so does a failure to save (XRT then prints `could not save replay script`)")
