"""The environment fingerprint a report embeds (filled in by the probe)."""

from __future__ import annotations

import platform
from typing import Any

from harness.backend import Backend


def collect_environment(backend: Backend) -> dict[str, Any]:
    return {"system": {"kernel": platform.release(), "machine": platform.machine(),
                       "python": platform.python_version()}}
