"""`runlist-harness capture record -- CMD ...`: what an engine submits, captured by XRT."""

from __future__ import annotations

import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import click

from harness.app.cli.capture_conclusion import capture_section, conclude
from harness.app.cli.options import Seconds, make_backend
from harness.execution.backend import KINDS, Backend
from harness.execution.capture_record import Recording, Snapshot, free_bytes
from harness.formats.capture_origin import ORIGIN_FILE
from harness.model.errors import BadInput, EnvironmentNotReady
from harness.probe.xrt_capture import WHERE_CAPTURE_IS, capture_tool, coreutil_of, has_capture
from harness.probe.xrt_config import CAPTURE_DIR, CAPTURE_FRAMES
from harness.probe.xrt_loader import own_libraries
from harness.sources.capture import REPLAY
from harness.sources.workload import approx_size

DEFAULT_FRAMES = 200
DEFAULT_AFTER_S = 3.0
DEFAULT_DEADLINE_S = 900.0
MARGIN = 1 << 30                  # beside the pack: activations, xclbins, ELFs, replay.json
FLOOR = 64 << 20                  # below this much free space the program is stopped


@click.command("record", context_settings={"ignore_unknown_options": True,
                                           "allow_interspersed_args": False})
@click.option("--frames", type=click.IntRange(1, 2**31 - 1), default=DEFAULT_FRAMES,
              show_default=True, help="Frames to capture (a frame is one run.start() or one "
                                      "runlist.execute()); prefill comes first.")
@click.option("--out", "out", type=click.Path(file_okay=False), default=None,
              help="The folder for the capture and report.yaml (new; default: "
                   "captures/PROGRAM-TIME).")
@click.option("--force", is_flag=True, help="Replace --out if it exists.")
@click.option("--no-capture", "no_capture", is_flag=True,
              help="Record the run's evidence without turning XRT's capture on (for an XRT "
                   "without it, or when the capture itself is suspected).")
@click.option("--attach", is_flag=True,
              help="Run no command: record the same evidence for a window of time beside a "
                   "program already running (a `flm serve` driven from elsewhere), until "
                   "Ctrl-C or --seconds.")
@click.option("--seconds", type=Seconds(0.1), default=None,
              help="With --attach: how long the window stays open (default: until Ctrl-C).")
@click.option("--url", default=None,
              help="With --attach: where the running flm serve listens, to ask its version "
                   "(e.g. http://127.0.0.1:52625).")
@click.option("--deadline", type=Seconds(1.0), default=DEFAULT_DEADLINE_S,
              show_default=True,
              help="Seconds before the program is stopped (SIGINT, then SIGTERM, then "
                   "SIGKILL, 5 s apart); only a program that exits normally lets XRT write "
                   "replay.json.")
@click.option("--after", "after_s", type=click.FloatRange(0, 600), default=DEFAULT_AFTER_S,
              show_default=True,
              help="Seconds the kernel log and trace events are still read after the "
                   "program ends (the driver may still print).")
