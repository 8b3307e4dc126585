"""`capture record`: another program run with XRT's capture on, until it exits and XRT has
written what it submitted (STACK.md 9).

XRT writes `replay.json` only when the program it records exits normally (its capture
singleton's destructor, at the C library's `exit`): an `os._exit`, a kill or a crash
leaves the artefacts and no replay.json. So the program is ended as its own command line
expects: it is given its input (a one-word prompt, then `/bye`, FastFlowLM's documented
way out of `flm run`) and the end of input. If it is still running at the deadline, or
the disk holding the capture runs low, it is stopped the gentlest way first: SIGINT to its
process group (a program that handles it can still exit normally), then SIGTERM, then
SIGKILL, each after a grace period; what ended it is said, and what was written is kept.
The user's Ctrl-C (which reaches only the harness: the program runs in its own session)
stops it the same way, and another Ctrl-C sends the next signal at once. The program's
output is read as it comes, its error lines recognised and timed
(`harness.execution.program_output`), and `tick` is called at every poll (the evidence
window reads the kernel log meanwhile). With no capture asked (`capture record
--no-capture`) the same runs without XRT's settings.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.execution.program_output import ProgramOutput
from harness.probe.xrt_loader import mapped_libraries

REPLAY = "replay.json"
LINE_CAP = 64 << 10
# what xrt-capture prints once the program it ran has ended (xrt-capture.cpp)
_APPLICATION_EXITED = re.compile(r"^Application exited with code (-?\d+)$")


@dataclass(frozen=True)
class Recording:
    """What to run and how: the command (behind `wrapper`, xrt-capture and its options,
    when that starts it), the capture folder, the input lines, the environment, the
    deadline, and the free space below which it is stopped."""

    command: tuple[str, ...]
    folder: Path
    lines: tuple[str, ...]
    environment: dict[str, str]
    deadline_s: float
    floor_bytes: int
    wrapper: tuple[str, ...] = ()
    grace_s: float = 5.0
    poll_s: float = 0.5
    capture: bool = True                  # XRT's capture asked (replay.json looked for)


@dataclass(frozen=True)
class Snapshot:
    """How far it is: seconds, artefact files and bytes written, free space."""

    seconds: float
    files: int
    written: int
    free: int


@dataclass
class Recorded:
    """How the program ended and what it left."""

    exit_code: int | None                 # None: ended by a signal
    signal: str | None                    # the signal that ended it
    how: str                              # how the program ended: "exited with status 3"
    stop: str | None                      # how the harness stopped it, if it did
    replay_written: bool
    files: int
    written: int
    free: int
    at_deadline: bool = False
    disk_low: bool = False
    interrupted: bool = False             # stopped at the user's Ctrl-C
    output: ProgramOutput = field(default_factory=ProgramOutput)
    xrt_libraries: list[dict[str, Any]] = field(default_factory=list)   # what it mapped
    started_s: float = 0.0                # on this process's monotonic clock
    ended_at_s: float | None = None       # when it ended, from its start
    pid: int | None = None

    @property
    def ended_by(self) -> str:
        """How it ended, in words: "it exited with status 3", or the stop first."""
        return f"{self.stop}; it {self.how}" if self.stop else f"it {self.how}"

    @property
    def errors(self) -> list[str]:
        """The first line of each error it printed, as it printed it."""
        return [seen.text.strip() for seen in self.output.errors]

    def program(self) -> dict[str, Any]:
        """How it ended, for the report."""
        out: dict[str, Any] = {"exit_status": self.exit_code, "signal": self.signal,
                               "ended": self.how}
        if self.stop:
            out["stopped"] = self.stop
        for name in ("at_deadline", "disk_low", "interrupted"):
            if getattr(self, name):
                out[name] = True
        if self.xrt_libraries:
            out["xrt_libraries"] = self.xrt_libraries
        return out


def free_bytes(folder: Path) -> int:
    """Free space on the file system that holds `folder` (or would: its nearest parent)."""
    for place in (folder, *folder.parents):
        if place.exists():
            return shutil.disk_usage(place).free
    return shutil.disk_usage(Path.cwd()).free


def written(folder: Path) -> tuple[int, int]:
    """(files, bytes) in the capture folder now."""
    files = size = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            if entry.is_file(follow_symlinks=False):
                files += 1
                size += entry.stat(follow_symlinks=False).st_size
    return files, size


def record(job: Recording, progress: Callable[[Snapshot], None],
           echo: Callable[[str], None], tick: Callable[[], None] = lambda: None,
           started: float | None = None) -> Recorded:
    """Run the program until it exits (or is stopped), passing each line it prints to
    `echo`, a snapshot to `progress` and a call to `tick` every `poll_s`. Whatever it
    leaves running when it exits is ended with it. `started`: when its start is counted
    from (this process's monotonic clock; default now)."""
    started = time.monotonic() if started is None else started
    proc = subprocess.Popen([*job.wrapper, *job.command], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=job.environment, start_new_session=True)
    _feed(proc, job.lines)
    watch = _Watch(proc, echo, started)
    stopping: _Stop | None = None
    assert proc.stdout is not None
    output = proc.stdout.fileno()
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(output, selectors.EVENT_READ)
            polled = -job.poll_s
            while selector.get_map():
                try:
                    exited = proc.poll() is not None
                    # once it has exited, what it left running may hold its output open:
                    # take what is there and stop
                    ready = selector.select(timeout=0.2 if exited else job.poll_s)
                    chunk = os.read(output, 1 << 16) if ready else b""
                    if chunk:
                        watch.take(chunk)
                    elif ready or exited:
                        break
                    now = time.monotonic()
                    if now - polled >= job.poll_s:
                        polled = now
                        tick()
                        stopping = stopping or _check(job, proc, watch, progress,
                                                      now - started)
                except KeyboardInterrupt:
                    # the user's Ctrl-C (the program, in its own session, did not get it):
                    # stopped as at the deadline, so that XRT can still write; another
                    # Ctrl-C goes to the next signal at once
                    if stopping is None or not stopping.by_user:
                        stopping = _Stop(proc, "your Ctrl-C", job.grace_s,
                                         wrapper=_wrapper_name(job),
                                         sent=stopping.sent if stopping else None)
                        stopping.by_user = True
                    else:
                        stopping.hurry()
                if stopping is not None:
                    stopping.step()
    finally:
        if proc.poll() is None:
            _Stop(proc, "the harness stopping", 0).kill()
        proc.wait()
        ended_at = time.monotonic() - started
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)     # what it left running
    watch.flush()
    done = _ended(job, proc, watch, stopping, started)
    done.ended_at_s = ended_at
    return done


