"""Reading a file the user named as what it claims to be: a regular file, of at most the
size its use allows.

A name can lead to what is no file (`/dev/zero`, a FIFO, a socket, a folder): read whole,
`/dev/zero` never ends (memory runs out) and a FIFO waits for a writer for ever. Each is
refused at once, naming the file and what it is, before a byte is read; so is a file past
the size its use allows (a data file for a 4 KiB buffer that is 6 GB). Opening never
blocks (O_NONBLOCK: a FIFO opens at once), and what is read stops one byte past the limit.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from harness.model.errors import BadInput

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
BLOCK = 1 << 20


def kind_of(mode: int) -> str:
    """What a file of this mode is, in words ("a regular file" for one)."""
    return next((words for test, words in _KINDS if test(mode)), "a regular file")


def _opened(path: Path, what: str, error: type[BadInput]) -> tuple[int, os.stat_result]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as err:
        raise error(f"cannot read {what} {path}: {err.strerror or err}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise error(f"{path} is {kind_of(st.st_mode)}, not a file: give the {what} itself")
    return fd, st


def check_regular(path: str | Path, what: str, *, limit: int | None = None,
                  error: type[BadInput] = BadInput) -> int:
    """The size of `path`, refused unless it is a regular file of at most `limit` bytes."""
    fd, st = _opened(Path(path), what, error)
    os.close(fd)
    _within(Path(path), st.st_size, limit, what, error)
    return st.st_size


def read_regular(path: str | Path, what: str, *, limit: int,
                 error: type[BadInput] = BadInput) -> bytes:
    """The bytes of `path` (`what`: how its use names it, for the error), refused unless it
    is a regular file of at most `limit` bytes."""
    fd, st = _opened(Path(path), what, error)
    try:
        _within(Path(path), st.st_size, limit, what, error)
        chunks, got = [], 0
        while got <= limit:
            chunk = os.read(fd, min(BLOCK, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    except OSError as err:
        raise error(f"cannot read {what} {path}: {err.strerror or err}") from None
    finally:
        os.close(fd)
    _within(Path(path), got, limit, what, error)       # grown since it was looked at
    return b"".join(chunks)


def _within(path: Path, size: int, limit: int | None, what: str,
            error: type[BadInput]) -> None:
    if limit is not None and size > limit:
        raise error(f"{path} is {size} bytes, more than the {limit} bytes of the {what}: "
                    "give a file that fits it")
