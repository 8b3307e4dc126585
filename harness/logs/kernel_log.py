"""Reading the kernel log around a trial: /dev/kmsg, else `journalctl -k`, else why not.

A record of /dev/kmsg reads ``level,seq,usec,flags;text`` (Documentation/ABI/testing/
dev-kmsg): one record per read, continuation lines of its dictionary start with a
space, and bytes below 0x20, from 0x7f and the backslash are written as ``\\xNN``.
Opening with O_NONBLOCK and seeking to SEEK_END marks "now"; later reads return what
was logged since, EAGAIN when there is nothing more, and EPIPE once when the ring
buffer overwrote records before they were read. The simulated stack writes the same
records, so one parser reads both. Only the driver's and the IOMMU's lines are kept.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:         # programs run only on the hardware path (journalctl)
    from harness.formats.capped_run import Completed

# compiled on first use, by re's own cache: a start-up does not pay for it
KEEP = (r"^amdxdna(?:_legacy)? [0-9a-fA-F:.]+: |AMD-Vi|IO_PAGE_FAULT|"
        r"^(?:aie\w*|amdxdna\w*): \d+ callbacks suppressed")
MAX_READ_BYTES = 8 << 20          # a runaway log does not eat the harness's memory
MAX_KEPT_LINES = 400              # per trial: the first and the last, the rest counted
KMSG_RECORD = 8192                # a read shorter than one record fails with EINVAL
JOURNAL_TIMEOUT_S = 15.0
_ESCAPE = re.compile(r"\\x([0-9a-fA-F]{2})")

PERMISSION_FIX = ("allow reading it: `sudo sysctl kernel.dmesg_restrict=0` (until reboot), "
                  "or join the systemd-journal group (`sudo usermod -aG systemd-journal "
                  "$USER`, then log in again) so `journalctl -k` can read it")


@dataclass(frozen=True)
class LogRecord:
    """One kernel log record: its level, time since boot in microseconds, and text."""

    level: int
    usec: int
    text: str

    def shown(self) -> str:
        """As `dmesg` shows it: ``[ 1003.123456] text``."""
        return f"[{self.usec // 1_000_000:5d}.{self.usec % 1_000_000:06d}] {self.text}"


def escape(text: str) -> str:
    """Text as /dev/kmsg writes it (the kernel's `msg_add_ext_text`), byte by byte."""
    return "".join(f"\\x{b:02x}" if b < 0x20 or b >= 0x7f or b == 0x5c else chr(b)
                   for b in text.encode("utf-8"))


def unescape(text: str) -> str:
    if "\\x" not in text:
        return text
    raw = _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)
    return raw.encode("latin-1", "replace").decode("utf-8", "replace")


def parse_kmsg(text: str) -> list[LogRecord]:
    """Records from /dev/kmsg text; lines that are not records (dictionary lines, a torn
    first line) are skipped."""
    records = []
    for line in text.split("\n"):
        if not line or line.startswith(" "):
            continue
        prefix, sep, message = line.partition(";")
        fields = prefix.split(",")
        if not sep or len(fields) < 3:
            continue
        try:
            level, usec = int(fields[0]) & 7, int(fields[2])
        except ValueError:
            continue
        records.append(LogRecord(level, usec, unescape(message)))
    return records


def parse_journal(text: str, since_us: int | None = None) -> list[LogRecord]:
    """Records from `journalctl -k -o json` lines; MESSAGE may be a byte array."""
    records = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        message = entry.get("MESSAGE")
        if isinstance(message, list):
            message = bytes(b for b in message if isinstance(b, int) and 0 <= b < 256) \
                .decode("utf-8", "replace")
        if not isinstance(message, str):
            continue
        try:
            realtime = int(entry.get("__REALTIME_TIMESTAMP", 0))
            usec = int(entry.get("_SOURCE_MONOTONIC_TIMESTAMP")
                       or entry.get("__MONOTONIC_TIMESTAMP") or 0)
            level = int(entry.get("PRIORITY", 6))
        except (TypeError, ValueError):
            continue
        if since_us is not None and realtime < since_us:
            continue
        for part in message.splitlines() or [""]:
            records.append(LogRecord(level, usec, part))
    return records


def kept(records: Iterable[LogRecord]) -> list[LogRecord]:
    return [r for r in records if re.search(KEEP, r.text)]


@dataclass
class Reading:
    """What one read returned: the records kept, and what was not seen."""

    source: str
    records: list[LogRecord] = field(default_factory=list)
    dropped: int = 0           # records of other subsystems, not kept
    lost: int = 0              # ring-buffer overruns: records gone before they were read
    truncated: bool = False    # more than MAX_READ_BYTES


@dataclass(frozen=True)
class Unreadable:
    """A kernel log that cannot be read here: where it was looked for, why not, and the fix."""

    source: str
    why: str
    fix: str

    def to_json(self) -> dict[str, str]:
        return {"source": self.source, "unreadable": self.why, "fix": self.fix}


