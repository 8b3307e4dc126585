"""Whether an XRT install can capture what a program submits (STACK.md 9), and its tool.

XRT's capture is in `libxrt_coreutil` (`core/common/runner/capture.cpp`, linked into
xrt_coreutil by `core_common_runner_objects`): a library that has it names its settings
`Runtime.capture_frames` and `Runtime.capture_output_dir` (config_reader.h). It came with
Xilinx/XRT PR #9828 (b89baa09b8, 2026-06-04) and `xrt-capture` with #9851, on master
while it built as 2.25; no tagged release up to 202610.2.23.244 has either. 2.26 (49612fa3,
the commit amd/xdna-driver 856409ca pins) has both. `xrt-capture` only sets those two
variables and starts the program (xrt-capture.cpp); it exits 0 whatever the program did
and prints `Application exited with code N`.
"""

from __future__ import annotations

import mmap
import os
import shutil
from pathlib import Path

MARKER = b"Runtime.capture_frames"
WHERE_CAPTURE_IS = ("XRT's capture is in Xilinx/XRT master since 2026-06-04 (PR #9828 and "
                    "#9851; builds that report 2.25 or later, such as 2.26 at 49612fa3, the "
                    "commit amd/xdna-driver 856409ca pins); no tagged release up to "
                    "202610.2.23.244 has it: build or install such an XRT and source its "
                    "setup.sh")


def has_capture(library: str | Path) -> bool | None:
    """Whether this libxrt_coreutil can capture (None: it cannot be read)."""
    try:
        with open(library, "rb") as file, mmap.mmap(file.fileno(), 0,
                                                     access=mmap.ACCESS_READ) as data:
            return data.find(MARKER) >= 0
    except (OSError, ValueError):
        return None


def coreutil_of(mapped: list[dict[str, str]], install: str | None) -> str | None:
    """The libxrt_coreutil this process maps, else the install's."""
    for lib in mapped:
        if lib.get("name") == "libxrt_coreutil":
            return lib["path"]
    if install:
        found = sorted(Path(install, "lib").glob("libxrt_coreutil.so*"))
        if found:
            return str(found[0])
    return None


def capture_tool(install: str | None) -> str | None:
    """XRT's `xrt-capture` for this install (on PATH, or in the install's bin folders)."""
    folders = [Path(install, "bin"), Path(install, "bin", "unwrapped")] if install else []
    for folder in folders:
        candidate = folder / "xrt-capture"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("xrt-capture")
