"""The incident corpus (tests/incidents/) through `runlist-harness diagnose`: for every
incident, its artefacts copied under neutral names (nothing is told by a name), the
command's text and `--json` answer held to the incident's `expect` (the answer first, the
deciding experiment's substrings when it is `undetermined`, the causes never first, what
it never says), and every artefact read as the kind its incident.yaml says it is."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from harness.app.cli import main

CORPUS = Path(__file__).resolve().parent / "incidents"
ANSWERS = ("undetermined", "nothing-fails")
# what `diagnose` says it read a file as (its `read_as`), by the corpus's kind; xrt-smi's
# output that stopped before its report shows its subcommand only where its command line
# was pasted with it
READ_AS = {
    "kernel-log": ("kernel log (",),
    "flm-output": ("FastFlowLM output",),
    "flm-json-error": ("FastFlowLM's JSON error body", "flm validate --json"),
    "xrt-smi-examine": ("xrt-smi examine", "xrt-smi (its subcommand not shown"),
    "xrt-smi-validate": ("xrt-smi validate", "xrt-smi (its subcommand not shown"),
    "xrt-exception": ("a C++ program's uncaught exception", "XRT's error text",
                      "XRT's messages"),
    "pyxrt-traceback": ("a Python traceback",),
    "app-console": ("an application's console",),
    "outcomes-table": ("an outcomes table",),
}
INCIDENTS = sorted(p for p in CORPUS.iterdir() if (p / "incident.yaml").is_file())


def _incident(folder: Path) -> dict:
    return yaml.safe_load((folder / "incident.yaml").read_text(encoding="utf-8"))


def _neutral_copies(folder: Path, incident: dict, into: Path) -> list[tuple[Path, str]]:
    """Each artefact copied as `into/a01`, `a02`, ...: (the copy, its kind)."""
    copies = []
    for number, artefact in enumerate(incident["artefacts"], 1):
        copy = into / f"a{number:02d}"
        shutil.copyfile(folder / artefact["file"], copy)
        copies.append((copy, artefact["kind"]))
    return copies


def _diagnose(*args: str):
    result = CliRunner().invoke(main, ["diagnose", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("folder", INCIDENTS, ids=[p.name for p in INCIDENTS])
def test_the_incident_is_answered_as_its_thread_established(folder: Path, tmp_path: Path):
    incident = _incident(folder)
    expect = incident["expect"]
    copies = _neutral_copies(folder, incident, tmp_path)
    files = [str(copy) for copy, _ in copies]
    entries = json.loads(_diagnose(*files, "--json"))
    text = _diagnose(*files)
    top = entries[0]
    ranked = f"{top['id']}: " + ", ".join(f"{e['id']} {e.get('score')}" for e in entries[:5])
    assert top["id"] == expect["first"], ranked
    if top["id"] not in ANSWERS:
        assert top["status"] == "first"
    assert top["id"] not in expect.get("not_first", []), ranked
    for part in expect.get("experiment") or []:
        assert part in top["experiment"], top["experiment"]
    said = text + json.dumps(entries)
    for never in expect.get("never_says") or []:
        assert never not in said, f"says {never!r}"
    # the text says the same answer and experiment as the JSON
    assert f"diagnosis: {top['id']}: " in text
    assert any(line.strip() in (f"next: {top['experiment']}",
                                f"what would decide: {top['experiment']}")
               for line in text.splitlines()), text


@pytest.mark.parametrize("folder", INCIDENTS, ids=[p.name for p in INCIDENTS])
def test_every_artefact_is_read_as_the_kind_it_is(folder: Path, tmp_path: Path):
    incident = _incident(folder)
    copies = _neutral_copies(folder, incident, tmp_path)
    top = json.loads(_diagnose(*[str(c) for c, _ in copies], "--json"))[0]
    assert not top.get("not_read"), top.get("not_read")
    read = {entry["file"]: entry.get("read_as") or [] for entry in top["reports"]}
    for copy, kind in copies:
        parts = read.get(str(copy), [])
        assert any(part.startswith(READ_AS[kind]) for part in parts), (copy.name, kind, parts)
    text = _diagnose(*[str(c) for c, _ in copies])
    for copy, _ in copies:
        assert f"read: {copy} as " in text


def test_the_corpus_answers_nothing_by_a_file_s_name(tmp_path: Path):
    """The same answer with the files' own names (dmesg.txt, error.json) as with neutral
    ones, for every incident: the names tell the diagnosis nothing."""
    for folder in INCIDENTS:
        incident = _incident(folder)
        neutral = tmp_path / folder.name
        neutral.mkdir()
        copies = _neutral_copies(folder, incident, neutral)
        named = [str(folder / a["file"]) for a in incident["artefacts"]]
        by_name = json.loads(_diagnose(*named, "--json"))[0]
        blind = json.loads(_diagnose(*[str(c) for c, _ in copies], "--json"))[0]
        assert (by_name["id"], by_name.get("leading")) == (blind["id"], blind.get("leading")), \
            folder.name
