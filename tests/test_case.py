"""Case files: strict validation naming file, line and key path."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.formats.txn import nop_stream
from harness.model.errors import CaseError
from harness.model.ert import CmdState
from harness.sources.case import shipped_cases
from harness.sources.load import load_case, parse_case

GOOD = """\
case: demo
description: A demo case.
pack: Demo-NPU2
xclbins: {layer: layer.xclbin}
decode:
  layers: 42
  runlist_context: layer
  per_layer:
    - kernel: MLIR_AIE
      buffers: [4096, 4096]
plans:
  monolithic: "42"
  halves: "21+21"
expect:
  monolithic: TIMEOUT
"""


def write(tmp_path: Path, text: str, name: str = "case.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_shipped_cases_load():
    names = {p.stem for p in shipped_cases()}
    assert {"minicpm5-2b-decode", "qwen3-4b-decode", "qwen3-1.7b-decode",
            "nop-depth"} <= names
    minicpm = load_case("minicpm5-2b-decode")
    assert minicpm.layers == 42 and minicpm.source == "ROCm/FastFlowLM#712"
    assert [p.chunks for p in minicpm.plans] == [(42,), (21, 21)]
    assert minicpm.expect == {"monolithic": CmdState.TIMEOUT, "halves": CmdState.COMPLETED}
    assert load_case("qwen3-4b-decode").layers == 36
    assert load_case("qwen3-1.7b-decode").layers == 28
    nop = load_case("nop-depth")
    assert nop.per_layer[0].kernel == "DPU" and nop.per_layer[0].instructions == "nop"


def test_good_case(tmp_path):
    case = load_case(write(tmp_path, GOOD))
    assert case.plan("halves").chunks == (21, 21)
    assert case.trials == 3 and case.per_layer[0].buffers == (4096, 4096)
    assert len(case.sha256) == 64


@pytest.mark.parametrize("old, new, line, path, words", [
    ('halves: "21+21"', 'halves: "21+20"', 13, "plans.halves", "covers 41 layers"),
    ("  layers: 42", "  layers: forty", 6, "decode.layers", "expected an integer"),
    ("monolithic: TIMEOUT", "monolithic: STUCK", 15, "expect.monolithic",
     "unknown command state"),
    ("expect:\n  monolithic", "expect:\n  nope", 15, "expect.nope", "no plan named"),
    ("pack: Demo-NPU2", "pack: Demo-NPU2\ncolour: blue", 4, "colour", "unknown key"),
    ("      buffers: [4096, 4096]", "      buffers: [4096, -1]", 10,
     "decode.per_layer[0].buffers[1]", "out of range"),
    ("runlist_context: layer", "runlist_context: attn", 7, "decode.runlist_context",
     "not one of the case's contexts"),
    ("    - kernel: MLIR_AIE\n", "    - kernel: MLIR_AIE\n      instructions: none.bin\n",
     10, "decode.per_layer[0].instructions", "does not exist"),
])
def test_errors_name_file_line_and_path(tmp_path, old, new, line, path, words):
    file = write(tmp_path, GOOD.replace(old, new))
    with pytest.raises(CaseError) as info:
        load_case(file)
    message = str(info.value)
    assert message.startswith(f"{file}:{line}: {path}: "), message
    assert words in message


def test_missing_key(tmp_path):
    with pytest.raises(CaseError, match=r"\(top level\): missing required key 'plans'"):
        load_case(write(tmp_path, GOOD.split("plans:")[0]))


def test_duplicate_key(tmp_path):
    with pytest.raises(CaseError, match=r":3: key 'case' appears twice"):
        load_case(write(tmp_path, "case: a\ndescription: b\ncase: c\n"))


def test_bad_yaml_names_line(tmp_path):
    with pytest.raises(CaseError, match=r"case.yaml:\d+: not valid YAML"):
        load_case(write(tmp_path, "case: [unclosed\n"))


def test_unknown_case_name_lists_shipped():
    with pytest.raises(CaseError, match="minicpm5-2b-decode"):
        load_case("no-such-case")


def test_instructions_path_resolves_relative_to_case(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "insts.bin").write_bytes(nop_stream(4))
    text = GOOD.replace("    - kernel: MLIR_AIE\n",
                        "    - kernel: MLIR_AIE\n      instructions: insts.bin\n")
    case = load_case(write(tmp_path / "sub", text))
    assert case.per_layer[0].instructions == str((tmp_path / "sub" / "insts.bin").resolve())


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=200))
def test_parser_only_raises_case_error(text):
    try:
        parse_case(text.encode(), "fuzz.yaml")
    except CaseError as err:
        assert re.match(r"fuzz\.yaml", str(err))


@settings(max_examples=300, deadline=None)
@given(st.integers(0, len(GOOD) - 1), st.text(max_size=5))
def test_edited_good_case_only_raises_case_error(position, insert):
    try:
        parse_case((GOOD[:position] + insert + GOOD[position:]).encode(), "edit.yaml")
    except CaseError:
        pass
