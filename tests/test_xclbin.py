"""The xclbin reader and writer (STACK.md 5: FastFlowLM xclbin shape)."""

from __future__ import annotations

import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.formats.xclbin import HEADER_END, KIND, KernelArg, parse_xclbin, read_xclbin
from harness.formats.xclbin_writer import (
    XclbinSpec,
    flm_spec,
    npu_kernel_args,
    synthesize,
    validate_spec,
)
from harness.model.errors import XclbinError

VALID = synthesize(flm_spec("Test-NPU2/layer"))


def section_header_at(data: bytes, kind: int) -> int:
    count = struct.unpack_from("<I", data, 448)[0]
    for i in range(count):
        at = HEADER_END + 40 * i
        if struct.unpack_from("<I", data, at)[0] == kind:
            return at
    raise AssertionError("no such section")


def patched(data: bytes, offset: int, fmt: str, *values) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, *values)
    return bytes(out)


# -- real files (STACK.md 5: one MLIR_AIE kernel, 8 columns at column 0) ------------

def test_real_layer_xclbin(shared_xclbins):
    x = read_xclbin(shared_xclbins / "Qwen3-1.7B-NPU2" / "layer.xclbin")
    assert x.uuid == "8c7d1bd4-90e5-fc13-64b0-cf0eb8dcd543"
    assert x.version == "2.21.75"
    assert [k.name for k in x.kernels] == ["MLIR_AIE"]
    kernel = x.kernel("MLIR_AIE")
    assert kernel.type == "dpu"
    assert [a.name for a in kernel.args] == ["opcode", "instr", "ninstr",
                                             "bo0", "bo1", "bo2", "bo3", "bo4"]
    assert [a.size for a in kernel.args] == [8, 8, 4, 8, 8, 8, 8, 8]
    assert x.partition.column_width == 8 and x.partition.start_columns == (0,)
    assert x.partition.pdi_count == 1
    assert [ip.name for ip in x.ip_layout] == ["MLIR_AIE:MLIRAIE"]
    # instruction buffer in the SRAM group, data buffers in HOST (what group_id answers)
    assert x.group_id("MLIR_AIE", 1) == 1 and x.group_id("MLIR_AIE", 3) == 0
    assert not x.synthetic


def test_every_real_file_parses(shared_xclbins):
    for path in sorted(shared_xclbins.glob("*/*.xclbin")):
        x = read_xclbin(path)
        assert x.size == path.stat().st_size
        assert x.kernels[0].name == "MLIR_AIE"


# -- writer round trip -----------------------------------------------------------

def test_synthetic_flm_shape():
    x = parse_xclbin(VALID)
    assert x.synthetic
    assert x.kernel("MLIR_AIE").args == npu_kernel_args()
    assert x.partition.column_width == 8 and x.partition.start_columns == (0,)


def test_synthetic_validate_shape():
    x = parse_xclbin(synthesize(validate_spec()))
    assert [k.name for k in x.kernels] == ["DPU"]
    assert x.partition.column_width == 4


names = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ_abc0123456789", min_size=1, max_size=20)


@st.composite
def specs(draw) -> XclbinSpec:
    nbufs = draw(st.integers(0, 9))
    return XclbinSpec(
        uuid=str(draw(st.uuids())),
        kernel_name=draw(names.filter(lambda n: n[0].isalpha())),
        instance_name=draw(names),
        args=npu_kernel_args(nbufs),
        dpu_kernel_id=draw(st.integers(0, 0xFFF)),
        column_width=draw(st.integers(1, 64)),
        start_columns=tuple(draw(st.lists(st.integers(0, 63), min_size=0, max_size=8))),
        partition_name=draw(names),
        pdi_uuid=str(draw(st.uuids())),
        pdi_size=draw(st.integers(0, 512)),
        timestamp=draw(st.integers(0, 2**63)),
        version=(draw(st.integers(0, 255)), draw(st.integers(0, 255)),
                 draw(st.integers(0, 65535))),
        vbnv=draw(names),
        synthetic=draw(st.booleans()),
    )


