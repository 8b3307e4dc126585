"""The environment fingerprint a report embeds: the probe's facts about this machine."""

from __future__ import annotations

from typing import Any

from harness.backend import Backend
from harness.probe import probe
from harness.probe.sources import Sources


def collect_environment(backend: Backend) -> dict[str, Any]:
    """On hardware the probe opens the device (loading the driver plugin) so the report
    names the XRT libraries really mapped; on the simulated stack it only reads."""
    src = Sources.live()
    src.open_device = not backend.simulated
    facts = probe(src)
    facts["fingerprint_of"] = "this machine" + (" (trials ran on the simulated stack)"
                                                if backend.simulated else "")
    return facts
