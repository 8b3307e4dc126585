"""What a bundle ships of a user's own words (docs/reports-and-privacy.md, "What a bundle
holds"): the buffers a program filled carry what it was given (the prompt the report
withholds), so they are named, not shipped, unless asked; a case's name is its author's
and is redacted in the report, the render, the bundle and its recipes, every file of
which is redacted; and the recipes folder a redacted report records is the one beside it."""

from __future__ import annotations

import sys
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from machines import engine_pack
from privacy_kit import as_private_user

from harness.app.cli import main

USER, HOST = "quill5", "brisk-otter-77"
ENGINE = str(Path(__file__).resolve().parent / "standin_engine.py")
PROJECT = Path(__file__).resolve().parents[1]


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name.split("/", 1)[1]: tar.extractfile(m).read() for m in tar.getmembers()
                if m.isfile()}


@pytest.fixture
def private(monkeypatch, tmp_path) -> Path:
    home = as_private_user(monkeypatch, tmp_path, USER, HOST)
    monkeypatch.setenv("HOME", str(home))
    return home


def test_the_buffers_holding_the_prompt_are_named_not_shipped(private, tmp_path):
    prompt = f"hi from {USER}@corp-canary.example"
    pack = engine_pack(tmp_path / "pack", "prompted")
    done = invoke("capture", "record", "--after", "0", "--frames", "4", "--prompt", prompt,
                  "--out", "cap", "--", sys.executable, ENGINE, str(pack))
    assert done.exit_code == 0, done.output
    # the stand-in engine holds its input verbatim in a buffer, as the review found
    assert any(prompt.encode() in p.read_bytes() for p in (tmp_path / "cap").glob("*.bin"))
    bundled = invoke("report", "bundle", "cap/report.yaml")
    assert bundled.exit_code == 0, bundled.output
    held = members(tmp_path / "cap" / "report.bundle.tar.gz")
    assert "capture/replay.json" in held
    assert not any(b"corp-canary" in data or USER.encode() in data for data in held.values())
    assert "of a buffer's data as the program filled it (sha256" in bundled.output
    assert "--with-buffers" in held["README.md"].decode()
    # asked for, they are shipped, and the console says what they hold
    asked = invoke("report", "bundle", "cap/report.yaml", "--with-buffers", "--force")
    assert asked.exit_code == 0, asked.output
    held = members(tmp_path / "cap" / "report.bundle.tar.gz")
    assert any(prompt.encode() in data for name, data in held.items()
               if name.startswith("capture/capture_"))
    assert "they hold what it was given (the prompt among it)" in asked.output


def test_a_case_named_for_its_author_is_redacted_everywhere_it_goes(private, tmp_path):
    case = (PROJECT / "cases" / "nop-depth.yaml").read_text()
    (tmp_path / f"{USER}-depth.yaml").write_text(case.replace("case: nop-depth",
                                                              f"case: {USER}-depth", 1))
    done = invoke("reproduce", f"./{USER}-depth.yaml", "--trials", "1", "--no-isolate",
                  "--no-control", "--out", f"r_{USER}.yaml")
    assert done.exit_code == 0, done.output
    report = (tmp_path / f"r_{USER}.yaml").read_text()
    assert USER not in report and "name: <user-1>-depth" in report
    assert invoke("report", "check", f"r_{USER}.yaml").exit_code == 0
    assert USER not in invoke("report", "render", f"r_{USER}.yaml").output
    notes = tmp_path / f"r_{USER}.recipes" / "README.md"
    notes.write_text(notes.read_text() + f"notes by {USER} at /home/{USER}/x 10.1.2.3 "
                     f"{HOST} password=hunter2x\n")
    (tmp_path / f"r_{USER}.recipes" / "mine.txt").write_text("not the export's")
    bundled = invoke("report", "bundle", f"r_{USER}.yaml")
    assert bundled.exit_code == 0, bundled.output
    # the recipes folder the report records is the one beside it, read and shipped
    assert "r_<user-1>.recipes: the report names it" not in bundled.output
    assert "recipes/mine.txt: not a file the export wrote" in bundled.output
    held = members(tmp_path / "r_user-1.bundle.tar.gz")
    assert "recipes/README.md" in held and "recipes/mine.txt" not in held
    assert any(name.startswith("recipes/run_") for name in held)
    text = b"".join(held.values()).decode("utf-8", "replace")
    for private_word in (USER, HOST, "10.1.2.3", "hunter2x"):
        assert private_word not in text, private_word
    readme = held["recipes/README.md"].decode()
    assert "notes by <user-1> at /home/<user-1>/x <ip-1> <hostname> password=<secret>" in readme
    # the README's list says what is shipped: each listed hash is the shipped file's
    import hashlib
    for name, data in held.items():
        if name.startswith("recipes/") and name != "recipes/README.md":
            assert hashlib.sha256(data).hexdigest() in readme, name


def test_a_capture_named_for_its_author_is_a_case_name_redacted(private, tmp_path):
    pack = engine_pack(tmp_path / "pack", "named")
    assert invoke("capture", "record", "--after", "0", "--frames", "4", "--out",
                  f"cap_{USER}", "--", sys.executable, ENGINE, str(pack)).exit_code == 0
    done = invoke("reproduce", "--capture", f"cap_{USER}", "--trials", "1", "--no-isolate",
                  "--no-control", "--out", "r.yaml")
    assert done.exit_code == 0, done.output
    assert USER not in (tmp_path / "r.yaml").read_text()
    assert USER not in invoke("report", "render", "r.yaml").output
