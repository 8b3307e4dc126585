"""`xrt-smi examine` (reads only) and `xrt-smi validate` (runs XRT's test workloads on the
NPU, so only when asked), each time-bounded, their text kept for the report."""

from __future__ import annotations

from typing import Any

from harness.probe.sources import Sources

EXAMINE_TIMEOUT_S = 30.0
VALIDATE_TIMEOUT_S = 300.0
MAX_OUTPUT = 16_000


def xrt_smi(src: Sources, *, validate: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {}
    runs = [("examine", ["examine"], EXAMINE_TIMEOUT_S)]
    if validate:
        runs.append(("validate", ["validate"], VALIDATE_TIMEOUT_S))
    for name, argv, timeout in runs:
        done = src.program("xrt-smi", argv, timeout)
        if done is None:
            return {"installed": False} if src.which("xrt-smi") is None else \
                {"installed": True, "note": "xrt-smi could not be started"}
        text = (done.stdout + ("\n" + done.stderr if done.stderr.strip() else "")).strip()
        entry: dict[str, Any] = {"exit_status": done.returncode, "output": text[:MAX_OUTPUT]}
        if done.returncode is None:
            entry["note"] = f"stopped after {timeout:g} s"
        elif done.truncated:
            entry["note"] = "stopped once its output passed what is kept"
        if len(text) > MAX_OUTPUT:
            # what was cut, of what was read (a program stopped at the cap printed more)
            entry["truncated"] = len(text) - MAX_OUTPUT
        out[name] = entry
    if not validate:
        out["validate"] = {"note": "not run: it runs work on the NPU; pass "
                                   "--xrt-smi-validate to include it"}
    out["installed"] = True
    return out
