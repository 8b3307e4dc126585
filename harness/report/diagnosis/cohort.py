"""Several machines at once: what each machine's stack was, and which of its factors
separate the failing machines from the working ones, with the counts; and, within one
machine's outcomes, whether what failed and what worked differ in more than one way.

Machines are told apart by what the files show, never by a file's name: a report's
machine id (the probe's), `xrt-smi examine`'s model, BIOS and processor, an outcomes
table's `machine` column. A file that shows none of these joins the one machine its facts
do not contradict (a kernel log and `flm validate` beside the same machine's report),
else stands as a machine of its own when it shows a stack, else is not attributed. A
simulated or emulated report describes a model of the stack, not a machine: it is left
out. A factor "separates" when no failing machine shares a value with a working one;
two factors that both separate change together, so the cohort cannot tell them apart
(confounded); fewer than two failing or two working machines cannot tell a factor from
chance, and the table says so.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from harness.report.diagnosis.vocabulary import (
    FACTOR_WORDS,
    FACTORS,
    HARDWARE,
    Arm,
    Fact,
    Observed,
)

FAILING, WORKING, UNKNOWN = "failing", "working", "no outcome"
MIN_EACH = 2                       # failing and working machines a factor needs
NOT_KNOWN = "?"
# the depth the machines' outcomes came at (a table's depth column) is held against the
# working machines as a factor is: a factor that changes with it cannot be told from it
DEPTH = "depth"
ROW_WORDS = {**FACTOR_WORDS, DEPTH: "depth"}
# a driver fact's forms, each of one kind of version: a DKMS package's own version
# (2.21.75_20260209, CMake/pkg_driver_source.cmake), the DRM driver's version (flm validate's
# "amdxdna version: 0.8", DRM's "Initialized amdxdna_accel_driver 0.8.0"), any other version
# a file prints; a tree told by its lines' form ("[drm] lines: staging or in-tree") has none
_PACKAGE = re.compile(r"\b(\d+\.\d+\.\d+)_\d{8}\b")
_DRM = re.compile(r"(?:^DRM |accel_driver )(\d+\.\d+)")
_VERSION = re.compile(r"\b(\d+\.\d+(?:\.\d+)?)\b")


def driver_version(value: str) -> tuple[str, str] | None:
    """(kind, version) of a driver fact; None where it names no version (a tree, unknown)."""
    for kind, pattern in (("package", _PACKAGE), ("drm", _DRM), ("version", _VERSION)):
        match = pattern.search(value)
        if match:
            return kind, match[1]
    return None


def _differ(factor: str, mine: str, theirs: str) -> bool:
    """Whether two values of one factor contradict each other: a release and its longer
    form agree; two driver facts differ only where both give a version of one kind (a DRM
    version is not a package's, and a tree's form has none)."""
    if factor == "driver":
        one, other = driver_version(mine), driver_version(theirs)
        return one is not None and other is not None and one[0] == other[0] \
            and one[1] != other[1]
    return not (mine.startswith(theirs) or theirs.startswith(mine))


@dataclass
class Machine:
    """One machine: its label, files, the stack they show and how its runs ended."""

    label: str
    identity: str | None
    files: list[str] = field(default_factory=list)
    facts: dict[str, Fact] = field(default_factory=dict)
    failures: int = 0
    completions: int = 0
    flavour: str | None = None        # the driver flavour a file tells
    observed: list[Observed] = field(default_factory=list)
    failing_depths: set[int] = field(default_factory=set)     # a table's rows' depths
    working_depths: set[int] = field(default_factory=set)

    @property
    def outcome(self) -> str:
        if self.failures:
            return FAILING
        return WORKING if self.completions else UNKNOWN

    def value(self, factor: str) -> str:
        fact = self.facts.get(factor)
        return fact.value if fact else NOT_KNOWN

    def agrees(self, other: dict[str, Fact]) -> bool:
        """No factor both know differs (`_differ`)."""
        return not any((mine := self.facts.get(factor)) is not None
                       and _differ(factor, mine.value, fact.value)
                       for factor, fact in other.items())

    def depth_value(self) -> str:
        depths = self.failing_depths if self.outcome == FAILING else \
            self.working_depths if self.outcome == WORKING else set()
        return ", ".join(str(d) for d in sorted(depths)) or NOT_KNOWN

    def take(self, observed: Observed, facts: dict[str, Fact], failures: int,
             completions: int) -> None:
        if observed.file not in self.files:
            self.files.append(observed.file)
            self.observed.append(observed)
        self.flavour = self.flavour or observed.stack.flavour
        for factor, fact in facts.items():
            known = self.facts.get(factor)
            # a driver fact with a version says more than one that only tells the tree
            if known is None or (factor == "driver" and driver_version(known.value) is None
                                 and driver_version(fact.value) is not None):
                self.facts[factor] = fact
        self.failures += failures
        self.completions += completions


@dataclass(frozen=True)
class FactorRow:
    factor: str
    failing: Counter[str]
    working: Counter[str]
    separates: bool


def machines(reports: list[Observed]) -> tuple[list[Machine], list[str]]:
    """The machines the files show, and the files attributed to none."""
    found: list[Machine] = []
    loose: list[Observed] = []
    for observed in reports:
        if observed.source != HARDWARE:
            continue
        labelled = [a for a in observed.arms if a.machine]
        for arm in labelled:
            machine = _named(found, f"table:{arm.machine}", arm.machine)
            facts = dict(observed.stack.facts)
            if arm.model:
                facts["model"] = Fact(arm.model, arm.cite("model", arm.model))
            machine.take(observed, facts, arm.failed + arm.no_answer, arm.completed)
            (machine.failing_depths if arm.failed or arm.no_answer
             else machine.working_depths).add(arm.deepest)
        if labelled and len(labelled) == len(observed.arms):
            continue
        if observed.stack.identity:
            machine = _named(found, observed.stack.identity, None)
            _take_all(machine, observed)
        else:
            loose.append(observed)
    unattributed = []
    for observed in loose:
        facts = observed.stack.facts
        fits = [m for m in found if m.agrees(facts)]
        if (facts and len(fits) == 1) or (not facts and len(found) == 1):
            _take_all((fits or found)[0], observed)
        elif facts and not fits:
            machine = Machine(f"machine {len(found) + 1}", None)
            found.append(machine)
            _take_all(machine, observed)
        else:
            unattributed.append(observed.file)
    return found, unattributed


def _named(found: list[Machine], identity: str, label: str | None) -> Machine:
    for machine in found:
        if machine.identity == identity:
            return machine
    machine = Machine(label or f"machine {len(found) + 1}", identity)
    found.append(machine)
    return machine


def _take_all(machine: Machine, observed: Observed) -> None:
    arms = [a for a in observed.arms if not a.machine]
    machine.take(observed, observed.stack.facts,
                 sum(a.failed + a.no_answer + a.setup_failed for a in arms)
                 + sum(1 for s in observed.signs if s.failure)
                 + sum(1 for r in observed.server_requests if r.get("outcome") != "success"),
                 sum(a.completed for a in arms))


def factor_rows(found: list[Machine]) -> list[FactorRow]:
    failing = [m for m in found if m.outcome == FAILING]
    working = [m for m in found if m.outcome == WORKING]
    rows = []
    for factor in FACTORS + (DEPTH,):
        bad = Counter(_row_value(m, factor) for m in failing)
        good = Counter(_row_value(m, factor) for m in working)
        known_bad, known_good = set(bad) - {NOT_KNOWN}, set(good) - {NOT_KNOWN}
        separates = bool(known_bad and known_good) and not (known_bad & known_good)
        rows.append(FactorRow(factor, bad, good, separates))
    return rows


def _row_value(machine: Machine, factor: str) -> str:
    return machine.depth_value() if factor == DEPTH else machine.value(factor)


def cohort_lines(found: list[Machine], unattributed: list[str]) -> list[str]:
    """The machines and the factor table, as a person reads them (nothing for fewer than
    two machines)."""
    if len(found) < 2:
        return []
    failing = sum(1 for m in found if m.outcome == FAILING)
    working = sum(1 for m in found if m.outcome == WORKING)
    lines = [f"machines: {len(found)} ({failing} failing, {working} working, "
             f"{len(found) - failing - working} with no outcome)"]
    for machine in found:
        stack = ", ".join(f"{FACTOR_WORDS[f]} {machine.value(f)}" for f in FACTORS
                          if machine.value(f) != NOT_KNOWN) or "no stack facts"
        lines.append(f"  {machine.label}: {machine.outcome}; {stack} "
                     f"[{', '.join(machine.files)}]")
    if unattributed:
        lines.append(f"  not attributed to a machine: {', '.join(unattributed)}")
    rows = factor_rows(found)
    lines.append("factors (failing machines against working ones):")
    for row in rows:
        if set(row.failing) | set(row.working) <= {NOT_KNOWN}:
            continue
        lines.append(f"  {ROW_WORDS[row.factor]}: failing {_counts(row.failing)}; "
                     f"working {_counts(row.working)}"
                     + (" -> separates them" if row.separates else ""))
    lines += verdict_lines(rows, failing, working)
    return lines


def verdict_lines(rows: list[FactorRow], failing: int, working: int) -> list[str]:
    separating = [ROW_WORDS[r.factor] for r in rows if r.separates]
    out = []
    if failing < MIN_EACH or working < MIN_EACH:
        out.append(f"  too few machines to tell a factor from chance: {failing} failing and "
                   f"{working} working (at least {MIN_EACH} of each are needed)")
    if len(separating) > 1:
        # the trap of ROCm/FastFlowLM#712: the failing model is the deeper one
        depth = (": only a NOOP depth test at the failing depth tells depth from the "
                 "model's own commands (reproduce_ert_timeout)"
                 if ROW_WORDS[DEPTH] in separating and ROW_WORDS["model"] in separating
                 else "")
        out.append(f"  confounded: {', '.join(separating)} change together between the "
                   "failing and the working machines; these machines cannot tell which of "
                   f"them matters{depth}")
    elif not separating and failing and working:
        out.append("  no factor separates the failing machines from the working ones")
    return out


def _counts(values: Counter[str]) -> str:
    return ", ".join(f"{value} x{n}" for value, n in values.most_common()) or "none"


def cohort_json(found: list[Machine], unattributed: list[str]) -> dict[str, Any]:
    rows = factor_rows(found)
    failing = sum(1 for m in found if m.outcome == FAILING)
    working = sum(1 for m in found if m.outcome == WORKING)
    return {"machines": [{"label": m.label, "outcome": m.outcome, "files": m.files,
                          "stack": {f: m.value(f) for f in FACTORS}} for m in found],
            "unattributed": unattributed,
            "factors": [{"factor": r.factor, "failing": dict(r.failing),
                         "working": dict(r.working), "separates": r.separates}
                        for r in rows],
            "notes": [line.strip() for line in verdict_lines(rows, failing, working)]}


def run_factor_lines(arms: list[Arm]) -> list[str]:
    """Within each machine's outcomes (a table's rows with a model column): whether the
    plans that fail differ from those that complete in depth and model at once."""
    lines: list[str] = []
    for machine in dict.fromkeys(a.machine for a in arms):
        lines += _one_machine([a for a in arms if a.machine == machine])
    return lines


def _one_machine(arms: list[Arm]) -> list[str]:
    failing = [a for a in arms if a.failed and not a.completed and a.model]
    working = [a for a in arms if a.completed and not a.failed and a.model]
    if not failing or not working:
        return []
    depth = {a.deepest for a in failing}.isdisjoint({a.deepest for a in working})
    model = {a.model for a in failing}.isdisjoint({a.model for a in working})
    if depth and model:
        bad = ", ".join(f"{a.model} at {a.deepest}" for a in failing[:3])
        good = ", ".join(f"{a.model} at {a.deepest}" for a in working[:3])
        return [f"confounded: what fails ({bad}) and what completes ({good}) differ in "
                "depth and in model at once; they cannot tell a depth limit from the "
                "model's own commands: a NOOP depth test at the failing depth separates "
                "them (reproduce_ert_timeout)"]
    return []
