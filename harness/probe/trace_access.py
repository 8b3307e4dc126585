"""Whether this machine's amdxdna trace events can be recorded, and if not, how to allow it.

tracefs is mounted at /sys/kernel/tracing (or under debugfs) and readable by root only by
default; the driver's events are listed under `events/amdxdna/` (`events/amdxdna_trace/`
for the legacy out-of-tree driver) and are off until enabled. The harness reads the
buffer around each trial only where the events are on and the buffer readable; it never
turns events on itself (that changes the machine's tracing for everyone): the report says
how to (`harness.logs.trace_events` names the events and where the sources declare them).
"""

from __future__ import annotations

import os
from typing import Any

from harness.logs.trace_events import SYSTEMS, TRACEFS, TraceReader
from harness.probe.readers import Sources


def tracefs_facts(src: Sources) -> dict[str, Any]:
    """recording: True with the mount, system and events on; else why not and the fix."""
    mount = next((m for m in TRACEFS if src.path(m).is_dir()), None)
    if mount is None:
        return {"recording": False, "why": "tracefs is not mounted here",
                "fix": "mount it: `sudo mount -t tracefs nodev /sys/kernel/tracing`"}
    events_dir = src.path(f"{mount}/events")
    if _absent(events_dir) and (src.identity.root or _listable(src, src.path(mount))):
        # the folder is there but nothing is mounted on it: running as root changes nothing
        return {"recording": False, "path": mount,
                "why": f"tracefs is not mounted on {mount} (the folder is empty)",
                "fix": f"mount it: `sudo mount -t tracefs nodev {mount}`"}
    if not _listable(src, events_dir):
        return {"recording": False, "path": mount,
                "why": f"{mount} is not readable by this user (root only by default)",
                "fix": f"enable the events (`echo 1 | sudo tee {mount}/events/amdxdna/enable`)"
                       " and run the harness as root (`sudo -E`) to read them"}
    systems = [s for s in SYSTEMS if (events_dir / s).is_dir()]
    if not systems:
        return {"recording": False, "path": mount,
                "why": "tracefs lists no amdxdna trace events (is the driver loaded?)",
                "fix": "load the amdxdna driver, then enable its events: "
                       f"`echo 1 | sudo tee {mount}/events/amdxdna/enable`"}
    system = systems[0]
    names = sorted(p.name for p in (events_dir / system).iterdir() if p.is_dir())
    enabled = [n for n in names if src.read(f"{mount}/events/{system}/{n}/enable") == "1"]
    facts: dict[str, Any] = {"path": mount, "system": system, "events": names,
                             "enabled": enabled}
    if not enabled:
        return {**facts, "recording": False,
                "why": f"the {system} trace events are off",
                "fix": f"enable them: `echo 1 | sudo tee {mount}/events/{system}/enable` (the "
                       "next run records them around each trial)"}
    buffer = src.path(f"{mount}/trace")
    if (src.identity.emulate and not src.allowed(buffer, 4)) or not _readable(buffer):
        return {**facts, "recording": False,
                "why": f"{mount}/trace is not readable by this user",
                "fix": "run the harness as root (`sudo -E`) to read the trace buffer"}
    return {**facts, "recording": True}


def _absent(path: Any) -> bool:
    """Known not to exist (a folder this user may not search is not known absent)."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


def _listable(src: Sources, folder: Any) -> bool:
    if src.identity.emulate and not src.allowed(folder, 5):
        return False
    try:
        os.listdir(folder)
        return True
    except OSError:
        return False


def _readable(path: Any) -> bool:
    try:
        with open(path, "rb") as handle:
            handle.read(1)
        return True
    except OSError:
        return False


def trace_reader(src: Sources, facts: dict[str, Any]) -> TraceReader | None:
    """A reader of the trace buffer where the facts say the events are recorded."""
    if not facts.get("recording"):
        return None
    return TraceReader(src.path(f"{facts['path']}/trace"))
