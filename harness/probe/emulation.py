"""Whether this process runs under `runlist-harness emulate` (`harness.emulator`): the
emulator's environment variable set, its preload library really mapped (read from
/proc/self/maps, as the XRT libraries are) and the model's answer to the library's
handshake in this process (read from the library itself), so that results are labelled
EMULATED and never pass for hardware. The names the emulator puts in a program's
environment live here, where both the emulator and the probe read them."""

from __future__ import annotations

import json
import os
from typing import Any

from harness.model.drivers import DEFAULT_FLAVOUR
from harness.probe.xrt_loader import mapped_libraries

ENV_DIR = "HARNESS_EMULATOR_DIR"               # the run folder (the preload library's)
ENV_PROFILE = "HARNESS_EMULATOR_PROFILE"
ENV_LIBRARY = "HARNESS_EMULATOR_LIBRARY"
ENV_CLOCK_RATE = "HARNESS_EMULATOR_CLOCK_RATE"
LIBRARY_STEM = "libxdna-emulator"


def _maps() -> str:
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            return maps.read()
    except OSError:
        return ""


def preload_mapped(maps_text: str) -> str | None:
    """The emulator's library in a maps text (its file name), or None."""
    for line in maps_text.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and os.path.basename(parts[5].strip()).startswith(LIBRARY_STEM):
            return os.path.basename(parts[5].strip())
    return None


def handshake_answer() -> dict[str, Any] | None:
    """What the model answered the library's handshake in this process, read from the
    library (`xdna_emulator_answer`); None when no library of the emulator answers here."""
    import ctypes
    try:
        answer = ctypes.CDLL(None).xdna_emulator_answer
    except (AttributeError, OSError):
        return None
    answer.restype = ctypes.c_char_p
    text = answer()
    try:
        facts = json.loads(text.decode("utf-8", "replace")) if text else None
    except ValueError:
        return None
    return facts if isinstance(facts, dict) else None


def emulation(maps_text: str | None = None,
              answer: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """What a report says of the emulation this process runs under, or None when it runs
    under none: the profile, the preload library mapped, and the XRT that answers (the
    libraries mapped now and the XRT version pyxrt's install names, filled in by the
    backend once pyxrt is loaded), and the model's answer to this process's handshake
    (`answer`, read from the library when not given). The environment variable alone is
    not enough: a program that dropped LD_PRELOAD talks to whatever device is really
    there; nor is a library mapped that did not answer from inside this process."""
    if not os.environ.get(ENV_DIR):
        return None
    text = _maps() if maps_text is None else maps_text
    library = preload_mapped(text)
    if library is None:
        return None
    answered = handshake_answer() if answer is None else answer
    if answered is None:
        return None
    facts: dict[str, Any] = {"profile": os.environ.get(ENV_PROFILE) or DEFAULT_FLAVOUR,
                             "preload": library,
                             "xrt_libraries": [lib["path"] for lib in mapped_libraries(text)],
                             "handshake": answered}
    rate = os.environ.get(ENV_CLOCK_RATE)
    if rate:
        facts["clock_rate"] = float(rate)
    return facts


def requested() -> bool:
    """The emulator's variable is set (whether or not its library is mapped)."""
    return bool(os.environ.get(ENV_DIR))
