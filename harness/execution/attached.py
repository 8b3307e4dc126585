"""`capture record --attach`: the same evidence for a window of time beside a program the
harness did not start (a `flm serve` the user drives from another terminal or a client):
the window runs until Ctrl-C or `--seconds`, and the report names the server's process and
version where this user can see them.

The server is looked for as `ps` would find it: each process in /proc whose name or first
argument is FastFlowLM's `flm` (its arguments from /proc/PID/cmdline), and each process
holding the NPU's device node (`harness.probe.holders`: what an engine of any name holds
open). Its version is FastFlowLM's own answer: `/api/version` of a running server where
its address is given (`--url`, as `serve-probe` asks it), else what `flm version` printed
when the machine was probed (the `flm` on PATH, which may not be the running one: said so).
Other users' processes are not visible without privileges; how many could not be looked
at is said.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from harness.probe.holders import device_users, own_family
from harness.probe.readers import Sources

ENGINE = "flm"
MAX_ARGS = 32
POLL_S = 0.5


def engine_processes(src: Sources) -> tuple[list[dict[str, Any]], int]:
    """FastFlowLM's processes (pid, name, arguments, whether it serves) and how many
    processes could not be read."""
    proc = src.path("/proc")
    found: list[dict[str, Any]] = []
    hidden = 0
    try:
        pids = sorted(int(p) for p in os.listdir(proc) if p.isdigit())
    except OSError:
        return [], 0
    for pid in pids:
        comm = src.read(f"/proc/{pid}/comm")
        try:
            raw = (proc / str(pid) / "cmdline").read_bytes()
        except PermissionError:
            hidden += 1
            continue
        except OSError:
            continue
        argv = [part.decode(errors="replace") for part in raw.split(b"\0") if part]
        first = argv[0].rsplit("/", 1)[-1] if argv else ""
        if ENGINE not in (comm, first):
            continue
        found.append({"pid": pid, "command": comm or first, "args": argv[1:MAX_ARGS],
                      "serves": "serve" in argv[1:3]})
    return found, hidden


def server_section(src: Sources, environment: dict[str, Any],
                   version_of: Callable[[], str | None] | None = None,
                   url: str | None = None) -> dict[str, Any]:
    """The server as this user can see it: FastFlowLM's processes, what holds the NPU, and
    the version (`version_of` asks the running server's `/api/version` at `url`)."""
    processes, hidden = engine_processes(src)
    holders = device_users(src, own_family() if not src.fake else ())
    out: dict[str, Any] = {"processes": processes,
                           "npu_holders": holders.get("users") or []}
    if hidden or holders.get("uninspectable"):
        out["uninspectable"] = max(hidden, int(holders.get("uninspectable") or 0))
    asked = version_of() if version_of is not None else None
    if asked:
        out["version"] = asked
        out["version_from"] = f"{url}/api/version (the running server's answer)"
    else:
        probed = (environment.get("flm") or {}).get("version")
        if probed:
            out["version"] = str(probed)
            out["version_from"] = ("`flm version` of the flm on PATH when the machine was "
                                   "probed (give --url to ask the running server itself)")
    if not processes:
        out["note"] = ("no FastFlowLM process is visible to this user"
                       + (f" ({out['uninspectable']} processes could not be looked at: "
                          "another user's; run as that user or as root)"
                          if out.get("uninspectable") else ""))
    return out


def watch(seconds: float | None, tick: Callable[[], None],
          progress: Callable[[float], None]) -> tuple[str, bool]:
    """Watch until `seconds` pass (None: until Ctrl-C), calling `tick` and `progress` as it
    goes; how the window ended, and whether the user's Ctrl-C ended it."""
    started = time.monotonic()
    try:
        while True:
            elapsed = time.monotonic() - started
            if seconds is not None and elapsed >= seconds:
                return f"after --seconds {seconds:g}", False
            tick()
            progress(elapsed)
            time.sleep(POLL_S if seconds is None else
                       max(0.0, min(POLL_S, seconds - elapsed)))
    except KeyboardInterrupt:
        return f"at your Ctrl-C after {time.monotonic() - started:.0f} s", True
