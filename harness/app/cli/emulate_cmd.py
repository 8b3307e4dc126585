"""`runlist-harness emulate [--profile P] -- COMMAND...`."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness.app import exits
from harness.formats.capture_origin import ORIGIN_FILE
from harness.model.errors import BadInput
from harness.sources.emulated_captures import mark_emulated_captures

if TYPE_CHECKING:
    from harness.emulator.launch import Emulation
    from harness.sim.profiles import Profile


@click.command(context_settings={"ignore_unknown_options": True,
                                 "allow_interspersed_args": False})
@click.option("--profile", default=None,
              help="The emulated NPU and driver: flavour, kernel, device and hypotheses, as "
                   "for the simulated stack (see `sim profiles`); default the #712 "
                   "machine's stack: mainline (in-tree amdxdna) on Linux 7.0, npu5 with "
                   "firmware 1.1.2.65.")
@click.option("--keep", is_flag=True,
              help="Keep the run folder (the device's tree, buffers, the kernel log the "
                   "model printed, model.log) and say where it is.")
@click.option("--clock-rate", type=click.FloatRange(min=1.0, max=1000.0), default=1.0,
              show_default=True,
              help="Run the emulated device's clock this many times faster than the wall "
                   "clock: the driver's timeouts fire that much sooner (2 s becomes 2/RATE "
                   "s), outcomes are the same. Reports record it. At 1 every hung job waits "
                   "out the driver's real timeout (2 s staging, 6 s the legacy tree, 60 s "
                   "mainline) on the wall clock, as on hardware: most of an emulated run "
                   "that hangs is that wait.")
@click.option("--xclbins", "xclbins", multiple=True, type=click.Path(exists=True),
              help="The xclbins COMMAND loads (files or folders; repeatable), for slow:: no "
                   "kernel name reaches a driver, so the model names a command's kernel by "
                   "the PDI bytes its context was configured with, compared with these.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def emulate(profile: str | None, keep: bool, clock_rate: float, xclbins: tuple[str, ...],
            command: tuple[str, ...]) -> int:
    """Run COMMAND against the XRT installed on this machine with one emulated NPU of the
    profile's device, firmware and driver flavour: XRT's own libraries, pyxrt and XDNA
    shim answer, over a driver whose every command is decided by the harness's model.

    \b
    Examples:
      runlist-harness emulate -- xrt-smi examine
      runlist-harness emulate --profile staging,hang-at:30 -- reproduce_ert_timeout --backend xrt
      runlist-harness emulate -- xrt-runner --recipe out/R.json --profile out/profile.json

    A preload library (compiled on first use with the system C compiler, $CC, cached by
    the hash of its source in the user's own cache folder) presents the device where
    XRT's shim looks for one and sends its ioctls to the model process; no root and no NPU
    are needed. Exits with COMMAND's status; 3 when COMMAND never loaded the library (a
    static or setuid program: it did not run emulated), 4 when the model failed or died
    while COMMAND ran. Results are EMULATED, never hardware evidence: the harness's
    reports say so, and `report check` refuses one that claims otherwise.

    The emulated device keeps real time: a hung job fails when the driver's timeout
    has passed on the wall clock, as on hardware, so each hung trial takes that long
    (--clock-rate makes it shorter).
    """
    from harness.emulator.launch import start
    from harness.sim.profiles import parse_profile
    parsed = parse_profile(profile)
    program = shutil.which(command[0]) if "/" not in command[0] else command[0]
    if program is None:
        raise BadInput(f"{command[0]}: no such program on PATH; give its path, or add its "
                       "folder to PATH (for XRT's tools: `source /opt/xilinx/xrt/setup.sh`)")
    _warn_of_unplayed_slow(parsed, tuple(Path(x) for x in xclbins))
    emulation = start(parsed, keep=keep, clock_rate=clock_rate,
                      say=lambda text: click.echo(f"emulate: {text}", err=True),
                      xclbins=tuple(Path(x) for x in xclbins))
    device = emulation.device
    refused = "; the driver refused it at probe: no /dev/accel node" \
        if parsed.probe_refusal else ""
    click.echo(f"emulate: one EMULATED {device.model.name} ({parsed.flavour} driver on Linux "
               f"{parsed.kernel}, firmware {device.firmware_text}{refused}), profile "
               f"{parsed.name}"
               + (f", clock {clock_rate:g}x the wall clock" if clock_rate != 1.0 else "")
               + f"; the driver and firmware are the harness's model{_whose_xrt()}; not "
               f"hardware evidence; {_timers(parsed, clock_rate)}", err=True)
    status = None
    child = None
    died = None
    began = time.time()
    try:
        child = subprocess.Popen(list(command), env=emulation.environment())
        emulation.claim(child.pid)
        status = _wait_forwarding(child)
    except OSError as err:
        raise BadInput(f"{command[0]}: cannot run it ({err.strerror})") from None
    finally:
        died = emulation.model.poll()        # before stop: did it end on its own?
        summary = emulation.stop()
        _report(summary, emulation.folder if keep else None)
        for folder in mark_emulated_captures(tuple(command), began, parsed.name):
            click.echo(f"emulate: XRT wrote a capture in {folder} over the EMULATED device; "
                       f"marked it so ({ORIGIN_FILE}): it is never a machine's", err=True)
    return _verdict(emulation, child, status, died, summary, command[0])


def _warn_of_unplayed_slow(profile: Profile, xclbins: tuple[Path, ...]) -> None:
    """A slow: token the model cannot match: said, not silently ignored."""
    if not profile.slow:
        return
    from harness.emulator.kernels_by_pdi import index_xclbins
    index = index_xclbins(xclbins)
    for problem in index.problems:
        click.echo(f"emulate: warning: --xclbins: {problem}", err=True)
    for kernel, us in profile.slow:
        named = [k for found in index.by_digest.values() for k in found
                 if kernel in (k.stem, k.kernel, f"{k.stem}/{k.kernel}")]
        alike = sorted({f"{o.stem}/{o.kernel}" for k in named for o in index.sharing(k)
                        if kernel not in (o.stem, o.kernel, f"{o.stem}/{o.kernel}")})
        if named and not alike:
            continue
        why = (f"its PDI image is the same as that of {', '.join(alike)}, which the driver "
               "cannot tell apart" if alike
               else f"no xclbin given (--xclbins) has a kernel or stem {kernel!r}" if xclbins
               else "no kernel name crosses the driver's interface (a context gets each "
                    "CU's PDI bytes and function number, a command a CU index and its "
                    "control code), and no --xclbins names the PDIs")
        click.echo(f"emulate: warning: slow:{kernel}:{us:g} is not played: {why}; its "
                   "commands take the default 50 us", err=True)


def _verdict(emulation: Emulation, child: subprocess.Popen | None, status: int | None,
             died: int | None, summary: dict, name: str) -> int:
    """The exit status, and a line when the run was not what `emulate` said it was (the
    model gone, a fault of the model, a program that never loaded the library)."""
    faults = summary.get("faults") or 0
    greeted = child is None or emulation.greeted(child.pid)
    if died is not None:
        click.echo(f"emulate: the emulated NPU's model process ended while {name} ran "
                   f"({_ended(died)}): every request after that failed; rerun with --keep "
                   "and see model.log", err=True)
    elif faults:
        click.echo(f"emulate: the emulated driver failed on {faults} request(s) (answered "
                   "EIO, which the real driver would not): rerun with --keep and see "
                   "model.log", err=True)
    elif not greeted:
        click.echo(f"emulate: NOT EMULATED: {name} never loaded the emulator's library (a "
                   "statically linked or setuid program, or one started without "
                   "LD_PRELOAD): whatever it did ran on this machine's own devices", err=True)
    return exits.for_emulated_program(status, model_failed=died is not None or faults > 0,
                                      greeted=greeted)


def _ended(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def _timers(profile: Profile, clock_rate: float) -> str:
    """What a hang costs in wall time under this emulation, in the banner's words."""
    from harness.model.drivers import driver_build
    build = driver_build(profile.flavour, profile.kernel)
    timeout = build.worst_seconds_with(1)
    # the legacy check skips a check per other connected context it swaps out idle
    beside = (f" ({build.worst_seconds:g} s at most beside idle connected contexts)"
              if build.worst_seconds > timeout else "")
    if clock_rate == 1.0:
        return (f"a hung job waits out the driver's {timeout:g} s timeout{beside} on the wall "
                f"clock, as on hardware (--clock-rate 100: {timeout / 100:g} s)")
    return (f"a hung job fails after the driver's {timeout:g} s timeout{beside}, "
            f"{timeout / clock_rate:g} s on the wall clock")