@click.option("--no-recovery-check", "no_recovery", is_flag=True,
              help="Do not run the NOOP check on a fresh context afterwards.")
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
@click.option("--no-redact", "no_redact", is_flag=True,
              help="Write report.yaml with this machine's names as they are (default: "
                   "redacted, as every report).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def record_command(frames: int, out: str | None, force: bool, no_capture: bool, attach: bool,
                   seconds: float | None, url: str | None, deadline: float, after_s: float,
                   no_recovery: bool, prompt: str, end_with: str, pack: str | None,
                   backend_kind: str, profile: str | None, no_redact: bool,
                   command: tuple[str, ...]) -> None:
    """Run COMMAND (e.g. `flm run minicpm5:2b`, or any pyxrt program) with XRT's capture on,
    give it a prompt and the line that ends it, and record what the machine said meanwhile:
    OUT/report.yaml, for every run, holds the fingerprint before, the kernel log and the
    driver's trace events from its start to a few seconds after its end, its output with
    its error lines, how it ended, the times and the time to failure, and whether the
    device still answers afterwards. Once XRT has written replay.json, it checks the
    capture and prints the engine's runlists and what to run next.

    The capture is turned on through XRT's own settings (`xrt-capture` where the XRT has
    it, else the variables Runtime.capture_frames and Runtime.capture_output_dir), which XRT
    reads as any user and as root; an xrt.ini in the current folder is not used (as root
    XRT ignores it). --no-capture records the same evidence without it; --attach records
    it beside a program already running.

    Exits 0 once recorded, 3 when the capture asked for was not written or the device no
    longer answers afterwards, 130 at Ctrl-C (the report is written in every case; an
    --attach window without --seconds ends at Ctrl-C)."""
    if attach:
        _attach_options(command, no_capture, frames, seconds)
    elif seconds is not None or url is not None:
        raise BadInput("--seconds and --url go with --attach (a window beside a program "
                       "already running); a COMMAND runs until it ends")
    program = "attached" if attach else _program(command)
    folder = _folder(out, program, force)
    backend = make_backend(backend_kind, profile, False)
    if attach and not backend.hardware:
        raise BadInput("--attach watches this machine's kernel log beside a program already "
                       "running on its NPU; the simulated stack runs nothing beside the "
                       "harness: record a program on it with `capture record -- CMD`")
    settings = {"capture": not (no_capture or attach), "attach": attach,
                "frames": None if no_capture or attach else frames, "after_s": after_s,
                "recovery_check": not no_recovery,
                **({"seconds": seconds, "url": url} if attach else
                   {"deadline_s": deadline, "prompt": prompt, "end_with": end_with})}
    if attach:
        _made(folder, out is not None)
        from harness.app.cli.recorded_run import record_attached
        record_attached(backend, folder, settings, seconds, url, not no_redact)
        return
    job, banner, scratch = _recording(backend, command, folder, frames, deadline,
                                      [prompt] + ([end_with] if end_with else []), pack,
                                      capture=not no_capture)
    click.echo(banner)
    click.echo(f"input: {', then '.join(repr(line) for line in job.lines)}, then the end "
               "of input")
    if not no_capture:
        click.echo(f"frames: counted from {REPLAY}, which XRT writes when the program exits",
                   err=True)
    _made(folder, out is not None)
    from harness.app.cli.recorded_run import record_program
    try:
        ended, report, path = record_program(
            backend, job, folder, settings, machine=_machine(scratch, backend),
            redact=not no_redact, progress=_progress(job.capture),
            capture=lambda ended: capture_section(ended, folder, job.capture))
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    conclude(ended, folder, report, path)


def _attach_options(command: tuple[str, ...], no_capture: bool, frames: int,
                    seconds: float | None) -> None:
    if command:
        raise BadInput(f"--attach records beside a program already running, so it runs none: "
                       f"drop {shlex.join(command)} (or drop --attach to run it)")
    if frames != DEFAULT_FRAMES:
        raise BadInput("--frames goes with XRT's capture of a program the harness runs; "
                       "--attach captures nothing (start the server under `capture record -- "
                       "flm serve MODEL` to capture it)")


def _machine(scratch: Path | None, backend: Backend) -> Path | None:
    """Where a program on the simulated binding keeps its simulated driver's log, trace
    and device (`harness.sim.machine_folder`); None where the evidence is the machine's."""
    if scratch is None or backend.hardware:
        return None
    return scratch / "machine"


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
        if not ((folder / REPLAY).is_file() or (folder / ORIGIN_FILE).is_file()
                or _recorded(folder)):
            raise BadInput(f"--out {folder} holds no {REPLAY}: it is not a capture, and "
                           "--force replaces only a capture folder; move it away (remove it "
                           "yourself if it is a capture its program cut short) or choose "
                           "another --out")
        shutil.rmtree(folder)
    return folder


def _recorded(folder: Path) -> bool:
    """A folder `capture record` wrote: its report.yaml is a harness report."""
    from harness.app.cli.recorded_run import REPORT_NAME
    from harness.report.output_file import REPORT_FILE
    report = folder / REPORT_NAME
    return report.is_file() and not report.is_symlink() and \
        REPORT_FILE.refusal(report, "--out") is None


