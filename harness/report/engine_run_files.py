"""What `report bundle` ships of a recorded run (`capture record`'s report) beside the
report and its render: the kernel log and the driver's trace events over the window (and
during the check afterwards), the program's output as kept, `xrt-smi examine` before and
after, and XRT's capture when there is one.

The capture is the report's own folder (`capture record --out DIR` writes DIR/report.yaml
beside XRT's files), taken only when its replay.json is the one the report recorded (its
sha256): a header is text anyone can edit. Of it, only what replay.json names is shipped
(replay.json, the harness's origin mark, the control-code ELFs and the buffers' data),
never a symlink, never an xclbin (FastFlowLM's binaries: named with their sha256 for the
maintainer to copy in), and the buffers' data only up to MAX_CAPTURE_BYTES in all (a
capture holds about the model's weights): what is left out is named with its size.
Text is redacted as the report is (`shown`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.formats.printable import escape_controls
from harness.logs.kernel_log import mark_simulated
from harness.report.header import section

KERNEL_LOG = "kernel-log.txt"
TRACE = "trace-events.txt"
OUTPUT = "output.txt"
XRT_SMI = "xrt-smi.txt"
CAPTURE = "capture"
MAX_CAPTURE_BYTES = 64 << 20


@dataclass
class RunFiles:
    """What the bundle ships of the run (name in the bundle -> its bytes or its file), and
    what it leaves out, with why (the bundle's own `Contents` takes both)."""

    files: dict[str, bytes | Path] = field(default_factory=dict)
    left_out: list[tuple[str, str]] = field(default_factory=list)


def run_files(report: Path, run: dict[str, Any], simulated: bool,
              shown: Callable[[str], str], sha256: Callable[[Path], str]) -> RunFiles:
    """The run's evidence as the bundle holds it (`sha256`: a file's, as the bundle
    hashes what it names)."""
    contents = RunFiles()
    def text(lines: list[str]) -> bytes:
        return escape_controls("\n".join(shown(line) for line in lines) + "\n").encode()

    def marked(log: dict[str, Any]) -> list[str]:
        lines = [str(line) for line in log.get("lines") or []]
        return [mark_simulated(line) for line in lines] if simulated else lines
    log, after = section(run.get("kernel_log")), section(section(run.get("device_after"))
                                                         .get("kernel_log"))
    kernel = [f"== the window: from the program's start to after its end "
              f"({log.get('source')})", *marked(log)]
    if after:
        kernel += ["", f"== the check afterwards ({after.get('source')})", *marked(after)]
    if log.get("lines") or after.get("lines"):
        contents.files[KERNEL_LOG] = text(kernel)
    trace = section(run.get("trace_events"))
    if trace.get("lines"):
        contents.files[TRACE] = text([f"== {trace.get('source')}",
                                      *map(str, trace["lines"])])
    output = section(run.get("output"))
    if output.get("lines"):
        lines = [str(line) for line in output["lines"]]
        if output.get("omitted"):
            at = int(output.get("omitted_after") or 0)
            lines[at:at] = [f"[... {output['omitted']} lines not kept ...]"]
        contents.files[OUTPUT] = text(lines)
    smi = section(section(run.get("device_after")).get("xrt_smi_examine"))
    said = [f"== xrt-smi examine {when} (exit {entry.get('exit_status')})\n"
            f"{entry['output']}" for when, entry in smi.items()
            if "output" in section(entry)]
    if said:
        contents.files[XRT_SMI] = text(said)
    capture = section(run.get("capture"))
    if capture.get("written"):
        _capture(report.parent, capture, contents, sha256)
    return contents


def _capture(folder: Path, recorded: dict[str, Any], contents: RunFiles,
             sha256: Callable[[Path], str]) -> None:
    from harness.formats.capture_origin import ORIGIN_FILE
    from harness.sources.capture import REPLAY, CaptureError, load_capture
    replay = folder / REPLAY
    if not replay.is_file() or replay.is_symlink() or \
            sha256(replay) != recorded.get("sha256"):
        contents.left_out.append((CAPTURE, f"the report's folder holds no {REPLAY} "
                                         "whose sha256 is the one the report recorded"))
        return
    try:
        capture = load_capture(folder)
    except CaptureError as err:
        contents.left_out.append((CAPTURE, f"its {REPLAY} does not read ({err})"))
        return
    xclbins = {Path(p).name for p in capture.hwctxs.values()}
    named = {Path(k.ctrlcode).name for k in capture.kernels.values() if k.ctrlcode}
    data = {Path(file).name for frame in capture.frames for _, file in frame.data}
    contents.files[f"{CAPTURE}/{REPLAY}"] = replay
    if (folder / ORIGIN_FILE).is_file() and not (folder / ORIGIN_FILE).is_symlink():
        contents.files[f"{CAPTURE}/{ORIGIN_FILE}"] = folder / ORIGIN_FILE
    room = MAX_CAPTURE_BYTES
    for name in sorted(xclbins | named | data):
        path = folder / name
        member = f"{CAPTURE}/{name}"
        if path.is_symlink() or not path.is_file() or \
                os.path.realpath(path.parent) != os.path.realpath(folder):
            contents.left_out.append((member, "not a plain file of the capture folder"))
            continue
        if name in xclbins:
            contents.left_out.append((member, f"an xclbin, not shipped (sha256 "
                                             f"{sha256(path)}); copy the pack's own in"))
            continue
        size = path.stat().st_size
        if name not in named and size > room:
            contents.left_out.append((member, f"{size} bytes of a buffer's data, past "
                                             f"the {MAX_CAPTURE_BYTES >> 20} MiB the bundle "
                                             "ships of a capture; attach it if asked"))
            continue
        if name not in named:
            room -= size
        contents.files[member] = path


def readme_lines(names: list[str]) -> list[str]:
    """The README's lines for the files `run_files` ships (`names`: the bundle's)."""
    lines = []
    if KERNEL_LOG in names:
        lines.append(f"- `{KERNEL_LOG}`: the amdxdna and IOMMU kernel-log lines over the "
                     "window, and during the check afterwards")
    if TRACE in names:
        lines.append(f"- `{TRACE}`: the driver's trace events over the window")
    if OUTPUT in names:
        lines.append(f"- `{OUTPUT}`: the program's output as the report kept it (its first "
                     "and last lines)")
    if any(name.startswith(CAPTURE + "/") for name in names):
        lines.append(f"- `{CAPTURE}/`: XRT's capture of the program (replay.json, its "
                     "control code and buffers; `reproduce_ert_timeout --capture capture` "
                     "once the xclbins are copied in)")
    return lines

