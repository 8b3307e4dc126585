"""Kernel log text as people paste it: `dmesg` (``[ 1003.123456] text``), `dmesg -T`
(``[Mon Dec  1 10:00:00 2025] text``), `dmesg -r` (``<3>[ 1003.1] text``), `dmesg -x`
(``kern  :err   : [ 1003.1] text``), `journalctl -k` (``Dec 01 10:00:00 host kernel:
text``, its `-o short-iso` and `-o short-monotonic` forms), lines with only the
``kernel:`` prefix, and the driver's lines with no prefix at all.

The driver's lines are read by `harness.logs.driver_lines` (every pattern there and in
`harness.logs.stack_lines` is a format string of the driver, cited); the kernel's own
lines here are the core kernel's format strings: ``Linux version %s`` (init/version.c),
``Kernel command line: %s`` (init/main.c), ``iommu: Default domain type: %s``
(drivers/iommu/iommu.c), ``PM: suspend entry``/``exit`` (kernel/power/suspend.c), a probe
that failed (drivers/base/dd.c: ``probe with driver %s failed with error %d``, earlier
``%s: probe of %s failed with error %d``), ``Out of memory: Killed process %d (%s)``
(mm/oom_kill.c), amdgpu's ``ring %s timeout`` and ``GPU reset begin!``
(drivers/gpu/drm/amd/amdgpu), ``loading out-of-tree module taints kernel`` (kernel/module).
A simulated driver's lines carry the SIMULATED mark (`harness.logs.kernel_log`): such a
log is the simulated stack's, never a machine's.
"""

from __future__ import annotations

import functools
import re
from collections import Counter

from harness.logs import driver_lines
from harness.logs.kernel_log import KEEP, SIMULATED_MARK, LogRecord
from harness.model.drivers import DRM, KERNELS, LEGACY, driver_build
from harness.report.diagnosis.artefacts.artefact_text import ArtefactText, Claim
from harness.report.diagnosis.sign_rules import signs_of_event
from harness.report.diagnosis.vocabulary import Cite, Observed, flavour_of, quote
from harness.report.model import SIMULATED

KIND = "kernel-log"
_STAMP = r"\[\s*(?P<sec>\d{1,10})\.(?P<frac>\d{1,9})\]"
_DATE_T = r"\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\]"
# journalctl's short form prints the month with strftime's %b, in the user's locale
# ("Nov", "nov", "mär", "déc."): any short word of letters
_SYSLOG_TIME = (r"(?:[^\W\d_]{3,5}\.? [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"
                r"(?:\.\d{1,9})?(?:[+-]\d\d:?\d\d|Z)?|" + _STAMP + ")")
# (form, pattern giving the record's text); the first that matches names the line's form
_FORMS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("journalctl -k", re.compile(rf"^{_SYSLOG_TIME} \S+ kernel: (?P<text>.*)$")),
    ("dmesg -x", re.compile(r"^\s*(?:kern|user|daemon|syslog|auth)\s*:\s*[a-z]+\s*: "
                            rf"(?:{_STAMP}|{_DATE_T})?\s?(?P<text>.*)$")),
    ("dmesg", re.compile(rf"^\s*(?:<\d{{1,2}}>)?{_STAMP} ?(?P<text>.*)$")),
    ("dmesg -T", re.compile(rf"^\s*{_DATE_T} ?(?P<text>.*)$")),
    ("kernel: prefix", re.compile(r"^\s*kernel: (?P<text>.*)$")),
)
_BARE = re.compile(KEEP + r"|^amdxdna(?:_legacy)?: ")
# a syslog file's line (rsyslog's kern.log, a journal exported with the kernel's own stamp)
# keeps dmesg's stamp after the "kernel:" prefix
_INNER_STAMP = re.compile(rf"^{_STAMP} ?")
BARE_FORM = "driver lines without their prefix"
# what a driver line that lost its prefix is read with (harness.logs.driver_lines needs one;
# the address is never shown: such a line is cited as it was pasted)
_STAND_IN_PREFIX = "amdxdna 0000:00:00.0: "
# what a grep'd paste keeps of a line staging and in-tree print through drm_err/drm_warn
# (amdxdna_pci_drv.h XDNA_ERR, XDNA_WARN): "[drm] *ERROR* func: msg" or "*ERROR* func: msg",
# the device's "amdxdna <bdf>: " cut off; "*ERROR* " is drm_err's own mark, so such a line
# is the [drm] tree's
_DRM_MARKS = re.compile(r"^(?:\[drm\] )?(?P<error>\*ERROR\* )?")
# the kernel's own lines (module docstring)
_VERSION = re.compile(r"^Linux version (?P<release>\S+)")
_CMDLINE = re.compile(r"^(?:Kernel )?[Cc]ommand line: (?P<cmdline>.*)$")
_IOMMU_ARG = re.compile(r"(?:^|\s)((?:amd_)?iommu=\S+|intel_iommu=\S+)")
_DOMAIN = re.compile(r"^iommu: Default domain type: (?P<type>\w+)")
_SUSPEND = re.compile(r"^PM: suspend (?:entry|exit)\b|^ACPI: PM: Waking up from system sleep")
_PM_FAILED = re.compile(r"^amdxdna \S+: PM: .*(?:failed|error -\d+|returns -\d+)")
_PROBE = re.compile(r"^(?:amdxdna(?:_legacy)? \S+: probe with driver \S+ failed with error "
                    r"(?P<ret>-?\d+)|amdxdna(?:_legacy)?: probe of \S+ failed with error "
                    r"(?P<old>-?\d+))")