def _made(folder: Path, given: bool) -> None:
    """Make the capture folder (and `captures/` for the default one) before XRT writes."""
    from harness.formats.output_paths import make_folder
    if not given:
        make_folder(folder.parent)
    make_folder(folder, what="--out" if given else "")


def _recording(backend: Backend, command: tuple[str, ...], folder: Path, frames: int,
               deadline: float, lines: list[str], pack: str | None, *, capture: bool = True
               ) -> tuple[Recording, str, Path | None]:
    """What runs, with which environment, and the first line saying where the answers
    come from; the scratch folder to remove afterwards (the simulator's pyxrt, and the
    simulated machine a program on it keeps its driver's log in)."""
    import os
    environment = dict(os.environ)
    if capture:
        environment.update({CAPTURE_FRAMES: str(frames), CAPTURE_DIR: str(folder.resolve())})
    scratch = None
    wrapper: tuple[str, ...] = ()
    if backend.hardware and (not backend.simulated or getattr(backend, "emulated", None)):
        if not capture:
            banner = (f"{backend.describe()}\nrecording without XRT's capture "
                      "(--no-capture): the run's evidence only")
        else:
            install = _xrt_install(backend)
            _needs_capture(install)
            tool = capture_tool(install)
            if tool is not None:
                wrapper = (tool, "--frames", str(frames), "--output-dir",
                           str(folder.resolve()), "--")
            how = (f"{tool} --frames {frames} --output-dir {folder}" if tool else
                   f"{CAPTURE_FRAMES}={frames} {CAPTURE_DIR}={folder} in its environment")
            banner = f"{backend.describe()}\ncapturing with XRT's own capture: {how}"
    else:
        from harness.sim.host_script import simulated_pyxrt_environment
        from harness.sim.machine_folder import MACHINE_ENV
        from harness.sim.profiles import parse_profile
        from harness.sim.releases import CAPTURE
        played = backend.profile or getattr(backend, "stand_in_profile", lambda: None)() \
            or parse_profile(None)
        if capture and not played.release.has(CAPTURE):
            raise EnvironmentNotReady(f"the simulated XRT {played.release.name} has no "
                                      f"capture; {WHERE_CAPTURE_IS} (the simulator plays "
                                      "it as xrt:2.26 and xrt:master), or record without it: "
                                      "--no-capture")
        scratch = Path(tempfile.mkdtemp(prefix="harness-pyxrt-"))
        environment = simulated_pyxrt_environment(environment, played, scratch)
        machine = _machine(scratch, backend)
        if machine is not None:
            environment[MACHINE_ENV] = str(machine)
        how = (f"capturing with the SIMULATED stack's XRT capture ({CAPTURE_FRAMES}={frames} "
               f"{CAPTURE_DIR}={folder})" if capture else
               "recording on the SIMULATED stack without XRT's capture (--no-capture)")
        banner = (f"{backend.describe()}\n{how}: a Python program's `import pyxrt` is bound "
                  "to the simulator; not hardware evidence")
    need = (_pack_bytes(command, pack) + MARGIN) if capture else 0
    free = free_bytes(folder)
    if free < need:
        raise EnvironmentNotReady(
            f"{folder}: its disk has {approx_size(free)} free, and this capture may need about "
            f"{approx_size(need)} (the pack and a margin of {approx_size(MARGIN)}: XRT writes "
            "every buffer a captured run uses, and again whenever it changes); free some "
            "space or choose another --out")
    job = Recording(tuple(command), folder, tuple(lines), environment, deadline,
                    FLOOR if capture else 0, wrapper, capture=capture)
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


def _progress(capture: bool = True) -> Callable[[Snapshot], None]:
    tty = sys.stderr.isatty()
    said = {"at": -10.0}

    def show(snap: Snapshot) -> None:
        text = (f"capturing: {snap.seconds:.0f} s, {snap.files} files, "
                f"{approx_size(snap.written) if snap.written else 'nothing'} written, "
                f"{approx_size(snap.free)} free") if capture else \
            f"recording: {snap.seconds:.0f} s"
        if tty:
            click.echo(f"\r\033[K{text}", err=True, nl=False)
        elif snap.seconds - said["at"] >= 10:
            said["at"] = snap.seconds
            click.echo(text, err=True)
    return show
