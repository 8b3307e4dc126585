"""What a bundle ships comes from the run's own folders: a report's header is text anyone
can edit, and a header pointing at private files ships nothing of them and quotes no byte
of them; the names inside the archive never climb out, whatever `--out` is; and redaction
changes what is written, never where a file is read from."""

from __future__ import annotations

import re
import shutil
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.app.cli import main

PROJECT = Path(__file__).resolve().parents[1]
KEY = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAA"
       "PRIVATE-CANARY-9d41\n-----END OPENSSH PRIVATE KEY-----\n")
SHADOW = "root:$6$PRIVATE-CANARY-shadow$hash:19000:0:99999:7:::\nzelda9:$6$x$y:19000::::::\n"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def shipped(archive: Path) -> dict[str, str]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read().decode("utf-8", "replace")
                for m in tar.getmembers() if m.isfile()}


def no_secret_in(files: dict[str, str], *also: str) -> None:
    for name, text in files.items():
        for secret in ("PRIVATE-CANARY", "BEGIN OPENSSH", "$6$", *also):
            assert secret not in text, (name, secret)
    assert not any("id_ed25519" in name or "shadow" in name for name in files)


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    """A reproduce report (with REPORT.recipes/ and `exports`) and a run report."""
    folder = tmp_path_factory.mktemp("made")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HARNESS_CASES", str(PROJECT / "cases"))
        patch.setenv("HARNESS_PYXRT", "none")
        patch.setenv("XDG_CACHE_HOME", str(folder / ".cache"))
        done = invoke("reproduce", "--no-isolate", "--trials", "1", "--out",
                      str(folder / "rep.yaml"))
        assert done.exit_code == 0, done.output
        done = invoke("run", "minicpm5-2b-decode", "--plan", "42", "--trials", "1",
                      "--no-isolate", "--out", str(folder / "run.yaml"))
        assert done.exit_code == 0, done.output
    return folder


