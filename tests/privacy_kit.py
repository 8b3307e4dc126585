"""A machine whose names are canaries: the user, the host, a home folder named for the
user (tests of what redaction keeps out of reports and of what is printed)."""

from __future__ import annotations

from pathlib import Path

import pytest


def as_private_user(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, user: str,
                    host: str) -> Path:
    """This process as `user` on `host` (pyxrt sealed off, its own cache); returns the
    user's home folder under `tmp_path`, made."""
    for name in ("SUDO_USER", "LOGNAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("USER", user)
    monkeypatch.setattr("harness.report.redact.this_host", lambda: host)
    monkeypatch.setenv("HARNESS_PYXRT", "none")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / ".cache"))
    home = tmp_path / "home" / user
    home.mkdir(parents=True)
    return home
