"""One emulated NPU for the life of a program: the run folder (the device's sysfs tree,
its buffers, its kernel log), the model process, and the environment that puts the
program on them.

The run folder is created on /dev/shm where it can be (buffers are files both processes
map, best kept in memory), else in the system's temporary folder, with a short name:
the model's socket path must fit a unix socket address, and the library takes a folder
of at most 64 characters, which is checked here before anything runs. It is removed at the
end unless kept (`--keep`, for looking at the model's log and the kernel log it printed);
one a killed `emulate` left is removed by the next once its processes are gone
(`harness.formats.scratch`).

The library is copied into the run folder and preloaded from there: LD_PRELOAD splits
its list at spaces and colons and has no quoting, so a cache folder whose path holds one
(`~/My Cache`) would leave the library unloaded and the program on whatever device is
really there. The program's processes greet the model before their own code runs (the
library's handshake); `greeted` says whether a process did.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.emulator.build import library
from harness.emulator.device import EmulatedDevice
from harness.emulator.kernels_by_pdi import XCLBINS_FILE
from harness.emulator.server import SOCKET_NAME, SUMMARY_NAME
from harness.formats.scratch import make_owned, set_owners
from harness.model.errors import EnvironmentNotReady
from harness.probe.emulation import ENV_CLOCK_RATE, ENV_DIR, ENV_LIBRARY, ENV_PROFILE
from harness.sim.profiles import Profile

START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 5.0
SHM = Path("/dev/shm")
RUN_PREFIX = "xdna-emu-"
RUN_FOLDER_MAX = 64             # preload.c RUN_DIR_MAX: the socket path must fit sockaddr_un
UNSPLITTABLE = (" ", "\t", "\n", ":")     # what LD_PRELOAD splits its list at


@dataclass
class Emulation:
    profile: Profile
    device: EmulatedDevice
    folder: Path
    library: Path
    model: subprocess.Popen
    keep: bool = False
    clock_rate: float = 1.0
    summary: dict = field(default_factory=dict)

    def environment(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """`base` (the current environment) with the preload and the emulator's place."""
        env = dict(os.environ if base is None else base)
        preload = env.get("LD_PRELOAD", "")
        env["LD_PRELOAD"] = f"{self.preloaded} {preload}".strip()
        env[ENV_DIR] = str(self.folder)
        env[ENV_PROFILE] = self.profile.name
        env[ENV_LIBRARY] = str(self.preloaded)
        if self.clock_rate != 1.0:
            env[ENV_CLOCK_RATE] = repr(self.clock_rate)
        else:
            env.pop(ENV_CLOCK_RATE, None)
        return env

    @property
    def preloaded(self) -> Path:
        """The library's copy in the run folder, the one LD_PRELOAD names."""
        return self.folder / self.library.name

    @property
    def kernel_log(self) -> Path:
        return self.folder / "kmsg"

    def claim(self, pid: int) -> None:
        """`pid` (the program) uses the run folder too: a killed `emulate` leaves it to
        the next run only once that program has ended as well."""
        set_owners(self.folder, os.getpid(), self.model.pid, pid)

    def greeted(self, pid: int) -> bool:
        """Whether process `pid` greeted the model (the library loaded in it and answered
        from inside it), by what the model says it answered."""
        return pid in (self.summary.get("greeted") or [])

    def stop(self) -> dict:
        """Stop the model, keep what it said it answered, and clean up."""
        if self.model.poll() is None:
            self.model.send_signal(signal.SIGTERM)
            try:
                self.model.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.model.kill()
                self.model.wait()
        try:
            self.summary = json.loads((self.folder / SUMMARY_NAME).read_text("utf-8"))
        except (OSError, ValueError):
            self.summary = {}
        if not self.keep:
            shutil.rmtree(self.folder, ignore_errors=True)
        return self.summary


def _run_folder() -> Path:
    parent = SHM if SHM.is_dir() and os.access(SHM, os.W_OK | os.X_OK) else None
    folder = make_owned(RUN_PREFIX, parent)
    text = str(folder)
    why = (f"is {len(text)} characters long, past the {RUN_FOLDER_MAX} the emulator's "
           "library takes" if len(text) > RUN_FOLDER_MAX else
           "holds a space or a colon, which LD_PRELOAD cannot carry"
           if any(c in text for c in UNSPLITTABLE) else None)
    if why is not None:
        shutil.rmtree(folder, ignore_errors=True)
        raise EnvironmentNotReady(f"the emulator's run folder {text} {why}; set TMPDIR to "
                                  "a short plain folder (such as /tmp)")
    return folder


def start(profile: Profile, *, keep: bool = False, clock_rate: float = 1.0,
          preload: Path | None = None,
          say: Callable[[str], None] | None = None,
          xclbins: tuple[Path, ...] = ()) -> Emulation:
    """Build (or find) the preload library (unless given), write the device's tree and
    start the model (its clock `clock_rate` times faster than the wall clock); `say`
    hears what the build did."""
    preload = preload or library(say=say)
    device = EmulatedDevice(profile)
    folder = _run_folder()
    try:
        shutil.copyfile(preload, folder / preload.name)
        os.chmod(folder / preload.name, 0o500)
        kmsg = folder / "kmsg"
        kmsg.touch()
        device.write_tree(folder / "root", kmsg)
        (folder / "redirects").write_text("\n".join(device.redirects()) + "\n", "utf-8")
        if xclbins:          # for slow:, the model names a command's kernel by its PDI
            (folder / XCLBINS_FILE).write_text(
                "".join(f"{path.resolve()}\n" for path in xclbins), "utf-8")
        model = subprocess.Popen(
            [sys.executable, "-m", "harness.emulator.server", str(folder), profile.name,
             str(os.getpid()), repr(float(clock_rate))],
            stdin=subprocess.DEVNULL, start_new_session=True)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    set_owners(folder, os.getpid(), model.pid)
    emulation = Emulation(profile, device, folder, preload, model, keep, clock_rate)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not (folder / SOCKET_NAME).exists():
        if model.poll() is not None or time.monotonic() > deadline:
            emulation.stop()
            log = folder / "model.log"
            raise EnvironmentNotReady(
                "the emulator's model process did not start"
                + (f" (exit status {model.returncode})" if model.returncode is not None
                   else "") + (f"; see {log}" if keep else "; run again with --keep to "
                               "see its log"))
        time.sleep(0.01)
    return emulation