@settings(max_examples=300, deadline=None)
@given(specs())
def test_round_trip(spec: XclbinSpec):
    x = parse_xclbin(synthesize(spec))
    assert x.uuid == spec.uuid
    assert x.version == "{}.{}.{}".format(*spec.version)
    assert x.timestamp == spec.timestamp and x.vbnv == spec.vbnv
    assert x.synthetic == spec.synthetic
    kernel = x.kernel(spec.kernel_name)
    assert kernel.args == spec.args and kernel.type == spec.kernel_type
    assert kernel.instances == (spec.instance_name,)
    assert kernel.dpu_kernel_id == spec.dpu_kernel_id
    part = x.partition
    assert (part.name, part.column_width, part.start_columns) == (
        spec.partition_name, spec.column_width, spec.start_columns)
    assert part.pdis[0].uuid == spec.pdi_uuid and part.pdis[0].image_size == spec.pdi_size
    assert [ip.name for ip in x.ip_layout] == [f"{spec.kernel_name}:{spec.instance_name}"]
    for arg in spec.args:
        expected = (1 if arg.name == "instr" else 0) if arg.is_global else -1
        assert x.group_id(spec.kernel_name, arg.index) == expected


# -- every malformation is an XclbinError naming what and where --------------------

@pytest.mark.parametrize("data, words", [
    (b"", "bad magic"),
    (b"PK\x03\x04" + bytes(600), "bad magic"),
    (VALID[:300], "truncated header"),
    (VALID[:-1], "truncated"),
    (VALID + b"\0" * 8, "length field"),
    (patched(VALID, 448, "<I", 0x20000), "absurd section count"),
    (patched(VALID, 448, "<I", 5000), "section table of 5000 entries"),
])
def test_header_errors(data: bytes, words: str):
    with pytest.raises(XclbinError, match=words) as info:
        parse_xclbin(data, "bad.xclbin")
    assert "at offset" in str(info.value) and "bad.xclbin" in str(info.value)


def test_section_past_end():
    at = section_header_at(VALID, KIND["EMBEDDED_METADATA"])
    data = patched(VALID, at + 32, "<Q", len(VALID))
    with pytest.raises(XclbinError, match=r"runs past the end of the file.*at offset"):
        parse_xclbin(data)


def test_section_inside_header():
    at = section_header_at(VALID, KIND["IP_LAYOUT"])
    with pytest.raises(XclbinError, match="inside the header"):
        parse_xclbin(patched(VALID, at + 24, "<Q", 100))


def test_overlapping_sections():
    meta = section_header_at(VALID, KIND["EMBEDDED_METADATA"])
    ip = section_header_at(VALID, KIND["IP_LAYOUT"])
    meta_offset = struct.unpack_from("<Q", VALID, meta + 24)[0]
    with pytest.raises(XclbinError, match="overlap"):
        parse_xclbin(patched(VALID, ip + 24, "<Q", meta_offset + 8))


def test_bad_xml():
    at = section_header_at(VALID, KIND["EMBEDDED_METADATA"])
    offset = struct.unpack_from("<Q", VALID, at + 24)[0]
    data = bytearray(VALID)
    data[offset + 50:offset + 60] = b"<<<<<<<<<<"
    with pytest.raises(XclbinError, match="not well-formed XML"):
        parse_xclbin(bytes(data))


def test_absurd_ip_count():
    at = section_header_at(VALID, KIND["IP_LAYOUT"])
    offset = struct.unpack_from("<Q", VALID, at + 24)[0]
    with pytest.raises(XclbinError, match="IP entries"):
        parse_xclbin(patched(VALID, offset, "<i", 1_000_000))


