"""`runlist-harness capture record -- CMD ...`: what an engine submits, captured by XRT."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import click

from harness.app.cli.options import Seconds, make_backend
from harness.execution.backend import KINDS, Backend
from harness.execution.capture_record import Recorded, Recording, Snapshot, free_bytes, record
from harness.formats.capture_origin import EMULATED, ORIGIN_FILE, mark_capture
from harness.formats.printable import escape_controls
from harness.model.errors import BadInput, EnvironmentNotReady, Interrupted
from harness.probe.xrt_capture import WHERE_CAPTURE_IS, capture_tool, coreutil_of, has_capture
from harness.probe.xrt_config import CAPTURE_DIR, CAPTURE_FRAMES
from harness.probe.xrt_loader import own_libraries
from harness.sources.capture import REPLAY, CaptureError, load_capture
from harness.sources.capture_view import runlist_lines, written_by
from harness.sources.emulated_captures import emulated_profile
from harness.sources.workload import approx_size

DEFAULT_FRAMES = 200
DEFAULT_DEADLINE_S = 900.0
MARGIN = 1 << 30                  # beside the pack: activations, xclbins, ELFs, replay.json
FLOOR = 64 << 20                  # below this much free space the program is stopped


@click.command("record", context_settings={"ignore_unknown_options": True,
                                           "allow_interspersed_args": False})
@click.option("--frames", type=click.IntRange(1, 2**31 - 1), default=DEFAULT_FRAMES,
              show_default=True, help="Frames to capture (a frame is one run.start() or one "
                                      "runlist.execute()); prefill comes first.")
@click.option("--out", "out", type=click.Path(file_okay=False), default=None,
              help="The capture folder (new; default: captures/PROGRAM-TIME).")
@click.option("--force", is_flag=True, help="Replace --out if it exists.")
@click.option("--deadline", type=Seconds(1.0), default=DEFAULT_DEADLINE_S,
              show_default=True,
              help="Seconds before the program is stopped (SIGINT, then SIGTERM, then "
                   "SIGKILL, 5 s apart); only a program that exits normally lets XRT write "
                   "replay.json.")
@click.option("--prompt", default="Hi", show_default=True,
              help="The first line given to the program on its standard input.")
@click.option("--end-with", "end_with", default="/bye", show_default=True,
              help="The line given after the prompt to end the program (FastFlowLM's CLI "
                   "leaves on /bye); '' gives only the end of input.")
@click.option("--pack", "pack", type=click.Path(exists=True), default=None,
              help="The model pack the program loads, for the disk space check (default: "
                   "the paths in CMD's arguments).")
@click.option("--backend", "backend_kind", type=click.Choice(KINDS), default="auto",
              show_default=True,
              help="auto: the machine's XRT when pyxrt imports and an NPU node exists, else "
                   "the simulated stack (a Python CMD then imports it as pyxrt).")
@click.option("--profile", default=None,
              help="Simulated stack profile for a Python CMD (see `sim profiles`). Implies "
                   "the simulator.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def record_command(frames: int, out: str | None, force: bool, deadline: float, prompt: str,
                   end_with: str, pack: str | None, backend_kind: str, profile: str | None,
                   command: tuple[str, ...]) -> None:
    """Run COMMAND (e.g. `flm run minicpm5:2b`, or any pyxrt program) with XRT's capture on,
    give it a prompt and the line that ends it, and, once it has exited and XRT has written
    replay.json, check the capture and print the engine's runlists and what to run next.

    The capture is turned on through XRT's own settings (`xrt-capture` where the XRT has
    it, else the variables Runtime.capture_frames and Runtime.capture_output_dir), which XRT
    reads as any user and as root; an xrt.ini in the current folder is not used (as root
    XRT ignores it)."""
    program = _program(command)
    folder = _folder(out, program, force)
    backend = make_backend(backend_kind, profile, False)
    job, banner, scratch = _recording(backend, command, folder, frames, deadline,
                                      [prompt] + ([end_with] if end_with else []), pack)
    click.echo(banner)
    click.echo(f"input: {', then '.join(repr(line) for line in job.lines)}, then the end "
               "of input")
    click.echo(f"frames: counted from {REPLAY}, which XRT writes when the program exits",
               err=True)
    _made(folder, out is not None)
    try:
        ended = record(job, _progress(), lambda line: click.echo(
            "  | " + escape_controls(line), err=True))
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    _conclude(ended, folder)


def _program(command: tuple[str, ...]) -> str:
    if not command:
        raise BadInput("give the program to capture after --, e.g. capture record -- flm run "
                       "minicpm5:2b")
    name = command[0]
    found = shutil.which(name) if "/" not in name else (name if Path(name).is_file() else None)
    if found is None:
        where = "not on PATH" if "/" not in name else "no such file"
        raise EnvironmentNotReady(f"{name}: no such program ({where}); capture record runs "
                                  "it as given")
    return Path(name).name


def _folder(out: str | None, program: str, force: bool) -> Path:
    """The capture folder, checked: a path into missing folders is refused (at most its
    last folder is made, `harness.formats.output_paths`), and --force replaces only a
    capture, never a file or a folder of something else."""
    from harness.formats.output_paths import check_folder
    folder = Path(out) if out else Path("captures") / (
        f"{program}-{time.strftime('%Y%m%dT%H%M%S')}")
    if out:           # a file or a link there is refused too (click, then check_folder)
        check_folder(folder, what="--out")
    if folder.is_dir() and any(folder.iterdir()):
        if not force:
            raise BadInput(f"{folder} exists; choose another --out or pass --force to replace "
                           "it")
        if folder.is_symlink():
            raise BadInput(f"--out {folder} is a link to a folder; --force replaces a capture "
                           "folder itself, never through a link: give the folder's own path")
        if not ((folder / REPLAY).is_file() or (folder / ORIGIN_FILE).is_file()):
            raise BadInput(f"--out {folder} holds no {REPLAY}: it is not a capture, and "
                           "--force replaces only a capture folder; move it away (remove it "
                           "yourself if it is a capture its program cut short) or choose "
                           "another --out")
        shutil.rmtree(folder)
    return folder


def _made(folder: Path, given: bool) -> None:
    """Make the capture folder (and `captures/` for the default one) before XRT writes."""
    from harness.formats.output_paths import make_folder
    if not given:
        make_folder(folder.parent)
    make_folder(folder, what="--out" if given else "")


def _recording(backend: Backend, command: tuple[str, ...], folder: Path, frames: int,
               deadline: float, lines: list[str], pack: str | None
               ) -> tuple[Recording, str, Path | None]:
    """What runs, with which environment, and the first line saying where the answers
    come from; the scratch folder to remove afterwards (the simulator's pyxrt)."""
    import os
    environment = {**os.environ, CAPTURE_FRAMES: str(frames),
                   CAPTURE_DIR: str(folder.resolve())}
    scratch = None
    wrapper: tuple[str, ...] = ()
    if backend.hardware and (not backend.simulated or getattr(backend, "emulated", None)):
        install = _xrt_install(backend)
        _needs_capture(install)
        tool = capture_tool(install)
        if tool is not None:
            wrapper = (tool, "--frames", str(frames), "--output-dir", str(folder.resolve()),
                       "--")
        how = (f"{tool} --frames {frames} --output-dir {folder}" if tool else
               f"{CAPTURE_FRAMES}={frames} {CAPTURE_DIR}={folder} in its environment")
        banner = f"{backend.describe()}\ncapturing with XRT's own capture: {how}"
    else:
        from harness.sim.host_script import simulated_pyxrt_environment
        from harness.sim.profiles import parse_profile
        from harness.sim.releases import CAPTURE
        played = backend.profile or getattr(backend, "stand_in_profile", lambda: None)() \
            or parse_profile(None)
        if not played.release.has(CAPTURE):
            raise EnvironmentNotReady(f"the simulated XRT {played.release.name} has no "
                                      f"capture; {WHERE_CAPTURE_IS} (the simulator plays "
                                      "it as xrt:2.26 and xrt:master)")
        scratch = Path(tempfile.mkdtemp(prefix="harness-pyxrt-"))
        environment = simulated_pyxrt_environment(environment, played, scratch)
        banner = (f"{backend.describe()}\ncapturing with the SIMULATED stack's XRT capture "
                  f"({CAPTURE_FRAMES}={frames} {CAPTURE_DIR}={folder}): a Python program's "
                  "`import pyxrt` is bound to the simulator; not hardware evidence")
    need = _pack_bytes(command, pack) + MARGIN
    free = free_bytes(folder)
    if free < need:
        raise EnvironmentNotReady(
            f"{folder}: its disk has {approx_size(free)} free, and this capture may need about "
            f"{approx_size(need)} (the pack and a margin of {approx_size(MARGIN)}: XRT writes "
            "every buffer a captured run uses, and again whenever it changes); free some "
            "space or choose another --out")
    job = Recording(tuple(command), folder, tuple(lines), environment, deadline, FLOOR,
                    wrapper)
    return job, banner, scratch


def _xrt_install(backend: Backend) -> str | None:
    from harness.probe.xrt import _install_version
    return _install_version(getattr(backend.xrt, "__file__", None))[0]


def _needs_capture(install: str | None) -> None:
    library = coreutil_of(own_libraries(), install)
    if library is not None and has_capture(library) is False:
        raise EnvironmentNotReady(f"the XRT this harness loads ({library}) has no capture; "
                                  f"{WHERE_CAPTURE_IS}")


def _pack_bytes(command: tuple[str, ...], pack: str | None) -> int:
    """The size of what the program loads: --pack; for `flm run TAG` the model's size as
    FastFlowLM lists it (serve-probe reads it the same way); else the paths among its
    arguments."""
    if not pack and Path(command[0]).name == "flm" and command[1:2] == ("run",) \
            and len(command) > 2:
        from harness.serve.reproduce import ServeOptions, model_size
        try:
            size, _ = model_size(ServeOptions("", command[2]), shutil.which(command[0]))
        except BadInput:
            size = None
        if size:
            return size
    paths = [Path(pack)] if pack else [Path(a) for a in command[1:] if Path(a).exists()]
    total = 0
    for path in paths:
        if path.is_file():
            total += path.stat().st_size
        elif path.is_dir():
            total += sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return total


def _progress():
    tty = sys.stderr.isatty()
    said = {"at": -10.0}

    def show(snap: Snapshot) -> None:
        text = (f"capturing: {snap.seconds:.0f} s, {snap.files} files, "
                f"{approx_size(snap.written) if snap.written else 'nothing'} written, "
                f"{approx_size(snap.free)} free")
        if tty:
            click.echo(f"\r\033[K{text}", err=True, nl=False)
        elif snap.seconds - said["at"] >= 10:
            said["at"] = snap.seconds
            click.echo(text, err=True)
    return show


def _conclude(ended: Recorded, folder: Path) -> None:
    if sys.stderr.isatty():
        click.echo("\r\033[K", err=True, nl=False)
    click.echo(f"ended: {ended.ended_by}; {ended.files} files, "
               f"{approx_size(ended.written) if ended.written else 'nothing'} written to "
               f"{folder}, {approx_size(ended.free)} free")
    for line in ended.errors[:5]:
        click.echo(f"the program reported: {escape_controls(line)}")
    if not ended.replay_written:
        if ended.interrupted:
            raise Interrupted(f"stopped by your Ctrl-C: {_why_no_replay(ended, folder)}")
        raise EnvironmentNotReady(_why_no_replay(ended, folder))
    emulated = emulated_profile()
    if emulated and not (folder / ORIGIN_FILE).exists():
        # real XRT wrote it, over the emulated device this process runs under
        mark_capture(folder, EMULATED, emulated)
    try:
        capture = load_capture(folder)
    except CaptureError as err:
        raise EnvironmentNotReady(f"XRT wrote {folder / REPLAY}, but it does not read as a "
                                  f"capture: {err}") from None
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
    if ended.interrupted:
        raise Interrupted(f"stopped by your Ctrl-C ({ended.ended_by}); XRT wrote {REPLAY} "
                          f"at the program's exit, kept with what else it wrote in {folder}")


def _why_no_replay(ended: Recorded, folder: Path) -> str:
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
