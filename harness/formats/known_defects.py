"""Known defects of released components (`harness/data/known_defects.yaml`, schema
``xdna-runlist-harness/known-defects/v1``) and the version matcher the diagnosis's
`driver-bug` cause asks.

A version is read as its leading dotted numbers (``6.18.9-arch1-1`` is 6.18.9,
``2.21.75_20251107`` is 2.21.75, ``v1.0.3`` is 1.0.3; an XRT tag ``202610.2.21.21`` is
2.21.21); missing parts count as 0 (7.0 is 7.0.0). `affects` is a conjunction of
comparisons over such versions.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from harness.formats.yamlio import load_yaml_text
from harness.model.errors import BadInput

SCHEMA = "xdna-runlist-harness/known-defects/v1"
COMPONENTS = ("xrt", "amdxdna-mainline", "amdxdna-staging", "amdxdna-legacy", "firmware",
              "fastflowlm")
TABLE = Path(__file__).resolve().parents[1] / "data" / "known_defects.yaml"
_CLAUSE = re.compile(r"^\s*(<=|>=|==|<|>)\s*(\d+(?:\.\d+){0,5})\s*$")
_VERSION = re.compile(r"(\d+(?:\.\d+){0,5})")
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{1,80}$")
_KEYS = ("id", "component", "summary", "affects", "fixed_in", "symptoms", "source")

Version = tuple[int, ...]


@dataclass(frozen=True)
class KnownDefect:
    """One entry: what goes wrong, in which releases of which component, what fixes it,
    the lines it shows, and where that is established."""

    id: str
    component: str
    summary: str
    affects: tuple[tuple[str, Version], ...]
    affects_text: str
    fixed_in: str
    symptoms: tuple[re.Pattern[str], ...]
    source: str
    fails: bool = True             # False: it garbles what a failure reports, fails nothing

    def affects_version(self, text: str | None) -> bool:
        version = version_of(text)
        return version is not None and all(_holds(version, op, bound)
                                           for op, bound in self.affects)

    def shown_in(self, line: str) -> bool:
        return any(symptom.search(line) for symptom in self.symptoms)


def version_of(text: str | None) -> Version | None:
    """The leading dotted numbers of a version text (an XRT tag's release part), or None."""
    match = _VERSION.search(text or "")
    if match is None:
        return None
    parts = tuple(int(p) for p in match[1].split("."))
    if parts and parts[0] >= 10000 and len(parts) > 1:      # 202610.2.21.21: a tag
        parts = parts[1:]
    return parts


# amd/xdna-driver's package: up to its 1.7 branch (XRT 2.21) the module amdxdna.ko it builds
# is the legacy tree (src/driver/amdxdna); from 1.8 (2.25) it is the staging tree
# (drivers/accel/amdxdna), the legacy one beside it as amdxdna_legacy.ko; main-branch builds
# switched with e9a3bef5 (2026-05-19), and read patch 0 (the table's header says more)
LAST_LEGACY_MINOR, FIRST_STAGING_MINOR = (2, 21), (2, 25)
STAGING_FROM = 20260519
_PACKAGE = re.compile(r"\b(?P<major>\d+)\.(?P<minor>\d+)\.\d+_(?P<date>\d{8})\b")


def package_component(text: str | None) -> str | None:
    """Which tree a DKMS build of amd/xdna-driver is, from its version string
    (``2.21.0_20251207,<sha>``, after the module's name where a file gives it:
    ``amdxdna_legacy 2.25.1_...``): ``amdxdna-legacy`` or ``amdxdna-staging``; None where
    the text holds no such version."""
    match = _PACKAGE.search(text or "")
    if match is None:
        return None
    if "amdxdna_legacy" in (text or ""):
        return "amdxdna-legacy"
    series = (int(match["major"]), int(match["minor"]))
    if series <= LAST_LEGACY_MINOR:
        return "amdxdna-legacy"
    if series >= FIRST_STAGING_MINOR:
        return "amdxdna-staging"
    return "amdxdna-legacy" if int(match["date"]) < STAGING_FROM else "amdxdna-staging"


def _holds(version: Version, op: str, bound: Version) -> bool:
    width = max(len(version), len(bound))
    left, right = version + (0,) * (width - len(version)), bound + (0,) * (width - len(bound))
    return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right,
            "==": left == right}[op]


def parse_affects(text: str, where: str) -> tuple[tuple[str, Version], ...]:
    clauses = []
    for part in str(text).split(","):
        match = _CLAUSE.match(part)
        if match is None:
            raise BadInput(f"{where}: affects clause {part.strip()!r} is not one of <, <=, "
                           ">, >=, == and a dotted version (e.g. \">=6.17,<7.0\")")
        clauses.append((match[1], tuple(int(p) for p in match[2].split("."))))
    return tuple(clauses)


def read_defects(text: str, name: str = "known_defects.yaml") -> tuple[KnownDefect, ...]:
    """Every entry of a known-defects file, checked (BadInput names the entry and key)."""
    raw = load_yaml_text(text)
    if not isinstance(raw, dict) or raw.get("schema") != SCHEMA:
        raise BadInput(f"{name}: expected schema: {SCHEMA}")
    entries = raw.get("defects")
    if not isinstance(entries, list):
        raise BadInput(f"{name}: defects: expected a list")
    found: list[KnownDefect] = []
    for position, entry in enumerate(entries):
        where = f"{name}: defects[{position}]"
        if not isinstance(entry, dict):
            raise BadInput(f"{where}: expected a mapping")
        missing = [k for k in _KEYS if k not in entry]
        if missing:
            raise BadInput(f"{where}: missing {', '.join(missing)}")
        ident = str(entry["id"])
        if not _SLUG.match(ident) or any(d.id == ident for d in found):
            raise BadInput(f"{where}: id {ident!r} is not a unique slug")
        if entry["component"] not in COMPONENTS:
            raise BadInput(f"{where}: component {entry['component']!r} is not one of "
                           f"{', '.join(COMPONENTS)}")
        if not str(entry["source"]).startswith("https://"):
            raise BadInput(f"{where}: source must be a public https address")
        symptoms = entry["symptoms"] or []
        if not isinstance(symptoms, list):
            raise BadInput(f"{where}: symptoms: expected a list of regular expressions")
        try:
            patterns = tuple(re.compile(str(s)) for s in symptoms)
        except re.error as err:
            raise BadInput(f"{where}: symptoms: {err}") from None
        fails = entry.get("fails", True)
        if not isinstance(fails, bool):
            raise BadInput(f"{where}: fails: expected true or false")
        found.append(KnownDefect(ident, str(entry["component"]), " ".join(
            str(entry["summary"]).split()), parse_affects(entry["affects"], where),
            str(entry["affects"]), str(entry["fixed_in"]), patterns, str(entry["source"]),
            fails))
    return tuple(found)


@functools.cache
def known_defects() -> tuple[KnownDefect, ...]:
    """The shipped table."""
    return read_defects(TABLE.read_text("utf-8"))