def test_absurd_start_column_count():
    at = section_header_at(VALID, KIND["AIE_PARTITION"])
    offset = struct.unpack_from("<Q", VALID, at + 24)[0]
    with pytest.raises(XclbinError, match="start columns"):
        parse_xclbin(patched(VALID, offset + 40, "<I", 0xFFFFFFFF))


def test_entity_expansion_refused():
    spec = flm_spec("x")
    prolog = b'<?xml version="1.0" encoding="utf-8"?>'
    dtd = b'<!DOCTYPE a [<!ENTITY b "c">]>'
    data = synthesize(spec).replace(prolog, dtd.ljust(len(prolog)))
    with pytest.raises(XclbinError, match="DTD"):
        parse_xclbin(data)


def test_missing_file_is_xclbin_error(tmp_path):
    with pytest.raises(XclbinError, match="cannot read"):
        read_xclbin(tmp_path / "nope.xclbin")


def test_unknown_kernel_name_lists_known():
    with pytest.raises(XclbinError, match="kernels: MLIR_AIE"):
        parse_xclbin(VALID).kernel("DPU")


# -- fuzzing: nothing but XclbinError ever escapes ---------------------------------

def parse_or_xclbin_error(data: bytes) -> None:
    """Parses, or fails with a parse error that names what is wrong and where; never with
    the parser's catch-all (which would mean an unchecked bound or field)."""
    try:
        parse_xclbin(data)
    except XclbinError as err:
        assert "malformed xclbin (" not in str(err), str(err)
        assert "offset" in str(err) or "not an xclbin" in str(err), str(err)


# Random bytes reach only the first checks: without the magic, the magic check (every
# example, one message); with it, the header's own checks (21 lines of the parser, all
# reached within the first 100 of 1,500 random inputs). A few hundred examples cover them;
# test_mutated_valid_file and test_every_byte_position are the fuzzers that reach past them.
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2048))
def test_random_bytes(data):
    parse_or_xclbin_error(data)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2048))
def test_random_bytes_with_magic(data):
    parse_or_xclbin_error(b"xclbin2\0" + data)


def mutate(seed: int) -> bytes:
    """1-8 random flips, overwritten words, cuts and insertions, reproducible per seed."""
    rng = random.Random(seed)
    data = bytearray(VALID)
    for _ in range(rng.randint(1, 8)):
        if not data:
            break
        kind = rng.choice(["flip", "word", "cut", "insert"])
        at = rng.randrange(len(data))
        if kind == "flip":
            data[at] ^= 1 << rng.randrange(8)
        elif kind == "word" and at + 8 <= len(data):
            struct.pack_into("<Q", data, at, rng.getrandbits(64))
        elif kind == "cut":
            del data[at:at + rng.randint(1, 64)]
        else:
            data[at:at] = rng.randbytes(rng.randint(1, 16))
    return bytes(data)


@settings(max_examples=3000, deadline=None)
@given(st.integers(0, 2**32))
def test_mutated_valid_file(seed):
    parse_or_xclbin_error(mutate(seed))


@settings(max_examples=1500, deadline=None)
@given(st.integers(0, len(VALID) - 1), st.integers(0, 255))
def test_every_byte_position(position, value):
    data = bytearray(VALID)
    data[position] = value
    parse_or_xclbin_error(bytes(data))


@settings(max_examples=300, deadline=None)
@given(st.integers(HEADER_END, len(VALID) - 8), st.integers(0, 2**64 - 1))
def test_header_words_lying(position, value):
    parse_or_xclbin_error(patched(VALID, position, "<Q", value))


def test_kernelarg_is_global():
    assert KernelArg("bo0", 3, 1, 8, 0x14, "void*").is_global
    assert not KernelArg("ninstr", 2, 0, 4, 0x10, "uint32_t").is_global


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_the_writers_attribute_quoting_is_the_standard_librarys(value):
    from xml.sax.saxutils import quoteattr as standard

    from harness.formats.xclbin_writer import quoteattr
    assert quoteattr(value) == standard(value)
