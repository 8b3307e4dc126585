"""A report on disk while a run writes it: one writer, appended entries, nothing lost.

- One writer per report (`harness.report.lock`); a lock taken over from a process
  that is gone is noted in the journal.
- Saving a trial appends one journal line (`harness.report.fileformat`): the header is
  written once when the report is created and once more when it finishes (or is
  reopened), atomically (temp file, fsync, rename), the journal copied over as
  it is. A line is written in one call; if the write fails it is cut off again,
  so the file never holds half an entry from a failed write (a kill in the middle
  of one leaves a torn last line, which readers ignore and the next writer
  removes).
- Durability: every append is flushed to the kernel (a killed harness loses
  nothing); it is fsynced too, at once on the hardware path (where the machine
  itself may hang), at most every half second on the simulated stack (a power loss
  may then lose that last half second).
- Disk faults (no space, file-size limit, read-only or forbidden folder) end the
  run with one line naming the file and the error, exit 4 (3 before anything ran),
  and say how to continue; the last good version stays on disk.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.formats.output_paths import make_parent
from harness.formats.yamlio import fsync_dir, mode_for
from harness.model.errors import DiskFault, EnvironmentNotReady, ReportError
from harness.model.results import TrialResult
from harness.report.fileformat import entry_line, header_text, load_report, trial_line
from harness.report.lock import ReportLock
from harness.report.model import JOURNAL, JOURNALED, PlanRecord, Report, mapping, utc_now
from harness.report.output_file import check_output_path, check_report_name
from harness.report.redacted_writing import SECTION as REDACTION
from harness.report.redacted_writing import WriteRedaction, machine_tag

# How often a simulated run's report reaches the disk: nothing simulated can hang the
# machine, so its entries and header rewrites are synced at most this often, and once
# more when the run finishes; a hardware run's, every entry and every rewrite.
SIMULATED_SYNC_S = 0.5


def _clean_temps(path: Path) -> list[str]:
    """Remove complete temp files a kill between write and rename left behind: the report
    beside them holds everything they do (they only differ in the header)."""
    removed = []
    for tmp in path.parent.glob(f".{path.name}.*.tmp"):
        with contextlib.suppress(OSError):
            tmp.unlink()
            removed.append(tmp.name)
    return removed


def generated_journal(report: Report) -> bytes:
    """Journal entries for what a report already holds (its trials, searched plans, steps,
    a sweep's cells)."""
    lines = [entry_line("plan", p.declaration()) for p in report.plans[report.declared or 0:]]
    lines += [trial_line(p.name, t) for p in report.plans for t in p.trials]
    lines += [entry_line("step", step)
              for step in (report.sections.get("bisect") or {}).get("log") or []]
    lines += [entry_line("cell", cell)
              for cell in mapping(report.sections.get("sweep")).get("cells") or []]
    lines += [entry_line("note", note) for note in report.notes]
    return b"".join(lines)


def disk_fault(path: Path, err: OSError, *, started: bool, resume: str | None) -> Exception:
    name = errno.errorcode.get(err.errno or 0, "")
    reason = f"{err.strerror or err} ({name})" if name else str(err)
    if not started:
        return EnvironmentNotReady(f"cannot write report {path}: {reason}; give --out in a "
                                   "folder that can be written")
    hint = f"continue with `{resume}` once it can be written" if resume else \
        "run again with --out elsewhere"
    return DiskFault(f"cannot write report {path}: {reason}; the last good version is on "
                     f"disk: {hint}, or start again with --out elsewhere")


SPACE_MARGIN = 1 << 20       # a rewrite leaves at least this much for everything else


def _check_space(target: Path, header_bytes: int) -> None:
    """Rewriting a header copies the report beside itself: refuse before the copy starts
    when the disk cannot hold both, so the report stays whole and continuable rather than
    the copy failing half-way."""
    try:
        size = target.stat().st_size
        fs = os.statvfs(target.parent)
    except OSError:
        return                  # what cannot be measured is left to the write itself
    need = size + header_bytes + SPACE_MARGIN
    free = fs.f_bavail * fs.f_frsize
    if free < need:
        raise OSError(errno.ENOSPC, f"no space left on device: rewriting the header needs "
                                    f"about {need >> 20} MiB beside the report, "
                                    f"{free >> 20} MiB are free")


COPY_BLOCK = 1 << 20
_JOURNAL_LINE = ("\n" + JOURNAL + "\n").encode()


def _journal_start(src: Any) -> int | None:
    """Where the journal's entries begin (after the "journal:" line), or None."""
    src.seek(0)
    seen, offset = b"", 0
    while True:
        block = src.read(COPY_BLOCK)
        if not block:
            return None
        window = seen + block
        at = window.find(_JOURNAL_LINE)
        if at >= 0:
            return offset - len(seen) + at + len(_JOURNAL_LINE)
        seen = window[-len(_JOURNAL_LINE):]
        offset += len(block)


def _after_last_newline(src: Any, start: int, end: int) -> int:
    """Just past the last newline in [start, end): where a torn last entry begins."""
    position = end
    while position > start:
        size = min(COPY_BLOCK, position - start)
        src.seek(position - size)
        at = src.read(size).rfind(b"\n")
        if at >= 0:
            return position - size + at + 1
        position -= size
    return start


def _through_link(path: Path) -> Path:
    """The file a symlinked report name points at: it is that file we lock and replace
    (replacing the link itself would leave the file it names behind, unlocked)."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


class ReportFile:
    """The open report of a run: the header once, then appended journal entries."""

    def __init__(self, path: Path, report: Report, lock: ReportLock,
                 sync_every_s: float = 0.0) -> None:
        self.path = path
        self.report = report
        self.lock = lock
        self.sync_every_s = sync_every_s
        self.resume_command: str | None = None
        # how the file is redacted as it is written (None: as it is, --no-redact)
        self.redaction: WriteRedaction | None = None
        self._fd: int | None = None
        self._synced = 0.0
        self.appended = 0

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def create(cls, report: Report, *, out: str | None, folder: str = "reports",
               name: str = "run", force: bool = False, redact: bool = False,
               sync_every_s: float = 0.0) -> ReportFile:
        """The report's file, its header and what it already holds written (redacted when
        `redact`, as `harness.report.redacted_writing` says); `sync_every_s` the run's sync
        policy (0: each entry and rewrite reaches the disk before the run goes on)."""
        if out:
            check_report_name(Path(out))
            path = _through_link(Path(out))
            check_output_path(path, force=force)
        else:
            stamp = report.created.replace("-", "").replace(":", "")
            path = Path(folder) / f"{name}-{stamp}-{report.run_id[:6]}.yaml"
        try:
            make_parent(path, "--out" if out else "")
        except OSError as err:
            raise disk_fault(path, err, started=False, resume=None) from None
        lock = ReportLock(path)
        try:
            lock.acquire()
        except OSError as err:
            raise disk_fault(path, err, started=False, resume=None) from None
        _clean_temps(path)
        report.declared = len(report.plans)
        handle = cls(path, report, lock, sync_every_s)
        try:
            if redact:
                report.sections[REDACTION] = {"redacted": True,
                                              "machine": machine_tag(report.run_id)}
                handle.redaction = WriteRedaction.for_new(report.header_dict())
            handle._replace(handle._header(), journal=handle._shown(generated_journal(report)),
                            new=not force)
        except FileExistsError:
            lock.release()
            raise ReportError(f"{path} was created by someone else meanwhile; not replacing "
                              "it") from None
        except OSError as err:
            lock.release()
            raise disk_fault(path, err, started=False, resume=None) from None
        except BaseException:
            lock.release()
            raise
        return handle

    @classmethod
    def reopen(cls, path: str | Path) -> ReportFile:
        """Lock a report and load it, its trials in brief (their detail stays in the file,
        which the journal is copied from); nothing on disk changes until `take_over`. A
        file whose journal must be written afresh (a v1 file, or one a YAML tool rewrote)
        is loaded whole."""
        target = _through_link(Path(path))
        lock = ReportLock(target)
        lock.acquire()
        try:
            report = load_report(target, detail=False)
            if report.read_whole or report.schema not in JOURNALED:
                report = load_report(target)
        except BaseException:
            lock.release()
            raise
        return cls(target, report, lock)

    def continue_redacted(self) -> None:
        """Go on writing a report that was written redacted, redacted, its placeholders
        kept (call before `take_over`)."""
        self.redaction = WriteRedaction.for_continued(self.path, self.report.header_dict())

    def _header(self) -> bytes:
        shown = self.redaction.header if self.redaction is not None else None
        return header_text(self.report, shown).encode()

    def _shown(self, journal: bytes) -> bytes:
        return self.redaction.journal(journal) if self.redaction is not None else journal

    def take_over(self) -> None:
        """Go on writing a reopened report: the header once more (dropping a torn last
        entry), the temp files a killed writer left removed, and notes saying so."""
        rewritten = self.report.read_whole
        self.rewrite()
        notes = []
        if self.lock.took_over:
            notes.append(f"took over the lock of pid {self.lock.took_over}, which is no longer "
                         "running" if self.lock.holder_gone else
                         f"took over a lock file naming pid {self.lock.took_over}, which no "
                         "longer held it (that pid runs now, perhaps as another program)")
        if rewritten:
            notes.append("a YAML tool had rewritten this report; the harness restored its "
                         "own layout (header, then one journal line per entry)")
        removed = _clean_temps(self.path)
        if removed:
            notes.append("removed temp files a stopped writer left: " + ", ".join(removed))
        for text in notes:
            self.note(text)

    def note(self, text: str) -> None:
        entry = {"at": utc_now(), "note": text}
        self.report.notes.append(entry)
        self.append("note", entry)

    # -- writing ------------------------------------------------------------------------------

    def _replace(self, header: bytes, journal: bytes | None, *, new: bool = False,
                 final: bool = False) -> None:
        """Write header + journal atomically (a temp file renamed over the report);
        `journal` None copies the file's own. On disk before it returns unless the run
        syncs in batches (`sync_every_s`) and this is not its `final` write."""
        durable = final or not self.sync_every_s
        self.close_journal(sync=durable)
        target = self.path
        if journal is None:
            _check_space(target, len(header))
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            os.fchmod(fd, mode_for(target))
            with os.fdopen(fd, "wb") as out:
                out.write(header)
                if journal is None:
                    self._copy_journal(out)
                else:
                    out.write(journal)
                out.flush()
                if durable:
                    os.fsync(out.fileno())
            if new:
                os.link(tmp, target)
                os.unlink(tmp)
            else:
                os.replace(tmp, target)
            tmp = ""
            if durable:
                fsync_dir(target.parent)
        finally:
            if tmp and os.path.exists(tmp):
                os.unlink(tmp)

    def _copy_journal(self, out: Any) -> None:
        """The journal's entries as they are on disk, copied a block at a time (a report
        of a million trials is never held in memory to be rewritten); a torn last entry
        is left out."""
        if self.report.read_whole:          # a YAML tool's layout: write ours afresh
            out.write(self._shown(generated_journal(self.report)))
            return
        with open(self.path, "rb") as src:
            start = _journal_start(src)
            if start is None:               # a v1 report: entries from its content
                out.write(self._shown(generated_journal(self.report)))
                return
            end = src.seek(0, os.SEEK_END)
            if self.report.torn_line is not None:
                end = _after_last_newline(src, start, end)
            src.seek(start)
            left = end - start
            while left > 0:
                block = src.read(min(COPY_BLOCK, left))
                if not block:
                    break
                out.write(block)
                left -= len(block)

    def rewrite(self, *, final: bool = False) -> None:
        """The header again (verdict, finished, sections), the journal as it is; `final`:
        the run's last write, on disk whatever its sync policy."""
        try:
            self._replace(self._header(), journal=None, final=final)
        except OSError as err:
            raise disk_fault(self.path, err, started=True, resume=self.resume_command) \
                from None
        self.report.torn_line = None
        self.report.read_whole = False
        self.report.declared = self.report.declared if self.report.declared is not None \
            else len(self.report.plans)

    def append(self, kind: str, body: dict[str, Any]) -> None:
        self.append_line(entry_line(kind, body))

    def append_line(self, line: bytes) -> None:
        """One journal entry as `entry_line` (or `trial_line`) made it, whole or not at
        all, synced as the run's policy says (redacted first, where the file is)."""
        if self.redaction is not None:
            line = self.redaction.line(line)
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
            size = os.fstat(self._fd).st_size
            try:
                done = 0
                while done < len(line):       # a short write: the next one says why
                    written = os.write(self._fd, line[done:])
                    if written == 0:
                        raise OSError(errno.ENOSPC, "no space left on device")
                    done += written
            except OSError:
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, size)      # never leave half an entry
                raise
            now = time.monotonic()
            if not self.sync_every_s or now - self._synced >= self.sync_every_s:
                os.fsync(self._fd)
                self._synced = now
        except OSError as err:
            raise disk_fault(self.path, err, started=True, resume=self.resume_command) \
                from None
        self.appended += 1

    def add_plan(self, plan: PlanRecord) -> None:
        """A plan decided after the header was written (a search's steps)."""
        self.report.plans.append(plan)
        self.append("plan", plan.declaration())

    def declare_plan(self, plan: PlanRecord) -> None:
        """A plan for the header's own list, on disk with the next `rewrite`, which the
        caller makes before any trial of it runs (no journal entry, no write of its own)."""
        report = self.report
        if report.declared is not None and report.declared != len(report.plans):
            raise ValueError("the journal already declares plans: add_plan this one too")
        report.plans.append(plan)
        report.declared = len(report.plans)

    def record_trial(self, plan_name: str, trial: TrialResult) -> None:
        self.append_line(trial_line(plan_name, trial))

    def close_journal(self, *, sync: bool = True) -> None:
        if self._fd is not None:
            if sync:
                with contextlib.suppress(OSError):
                    os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None

    def finish(self) -> None:
        self.report.finished = utc_now()
        self.rewrite(final=True)

    def close(self) -> None:
        self.close_journal()
        self.lock.release()

