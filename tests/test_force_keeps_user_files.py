"""--force replaces what the harness wrote on an output path and never a user's file beside
it (docs/reports-and-privacy.md, "never a user's other file or folder"): a report's
REPORT.recipes/ and a capture folder are replaced only when every entry in them is the
harness's, else refused naming the entry; and a run refused for an existing recipes folder
leaves no report behind."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from harness.app.cli import main


def reproduce(*args: str):
    return CliRunner().invoke(main, ["reproduce", "--no-isolate", "--trials", "1",
                                     "--no-control", *args])


def record(*args: str):
    return CliRunner().invoke(main, ["capture", "record", "--after", "0", "--no-capture",
                                     "--no-recovery-check", *args, "--", "true"])


def test_force_refuses_a_recipes_folder_holding_a_user_s_files_and_removes_nothing(tmp_path):
    folder = tmp_path / "uu.recipes"
    (folder / "sub").mkdir(parents=True)
    (folder / "thesis.tex").write_text("precious")
    (folder / "sub" / "thesis.tex").write_text("precious too")
    result = reproduce("--out", "uu.yaml", "--force")
    assert result.exit_code == 2, result.output
    assert "the harness did not write" in result.output or "cannot tell its files" in \
        result.output
    assert (folder / "thesis.tex").read_text() == "precious"
    assert (folder / "sub" / "thesis.tex").read_text() == "precious too"
    assert not (tmp_path / "uu.yaml").exists()          # refused before the report


def test_force_replaces_an_export_and_refuses_one_a_user_added_to(tmp_path):
    assert reproduce("--out", "r.yaml").exit_code == 0
    folder = tmp_path / "r.recipes"
    replaced = reproduce("--out", "r.yaml", "--force")
    assert replaced.exit_code == 0, replaced.output
    assert (folder / "README.md").is_file()
    # a file beside the export, a recipe changed, a note in the README: each refused, named
    for change, named in [
            (lambda: (folder / "notes.md").write_text("mine"), "notes.md"),
            (lambda: (folder / "profile.json").write_text("{}"), "profile.json"),
            (lambda: (folder / "README.md").write_text(
                (folder / "README.md").read_text() + "my notes\n"), "README.md")]:
        before = {p.name: p.read_bytes() for p in folder.iterdir()}
        change()
        kept = {p.name: p.read_bytes() for p in folder.iterdir()}
        refused = reproduce("--out", "r.yaml", "--force")
        assert refused.exit_code == 2, refused.output
        assert named in refused.output
        assert {p.name: p.read_bytes() for p in folder.iterdir()} == kept
        for path in folder.iterdir():            # back as the export wrote it
            if path.name not in before:
                path.unlink()
            else:
                path.write_bytes(before[path.name])
    assert reproduce("--out", "r.yaml", "--force").exit_code == 0


def test_a_run_refused_for_an_existing_recipes_folder_writes_no_report(tmp_path):
    (tmp_path / "zz.recipes").mkdir()
    result = reproduce("--out", "zz.yaml")
    assert result.exit_code == 2
    assert "zz.recipes exists" in result.output
    assert "--force" in result.output and "remove the folder" in result.output
    assert not (tmp_path / "zz.yaml").exists()
    assert not list(tmp_path.glob(".zz.yaml*"))


def test_force_on_a_capture_folder_keeps_a_user_s_notes(tmp_path):
    assert record("--out", "capF").exit_code == 0
    notes = tmp_path / "capF" / "notes.md"
    notes.write_text("what I saw")
    refused = record("--out", "capF", "--force")
    assert refused.exit_code == 2, refused.output
    assert "capF/notes.md, which the harness did not write" in refused.output
    assert notes.read_text() == "what I saw"
    assert (tmp_path / "capF" / "report.yaml").is_file()
    (tmp_path / "capF" / "sub").mkdir()
    notes.unlink()
    assert "a folder capF/sub" in record("--out", "capF", "--force").output
    (tmp_path / "capF" / "sub").rmdir()
    # what XRT and the harness write there is replaced
    (tmp_path / "capF" / "capture_0.bin").write_bytes(b"x")
    assert record("--out", "capF", "--force").exit_code == 0
    assert sorted(p.name for p in Path(tmp_path / "capF").iterdir()) == ["report.yaml"]
