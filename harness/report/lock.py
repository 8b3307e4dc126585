"""One writer per report: an advisory lock (`flock`) on a lock file beside it,
``.NAME.yaml.lock``, holding the writer's pid.

A second writer is refused, naming that pid; a lock left by a process that is gone is
taken over (the journal notes it). The lock is taken on the file a report path really
names, and on that file itself (`flock`, by its identity), so two names of one file, a
symlink or a hard link, cannot be written at once; the lock file is never opened through
a symlink or a second name, and one that is a folder is named as such.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from pathlib import Path

from harness.formats.scratch import process_exists
from harness.model.cleanups import at_exit
from harness.model.errors import BadInput


class ReportBusy(BadInput):
    """Another harness is writing this report."""


_HELD: set[ReportLock] = set()


def release_all() -> None:
    """Let go of every report this process holds (a command ends, however it ends)."""
    for lock in list(_HELD):
        lock.release()


class ReportLock:
    """The lock of the file a report path names: a symlinked report is locked (and written)
    where it points, so two names for one file cannot be written at once."""

    def __init__(self, report: Path) -> None:
        real = Path(os.path.realpath(report))
        self.report = real
        self.path = real.with_name(f".{real.name}.lock")
        self.fd: int | None = None
        self.file_fd: int | None = None        # the report itself, locked by its identity
        self.took_over: int | None = None      # the pid of a gone writer whose lock we took
        self.holder_gone = False               # and whether no process has that pid now

    def _open(self) -> int:
        """The lock file, never through a symlink nor a second name of another file: it is
        truncated, so a planted link would have us overwrite what it names."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise BadInput(f"lock file {self.path} is a symlink; refusing to follow it: "
                               "remove it if no harness is writing the report") from None
            if err.errno == errno.EISDIR:
                raise BadInput(f"lock file {self.path} is a folder, not a lock file: remove "
                               "it (or choose another name for the report)") from None
            raise
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            os.close(fd)
            raise BadInput(f"lock file {self.path} is not a plain file of its own (it has "
                           f"{st.st_nlink} names); refusing to write it: remove it if no "
                           "harness is writing the report")
        return fd

    def acquire(self) -> None:
        for _ in range(10):
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 32).decode("ascii", "replace").strip() or "unknown"
                os.close(fd)
                raise ReportBusy(f"another harness (pid {holder}) is writing "
                                 f"{self.path.name[1:-5]}; wait for it to finish or stop it"
                                 ) from None
            # the lock file may have been removed and replaced while we waited for it
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            try:
                previous = os.read(fd, 32).decode("ascii", "replace").strip()
                os.lseek(fd, 0, os.SEEK_SET)
                os.ftruncate(fd, 0)
                os.write(fd, str(os.getpid()).encode())
            except OSError:
                # a full disk: leave no lock file behind, as if we had never come
                with contextlib.suppress(OSError):
                    os.unlink(self.path)
                os.close(fd)
                raise
            if previous.isdigit() and len(previous) < 16 and int(previous) != os.getpid():
                self.took_over = int(previous)
                self.holder_gone = not process_exists(self.took_over)
            self.fd = fd
            _HELD.add(self)
            try:
                self._lock_file()
            except BaseException:
                self.release()
                raise
            return
        raise ReportBusy(f"could not lock {self.path}: it keeps being replaced")

    def _lock_file(self) -> None:
        """Lock the report by its identity too: a second name of the same file (a hard
        link) has a lock file of its own name, but not a file of its own."""
        try:
            fd = os.open(self.report, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return                      # not there yet (a new report): no other name either
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            names = os.fstat(fd).st_nlink
            os.close(fd)
            raise ReportBusy(f"another harness is writing {self.report.name} through "
                             f"another of its {names} names (hard links to one file); wait "
                             "for it to finish or stop it") from None
        self.file_fd = fd

    def release(self) -> None:
        _HELD.discard(self)
        if self.file_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.file_fd)
            self.file_fd = None
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.path)          # removed while still held, so no one locks a ghost
        os.close(self.fd)
        self.fd = None


at_exit(release_all)
