"""What the kernel log and the driver's trace events held over a window of time: from
the start of a program the harness records (or of an `--attach` watch) to a few seconds
after its end, read with the readers a trial uses (`harness.logs.kernel_log`,
`harness.logs.trace_events`) and with the same advice where they cannot be read.

/dev/kmsg is read as the window goes (its ring buffer may overwrite what a long run's
kernel printed before the end; what was lost is counted), the journal once at the end (it
keeps what it took), the trace buffer every few seconds on a machine (tracefs's buffer is
a ring too). A program on the simulated binding keeps its simulated driver's log and trace
in a folder of its own (`harness.sim.machine_folder`), read here the same way; its trace
buffer only holds a job once the job has ended, so it is read once, at the end.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.logs.kernel_log import (
    PERMISSION_FIX,
    KernelLogReader,
    KmsgReader,
    Reading,
    Unreadable,
)
from harness.logs.trace_events import TraceLine, TraceReader

TRACE_POLL_S = 2.0


@dataclass
class WindowLogs:
    """What the window held: the kernel log's records (or why it could not be read), the
    driver's trace events (None: not recorded, and `trace_facts` says why and the fix),
    and whether the simulated stack printed them."""

    kernel: Reading | Unreadable
    trace: list[TraceLine] | None
    trace_source: str | None
    trace_facts: dict[str, Any] = field(default_factory=dict)
    simulated: bool = False
    trace_error: str | None = None      # the buffer stopped being readable


class EvidenceWindow:
    """The kernel log and trace readers of one window: `open` marks now, `poll` takes what
    came since (call it as often as convenient), `close` reads the rest."""

    def __init__(self, kernel: KernelLogReader | Unreadable, trace: TraceReader | None,
                 trace_facts: dict[str, Any], *, simulated: bool = False,
                 trace_at_end: bool = False) -> None:
        self.kernel = kernel
        self.trace = trace
        self.trace_facts = trace_facts
        self.simulated = simulated
        self.trace_at_end = trace_at_end        # a buffer that holds a job once it ended
        self.taken = Reading(kernel.source)
        self.lines: list[TraceLine] = []
        self.trace_error: str | None = None
        self.trace_source = ("simulated tracefs" if trace_at_end else trace.source) \
            if trace is not None else None
        self._traced = 0.0

    @classmethod
    def of_machine(cls, kernel: KernelLogReader | Unreadable, trace: TraceReader | None,
                   trace_facts: dict[str, Any], *, simulated: bool = False
                   ) -> EvidenceWindow:
        """This machine's (or a fabricated one's) kernel log and tracefs; `simulated`: the
        simulator standing in for pyxrt prints into them (its lines are marked)."""
        return cls(kernel, trace, trace_facts, simulated=simulated)

    @classmethod
    def of_simulated(cls, folder: Path) -> EvidenceWindow:
        """The simulated driver's own log and trace, kept in `folder`."""
        from harness.sim.machine_folder import KMSG, TRACE
        folder.mkdir(parents=True, exist_ok=True)
        for name in (KMSG, TRACE):
            (folder / name).touch()
        facts = {"recording": True, "simulated": True,
                 "note": "SIMULATED: the simulated driver's own xdna_job events"}
        return cls(KmsgReader(folder / KMSG, "simulated /dev/kmsg"),
                   TraceReader(folder / TRACE), facts, simulated=True, trace_at_end=True)

    def open(self) -> None:
        if not isinstance(self.kernel, Unreadable):
            try:
                self.kernel.mark()
            except OSError as err:
                self.kernel = Unreadable(self.kernel.source, f"marking failed: "
                                         f"{err.strerror}", PERMISSION_FIX)
        if self.trace is not None:
            try:
                self.trace.mark()
            except OSError as err:
                self._trace_failed(err)
        self._traced = time.monotonic()

    def poll(self) -> None:
        """Take what came since the last poll: /dev/kmsg's new records, and every few
        seconds a machine's trace buffer."""
        if isinstance(self.kernel, KmsgReader):
            self._take_kernel()
        now = time.monotonic()
        if self.trace is not None and not self.trace_at_end and \
                now - self._traced >= TRACE_POLL_S:
            self._traced = now
            self._take_trace()

    def close(self) -> WindowLogs:
        kernel = self._close_kernel()
        if self.trace is not None:
            self._take_trace()
        traced = self.trace is not None or bool(self.lines)
        return WindowLogs(kernel, self.lines if traced else None, self.trace_source,
                          self.trace_facts, self.simulated, self.trace_error)

    def _close_kernel(self) -> Reading | Unreadable:
        reader = self.kernel
        if isinstance(reader, Unreadable):
            return reader
        if isinstance(reader, KmsgReader):
            self._take_kernel()
            if isinstance(self.kernel, Unreadable):      # it failed while the window went
                return self.kernel
            reader.close()
            return self.taken
        try:
            return reader.read()
        except OSError as err:
            return Unreadable(reader.source, f"reading failed: {err.strerror}",
                              PERMISSION_FIX)
        finally:
            reader.close()

    def _take_kernel(self) -> None:
        assert isinstance(self.kernel, KmsgReader)
        try:
            reading = self.kernel.read()
        except OSError as err:
            self.kernel.close()
            self.kernel = Unreadable(self.kernel.source, f"reading failed: {err.strerror}",
                                     PERMISSION_FIX)
            return
        taken = self.taken
        taken.records += reading.records
        taken.dropped += reading.dropped
        taken.lost += reading.lost
        taken.truncated = taken.truncated or reading.truncated

    def _take_trace(self) -> None:
        assert self.trace is not None
        try:
            lines = self.trace.read()
        except OSError as err:
            self._trace_failed(err)
            return
        if lines:
            self.lines += lines
            self.trace.since = max(line.timestamp for line in lines)

    def _trace_failed(self, err: OSError) -> None:
        self.trace_error = f"the trace buffer stopped being readable ({err.strerror})"
        self.trace = None
