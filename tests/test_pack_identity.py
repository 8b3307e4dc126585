"""The pack a case runs is the one it names: xclbins FastFlowLM's table of shipped files
knows as another pack's folder are refused before anything runs (or taken with
--allow-other-pack, the report naming each file), a file another pack shares is named, and
a file the case says it reuses (MiniCPM5's layer.xclbin is Qwen3-1.7B-NPU2's, STACK.md 1)
is as expected."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.app.cli import main
from harness.formats.xclbin_writer import flm_spec, synthesize
from harness.model.errors import CaseError
from harness.report.fileformat import load_report
from harness.sources.case import find_case
from harness.sources.load import load_case
from harness.sources.pack_identity import FileIdentity, PackIdentity

CASE = "minicpm5-2b-decode"
ROLES = ("attn", "mm", "layer", "dequant")


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def run(folder: Path, out: Path, *more: str, case: str = CASE):
    return invoke("run", case, "--plan", "monolithic", "--no-isolate", "--trials", "1",
                  "--xclbins", str(folder), "--out", str(out), *more)


def file(role: str, *names: str, reuses: str | None = None) -> FileIdentity:
    return FileIdentity(role, f"{role}.xclbin", names, "MiniCPM5-2B-NPU2", reuses)


# -- the rule, on its own --------------------------------------------------------------------

def test_a_folder_of_another_packs_files_is_that_packs():
    identity = PackIdentity("MiniCPM5-2B-NPU2", "/x/Qwen3-1.7B-NPU2", (
        file("attn", "Qwen3-1.7B-NPU2/attn.xclbin", "Qwen3-0.6B-NPU2/attn.xclbin"),
        file("mm", "Qwen3-8B-NPU2/mm.xclbin", "Qwen3-1.7B-NPU2/mm.xclbin"),
        file("layer", "Qwen3-1.7B-NPU2/layer.xclbin", reuses="Qwen3-1.7B-NPU2/layer.xclbin")))
    assert [f.file for f in identity.differing] == ["attn.xclbin", "mm.xclbin"]
    assert identity.folder_of == "Qwen3-1.7B-NPU2"
    said = identity.refusal()
    assert "attn.xclbin and mm.xclbin are Qwen3-1.7B-NPU2's where the case expects " \
           "MiniCPM5-2B-NPU2's own" in said
    assert "layer.xclbin is Qwen3-1.7B-NPU2/layer.xclbin, as the case expects" in said
    assert "--allow-other-pack" in said


def test_files_a_pack_shares_or_the_table_does_not_know_are_as_expected():
    # the case's own pack among the packs that share a file, and files the table does not
    # know (a community pack's own): nothing differs
    identity = PackIdentity("Qwen3-4B-NPU2", "/x", (
        FileIdentity("mm", "mm.xclbin", ("Qwen3-8B-NPU2/mm.xclbin", "Qwen3-4B-NPU2/mm.xclbin"),
                     "Qwen3-4B-NPU2"),
        FileIdentity("attn", "attn.xclbin", (), "Qwen3-4B-NPU2")))
    assert identity.differing == [] and identity.folder_of is None
    # a file the case reuses counts only as the file it names
    assert file("layer", "Qwen3-4B-NPU2/layer.xclbin",
                reuses="Qwen3-1.7B-NPU2/layer.xclbin").differs


def test_some_files_of_other_packs_beside_unknown_ones_are_warned_of_not_refused():
    identity = PackIdentity("MiniCPM5-2B-NPU2", "/x/MiniCPM5-2B-NPU2", (
        file("attn"), file("mm", "Qwen3-1.7B-NPU2/mm.xclbin", "Qwen3-8B-NPU2/mm.xclbin")))
    assert identity.folder_of is None
    said = identity.text(allowed=False)
    assert "mm.xclbin is Qwen3-1.7B-NPU2/mm.xclbin (and 1 more pack), where the case " \
           "expects MiniCPM5-2B-NPU2's own" in said
    assert "attn.xclbin" not in said
    assert said.endswith("the run uses them as given")


# -- the case says what it reuses -------------------------------------------------------------

def test_a_case_says_which_file_it_reuses():
    assert load_case(CASE).reuses == {"layer": "Qwen3-1.7B-NPU2/layer.xclbin"}


@pytest.mark.parametrize(("reuses", "words"), [
    ("{lm_head: Qwen3-1.7B-NPU2/layer.xclbin}", "'lm_head' is not one of the case's xclbins"),
    ("{layer: Qwen3-1.7B-NPU2/layer.bin}", "is no file FastFlowLM's table of shipped xclbins "
                                           "names"),
    ("[layer]", "expected a mapping of role to the file it reuses"),
])
def test_a_reuse_the_table_cannot_hold_the_case_to_is_refused(tmp_path, reuses, words):
    text = find_case(CASE).read_text()
    text = text.replace("  layer: Qwen3-1.7B-NPU2/layer.xclbin\n", "").replace(
        "reuses: ", f"reuses: {reuses} ")
    case = tmp_path / "c.yaml"
    case.write_text(text)
    with pytest.raises(CaseError, match=words) as err:
        load_case(case)
    assert f"{case}:" in str(err.value) and "reuses" in str(err.value)


# -- on the command line, with FastFlowLM's real files ----------------------------------------

def test_another_packs_folder_is_refused_before_anything_runs(shared_xclbins, tmp_path):
    out = tmp_path / "r.yaml"
    result = run(shared_xclbins / "Qwen3-1.7B-NPU2", out)
    assert result.exit_code == 2, result.output
    [line] = result.output.splitlines()
    assert line.startswith("error: the xclbins found for MiniCPM5-2B-NPU2 (")
    assert "are Qwen3-1.7B-NPU2's pack: attn.xclbin, mm.xclbin and dequant.xclbin are " \
           "Qwen3-1.7B-NPU2's where the case expects MiniCPM5-2B-NPU2's own" in line
    assert "layer.xclbin is Qwen3-1.7B-NPU2/layer.xclbin, as the case expects" in line
    assert "by sha256, in FastFlowLM's table of shipped xclbins, ROCm/FastFlowLM " \
           "src/xclbins@8b8399c1f259" in line
    assert line.endswith("or pass --allow-other-pack to run with these, the report naming "
                         "each file")
    assert not out.exists()
    # the control case, given the 28-layer pack's folder, is refused the same way
    result = run(shared_xclbins / "Qwen3-1.7B-NPU2", out, case="qwen3-4b-decode")
    assert result.exit_code == 2
    assert "attn.xclbin, layer.xclbin and dequant.xclbin are Qwen3-1.7B-NPU2's where the " \
           "case expects Qwen3-4B-NPU2's own" in result.output
    # and `xclbins where` says so before any run
    where = invoke("xclbins", "where", CASE, "--xclbins", str(shared_xclbins / "Qwen3-1.7B-NPU2"))
    assert "a run refuses these without --allow-other-pack: " in where.output


def test_another_packs_folder_taken_on_request_is_named_in_the_report(shared_xclbins,
                                                                       tmp_path):
    out = tmp_path / "r.yaml"
    result = run(shared_xclbins / "Qwen3-1.7B-NPU2", out, "--allow-other-pack")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    [warning] = [x for x in lines if x.startswith("warning: ")]
    first_trial = next(i for i, x in enumerate(lines) if x.startswith("[1/"))
    assert lines.index(warning) < first_trial                 # said before the run
    assert warning.endswith("the run uses them, as --allow-other-pack asked")
    report = load_report(out)
    identity = report.artifacts["pack"]["identity"]
    assert [d["file"] for d in identity["differs"]] == ["attn.xclbin", "mm.xclbin",
                                                        "dequant.xclbin"]
    assert identity["folder_of"] == "Qwen3-1.7B-NPU2"
    assert identity["taken_with"] == "--allow-other-pack"
    assert any(warning[len("warning: "):] in note["note"] for note in report.notes)
    assert invoke("report", "check", str(out)).exit_code == 0
    render = invoke("report", "render", str(out)).output
    assert "by sha256 in FastFlowLM's table, attn.xclbin, mm.xclbin and dequant.xclbin are " \
           "Qwen3-1.7B-NPU2's, not MiniCPM5-2B-NPU2's own, run with --allow-other-pack" in render
    # a continued run keeps the recorded pack: the flag is refused there
    again = invoke("run", "--resume", str(out), "--allow-other-pack")
    assert again.exit_code == 2 and "drop --allow-other-pack" in again.output


def test_the_reused_file_beside_the_packs_own_runs_without_a_word(shared_xclbins, tmp_path):
    # a MiniCPM5 folder as the community pack ships it: Qwen3-1.7B's layer.xclbin, and its
    # own files, which the table does not hold (synthesized here: no FastFlowLM pack has them)
    folder = tmp_path / "MiniCPM5-2B-NPU2"
    folder.mkdir()
    shutil.copy(shared_xclbins / "Qwen3-1.7B-NPU2" / "layer.xclbin", folder)
    for role in ("attn", "mm", "dequant"):
        (folder / f"{role}.xclbin").write_bytes(synthesize(flm_spec(f"MiniCPM5-2B-NPU2/{role}")))
    result = run(folder, tmp_path / "r.yaml", "--backend", "sim")
    assert result.exit_code == 0, result.output
    assert "warning:" not in result.output
    assert "identity" not in load_report(tmp_path / "r.yaml").artifacts["pack"]
    # one file of another pack among them is named, and the run goes on
    shutil.copy(shared_xclbins / "Qwen3-1.7B-NPU2" / "mm.xclbin", folder)
    result = run(folder, tmp_path / "r2.yaml", "--backend", "sim")
    assert result.exit_code == 0, result.output
    [warning] = [x for x in result.output.splitlines() if x.startswith("warning: ")]
    assert "mm.xclbin is Qwen3-1.7B-NPU2/mm.xclbin (and 26 more packs), where the case " \
           "expects MiniCPM5-2B-NPU2's own" in warning
    assert "attn.xclbin" not in warning and warning.endswith("the run uses them as given")
