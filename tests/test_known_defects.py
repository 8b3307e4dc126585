"""The known-defects table (harness/data/known_defects.yaml) keeps its schema: every entry
names a component, an affected range of comma-joined clauses over dotted numeric versions,
the release that fixes it, symptom regexes that compile, and a public source."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

TABLE = Path(__file__).resolve().parents[1] / "harness" / "data" / "known_defects.yaml"
COMPONENTS = {"xrt", "amdxdna-mainline", "amdxdna-staging", "amdxdna-legacy", "firmware",
              "fastflowlm"}
FIELDS = {"id", "component", "summary", "affects", "fixed_in", "symptoms", "source"}
CLAUSE = re.compile(r"(<=|>=|==|<|>)(\d+(?:\.\d+)*)")


def _clauses(affects: str) -> list[tuple[str, tuple[int, ...]]]:
    """'>=6.17,<7.0' -> [('>=', (6, 17)), ('<', (7, 0))]; a clause that is not one raises."""
    parsed = []
    for clause in affects.split(","):
        match = CLAUSE.fullmatch(clause.strip())
        if match is None:
            raise ValueError(f"not a version clause: {clause!r}")
        parsed.append((match[1], tuple(int(part) for part in match[2].split("."))))
    return parsed


def _defects() -> list[dict]:
    data = yaml.safe_load(TABLE.read_text(encoding="utf-8"))
    assert data["schema"] == "xdna-runlist-harness/known-defects/v1"
    assert isinstance(data["defects"], list) and data["defects"]
    return data["defects"]


def test_every_entry_has_the_schema_fields() -> None:
    ids = [entry["id"] for entry in _defects()]
    assert len(ids) == len(set(ids)), "ids must be unique"
    for entry in _defects():
        assert set(entry) >= FIELDS, f"{entry.get('id')}: missing {FIELDS - set(entry)}"
        assert entry["component"] in COMPONENTS, entry["id"]
        assert re.fullmatch(r"[a-z0-9][a-z0-9-]*", entry["id"]), entry["id"]
        assert entry["summary"].strip() and isinstance(entry["fixed_in"], str)
        assert re.fullmatch(r"\d+(\.\d+)*|commit [0-9a-f]{7,40}", entry["fixed_in"]), entry["id"]
        assert entry["source"].startswith("https://"), entry["id"]


def test_every_affected_range_parses() -> None:
    for entry in _defects():
        assert _clauses(entry["affects"]), entry["id"]


def test_every_symptom_compiles() -> None:
    for entry in _defects():
        assert isinstance(entry["symptoms"], list), entry["id"]
        for symptom in entry["symptoms"]:
            re.compile(symptom)


def test_the_range_parser_refuses_what_is_not_a_clause() -> None:
    assert _clauses(">=6.17,<7.0") == [(">=", (6, 17)), ("<", (7, 0))]
    assert _clauses("==1.4.2.323") == [("==", (1, 4, 2, 323))]
    for bad in ("6.17", ">=6.x", ">=6.17;<7.0", "", "~=1.0"):
        try:
            _clauses(bad)
        except ValueError:
            continue
        raise AssertionError(f"accepted {bad!r}")
