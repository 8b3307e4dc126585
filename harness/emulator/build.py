"""The preload library, compiled from the package's own C source on first use with the
system's C compiler and kept in the harness's cache folder under the hash of that source,
so an upgraded harness builds its own and never loads a stale one.

The library runs as code in every program `emulate` starts, so a file of the right name
is not enough: it is used only from the user's private cache folder
(`harness.formats.cache`) and only when this user owns it and nobody else can write it;
anything else there is replaced by a fresh build.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from harness.formats.cache import cache_dir, trusted_file
from harness.formats.capped_run import run_capped
from harness.model.errors import EnvironmentNotReady
from harness.probe.emulation import LIBRARY_STEM

SOURCE_NAME = "preload.c"
FLAGS = ("-O2", "-shared", "-fPIC", "-Wall", "-Wextra")
LIBS = ("-ldl", "-lpthread")
COMPILE_TIMEOUT_S = 120.0
COMPILER_OUTPUT_BYTES = 1 << 20


def source() -> bytes:
    return resources.files("harness.emulator").joinpath(SOURCE_NAME).read_bytes()


def compiler() -> list[str]:
    """The C compiler's command: $CC split into words as make does (`ccache gcc`,
    `gcc -m64`), else `cc`; a one-line error naming the fix when its program is not
    there."""
    given = os.environ.get("CC") or "cc"
    try:
        words = shlex.split(given)
    except ValueError as err:
        raise EnvironmentNotReady(f"CC={given!r} does not split into words ({err}); set CC "
                                  "to a C compiler") from None
    found = shutil.which(words[0]) if words else None
    if found is None:
        raise EnvironmentNotReady(
            f"no C compiler ({(words or [given])[0]!r} is not on PATH): the emulator "
            "compiles its preload library on first use; install one (Debian/Ubuntu: `sudo "
            "apt install gcc`) or set CC to a C compiler")
    return [found, *words[1:]]


def library_name(text: bytes) -> str:
    """The library's file name: the hash of the source it is built from."""
    return f"{LIBRARY_STEM}-{hashlib.sha256(text).hexdigest()[:16]}.so"


def library(folder: Path | None = None, say: Callable[[str], None] | None = None) -> Path:
    """The compiled library for this source, built now if the cache does not hold one
    this user can trust; `say` hears which compiler built it."""
    text = source()
    folder = folder or cache_dir("emulator")
    target = folder / library_name(text)
    if trusted_file(target):
        return target
    command = compiler()
    cc = shlex.join(command)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as work:
        src = Path(work) / SOURCE_NAME
        src.write_bytes(text)
        out = Path(work) / target.name
        done = run_capped([*command, *FLAGS, "-o", str(out), str(src), *LIBS], COMPILE_TIMEOUT_S,
                          max_bytes=COMPILER_OUTPUT_BYTES)
        if done is None or done.returncode is None:
            why = "did not run" if done is None else \
                f"did not finish in {COMPILE_TIMEOUT_S:.0f} s"
            raise EnvironmentNotReady(f"the C compiler {cc} {why}; check the installation or "
                                      "set CC to another")
        if done.returncode != 0 or not out.is_file():
            lines = done.stderr.strip().splitlines()
            said = next((line for line in lines if "error" in line),
                        lines[-1] if lines else "no output").strip()[:300]
            if done.truncated:
                said += f" (its output cut at {COMPILER_OUTPUT_BYTES >> 20} MiB)"
            raise EnvironmentNotReady(f"the C compiler {cc} failed on the emulator's preload "
                                      f"library: {said}; set CC to another compiler")
        os.chmod(out, 0o755)
        os.replace(out, target)          # atomic: a concurrent build leaves one whole file
    if say is not None:
        say(f"compiled the emulator's preload library with {cc} into {target}")
    return target
