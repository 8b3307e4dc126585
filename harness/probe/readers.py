"""Where the probe reads from: a root folder, and injectable readers for what is not a file.

Every file read goes through `Sources.root` (default ``/``), so tests and
post-mortems can point the probe at a copied or fabricated tree. What cannot
come from a tree (DRM ioctls, this process's memory maps, importing pyxrt,
running `flm`, rlimits) comes from callables that tests replace.
"""

from __future__ import annotations

import getpass
import os
import resource
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from harness.formats.regular import read_regular
from harness.formats.rooted import within_root
from harness.logs.kernel_log import Execute, execute
from harness.probe import drm
from harness.probe.xrt_loader import load_pyxrt, system_root

if TYPE_CHECKING:         # programs run only on the hardware path (flm, xrt-smi)
    from harness.formats.capped_run import Completed

UNREADABLE = "unreadable"
MAX_READ = 1 << 20            # sysfs and /proc files are a page; /etc files a few KB


@dataclass
class Identity:
    """Whose permissions to judge files by. With `emulate`, mode bits are checked here
    (for fake trees); otherwise the operating system decides."""

    uid: int
    gids: tuple[int, ...]
    user: str
    emulate: bool = False

    @property
    def root(self) -> bool:
        return self.uid == 0


def real_identity() -> Identity:
    try:
        user = getpass.getuser()
    except Exception:
        user = str(os.geteuid())
    return Identity(os.geteuid(), tuple(os.getgroups()) + (os.getegid(),), user)


def _read_maps() -> str:
    try:
        return Path("/proc/self/maps").read_text()
    except OSError:
        return ""


def _run(argv: list[str]) -> str | None:
    """A short answer (`flm version`): at most 10 s and 64 KiB of it."""
    # imported here: the simulated stack runs no program, and start-up is measured
    from harness.formats.capped_run import run_capped
    done = run_capped(argv, 10.0, 64 << 10)
    if done is None:
        return None
    return (done.stdout or done.stderr).strip() or None


def _memlock() -> tuple[int, int] | None:
    # the standard library's answer: psutil would cost a tenth of start-up for one call
    try:
        return resource.getrlimit(resource.RLIMIT_MEMLOCK)
    except (AttributeError, ValueError, OSError):
        return None


@dataclass
class Sources:
    """Where the probe reads from: the root folder, the environment, who reads, and the
    callables for what is not a file (each replaceable by a test)."""

    root: Path = Path("/")
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    identity: Identity = field(default_factory=real_identity)
    drm: drm.DrmQuery | None = None
    read_maps: Callable[[], str] = _read_maps
    import_pyxrt: Callable[[], tuple[ModuleType | None, str]] = load_pyxrt
    run: Callable[[list[str]], str | None] | None = None
    memlock: Callable[[], tuple[int, int] | None] = _memlock
    open_device: bool = True
    execute: Execute | None = None            # run a program with a time limit (xrt-smi)

    @classmethod
    def live(cls) -> Sources:
        """This machine (or the tree `HARNESS_ROOT` names, without ioctls or `flm`), with
        pyxrt from `harness.probe.xrt_loader`."""
        root = system_root()
        if root != Path("/"):
            # programs are looked up in the tree (`which`), so a fake root brings its own
            return cls(root=root, execute=execute)
        return cls(drm=drm.RealDrm(), run=_run, execute=execute)

    @property
    def fake(self) -> bool:
        return self.root != Path("/")

    def path(self, absolute: str | Path) -> Path:
        """Where `absolute` is read: itself on this machine; under a fake root, looked up
        as if the root were / (`within_root`), so no link of the tree leads out of it."""
        if not self.fake:
            return Path("/") / str(absolute).lstrip("/")
        return within_root(self.root, str(absolute))

    def read(self, absolute: str | Path) -> str | None:
        """A file's text (stripped); None when absent; UNREADABLE when permission is
        denied. What is no file (a FIFO, a device) or past MAX_READ is bad input: reading
        it would wait for ever or fill memory."""
        path = self.path(absolute)
        if not path.exists():
            return None
        if (self.identity.emulate and not self.allowed(path, 4)) or \
                not os.access(path, os.R_OK):
            return UNREADABLE
        try:
            data = read_regular(path, f"file {absolute} the probe reads", limit=MAX_READ)
        except PermissionError:
            return UNREADABLE
        return data.decode("utf-8", "replace").strip()

    def allowed(self, path: Path, want: int) -> bool:
        """Emulated permission check: want is 4 (read), 2 (write) or 6 (both)."""
        who = self.identity
        if not who.emulate:
            flags = (os.R_OK if want & 4 else 0) | (os.W_OK if want & 2 else 0)
            return os.access(path, flags)
        if who.root:
            return True
        st = path.stat()
        if st.st_uid == who.uid:
            bits = st.st_mode >> 6
        elif st.st_gid in who.gids:
            bits = st.st_mode >> 3
        else:
            bits = st.st_mode
        return bits & want == want

    def which(self, program: str) -> Path | None:
        if not self.fake:
            found = shutil.which(program, path=self.env.get("PATH"))
            return Path(found) if found else None
        for folder in (self.env.get("PATH") or "").split(os.pathsep):
            if folder:
                candidate = self.path(f"{folder}/{program}")
                if candidate.is_file():
                    return candidate
        return None

    def environment(self, name: str) -> str | None:
        return self.env.get(name)

    def program(self, name: str, argv: list[str], timeout_s: float) -> Completed | None:
        """Run `name` (found on PATH, in the tree for a fake root) with a time limit;
        None when it is not installed or cannot run here."""
        binary = self.which(name)
        if binary is None or self.execute is None:
            return None
        return self.execute([str(binary), *argv], timeout_s)


def as_plain(value: Any) -> Any:
    """Paths to strings, recursively, for YAML/JSON output."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {k: as_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_plain(v) for v in value]
    return value