class KmsgReader:
    """/dev/kmsg (or a file standing in for it): `mark` now, `read` what came since."""

    def __init__(self, path: Path, name: str = "/dev/kmsg") -> None:
        self.path = path
        self.source = name
        self._fd: int | None = None

    def open(self) -> int:
        self._fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        return self._fd

    def mark(self) -> int:
        fd = self.open() if self._fd is None else self._fd
        os.lseek(fd, 0, os.SEEK_END)
        return fd

    def read(self) -> Reading:
        fd = self.mark() if self._fd is None else self._fd
        reading = Reading(self.source)
        chunks, size = [], 0
        while size < MAX_READ_BYTES:
            try:
                chunk = os.read(fd, KMSG_RECORD)
            except BlockingIOError:
                break
            except BrokenPipeError:
                reading.lost += 1
                continue
            except InterruptedError:
                continue
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        else:
            reading.truncated = True
        _fill(reading, parse_kmsg(b"".join(chunks).decode("utf-8", "replace")))
        return reading

    def boot(self) -> list[LogRecord]:
        """Every record still in the ring buffer (for what the driver said at load)."""
        fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        chunks, size = [], 0
        try:
            while size < MAX_READ_BYTES:
                try:
                    chunk = os.read(fd, KMSG_RECORD)
                except (BrokenPipeError, InterruptedError):
                    continue
                except BlockingIOError:
                    break
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        finally:
            os.close(fd)
        return parse_kmsg(b"".join(chunks).decode("utf-8", "replace"))

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


Execute = Callable[[list[str], float], "Completed | None"]


def execute(argv: list[str], timeout_s: float) -> Completed | None:
    """Run a program with a time limit, its output read up to MAX_READ_BYTES (then it is
    stopped, its output marked cut); None when it cannot start."""
    # imported here: only the hardware path runs a program, and start-up is measured
    from harness.formats.capped_run import run_capped
    return run_capped(argv, timeout_s, MAX_READ_BYTES)


class JournalReader:
    """`journalctl -k` from the time of `mark` (whole seconds, then filtered by time)."""

    source = "journalctl -k"

    def __init__(self, program: str, run: Execute = execute) -> None:
        self.program = program
        self.run = run
        self._since_us = int(time.time() * 1e6)

    def _query(self, since_s: int) -> Completed | None:
        return self.run([self.program, "-k", "-o", "json", "--no-pager", "-q",
                         "--since", f"@{since_s}"], JOURNAL_TIMEOUT_S)

    def mark(self) -> None:
        self._since_us = int(time.time() * 1e6)

    def read(self) -> Reading:
        reading = Reading(self.source)
        done = self._query(self._since_us // 1_000_000 - 1)
        if done is not None and (done.returncode == 0 or done.truncated):
            _fill(reading, parse_journal(done.stdout, self._since_us))
            reading.truncated = done.truncated
        return reading

    def boot(self) -> list[LogRecord]:
        done = self.run([self.program, "-k", "-b", "-o", "json", "--no-pager", "-q"],
                        JOURNAL_TIMEOUT_S)
        return parse_journal(done.stdout) if done and (done.returncode == 0 or done.truncated) \
            else []

    def check(self) -> str | None:
        """Why journalctl cannot read the kernel log, or None when it can."""
        done = self._query(int(time.time()) - 1)
        if done is None:
            return f"{self.program} does not start"
        if done.returncode != 0:
            return (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        if not done.stdout.strip() and "No journal files were opened" in done.stderr:
            return "no journal files readable by this user"
        return None

    def close(self) -> None:
        pass


def _fill(reading: Reading, records: list[LogRecord]) -> None:
    keep = kept(records)
    reading.records = keep
    reading.dropped = len(records) - len(keep)


KernelLogReader = KmsgReader | JournalReader


def reading_of(kmsg_text: str, source: str) -> Reading:
    """A Reading of text already read from a /dev/kmsg (the simulated stack's)."""
    reading = Reading(source)
    _fill(reading, parse_kmsg(kmsg_text))
    return reading


def open_kernel_log(kmsg: Path, journalctl: str | None,
                    run: Execute = execute) -> KernelLogReader | Unreadable:
    """The best reader this user has: /dev/kmsg, then the journal; else why neither."""
    why = []
    try:
        reader = KmsgReader(kmsg)
        reader.mark()
        return reader
    except FileNotFoundError:
        why.append("/dev/kmsg is absent")
    except PermissionError:
        why.append("/dev/kmsg is not readable by this user (kernel.dmesg_restrict is "
                   "probably 1)")
    except OSError as err:
        why.append(f"/dev/kmsg: {err.strerror}")
    if journalctl is None:
        why.append("journalctl is not installed")
    else:
        journal = JournalReader(journalctl, run)
        problem = journal.check()
        if problem is None:
            return journal
        why.append(f"journalctl -k: {problem}")
    return Unreadable("none", "; ".join(why), PERMISSION_FIX)


SIMULATED_MARK = "SIMULATED"
# The simulated driver's clock starts here, 9e9 s (285 years) after boot, an uptime no
# machine has (`harness.sim.driver_log`): a stamp past it is the simulated device's.
SIMULATED_BOOT_US = 9_000_000_000_000_000.0


def mark_simulated(line: str) -> str:
    """A kernel-log line of a simulated run as every output shows it: marked at its start,
    so that no copy of it passes for a line a machine printed (the simulated driver's
    address and clock are impossible ones too: `harness.sim.driver_log`)."""
    return line if line.startswith(SIMULATED_MARK + " ") else f"{SIMULATED_MARK} {line}"


def limit_lines(records: list[LogRecord], most: int = MAX_KEPT_LINES, *,
                simulated: bool = False) -> tuple[list[str], int]:
    """At most `most` lines, the first and last halves; and how many were left out. A
    simulated run's lines are marked (`mark_simulated`)."""
    lines = [mark_simulated(r.shown()) if simulated else r.shown() for r in records]
    if len(lines) <= most:
        return lines, 0
    head = most // 2
    return lines[:head] + lines[len(lines) - (most - head):], len(lines) - most
