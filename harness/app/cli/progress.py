"""Progress on stderr: a line per trial, or a bar for searches (bisect, sweep)."""

from __future__ import annotations

import sys

import click

from harness.formats.printable import escape_controls


class TrialBar:
    """A bar of trials done on stderr, drawn only on a terminal; a search (bisect,
    sweep) gives an estimate of its total, so the bar says roughly how far it is."""

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
            bar = "#" * filled + "." * (self.WIDTH - filled)
            click.echo(f"\r\033[K{self.label} [{bar}] {self.done}/~{self.total} trials",
                       err=True, nl=False)

    def say(self, text: str) -> None:
        """A line of its own above the bar."""
        click.echo(("\r\033[K" if self.tty else "") + text, err=True)

    def close(self) -> None:
        if self.tty:
            click.echo("\r\033[K", err=True, nl=False)


def progress_line(text: str, done: bool) -> None:
    """Trial progress on stderr: a line per finished trial; on a terminal, the running
    trial too, overwritten when it ends."""
    text = escape_controls(text)
    if sys.stderr.isatty():
        click.echo(f"\r\033[K{text}", err=True, nl=done)
    elif done:
        click.echo(text, err=True)


def announce(first_line: str, warnings: list[str], as_json: bool) -> None:
    """The first line (which stack answers) on stdout, then warnings on stderr."""
    if not as_json:
        click.echo(first_line)
    for warning in warnings:
        click.echo(escape_controls(f"warning: {warning}"), err=True)