_OOM = re.compile(r"^Out of memory: Killed process (?P<pid>\d+) \((?P<comm>[^)]{1,64})\)"
                  r"|^oom-kill:")
_GPU = re.compile(r"^amdgpu \S+: .*(?:ring \S+ timeout|GPU reset begin|GPU hang)")
_TAINT = re.compile(r"^amdxdna(?:_legacy)?: loading out-of-tree module taints kernel")
_INITIALIZED = re.compile(r"\[drm\] Initialized (?P<name>amdxdna\w*) (?P<version>\d+\.\d+"
                          r"\.\d+)")


def record_text(line: str) -> tuple[str, str] | None:
    """(form, the record's text) of one kernel-log line; None for any other line."""
    for form, pattern in _FORMS:
        match = pattern.match(line)
        if match:
            return form, _INNER_STAMP.sub("", match["text"], count=1)
    text = line.strip()
    if _BARE.search(text):
        return "driver lines", text
    if _bare_message(text):
        return BARE_FORM, text
    return None


def _bare_message(text: str) -> bool:
    """Whether `text` is a driver line that lost its prefix (its ``[drm]`` and ``*ERROR*``
    marks kept or not) whose message is one of the driver's format strings."""
    return driver_lines.known_message(_DRM_MARKS.sub("", text, count=1))


def _driver_record(body: str) -> str:
    """The line `harness.logs.driver_lines` reads for `body`: as it is where it kept its
    prefix, else behind a stand-in prefix, with the [drm] mark its *ERROR* mark implies."""
    if driver_lines.split_line(body) is not None or "AMD-Vi" in body:
        return body
    marks = _DRM_MARKS.match(body)
    drm = "[drm] " if marks is not None and marks["error"] and not body.startswith("[drm]") \
        else ""
    return _STAND_IN_PREFIX + drm + body


def record_cite(text: ArtefactText, index: int, body: str) -> Cite:
    """A kernel-log line cited by its record's text: its time stamp and a journal's host
    name are the user's, not the evidence."""
    return Cite(text.file, "line", quote(body), index + 1)


def parse(text: ArtefactText, free: set[int], observed: Observed) -> Claim | None:
    taken: list[tuple[int, str]] = []
    forms: Counter[str] = Counter()
    for index in sorted(free):
        line = text.lines[index]
        if line.startswith(SIMULATED_MARK + " "):
            # a simulated driver's line (harness.logs.kernel_log.mark_simulated)
            line = line[len(SIMULATED_MARK) + 1:]
            observed.source = SIMULATED
        found = record_text(line)
        if found is None:
            continue
        form, body = found
        taken.append((index, body))
        forms[form] += 1
    driver = [(i, body) for i, body in taken if driver_lines.split_line(body) is not None]
    bare = [(i, body) for i, body in taken if driver_lines.split_line(body) is None
            and _bare_message(body)]
    if not taken or (forms.keys() <= {"driver lines", BARE_FORM} and not driver and not bare):
        return None
    claim = Claim(f"kernel log ({forms.most_common(1)[0][0]})", {i for i, _ in taken})
    _driver_signs(text, driver + bare + [(i, b) for i, b in taken if "AMD-Vi" in b], observed)
    for index, body in taken:
        _kernel_line(text, index, body, observed)
    if not driver and not bare:
        claim.notes.append("it holds no amdxdna line")
    # a bare line that kept its [drm] or *ERROR* mark tells its tree as a whole one does
    marked = [(i, _driver_record(body)) for i, body in bare
              if (marks := _DRM_MARKS.match(body)) is not None and marks[0]]
    _tree(text, driver + marked, observed, any(_TAINT.match(body) for _, body in taken),
          dict(taken))
    return claim


