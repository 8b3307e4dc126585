"""A simulated NPU that outlives the program using it: what a program on the simulated
binding leaves where the harness that started it reads it, as a machine's driver leaves it
in the kernel log, the trace buffer and the device itself.

On a machine, what the driver printed while a program ran is in the kernel log after the
program is gone (killed, crashed or not), its trace events in tracefs's buffer, and a device
the driver's timer left wedged stays wedged for the next program. A program that runs on the
simulated binding in its own process (`capture record -- python SCRIPT`, `sim exec`) is
given a folder (``HARNESS_SIM_MACHINE``) where its simulated driver keeps the same three:

- ``kmsg``: every record as a read of /dev/kmsg returns it, appended as it is printed (the
  harness reads it with its /dev/kmsg reader, `harness.logs.kernel_log.KmsgReader`);
- ``trace``: the `xdna_job` buffer as tracefs prints it (`harness.sim.trace_log`), written
  again whenever the driver prints a line and when the program exits: a program killed
  between two of those leaves the buffer as it was at the last (the jobs that ended since
  are missing; what led to a timeout, which prints, is there);
- ``device_life.json``: what the device carries past a trial (`harness.sim.device_life`), at
  the same moments, so that a check run on the device afterwards finds it as the program
  left it (wedged).

Each is replaced atomically (written beside, then renamed) but the kernel log, which only
grows. The clock of every record is the simulated device's (`harness.sim.driver_log`
BOOT_US and on), never a machine's.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.sim.device_life import DeviceLife

if TYPE_CHECKING:
    from harness.sim.stack import Stack

MACHINE_ENV = "HARNESS_SIM_MACHINE"
KMSG, TRACE, LIFE = "kmsg", "trace", "device_life.json"


def saved_life(folder: Path) -> DeviceLife | None:
    """The device as an earlier program on it left it; None for a device no program used."""
    try:
        data = json.loads((folder / LIFE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    try:
        return DeviceLife.from_json(data)
    except TypeError:
        return None


def life_json(folder: Path) -> dict[str, Any] | None:
    """`saved_life` as the JSON a backend adopts (`Backend.adopt_device_life`)."""
    life = saved_life(folder)
    return life.to_json() if life is not None else None


def attach(stack: Stack, folder: Path) -> None:
    """Keep `stack`'s kernel log, trace buffer and device life in `folder` from now on."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / KMSG).touch()
    stack.kernel_log.sink = folder / KMSG

    def keep() -> None:
        _replace(folder / TRACE, stack.trace.text())
        _replace(folder / LIFE, json.dumps(stack.life.to_json()))
    stack.kernel_log.after_emit = keep
    keep()
    atexit.register(keep)


def _replace(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
