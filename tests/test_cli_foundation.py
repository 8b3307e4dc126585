"""`xclbin inspect` and `cases ...` as a user runs them (click's CliRunner)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from harness.app.cli import main
from harness.formats.known import TABLE, lookup
from harness.formats.yamlio import load_yaml_text


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_inspect_real_layer(shared_xclbins):
    result = run("xclbin", "inspect", str(shared_xclbins / "Qwen3-1.7B-NPU2" / "layer.xclbin"))
    assert result.exit_code == 0, result.output
    out = result.output
    assert "8c7d1bd4-90e5-fc13-64b0-cf0eb8dcd543" in out
    assert "known as Qwen3-1.7B-NPU2/layer.xclbin" in out
    assert "8 columns at column 0" in out
    args = [line.split()[1] for line in out.splitlines()
            if line.startswith("    ") and line.split()[0].isdigit()]
    assert args == ["opcode", "instr", "ninstr", "bo0", "bo1", "bo2", "bo3", "bo4"]
    assert "MLIR_AIE (dpu)" in out


def test_inspect_shared_file_names_its_siblings(shared_xclbins):
    out = run("xclbin", "inspect", str(shared_xclbins / "Qwen3-4B-NPU2" / "mm.xclbin")).output
    assert "known as Qwen3-4B-NPU2/mm.xclbin; also shipped as 26 other files" in out


def test_inspect_truncated_is_one_line_exit_2(shared_xclbins, tmp_path):
    data = (shared_xclbins / "Qwen3-1.7B-NPU2" / "layer.xclbin").read_bytes()
    bad = tmp_path / "layer.xclbin"
    bad.write_bytes(data[:5000])
    result = CliRunner().invoke(main, ["xclbin", "inspect", str(bad)])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "truncated" in lines[0]


def test_inspect_synthetic_json(synth_xclbin):
    path = synth_xclbin()
    result = run("xclbin", "inspect", "--json", str(path))
    assert result.exit_code == 0
    [info] = json.loads(result.output)
    assert info["synthetic"] is True and info["known_as"] == []
    assert info["kernels"][0]["name"] == "MLIR_AIE"
    assert [a["group_id"] for a in info["kernels"][0]["args"]] == [None, 1, None, 0, 0, 0, 0, 0]
    assert info["partition"]["column_width"] == 8


def test_inspect_mixed_good_and_bad(synth_xclbin, tmp_path):
    good = synth_xclbin()
    bad = tmp_path / "bad.xclbin"
    bad.write_bytes(b"not an xclbin")
    result = CliRunner().invoke(main, ["xclbin", "inspect", str(good), str(bad)])
    assert result.exit_code == 2
    assert "MLIR_AIE" in result.output and "bad magic" in result.output


def test_known_table_facts():
    assert len(load_yaml_text(TABLE.read_text())["files"]) == 88
    entry = lookup("a3fcbde542cabfefcb573b33f8e222656798fa0ccb5dd038ac3bec7ef6d2105b")
    assert entry is not None and entry.known_as == ("Qwen3-1.7B-NPU2/layer.xclbin",)
    assert entry.uuid == "8c7d1bd4-90e5-fc13-64b0-cf0eb8dcd543"


def test_every_known_hash_is_found_in_any_case_and_an_unknown_one_parses_nothing():
    from harness.formats import known
    known._table.cache_clear()
    assert lookup("00" * 32) is None and lookup("a3fc" * 16) is None
    assert known._table.cache_info().currsize == 0       # a miss costs no parse
    files = known._table()[1]
    for sha, entry in files.items():
        assert lookup(sha) is entry and lookup(sha.upper()) is entry


def test_cases_list_and_validate_shipped():
    listed = run("cases", "list")
    assert listed.exit_code == 0
    for name in ("minicpm5-2b-decode", "qwen3-4b-decode", "qwen3-1.7b-decode", "nop-depth"):
        assert name in listed.output
    checked = run("cases", "check")
    assert checked.exit_code == 0 and checked.output.count("ok ") == 4


def test_cases_validate_rejects_plan_summing_to_41(tmp_path):
    from harness.sources.case import find_case
    text = find_case("minicpm5-2b-decode").read_text().replace('"21+21"', '"21+20"')
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    result = CliRunner().invoke(main, ["cases", "check", str(bad)])
    assert result.exit_code == 2
    assert "plans.halves" in result.output and "covers 41 layers" in result.output


def test_cases_show(tmp_path):
    result = run("cases", "show", "minicpm5-2b-decode")
    assert result.exit_code == 0
    assert "monolithic 42" in result.output and "expect TIMEOUT" in result.output
    as_json = json.loads(run("cases", "show", "--json", "nop-depth").output)
    assert as_json["plans"]["chains"]["chunks"] == [24, 18]


def test_help_documents_exit_codes():
    out = run("--help").output
    for code in ("0 ", "1 ", "2 ", "3 ", "4 "):
        assert f"  {code}" in out


def test_the_names_validate_had_still_work_and_say_the_new_one(tmp_path):
    """`check` is the harness's own check of a file; `validate` is XRT's suite alone."""
    old = CliRunner().invoke(main, ["cases", "validate"])
    assert old.exit_code == 0 and "note: `cases validate` is now `cases check`" in old.stderr
    assert old.stdout == CliRunner().invoke(main, ["cases", "check"]).stdout
    out = tmp_path / "r.yaml"
    assert CliRunner().invoke(main, ["run", "minicpm5-2b-decode", "--plan", "21+21", "--trials",
                                     "1", "--no-isolate", "--out", str(out)]).exit_code == 0
    report = CliRunner().invoke(main, ["report", "validate", str(out)])
    assert report.exit_code == 0 and report.stdout == f"{out}: valid\n"
    assert "`report validate` is now `report check`" in report.stderr
    for group in ("cases", "report"):
        listed = CliRunner().invoke(main, [group, "--help"]).output
        assert "  check " in listed and "validate" not in listed
