"""The preload library, compiled from the package's own C source on first use with the
system's C compiler and kept in the harness's cache folder under the hash of that source,
so an upgraded harness builds its own and never loads a stale one."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from harness.formats.cache import cache_dir
from harness.model.errors import EnvironmentNotReady
from harness.probe.emulation import LIBRARY_STEM

SOURCE_NAME = "preload.c"
FLAGS = ("-O2", "-shared", "-fPIC", "-Wall", "-Wextra")
LIBS = ("-ldl", "-lpthread")
COMPILE_TIMEOUT_S = 120.0


def source() -> bytes:
    return resources.files("harness.emulator").joinpath(SOURCE_NAME).read_bytes()


def compiler() -> str:
    """The C compiler: $CC, else `cc`; a one-line error naming the fix when neither is."""
    wanted = os.environ.get("CC") or "cc"
    found = shutil.which(wanted)
    if found is None:
        raise EnvironmentNotReady(
            f"no C compiler ({wanted!r} is not on PATH): the emulator compiles its preload "
            "library on first use; install one (Debian/Ubuntu: `sudo apt install gcc`) or "
            "set CC to a C compiler")
    return found


def library_name(text: bytes) -> str:
    """The library's file name: the hash of the source it is built from."""
    return f"{LIBRARY_STEM}-{hashlib.sha256(text).hexdigest()[:16]}.so"


def library(folder: Path | None = None) -> Path:
    """The compiled library for this source, built now if the cache does not hold it."""
    text = source()
    folder = folder or cache_dir("emulator")
    target = folder / library_name(text)
    if target.is_file():
        return target
    cc = compiler()
    with tempfile.TemporaryDirectory(dir=folder) as work:
        src = Path(work) / SOURCE_NAME
        src.write_bytes(text)
        out = Path(work) / target.name
        try:
            done = subprocess.run([cc, *FLAGS, "-o", str(out), str(src), *LIBS],
                                  capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise EnvironmentNotReady(f"the C compiler {cc} did not run ({err}); check the "
                                      "installation or set CC to another") from None
        if done.returncode != 0 or not out.is_file():
            first = next((line for line in done.stderr.splitlines() if "error" in line),
                         done.stderr.strip().splitlines()[-1:] or ["no output"])
            raise EnvironmentNotReady(f"the C compiler {cc} failed on the emulator's preload "
                                      f"library: {str(first).strip()}; set CC to another "
                                      "compiler") from None
        os.replace(out, target)          # atomic: a concurrent build leaves one whole file
    return target
