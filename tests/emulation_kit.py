"""Running the emulator in tests: the preload library compiled once per session (the
`preload` fixture, in conftest.py), a program under one emulation (`emulate`: the
scenarios of tests/emulator_client.py), and the harness's command line as a user runs it
with that library in its cache (`cli`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from harness.emulator import build, launch
from harness.sim.profiles import parse_profile

CLIENT = Path(__file__).with_name("emulator_client.py")


def compile_preload(folder: Path) -> Path:
    """The library, compiled with -Werror (the C source carries no warning) into `folder`
    under the name the cache gives it."""
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "preload.c"
    source.write_bytes(build.source())
    target = folder / build.library_name(build.source())
    done = subprocess.run(["cc", *build.FLAGS, "-Werror", "-o", str(target), str(source),
                           *build.LIBS], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return target


def emulate(preload: Path, profile: str, steps: list[tuple[str, dict]], *,
            rate: float = 1.0) -> list[dict[str, Any]]:
    """Run the client's scenarios, in order, under one emulation of `profile`."""
    emu = launch.start(parse_profile(profile), clock_rate=rate, preload=preload)
    try:
        done = subprocess.run([sys.executable, str(CLIENT), json.dumps(steps)],
                              env=emu.environment(), capture_output=True, text=True,
                              timeout=120)
    finally:
        emu.stop()
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def cache_of(preload: Path) -> Path:
    """The XDG cache root the library sits under."""
    return preload.parent.parent.parent


def cli(preload: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """`python -m harness ARGS` with the library in its cache, and `env` added."""
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True,
                          text=True, timeout=120,
                          env=dict(os.environ, XDG_CACHE_HOME=str(cache_of(preload)), **env))