def _check(job: Recording, proc: subprocess.Popen[bytes], watch: _Watch,
           progress: Callable[[Snapshot], None], seconds: float) -> _Stop | None:
    """A snapshot for the progress line; a stop when the deadline passed or the disk runs
    low."""
    watch.libraries()
    files, size = written(job.folder)
    free = free_bytes(job.folder)
    progress(Snapshot(seconds, files, size, free))
    if proc.poll() is not None:
        return None
    if seconds >= job.deadline_s:
        return _Stop(proc, f"the deadline ({job.deadline_s:g} s)", job.grace_s,
                     wrapper=_wrapper_name(job))
    if free < job.floor_bytes:
        return _Stop(proc, f"the disk running low ({free >> 20} MiB free, below "
                           f"{job.floor_bytes >> 20} MiB)", job.grace_s, disk=True,
                     wrapper=_wrapper_name(job))
    return None


def _feed(proc: subprocess.Popen[bytes], lines: tuple[str, ...]) -> None:
    """Its whole input, then the end of input."""
    assert proc.stdin is not None
    with contextlib.suppress(OSError):
        proc.stdin.write("".join(f"{line}\n" for line in lines).encode())
    with contextlib.suppress(OSError):
        proc.stdin.close()


class _Stop:
    """The ladder of signals to the program's process group: SIGINT, SIGTERM, SIGKILL,
    each after `grace_s` of the one before. Behind xrt-capture (`wrapper`), SIGINT and
    SIGTERM go to what it started, not to it nor to the scripts that start it: it has no
    handler for them (xrt-capture.cpp, detail/linux/process_linux.h: fork, execvp,
    waitpid), so it would die at once, and with it the wait for a program that takes its
    time to exit normally, as XRT needs to write replay.json."""

    LADDER = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)

    def __init__(self, proc: subprocess.Popen[bytes], why: str, grace_s: float, *,
                 disk: bool = False, wrapper: str | None = None,
                 sent: list[str] | None = None) -> None:
        self.proc, self.why, self.grace_s, self.disk = proc, why, grace_s, disk
        self.wrapper = wrapper
        self.sent: list[str] = list(sent or [])    # a deadline's, taken over by a Ctrl-C
        self.next_at = 0.0
        self.by_user = False                        # the user's Ctrl-C stops it
        self.hurried: int | None = None             # the rung another Ctrl-C sent at once

    def hurry(self) -> None:
        """Another Ctrl-C: the next signal now, not after the grace period."""
        if self.proc.poll() is None and len(self.sent) < len(self.LADDER):
            self.next_at = 0.0
            self.hurried = len(self.sent)

    def step(self) -> None:
        if self.proc.poll() is not None or len(self.sent) == len(self.LADDER) or \
                time.monotonic() < self.next_at:
            return
        signum = self.LADDER[len(self.sent)]
        if self.wrapper and signum != signal.SIGKILL:
            for pid in _started_by(self.proc.pid, self.wrapper):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signum)
        else:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signum)
        name = signal.Signals(signum).name
        self.sent.append(f"{name} at once (another Ctrl-C)"
                         if self.hurried == len(self.sent) else name)
        self.next_at = time.monotonic() + self.grace_s

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)


