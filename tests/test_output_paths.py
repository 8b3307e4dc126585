"""What the harness writes on a user's path: at most the last missing folder is made (never
a tree from the root), --force replaces only a file of the kind the command writes, and a
number out of range says its unit and both bounds."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.app.cli import main
from harness.formats.output_paths import check_folder, make_parent
from harness.formats.xclbin_writer import flm_spec, synthesize
from harness.model.errors import BadInput


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def refused(*args: str) -> str:
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    return result.output


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@settings(max_examples=40, deadline=None)
@given(existing=st.integers(0, 3), missing=st.integers(0, 4))
def test_at_most_the_last_folder_of_a_path_is_made(existing, missing):
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        there = root.joinpath(*[f"e{i}" for i in range(existing)])
        there.mkdir(parents=True, exist_ok=True)
        path = there.joinpath(*[f"m{i}" for i in range(missing)], "out.yaml")
        before = tree(root)
        if missing <= 1:
            make_parent(path, "--out")
            assert path.parent.is_dir()
            assert len(tree(root)) == len(before) + missing
        else:
            with pytest.raises(BadInput) as err:
                make_parent(path, "--out")
            assert tree(root) == before                   # nothing made
            assert f"{there / 'm0'} does not exist" in str(err.value)
            assert f"mkdir -p {path.parent.parent}" in str(err.value)


def test_a_file_where_a_folder_must_be_is_named(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(BadInput, match="f is a file, not a folder"):
        check_folder(tmp_path / "f" / "a", path=tmp_path / "f" / "a" / "r.yaml", what="--out")


def test_every_command_that_writes_a_users_path_makes_one_folder_at_most(tmp_path):
    source = tmp_path / "pack"
    source.mkdir()
    (source / "layer.xclbin").write_bytes(synthesize(flm_spec("Synthetic-NPU2/layer")))
    deep = tmp_path / "no" / "such"
    words = f"{tmp_path / 'no'} does not exist, and the harness creates at most one missing " \
            "folder, the last of the path"
    assert words in refused("run", "nop-depth", "--no-isolate", "--trials", "1", "--out",
                            str(deep / "r.yaml"))
    assert words in refused("reproduce", "--no-isolate", "--trials", "1", "--out",
                            str(deep / "r.yaml"))
    assert words in refused("export", "nop-depth", str(tmp_path / "no" / "exported"))
    assert words in refused("xclbins", "import", str(source), "--dest", str(deep))
    assert words in refused("capture", "record", "--out", str(deep), "--", "true")
    assert not (tmp_path / "no").exists()
    # one missing folder is made, as the last of the path
    made = invoke("run", "nop-depth", "--no-isolate", "--trials", "1", "--out",
                  str(tmp_path / "new" / "r.yaml"))
    assert made.exit_code == 0, made.output
    report = tmp_path / "new" / "r.yaml"
    for args in (["report", "render", str(report), "--out", str(deep / "r.md")],
                 ["report", "bundle", str(report), "--out", str(deep / "b.tar.gz")],
                 ["report", "compare", str(report), str(report), "--out", str(deep / "c")]):
        assert words in refused(*args)
    assert not (tmp_path / "no").exists()
    rendered = invoke("report", "render", str(report), "--out", str(tmp_path / "md" / "r.md"))
    assert rendered.exit_code == 0 and (tmp_path / "md" / "r.md").is_file()


def test_force_replaces_a_report_and_never_another_file(tmp_path):
    mine = tmp_path / "notes.yaml"
    mine.write_text("my notes\n")
    said = refused("run", "nop-depth", "--no-isolate", "--trials", "1", "--out", str(mine),
                   "--force")
    assert "exists and is not a report of the harness; --force replaces only a report" in said
    assert mine.read_text() == "my notes\n"
    # a report a YAML tool rewrote, its schema key quoted, is still one
    rewritten = tmp_path / "rewritten.yaml"
    rewritten.write_text("'schema': 'xdna-runlist-harness/report/v3'\nrun_id: x\n")
    done = invoke("run", "nop-depth", "--no-isolate", "--trials", "1", "--out",
                  str(rewritten), "--force")
    assert done.exit_code == 0, done.output
    # a bundle replaces a bundle, not a file that is none
    bundle = tmp_path / "b.tar.gz"
    bundle.write_bytes(b"not a bundle")
    said = refused("report", "bundle", str(rewritten), "--out", str(bundle), "--force")
    assert "is not a bundle of the harness; --force replaces only a bundle" in said
    assert bundle.read_bytes() == b"not a bundle"
    bundle.unlink()
    assert invoke("report", "bundle", str(rewritten), "--out", str(bundle)).exit_code == 0
    again = invoke("report", "bundle", str(rewritten), "--out", str(bundle), "--force")
    assert again.exit_code == 0, again.output


def test_a_file_of_the_users_is_never_removed_by_capture_record(tmp_path):
    mine = tmp_path / "notes.txt"
    mine.write_text("mine")
    said = refused("capture", "record", "--out", str(mine), "--force", "--", "true")
    assert "is a file" in said
    assert mine.read_text() == "mine"
    # nor the file a dangling link names, nor the link
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "gone")
    said = refused("capture", "record", "--out", str(link), "--force", "--", "true")
    assert f"{link} is a link to nothing, not a folder" in said
    assert link.is_symlink()


@pytest.mark.parametrize("budget", ["0", "-5", "20000", "nan", "inf", "soon"])
def test_a_budget_out_of_range_names_its_unit_and_bounds(budget):
    said = refused("investigate", "nop-depth", "--budget", budget)
    assert "give a number of minutes above 0 and at most 10,080 (a week)" in said, said


def test_a_budget_in_range_is_taken(tmp_path):
    result = invoke("investigate", "nop-depth", "--budget", "0.5", "--no-isolate", "--out",
                    str(tmp_path / "i.yaml"))
    assert result.exit_code in (0, 1), result.output


def test_seconds_name_their_unit():
    said = refused("run", "nop-depth", "--deadline", "0.01")
    assert "0.01 seconds is below the minimum 0.1; give a number of seconds at least 0.1 " \
           "and at most 2,147,483" in said
