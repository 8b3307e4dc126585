"""`xrt-smi examine` (reads only) and `xrt-smi validate` (runs XRT's test workloads on the
NPU, so only when asked), each time-bounded, their text kept for the report; and XRT's
own deep-runlist test, `xrt-smi validate --run runlist-latency` (one runlist of 1000 NOP
runs, STACK.md 8), which a run on hardware takes as a control once its case has failed."""

from __future__ import annotations

import re
import time
from typing import Any

from harness.probe.readers import Sources

EXAMINE_TIMEOUT_S = 30.0
VALIDATE_TIMEOUT_S = 300.0
MAX_OUTPUT = 16_000
RUNLIST_LATENCY = "runlist-latency"
RUNLIST_LATENCY_TIMEOUT_S = 120.0     # a 1000-run runlist; far past it, it hangs
# xrt-smi validate prints each test's "Test Status : [PASSED]" (or "[PASSED WITH
# WARNINGS]"): Xilinx/XRT src/runtime_src/core/tools/xbutil2/SubCmdValidate.cpp
# pretty_print_test_run; the statuses are TestValidateUtilities.h's test_token_*
NO_ANSWER = "no answer"
# compiled on first use, by re's own cache: a start-up does not pay for it
_STATUS = (r"Test Status\s*:\s*\[(PASSED|FAILED|SKIPPED)( WITH WARNINGS)?\]")


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


def runlist_latency(src: Sources, bdf: str | None,
                    timeout_s: float = RUNLIST_LATENCY_TIMEOUT_S) -> dict[str, Any]:
    """Run XRT's own runlist-latency test once, bounded; what it said, in a report section:
    the command, its result (PASSED, FAILED, SKIPPED; "stopped" at the time limit, "not
    run" without xrt-smi), exit status, seconds and output."""
    argv = ["validate", *(["--device", bdf] if bdf else []), "--run", RUNLIST_LATENCY]
    out: dict[str, Any] = {"command": "xrt-smi " + " ".join(argv), "timeout_s": timeout_s}
    started = time.monotonic()
    done = src.program("xrt-smi", argv, timeout_s)
    if done is None:
        out.update(result="not run", note="xrt-smi is not installed here (or cannot run)")
        return out
    text = (done.stdout + ("\n" + done.stderr if done.stderr.strip() else "")).strip()
    out.update(exit_status=done.returncode, seconds=round(time.monotonic() - started, 1),
               output=text[:MAX_OUTPUT])
    if done.returncode is None:
        out.update(result="stopped", note=f"stopped after {timeout_s:g} s")
        return out
    said = re.findall(_STATUS, text)
    if said:
        status, warnings = said[-1]
        out["result"] = status
        if warnings:
            out["note"] = "passed with warnings (see its output)"
    else:
        # no "Test Status" line: xrt-smi did not get as far as the test (an XRT whose
        # validate suite lacks it, a device it cannot open, a usage error), which says
        # nothing about XRT's deep runlist either way
        error = next((line.strip() for line in text.splitlines()
                      if line.strip().upper().startswith("ERROR")), None)
        out["result"] = NO_ANSWER
        out["note"] = (f"xrt-smi did not run the test (no test status in its output, exit "
                       f"status {done.returncode})" + (f": {error[:200]}" if error else ""))
    return out
