"""Control-code ELFs: reading XRT's shipped ones, writing the harness's own byte for byte
as XRT's tools lay them out (STACK.md 8), and `elf inspect`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.app.cli import main
from harness.formats.elf import ElfError, parse_elf, read_elf
from harness.formats.elf_writer import control_code_elf
from harness.formats.txn import decode_stream, nop_stream

NOP_WORDS = bytes.fromhex("00010406" "04010000" "01000000" "14000000" "05000000")


def test_the_shipped_nop_elf_holds_the_public_noop(validate_artefacts):
    elf = read_elf(validate_artefacts / "nop.elf")
    assert (elf.bits, elf.osabi, elf.size) == (32, 0x45, 400)
    assert [s.name for s in elf.sections] == ["", ".shstrtab", ".ctrltext", ".note.xrt.UID"]
    assert elf.control_code == NOP_WORDS == nop_stream(4)
    assert elf.uid == "f6f6e327d42b4911986e1f0916abfb54"


@pytest.mark.parametrize("name", ["nop.elf", "gemm_int8_strx.elf"])
def test_the_writer_remakes_each_shipped_elf_byte_for_byte(validate_artefacts, name):
    shipped = (validate_artefacts / name).read_bytes()
    code = parse_elf(shipped).control_code
    assert control_code_elf(code) == shipped         # sections, layout and the UID (md5)


def test_the_nop_elf_for_4_columns_is_the_shipped_one(validate_artefacts):
    assert control_code_elf(nop_stream(4)) == (validate_artefacts / "nop.elf").read_bytes()
    eight = parse_elf(control_code_elf(nop_stream(8)))
    assert decode_stream(eight.control_code)[0].cols == 8


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_malformed_elfs_raise_only_elf_error(data):
    good = bytearray(control_code_elf(nop_stream(8)))
    cut = data.draw(st.integers(0, len(good)))
    damaged = good[:cut]
    for _ in range(data.draw(st.integers(0, 6))):
        if damaged:
            at = data.draw(st.integers(0, len(damaged) - 1))
            damaged[at] = data.draw(st.integers(0, 255))
    try:
        parse_elf(bytes(damaged))
    except ElfError as err:
        # the parser's own checks name the damage; its catch-all is for what they miss
        assert "malformed ELF (" not in str(err), str(err)


def test_elf_inspect_decodes_the_control_code(validate_artefacts):
    result = CliRunner().invoke(main, ["elf", "inspect", str(validate_artefacts / "nop.elf")])
    assert result.exit_code == 0, result.output
    assert "XRT validate nop.elf" in result.output
    assert "TXN 0.1, AIE2P (XDNA 2: Strix family), 4 columns x 6 rows" in result.output
    assert "1 op, 20 bytes" in result.output and "NOOP" in result.output
    assert "the md5 of .ctrltext, as XRT's tools write it" in result.output


def test_elf_inspect_names_the_harness_own_and_prints_json(tmp_path):
    path = tmp_path / "nop8.elf"
    path.write_bytes(control_code_elf(nop_stream(8)))
    result = CliRunner().invoke(main, ["elf", "inspect", "--json", str(path)])
    assert result.exit_code == 0, result.output
    [info] = json.loads(result.output)
    assert info["known_as"] == "the harness's NOP ELF for 8 columns"
    assert info["txn"]["columns"] == 8 and info["txn"]["op_counts"] == {"NOOP": 1}
    assert info["uid_is_md5_of_ctrltext"] is True


def test_a_malformed_elf_is_one_line_and_exit_2_the_others_still_shown(tmp_path):
    good = tmp_path / "good.elf"
    good.write_bytes(control_code_elf(nop_stream(8)))
    bad = tmp_path / "bad.elf"
    bad.write_bytes(good.read_bytes()[:100])
    result = CliRunner().invoke(main, ["elf", "inspect", str(bad), str(good)])
    assert result.exit_code == 2
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and str(bad) in errors[0] and "run past the end" in errors[0]
    assert "the harness's NOP ELF for 8 columns" in result.output
