"""Which commit a git checkout has out, read from its files (no `git` program needed).

A report names the harness's own source commit when it runs from a checkout (an editable
install), so that a maintainer can run the same code. The layout read here is git's own
(gitrepository-layout): ``.git`` is a folder, or a file ``gitdir: PATH`` (a worktree or a
submodule); ``HEAD`` holds a commit id or ``ref: refs/...``; a ref lives in its own file
under the common folder (``commondir`` names it for a worktree) or in ``packed-refs``.
Anything unreadable or unexpected gives None: the commit is then unknown, never guessed.
"""

from __future__ import annotations

import re
from pathlib import Path

_COMMIT = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")      # SHA-1, or SHA-256
MAX_READ = 1 << 20                                           # packed-refs of a big repo


def _text(path: Path) -> str | None:
    try:
        with path.open("r", encoding="utf-8", errors="replace") as handle:
            return handle.read(MAX_READ)
    except OSError:
        return None


def git_dir(checkout: Path) -> Path | None:
    """The repository folder of a checkout: its ``.git`` folder, or where a ``.git`` file
    points."""
    dot = checkout / ".git"
    if dot.is_dir():
        return dot
    text = _text(dot)
    if text is None or not text.startswith("gitdir:"):
        return None
    target = Path(text[len("gitdir:"):].strip())
    return target if target.is_absolute() else (checkout / target)


def _common(repo: Path) -> Path:
    named = _text(repo / "commondir")
    if not named:
        return repo
    target = Path(named.strip())
    return target if target.is_absolute() else (repo / target)


def _ref(repo: Path, name: str) -> str | None:
    if not name.startswith("refs/") or ".." in name.split("/"):
        return None
    for folder in dict.fromkeys((repo, _common(repo))):
        text = _text(folder / name)
        if text is not None and _COMMIT.match(text.strip()):
            return text.strip()
        packed = _text(folder / "packed-refs")
        for line in (packed or "").splitlines():
            commit, _, ref = line.partition(" ")
            if ref.strip() == name and _COMMIT.match(commit):
                return commit
    return None


def head_commit(checkout: Path) -> str | None:
    """The commit `checkout` has out; None when it is no git checkout or cannot be read."""
    repo = git_dir(checkout)
    if repo is None:
        return None
    head = (_text(repo / "HEAD") or "").strip()
    if _COMMIT.match(head):
        return head                                     # a detached HEAD
    if head.startswith("ref:"):
        return _ref(repo, head[len("ref:"):].strip())
    return None


def harness_commit() -> str | None:
    """The harness's own source commit, when it runs from a git checkout."""
    import harness
    return head_commit(Path(harness.__file__).resolve().parent.parent)
