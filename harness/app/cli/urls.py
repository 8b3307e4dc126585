"""A server's URL as a command records it: normalised before anything is written, so that
a password typed into it (`user:pw@host:port`, with or without a scheme) reaches no
report, render or bundle, whatever redaction later does."""

from __future__ import annotations

import click

import harness


def recorded_url_option(url: str, option: str) -> str:
    """`url` as the report keeps it (`harness.serve.client.recorded_url`), refused naming
    `option` when it is no http(s) URL; the command line the report keeps says the same."""
    # the client loads only where a command asks a server (it brings ssl with it)
    from harness.serve.client import carries_userinfo, recorded_url
    recorded = recorded_url(url, option)
    if carries_userinfo(url):
        click.echo(f"note: {option}: the user and password before the host are never sent "
                   "to the server; the report keeps the URL without them", err=True)
    harness.record_as(url, recorded)
    return recorded