def _whose_xrt() -> str:
    """The XRT a program run here would load, in the banner's words: it is the machine's,
    or there is none to load (the banner once said it was the machine's regardless)."""
    from harness.probe.xrt import xrt_install
    found = xrt_install(os.environ.get("XILINX_XRT"))
    if found is None:
        return (", but no XRT is installed here (XILINX_XRT is unset and /opt/xilinx/xrt "
                "holds none): a program that loads XRT will not find it, so install or build "
                "XRT with the XDNA shim and `source` its setup.sh")
    folder, version = found
    return f" and XRT is this machine's ({folder}, {version or 'version not recorded'})"


def _wait_forwarding(child: subprocess.Popen) -> int:
    """Wait for the program as a shell does: Ctrl-C reaches it from the terminal (it is
    in the foreground group), SIGTERM sent to the harness is passed on."""
    previous = signal.signal(signal.SIGTERM, lambda *_: child.send_signal(signal.SIGTERM))
    try:
        while True:
            try:
                return child.wait()
            except KeyboardInterrupt:
                continue
    finally:
        signal.signal(signal.SIGTERM, previous)


def _report(summary: dict, kept) -> None:
    unanswered = summary.get("unanswered") or {}
    if unanswered:
        what = ", ".join(f"{name} x{count}" for name, count in unanswered.items())
        click.echo(f"emulate: the emulated driver did not answer: {what}", err=True)
    if kept is not None:
        click.echo(f"emulate: run folder kept: {kept}", err=True)
