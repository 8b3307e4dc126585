"""The incident corpus (tests/incidents/) keeps its format: every incident.yaml has the
agreed fields, names artefact files that exist and are not empty, uses only the cause ids
of the diagnosis, names the deciding experiment when it expects `undetermined`, and cites
a github.com thread or commit over https. Structural only: it reads no diagnosis code, so
it states what the data is, not what `diagnose` answers about it."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import pytest
import yaml

CORPUS = Path(__file__).resolve().parent / "incidents"
CAUSES = {"depth-limit", "work-hang", "slow-work", "refused", "resources", "nondeterministic",
          "not-npu-path", "firmware-mismatch", "driver-bug", "iommu", "power-management",
          "device-access", "host-memory", "contention", "wrong-binary"}
ANSWERS = {"nothing-fails", "undetermined"}
KINDS = {"kernel-log", "flm-output", "flm-json-error", "xrt-smi-examine", "xrt-smi-validate",
         "xrt-exception", "pyxrt-traceback", "app-console", "outcomes-table"}
FIELDS = {"id", "title", "source", "reported", "established_by", "cause", "why", "fix",
          "machine", "artefacts", "expect"}
THREAD = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+/(issues|pull|commit|discussions)/\w+"
                    r"(#[\w-]+)?")


def _incidents() -> list[Path]:
    return sorted(p for p in CORPUS.iterdir() if (p / "incident.yaml").is_file())


def _load(folder: Path) -> dict:
    data = yaml.safe_load((folder / "incident.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict), folder.name
    return data


INCIDENTS = _incidents()


def test_the_corpus_is_large_and_varied() -> None:
    causes = {_load(folder)["cause"] for folder in INCIDENTS} - ANSWERS
    assert len(INCIDENTS) >= 12
    assert len(causes) >= 8, causes


def test_every_folder_holds_an_incident() -> None:
    stray = [p.name for p in CORPUS.iterdir() if p.is_dir() and not (p / "incident.yaml").is_file()]
    assert not stray


@pytest.mark.parametrize("folder", INCIDENTS, ids=[p.name for p in INCIDENTS])
def test_incident_fields(folder: Path) -> None:
    data = _load(folder)
    assert set(data) >= FIELDS, f"missing {FIELDS - set(data)}"
    assert data["id"] == folder.name
    assert THREAD.fullmatch(data["source"]), data["source"]
    assert isinstance(data["reported"], datetime.date)
    for key in ("title", "established_by", "why", "fix"):
        assert isinstance(data[key], str) and data[key].strip(), key
    assert "\n" not in data["title"]
    assert isinstance(data["machine"], dict)
    assert data["cause"] in CAUSES | {"undetermined"}
    if data["cause"] != "undetermined":
        assert "https://github.com/" in data["established_by"], "who established it, with a URL"


@pytest.mark.parametrize("folder", INCIDENTS, ids=[p.name for p in INCIDENTS])
def test_incident_artefacts(folder: Path) -> None:
    artefacts = _load(folder)["artefacts"]
    assert isinstance(artefacts, list) and artefacts
    named = set()
    for artefact in artefacts:
        path = folder / artefact["file"]
        assert path.is_file() and path.read_text(encoding="utf-8").strip(), artefact["file"]
        assert artefact["kind"] in KINDS, artefact["kind"]
        assert isinstance(artefact["as_posted"], bool)
        if artefact["as_posted"]:
            assert artefact["posted_by"] in {"reporter", "maintainer", "other"}
            assert artefact["where"].strip()
        else:
            assert artefact["derived_from"].strip(), "a derived artefact says what it encodes"
        named.add(artefact["file"])
    unnamed = {p.name for p in folder.iterdir() if p.name != "incident.yaml"} - named
    assert not unnamed, f"files no artefact names: {unnamed}"


@pytest.mark.parametrize("folder", INCIDENTS, ids=[p.name for p in INCIDENTS])
def test_incident_expectation(folder: Path) -> None:
    expect = _load(folder)["expect"]
    assert expect["first"] in CAUSES | ANSWERS
    assert set(expect.get("not_first", [])) <= CAUSES
    assert expect["first"] not in expect.get("not_first", [])
    assert all(isinstance(s, str) and s for s in expect.get("never_says", []))
    if expect["first"] == "undetermined":
        assert expect.get("experiment"), "undetermined names the deciding experiment"
        assert all(isinstance(s, str) and s.strip() for s in expect["experiment"])


def test_derived_tables_have_a_header_with_depth() -> None:
    """A derived outcomes table keeps the agreed form: a header row naming depth (or layers)
    and a result column, every row as many cells as the header."""
    for folder in INCIDENTS:
        for artefact in _load(folder)["artefacts"]:
            if artefact["kind"] != "outcomes-table":
                continue
            rows = [line for line in (folder / artefact["file"]).read_text().splitlines()
                    if line.strip() and not line.lstrip().startswith("#")
                    and not set(line.strip()) <= set("|-: ")]
            split = [[cell.strip() for cell in re.split(r"\s*\|\s*|\t|,|\s{2,}", row.strip("| "))]
                     for row in rows]
            header = [cell.lower() for cell in split[0]]
            assert {"depth", "layers"} & set(header), (folder.name, header)
            assert {"result", "outcome", "state"} & set(header), (folder.name, header)
            assert all(len(cells) == len(header) for cells in split), folder.name
