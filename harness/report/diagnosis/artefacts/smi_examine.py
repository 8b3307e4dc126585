"""`xrt-smi examine` (and `xbutil examine`), as XRT prints it.

Xilinx/XRT `src/runtime_src/core/tools/common/reports/ReportHost.cpp` (tags 2.20 to
master): ``System Configuration`` then ``  %-20s : %s`` rows (OS Name, Release, Machine,
CPU Cores, Memory, Distribution, GLIBC, Model, BIOS Vendor, BIOS Version, Processor;
xbutil's older capitalisation ``BIOS vendor``), ``XRT`` then `XBUtilities.cpp`
`fill_xrt_versions`' rows (Version, Branch, Hash, Hash Date, each driver as ``<name> :
<version>, <hash>`` or ``<name> Version : <version>``, ``NPU Firmware Version``), and
``Device(s) Present`` with a table ``|[BDF]  |Name  |`` or ``  0 devices found``.

The driver's version tells its build: amdxdna's DKMS package reports its own version
(``2.21.75_20251107``), the in-tree driver has none and XRT shows the kernel release
(STACK.md 4). A machine is told apart by its Model, BIOS version and processor (compared,
never shown).
"""

from __future__ import annotations

import hashlib
import re

from harness.report.diagnosis.artefacts.artefact_text import ArtefactText, Claim
from harness.report.diagnosis.vocabulary import Fact, Observed, flavour_of

KIND = "xrt-smi-examine"
_SECTIONS = ("System Configuration", "XRT", "Device(s) Present")
_ROW = re.compile(r"^\s{1,4}(?P<key>[A-Za-z][\w ().-]{0,30}?)\s*: (?P<value>.*?)\s*$")
_DEVICE = re.compile(r"^\|\s*\[(?P<bdf>[0-9a-fA-F:.]+)\]\s*\|\s*(?P<name>[^|]*?)\s*\|")
_NONE = re.compile(r"^\s*0 devices found\s*$")
_DKMS = re.compile(r"^\d+\.\d+\.\d+_\d{8}")
_IDENTITY = ("model", "bios version", "processor", "cpu cores", "memory")


def parse(text: ArtefactText, free: set[int], observed: Observed) -> Claim | None:
    heads = {i: text.lines[i].strip() for i in sorted(free)
             if text.lines[i].strip() in _SECTIONS}
    if "System Configuration" not in heads.values() and \
            "Device(s) Present" not in heads.values():
        return None
    claim = Claim("xrt-smi examine", set(heads))
    part, rows = "", {}
    for index in sorted(free):
        line = text.lines[index]
        if index in heads:
            part = heads[index]
            continue
        if not part:
            continue
        row = _ROW.match(line)
        device = _DEVICE.match(line.strip())
        if row and part != "Device(s) Present":
            rows[(part, row["key"].strip().lower())] = (index, row["value"])
            claim.lines.add(index)
        elif device and device["bdf"] != "BDF":
            claim.lines.add(index)
            if observed.stack.npu is None:
                observed.stack.npu = Fact(device["name"], text.cite(index))
        elif _NONE.match(line):
            claim.lines.add(index)
            observed.sign("no-device", text.cite(index))
        elif line.strip().startswith(("|", "WARNING", "*")):
            claim.lines.add(index)
    _facts(text, rows, observed)
    return claim


def _facts(text: ArtefactText, rows: dict[tuple[str, str], tuple[int, str]],
           observed: Observed) -> None:
    stack = observed.stack

    def take(part: str, key: str) -> tuple[int, str] | None:
        return rows.get((part, key))
    release = take("System Configuration", "release")
    if release:
        stack.set("kernel", release[1], text.cite(release[0]))
    version = take("XRT", "version")
    if version:
        stack.set("xrt", version[1], text.cite(version[0]))
    firmware = take("XRT", "npu firmware version")
    if firmware:
        stack.set("firmware", firmware[1], text.cite(firmware[0]))
    driver = take("XRT", "amdxdna version") or take("XRT", "amdxdna")
    if driver:
        value = driver[1].split(",")[0].strip()
        if _DKMS.match(value):
            built = "DKMS"
        elif release and value == release[1]:
            built = "in-tree"
            stack.flavour = flavour_of(dkms=False)
        else:
            built = None
        stack.set("driver", f"amdxdna {value}" + (f" ({built})" if built else ""),
                  text.cite(driver[0]))
    seen = [take("System Configuration", key) for key in _IDENTITY]
    if seen[0] is not None:
        key = "|".join(found[1] if found else "" for found in seen)
        stack.identity = "examine:" + hashlib.sha256(key.encode()).hexdigest()
