"""The harness's cache folder: stand-in xclbins, XRT's validate artefacts, fault logs."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def cache_dir(*parts: str) -> Path:
    """``$XDG_CACHE_HOME/xdna-runlist-harness/<parts>`` (``~/.cache`` by default), created;
    the system's temporary folder when the home folder cannot be written."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    for root in (Path(base), Path(tempfile.gettempdir())):
        folder = root.joinpath("xdna-runlist-harness", *parts)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            return folder
        except OSError:
            continue
    raise OSError(f"cannot create a cache folder under {base} or {tempfile.gettempdir()}")