def copied(made: Path, tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copy(made / name, target)
    recipes = made / (Path(name).stem + ".recipes")
    if recipes.is_dir():
        shutil.copytree(recipes, tmp_path / recipes.name)
    return target


def test_a_header_naming_a_folder_beside_the_report_ships_nothing_from_it(made, tmp_path):
    report = copied(made, tmp_path, "rep.yaml")
    private = tmp_path / ".ssh"
    private.mkdir()
    (private / "id_ed25519").write_text(KEY)
    text = report.read_text()
    assert re.search(r"(?m)^  folder: .*rep\.recipes$", text)
    report.write_text(re.sub(r"(?m)^  folder: .*$", f"  folder: {private}", text, count=1))
    shutil.rmtree(tmp_path / "rep.recipes")          # so nothing else is found either
    done = invoke("report", "bundle", str(report))
    assert done.exit_code == 0, done.output
    files = shipped(tmp_path / "rep.bundle.tar.gz")
    no_secret_in(files)
    assert "only rep.recipes/ beside the report is read" in files["rep.bundle/README.md"]
    assert any(n.startswith("rep.bundle/recipes/recipe_") for n in files)   # written afresh


@pytest.mark.parametrize("target", ["key", "shadow", "passwd"])
def test_a_header_naming_a_private_case_file_quotes_no_byte_of_it(made, tmp_path, target):
    report = copied(made, tmp_path, "run.yaml")
    secret = tmp_path / "elsewhere" / {"key": "id_ed25519", "shadow": "shadow",
                                       "passwd": "passwd"}[target]
    secret.parent.mkdir()
    secret.write_text({"key": KEY, "shadow": SHADOW,
                       "passwd": "root:x:0:0:PRIVATE-CANARY-passwd:/root:/bin/bash\n"}[target])
    text = report.read_text()
    report.write_text(re.sub(r"(?m)^  file: .*minicpm5-2b-decode\.yaml$", f"  file: {secret}",
                             text, count=1))
    for args in (["report", "bundle", str(report)], ["report", "render", str(report)]):
        done = invoke(*args)
        assert done.exit_code == 0, done.output
        assert "PRIVATE-CANARY" not in done.output and "$6$" not in done.output
    files = shipped(tmp_path / "run.bundle.tar.gz")
    no_secret_in(files)
    assert "is not here as the run used it" in files["run.bundle/README.md"]


@pytest.mark.parametrize("out", ["...tar.gz", ".tar.gz", "..tgz", "-.tar.gz"])
def test_no_member_of_a_bundle_climbs_out_whatever_out_is(made, tmp_path, out):
    report = copied(made, tmp_path, "run.yaml")
    done = invoke("report", "bundle", str(report), "--out", str(tmp_path / out))
    assert done.exit_code == 0, done.output
    with tarfile.open(tmp_path / out) as tar:
        names = tar.getnames()
    assert names and all(n.startswith("run.bundle/") for n in names), names
    assert not any(n.startswith("/") or ".." in n.split("/") for n in names), names


def test_member_names_are_plain_or_refused():
    from harness.report.bundle import member_name, top_folder
    assert top_folder(Path("x/...tar.gz"), Path("r.yaml")) == "r.bundle"
    assert member_name("r.bundle", "recipes/a.json") == "r.bundle/recipes/a.json"
    for bad in ("../README.md", "/etc/passwd", "a/../../b", "", "a//b"):
        with pytest.raises(ValueError):
            member_name("r.bundle", bad)
    with pytest.raises(ValueError):
        member_name("..", "README.md")


def test_a_redacted_bundle_reads_the_case_where_it_is_not_where_redaction_says(tmp_path):
    """A case kept in a folder named after the user: the bundle shows the folder redacted
    but reads the case where it is, so its recipes are written."""
    home = tmp_path / "home" / "zelda9" / "cases"
    home.mkdir(parents=True)
    case = home / "mine.yaml"
    case.write_text((PROJECT / "cases" / "minicpm5-2b-decode.yaml").read_text())
    report = tmp_path / "r.yaml"
    done = invoke("run", str(case), "--plan", "42", "--trials", "1", "--no-isolate", "--out",
                  str(report))
    assert done.exit_code == 0, done.output
    done = invoke("report", "bundle", str(report))
    assert done.exit_code == 0, done.output
    files = shipped(tmp_path / "r.bundle.tar.gz")
    assert any(n.startswith("r.bundle/recipes/recipe_42") for n in files), files.keys()
    assert "zelda9" not in "".join(files.values())
    assert "/home/<user-" in files["r.bundle/r.yaml"]


def test_resuming_a_header_that_names_a_private_case_quotes_no_byte_of_it(made, tmp_path):
    report = copied(made, tmp_path, "run.yaml")
    secret = tmp_path / "shadow"
    secret.write_text(SHADOW)
    text = report.read_text().replace("  trials: 1\n", "  trials: 2\n", 1)
    text = re.sub(r"\nfinished: .*\n", "\nfinished: null\n", text, count=1)
    text = re.sub(r"(?m)^  file: .*minicpm5-2b-decode\.yaml$", f"  file: {secret}", text,
                  count=1)
    report.write_text(re.sub(r"(?m)^  reference: .*$", f"  reference: {secret}", text,
                             count=1))
    done = invoke("run", "--resume", str(report))
    assert done.exit_code == 2
    assert "changed since" in done.output and "$6$" not in done.output


def test_an_xclbin_left_out_is_named_whole_whatever_its_name_holds(tmp_path):
    """What a bundle leaves out is kept as a name and a reason, never parsed back from the
    sentence it prints: an xclbin of the recipes folder named `odd: name.xclbin` is listed
    whole among those to copy in (it was once cut at its colon), and a symlinked one too."""
    report = tmp_path / "r.yaml"
    done = invoke("run", "minicpm5-2b-decode", "--plan", "42", "--trials", "1",
                  "--no-isolate", "--out", str(report))
    assert done.exit_code == 0, done.output
    recipes = tmp_path / "r.recipes"
    recipes.mkdir()
    script = b"xrt-runner --recipe recipe_42.json\n"
    (recipes / "run_42.sh").write_bytes(script)
    # the README an export writes, listing the script (only what it lists is shipped)
    from harness.sources.export_owned import listing_line
    (recipes / "README.md").write_text("# r for XRT's own runner\n\nWritten by "
                                       "xdna-runlist-harness from r.\n\n## Files\n\n"
                                       + listing_line("run_42.sh", script) + "\n")
    (recipes / "odd: name.xclbin").write_bytes(b"xclbin2\0")
    (recipes / "linked.xclbin").symlink_to(recipes / "odd: name.xclbin")
    result = invoke("report", "bundle", str(report))
    assert result.exit_code == 0, result.output
    assert "not included: recipes/odd: name.xclbin: an xclbin, not shipped" in result.output
    readme = shipped(tmp_path / "r.bundle.tar.gz")["r.bundle/README.md"]
    copy = readme.split("copy these into `recipes/` first: ")[1].split("\n")[0]
    assert "`odd: name.xclbin`" in copy and "`linked.xclbin`" in copy
