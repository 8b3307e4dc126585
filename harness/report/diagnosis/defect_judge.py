"""The `driver-bug` cause: known defects of released components
(`harness/data/known_defects.yaml`) held against the versions the files show.

A defect bites where a machine shows a version its entry says is affected and a line shows
its symptom: that is the cause's one decisive observation. A version match with no symptom
only supports it (all such matches together weigh one weak finding: a release carries many
defects that make nothing fail; one whose entry says it fails nothing, `fails: false`, is
not counted at all), and so does a driver line that refuses what the stack asks
by a path of its build on this platform (`unsupported-path`), which no release in the table
names: neither ranks the cause first. Versions are read per component: the kernel release
for the in-tree driver, the package's version for a DKMS build, whose tree (legacy or
staging) its version and module tell (`package_component`) before a range is compared.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.formats.known_defects import KnownDefect, known_defects, package_component
from harness.model.drivers import DRM, LEGACY
from harness.report.diagnosis.cohort import Machine, machines
from harness.report.diagnosis.findings import FOR, STRONG, SUPPORT, WEAK, Evidence, Findings
from harness.report.diagnosis.signs_seen import first_of, signs
from harness.report.diagnosis.vocabulary import Cite, is_flavour, quote

VERSION_FACTORS = ("kernel", "driver", "xrt", "firmware", "flm")
# the experiment where no entry's symptom shows: the same on another build tells a build's
# defect from the rest
ANOTHER_BUILD = ("the same command on another build of the driver (the DKMS package's release "
                 "from amd/xdna-driver, or the kernel's in-tree driver), beside "
                 "runlist-harness probe (the driver's build and version): the failure goes "
                 "with the build, or stays")


@dataclass(frozen=True)
class DefectHit:
    """A known defect whose component's version a machine shows, and the line that shows
    its symptom (None: no symptom seen)."""

    defect: KnownDefect
    version: Cite
    line: Cite | None


def component_version(machine: Machine, component: str) -> tuple[str, Cite] | None:
    """The version of `component` a machine shows (amdxdna-mainline: its kernel, unless the
    driver is a DKMS build; the DKMS flavours: the package's version, where its tree is
    that component's)."""
    def fact(factor: str) -> tuple[str, Cite] | None:
        found = machine.facts.get(factor)
        return (found.value, found.cite) if found else None
    driver = fact("driver")
    # a DKMS build shows its package's version (2.21.75_20260209: package_component); a
    # name like "amdxdna_accel_driver 1.0.0" is DRM's driver name and its own version
    # (DRM's "Initialized" line), which says nothing of a package
    dkms = driver is not None and ("DKMS" in driver[0]
                                   or package_component(driver[0]) is not None)
    if component == "amdxdna-mainline":
        built_in = machine.flavour is None or is_flavour(machine.flavour, dkms=False)
        return fact("kernel") if built_in and not dkms else None
    if component in ("amdxdna-staging", "amdxdna-legacy"):
        if not dkms or driver is None:
            return None
        tree = DRM if component == "amdxdna-staging" else LEGACY
        if machine.flavour is not None:
            return driver if is_flavour(machine.flavour, dkms=True, tree=tree) else None
        told = package_component(driver[0])
        return driver if told is None or told == component else None
    return fact({"xrt": "xrt", "firmware": "firmware", "fastflowlm": "flm"}[component])


def defect_hits(ev: Evidence) -> list[DefectHit]:
    hits = []
    for machine in machines(ev.reports)[0]:
        for defect in known_defects():
            found = component_version(machine, defect.component)
            if found is None or not defect.affects_version(found[0]):
                continue
            line = next((Cite(o.file, where, quote(text), number) for o in machine.observed
                         for where, number, text in o.lines if defect.shown_in(text)), None)
            if line is None and defect.symptoms and machine.flavour is None and \
                    defect.component == "amdxdna-mainline":
                continue        # the flavour is not known: only the symptom would tell it
            hits.append(DefectHit(defect, Cite(found[1].file, found[1].field,
                                               f"{defect.component} {found[0]}",
                                               found[1].line), line))
    return hits


def judge_driver_bug(ev: Evidence) -> Findings:
    out = Findings()
    found = machines(ev.reports)[0]
    unsupported = signs(ev, "unsupported-path")
    if not unsupported and not any(m.facts.get(f) for m in found for f in VERSION_FACTORS):
        out.untested = ("no file shows a version of the kernel, the driver, XRT, the "
                        "firmware or FastFlowLM to hold against the known defects")
        return out
    hits = defect_hits(ev)
    for hit in hits:
        defect = hit.defect
        if hit.line is not None:
            out.add(FOR, STRONG, f"{defect.id}: {defect.summary} This release is affected "
                    f"({defect.affects_text}) and the line shows it", hit.version, hit.line)
            out.add(FOR, SUPPORT, f"a later release fixes it: {defect.fixed_in} "
                    f"({defect.source})", hit.version)
    # a defect that makes nothing fail (`fails: false`) explains no failure
    silent = [hit for hit in hits if hit.line is None and not hit.defect.symptoms
              and hit.defect.fails]
    if silent:
        out.add(FOR, WEAK, f"these releases carry {len(silent)} known defect(s) that show no "
                "line of their own: " + "; ".join(
                    f"{h.defect.id} ({h.defect.affects_text}; fixed in {h.defect.fixed_in}): "
                    f"{h.defect.summary}" for h in silent), *[h.version for h in silent[:2]])
    first_of(out, FOR, WEAK, unsupported, "the driver refused what the stack asked by a path "
             "of its build on this platform: a defect of that build, or a build not meant for "
             "this machine (no release in the table names it)")
    return out


def driver_bug_experiment(ev: Evidence) -> str:
    shown = [hit for hit in defect_hits(ev) if hit.line is not None]
    if not shown and not any(m.facts.get(f) for m in machines(ev.reports)[0]
                             for f in VERSION_FACTORS):
        return ("runlist-harness probe (the versions of the driver, XRT and the firmware), "
                "then diagnose again with its report")
    if not shown:
        return ANOTHER_BUILD
    defect = shown[0].defect
    install = {"amdxdna-mainline": f"boot Linux {defect.fixed_in} or later (or install the "
                                   "DKMS driver, amd/xdna-driver)",
               "amdxdna-staging": f"install amdxdna {defect.fixed_in} (DKMS)",
               "amdxdna-legacy": f"install amdxdna {defect.fixed_in} (DKMS)",
               "xrt": f"install XRT {defect.fixed_in} or later",
               "firmware": f"install NPU firmware {defect.fixed_in}",
               "fastflowlm": f"install FastFlowLM {defect.fixed_in} or later"}[defect.component]
    return (f"{install} (this changes the machine), then runlist-harness probe and "
            f"reproduce_ert_timeout: the failure goes with the release ({defect.id}, "
            f"{defect.source})")
