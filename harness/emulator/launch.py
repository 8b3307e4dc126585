"""One emulated NPU for the life of a program: the run folder (the device's sysfs tree,
its buffers, its kernel log), the model process, and the environment that puts the
program on them.

The run folder is created on /dev/shm where it can be (buffers are files both processes
map, best kept in memory), else in the system's temporary folder, with a short name:
the model's socket path must fit a unix socket address. It is removed at the end unless
kept (`--keep`, for looking at the model's log and the kernel log it printed).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.emulator.build import library
from harness.emulator.device import EmulatedDevice
from harness.emulator.server import SOCKET_NAME, SUMMARY_NAME
from harness.model.errors import EnvironmentNotReady
from harness.probe.emulation import ENV_CLOCK_RATE, ENV_DIR, ENV_LIBRARY, ENV_PROFILE
from harness.sim.profiles import Profile

START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 5.0
SHM = Path("/dev/shm")


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
        env["LD_PRELOAD"] = f"{self.library} {preload}".strip()
        env[ENV_DIR] = str(self.folder)
        env[ENV_PROFILE] = self.profile.name
        env[ENV_LIBRARY] = str(self.library)
        if self.clock_rate != 1.0:
            env[ENV_CLOCK_RATE] = repr(self.clock_rate)
        else:
            env.pop(ENV_CLOCK_RATE, None)
        return env

    @property
    def kernel_log(self) -> Path:
        return self.folder / "kmsg"

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
    return Path(tempfile.mkdtemp(prefix="xdna-emu-", dir=parent))


def start(profile: Profile, *, keep: bool = False, clock_rate: float = 1.0,
          preload: Path | None = None) -> Emulation:
    """Build (or find) the preload library (unless given), write the device's tree and
    start the model (its clock `clock_rate` times faster than the wall clock)."""
    preload = preload or library()
    device = EmulatedDevice(profile)
    folder = _run_folder()
    try:
        kmsg = folder / "kmsg"
        kmsg.touch()
        device.write_tree(folder / "root", kmsg)
        (folder / "redirects").write_text("\n".join(device.redirects()) + "\n", "utf-8")
        model = subprocess.Popen(
            [sys.executable, "-m", "harness.emulator.server", str(folder), profile.name,
             str(os.getpid()), repr(float(clock_rate))],
            stdin=subprocess.DEVNULL, start_new_session=True)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
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