def _wrapper_name(job: Recording) -> str | None:
    return Path(job.wrapper[0]).name if job.wrapper else None


def _started_by(pid: int, wrapper: str) -> list[int]:
    """Every process `pid` started, and theirs, but the wrapper's own: an install's
    `bin/xrt-capture` is a shell script that starts XRT's loader script, which starts the
    `unwrapped/xrt-capture` binary, which starts the program (XRT 2.26). A process whose
    arguments before the first `--` name `wrapper` is one of them."""
    import psutil  # type: ignore[import-untyped]

    def wraps(process: psutil.Process) -> bool:
        try:
            words = process.cmdline()
        except psutil.Error:
            return False
        head = words[:words.index("--")] if "--" in words else words
        return any(Path(word).name == wrapper for word in head)
    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)
                if not wraps(child)]
    except psutil.Error:
        return []


class _Watch:
    """The program's output as it comes (passed on a line at a time, kept and read for its
    error lines: `ProgramOutput`), and the XRT libraries its processes map."""

    def __init__(self, proc: subprocess.Popen[bytes], echo: Callable[[str], None],
                 started: float) -> None:
        self.proc, self.echo, self.started = proc, echo, started
        self.pending = b""
        self.output = ProgramOutput()
        self.application_code: int | None = None
        self.mapped: dict[str, dict[str, Any]] = {}

    def take(self, chunk: bytes) -> None:
        self.pending += chunk
        *lines, self.pending = self.pending.split(b"\n")
        if len(self.pending) > LINE_CAP:       # output with no line end: cut into lines
            lines.append(self.pending)
            self.pending = b""
        for raw in lines:
            self._line(raw.decode(errors="replace").rstrip("\r"))

    def flush(self) -> None:
        if self.pending:
            self._line(self.pending.decode(errors="replace"))
            self.pending = b""
        self.output.finish()

    def _line(self, line: str) -> None:
        self.echo(line)
        self.output.add(line, time.monotonic() - self.started)
        exited = _APPLICATION_EXITED.match(line.strip())
        if exited:
            self.application_code = int(exited.group(1))

    def libraries(self) -> None:
        """The XRT libraries mapped by the program and what it started (its own XRT may
        not be the one the harness sees: FastFlowLM can bring its own)."""
        import psutil  # type: ignore[import-untyped]
        try:
            processes = [psutil.Process(self.proc.pid)]
            processes += processes[0].children(recursive=True)
        except psutil.Error:
            return
        for process in processes:
            try:
                with open(f"/proc/{process.pid}/maps") as maps:
                    for lib in mapped_libraries(maps.read()):
                        self.mapped.setdefault(lib["path"], lib)
            except OSError:
                continue


def _ended(job: Recording, proc: subprocess.Popen[bytes], watch: _Watch,
           stopping: _Stop | None, started: float) -> Recorded:
    code = proc.returncode
    killed = signal.Signals(-code).name if code is not None and code < 0 else None
    if job.wrapper and killed is None:
        code = watch.application_code     # xrt-capture exits 0 whatever the program did
    how = (f"exited with status {code}" if killed is None and code is not None
           else "exited (its status unknown)" if killed is None else f"ended by {killed}")
    stop = (f"stopped at {stopping.why}: sent {', then '.join(stopping.sent)}"
            if stopping is not None and stopping.sent else None)
    files, size = written(job.folder)
    replay = job.folder / REPLAY
    since = time.time() - (time.monotonic() - started) - 1.0
    fresh = job.capture and replay.is_file() and replay.stat().st_mtime >= since
    return Recorded(None if killed else code, killed, how, stop, fresh, files, size,
                    free_bytes(job.folder),
                    at_deadline=stopping is not None and not stopping.disk
                    and not stopping.by_user,
                    interrupted=stopping is not None and stopping.by_user,
                    disk_low=stopping is not None and stopping.disk,
                    output=watch.output, xrt_libraries=list(watch.mapped.values()),
                    started_s=started, pid=proc.pid)