def _driver_signs(text: ArtefactText, lines: list[tuple[int, str]], observed: Observed) -> None:
    lines = sorted(set(lines))
    records = [LogRecord(3, 0, _driver_record(body)) for _, body in lines]
    for position, event in driver_lines.indexed_events(records):
        for kind, facts in signs_of_event(event):
            observed.sign(kind, record_cite(text, *lines[position]), **facts)


def _kernel_line(text: ArtefactText, index: int, body: str, observed: Observed) -> None:
    cite = record_cite(text, index, body)
    stack = observed.stack
    version = _VERSION.match(body)
    if version:
        stack.set("kernel", version["release"], cite)
    cmdline = _CMDLINE.match(body)
    if cmdline:
        for setting in _IOMMU_ARG.findall(cmdline["cmdline"]):
            observed.sign("iommu-mode", cite, setting=setting)
    domain = _DOMAIN.match(body)
    if domain:
        observed.sign("iommu-mode", cite, setting=f"default domain {domain['type']}")
    if _SUSPEND.match(body):
        observed.sign("system-suspend", cite)
    if _PM_FAILED.match(body):
        observed.sign("suspend-resume-failed", cite)
    probe = _PROBE.match(body)
    if probe:
        observed.sign("driver-probe-failed", cite, ret=int(probe["ret"] or probe["old"]))
    if _OOM.match(body):
        observed.sign("oom", cite)
    if _GPU.match(body):
        observed.sign("gpu-fault", cite)
    initialized = _INITIALIZED.search(body)
    if initialized:
        stack.set("driver", f"{initialized['name']} {initialized['version']}", cite)


def _staging_lines(driver: list[tuple[int, str]]) -> bool:
    functions = _staging_only_functions()
    return any((line := driver_lines.split_line(body)) is not None and line.func in functions
               for _, body in driver)


@functools.cache
def _staging_only_functions() -> frozenset[str]:
    """The functions whose timeout lines only the staging tree prints, on any kernel the
    flavour rows know: the in-tree driver prints none on a timeout (7.0: the trace event
    only; 7.1: the capture block, which staging prints too), so a [drm] log with one of
    them is staging's."""
    staging: set[str] = set()
    mainline: set[str] = set()
    for kernel in KERNELS:
        for flavour, into in (("staging", staging), ("mainline", mainline)):
            build = driver_build(flavour, kernel)
            into.update(p.function for p in (*build.timeout_lines, *build.check_lines))
    return frozenset(staging - mainline)


def _tree(text: ArtefactText, driver: list[tuple[int, str]], observed: Observed,
          out_of_tree: bool, pasted: dict[int, str]) -> None:
    """The driver's tree its lines show: legacy (no [drm] prefix, or the amdxdna_legacy
    module's name) is the out-of-tree legacy driver; [drm] with an out-of-tree module, or
    with a timeout line only staging prints (`_staging_only_functions`), is staging; [drm]
    alone is staging or in-tree (which one the log does not say)."""
    records = [LogRecord(3, 0, body) for _, body in driver]
    trees = driver_lines.trees(records)
    legacy = trees == {LEGACY} or any(body.startswith("amdxdna_legacy ") for _, body in driver)
    if legacy:
        observed.stack.flavour = flavour_of(dkms=True, tree=LEGACY)
    # the module's name is the prefix of each of its lines (dev_err prints the PCI
    # driver's name, src/driver/amdxdna/amdxdna_pci_drv.c .name = KBUILD_MODNAME), which up
    # to the package's 2.21 is amdxdna for the legacy tree, from 2.25 amdxdna_legacy
    # (harness/data/known_defects.yaml's header): the name a reload names
    shown = [line.driver for _, body in driver if not body.startswith(_STAND_IN_PREFIX)
             and (line := driver_lines.split_line(body)) is not None]
    if shown:
        observed.stack.module = observed.stack.module or shown[0]
    staging = not legacy and bool(trees) and _staging_lines(driver)
    if not legacy and trees and (out_of_tree or staging):
        observed.stack.flavour = flavour_of(dkms=True, tree=DRM)
    if driver and observed.stack.value("driver") is None:
        name = "amdxdna (legacy tree)" if legacy else \
            "amdxdna (staging: its TDR lines)" if staging else \
            "amdxdna ([drm] lines: staging or in-tree)"
        first = driver[0][0]
        observed.stack.set("driver", name, record_cite(text, first, pasted[first]))
