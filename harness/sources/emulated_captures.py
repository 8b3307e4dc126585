"""Marking the captures real XRT wrote over the EMULATED device
(harness.formats.capture_origin): `emulate` marks those its program left, and `capture
record` run under `emulate` marks its own."""

from __future__ import annotations

import os
from pathlib import Path

from harness.formats.capture_origin import EMULATED, ORIGIN_FILE, mark_capture
from harness.probe.emulation import ENV_PROFILE
from harness.probe.xrt_config import CAPTURE_DIR


def emulated_profile() -> str | None:
    """The emulated device's profile when this process runs under `emulate`."""
    return os.environ.get(ENV_PROFILE) or None


def mark_emulated_captures(command: tuple[str, ...], since: float, profile: str
                           ) -> list[Path]:
    """After a program ran under `emulate`: mark each capture folder real XRT wrote
    meanwhile (a replay.json modified since `since`) where the run said to write one:
    xrt-capture's `--output-dir`, XRT's `Runtime.capture_output_dir` in the environment,
    or XRT's default, the current folder."""
    places = [Path(os.environ[CAPTURE_DIR])] if os.environ.get(CAPTURE_DIR) else []
    for at, word in enumerate(command):
        if word == "--output-dir" and at + 1 < len(command):
            places.append(Path(command[at + 1]))
        elif word.startswith("--output-dir="):
            places.append(Path(word.split("=", 1)[1]))
    places.append(Path.cwd())
    marked = []
    for folder in dict.fromkeys(p.resolve() for p in places):
        try:
            fresh = (folder / "replay.json").stat().st_mtime >= since
        except OSError:
            continue
        if fresh and not (folder / ORIGIN_FILE).exists():
            try:
                mark_capture(folder, EMULATED, profile)
            except OSError:
                continue
            marked.append(folder)
    return marked
