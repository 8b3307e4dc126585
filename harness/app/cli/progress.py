"""Progress on stderr: a line per trial, or a bar for searches (bisect, sweep); on a
terminal, the trial under way is a live line, redrawn each second with the time it has
taken (`LiveLine`), so a trial that waits on a 60 s timer is never silent. Not on a
terminal (a log, CI, nohup), only finished trials are written, as lines that stay."""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

import click

from harness.app import exits
from harness.formats.printable import escape_controls
from harness.model.cleanups import at_exit

CLEAR = "\r\033[K"             # to the line's start, and erase it


def elapsed_text(seconds: float) -> str:
    """``7 s``, ``1 min 05 s``: how long a trial has run, as a person reads it."""
    whole = int(seconds)
    return f"{whole} s" if whole < 60 else f"{whole // 60} min {whole % 60:02d} s"


class LiveLine:
    """The line of the trial under way, on a terminal: drawn when it starts, then redrawn
    every PERIOD_S by a thread of its own with the time taken so far, until the trial ends
    (`end`), another line is said (`say`) or an error ends the command. The redraw stops
    before any other line is written, so it never lands on one.

    A trial blocks the main thread (a worker's pipe, a realtime wait), so the redraw needs
    its own thread; one thread serves every trial of a run, and draws nothing for a trial
    shorter than PERIOD_S, so a sweep of thousands of simulated trials costs no more."""

    PERIOD_S = 1.0

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._changed = threading.Condition()
        self._text: str | None = None
        self._since = 0.0
        self._stream: TextIO | None = None
        self._thread: threading.Thread | None = None

    def show(self, text: str, stream: TextIO) -> None:
        """A trial started: its line now, redrawn with its time while it runs."""
        with self._changed:
            self._text, self._since, self._stream = text, self._clock(), stream
            self._draw(text)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._redraw_forever, daemon=True,
                                                name="harness-live-line")
                self._thread.start()
            self._changed.notify()

    def end(self, final: str | None = None, stream: TextIO | None = None) -> None:
        """The trial ended: stop redrawing; its line is replaced by `final` on `stream`
        (kept, with a newline) or left as it is."""
        with self._changed:
            self._text = None
            if final is not None and stream is not None:
                stream.write(f"{CLEAR}{final}\n")
                stream.flush()

    def say(self, line: str, stream: TextIO) -> None:
        """A line of its own above the live one, which is drawn again below it."""
        with self._changed:
            stream.write(f"{CLEAR}{line}\n")
            if self._text is not None:
                self._draw(self._line())
            stream.flush()

    def leave(self) -> None:
        """Before an error line, or at the end: the live line stays as it was last drawn,
        and the next line starts below it."""
        with self._changed:
            if self._text is not None and self._stream is not None:
                self._stream.write("\n")
                self._stream.flush()
            self._text = None

    def tick(self) -> None:
        """Redraw the line with the time taken, once a period has passed (the thread calls
        this each period; a test calls it with its own clock)."""
        with self._changed:
            if self._text is not None and self._clock() - self._since >= self.PERIOD_S:
                self._draw(self._line())

    def _line(self) -> str:
        assert self._text is not None
        return f"{self._text}; {elapsed_text(self._clock() - self._since)} so far"

    def _draw(self, line: str) -> None:
        stream = self._stream
        if stream is None:
            return
        stream.write(CLEAR + _fitted(line, stream))
        stream.flush()

    def _redraw_forever(self) -> None:
        while True:
            with self._changed:
                if self._text is None:
                    self._changed.wait()
                else:
                    self._changed.wait(self.PERIOD_S)
            try:
                self.tick()
            except (OSError, ValueError):     # the terminal went away, or stderr closed
                return


def _fitted(line: str, stream: TextIO) -> str:
    """`line` cut to the terminal's width, its end kept (the time taken): a line that wraps
    cannot be erased and drawn again in place."""
    try:
        width = os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        width = 0
    if width <= 0:             # a terminal that does not say its size: as shutil takes it
        width = shutil.get_terminal_size().columns
    room = max(width - 1, 20)
    if len(line) <= room:
        return line
    head, _, tail = line.rpartition("; ")
    if not head:
        return line[:room - 3] + "..."
    tail = "; " + tail
    return head[:max(room - len(tail) - 3, 0)] + "..." + tail


LIVE = LiveLine()
exits.before_saying(LIVE.leave)
at_exit(LIVE.leave)


class TrialBar:
    """A bar of trials done on stderr, drawn only on a terminal, with the trial under way
    and its time (`LiveLine`); a search (bisect, sweep) gives an estimate of its total, so
    the bar says roughly how far it is."""

    WIDTH = 30

    def __init__(self, total: int, label: str, done: int = 0) -> None:
        self.total = max(total, 1)
        self.done = done            # a replayed search counts what it kept
        self.label = label
        self.tty = sys.stderr.isatty()

    def __call__(self, text: str, done: bool) -> None:
        if done:
            self.done += 1
            # Not a terminal (a log, CI, nohup): a plain line every tenth of the way.
            step = max(1, self.total // 10)
            if not self.tty and (self.done % step == 0 or self.done == self.total):
                click.echo(f"{self.label}: {self.done}/~{self.total} trials; last: {text}",
                           err=True)
        if self.tty:
            filled = min(self.WIDTH, self.WIDTH * self.done // self.total)
            bar = (f"{self.label} [{'#' * filled}{'.' * (self.WIDTH - filled)}] "
                   f"{self.done}/~{self.total} trials")
            if done:
                LIVE.end()
                click.echo(CLEAR + bar, err=True, nl=False)
            else:
                LIVE.show(f"{bar}: {escape_controls(text)}", sys.stderr)

    def say(self, text: str) -> None:
        """A line of its own above the bar."""
        if self.tty:
            LIVE.say(text, sys.stderr)
        else:
            click.echo(text, err=True)

    def close(self) -> None:
        if self.tty:
            LIVE.end()
            click.echo(CLEAR, err=True, nl=False)


def progress_line(text: str, done: bool) -> None:
    """Trial progress on stderr: a line per finished trial; on a terminal, the running
    trial too, as a live line with its time, replaced when it ends."""
    text = escape_controls(text)
    if not sys.stderr.isatty():
        if done:
            click.echo(text, err=True)
        return
    if done:
        LIVE.end(text, sys.stderr)
    else:
        LIVE.show(text, sys.stderr)


def announce(first_line: str, warnings: list[str], as_json: bool) -> None:
    """The first line (which stack answers) on stdout, then warnings on stderr."""
    if not as_json:
        click.echo(first_line)
    for warning in warnings:
        click.echo(escape_controls(f"warning: {warning}"), err=True)
