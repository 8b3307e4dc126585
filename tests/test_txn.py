"""Instruction streams (STACK.md 7): the public one-NOOP stream and what a firmware rejects."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.formats.txn import TxnError, check_stream, nop_stream, word_count

VALIDATE_NOP = [0x06040100, 0x00000104, 0x00000001, 0x00000014, 0x00000005]


def test_the_public_validate_noop_is_exactly_five_words():
    assert list(struct.unpack("<5I", nop_stream(4))) == VALIDATE_NOP
    assert word_count(nop_stream(4)) == 5


def test_flm_partition_header_word():
    assert struct.unpack_from("<I", nop_stream(8), 4)[0] == 0x00000108


@given(st.integers(1, 64), st.sampled_from([3, 4]))
def test_nop_streams_pass_for_their_own_partition(columns, dev_gen):
    stream = nop_stream(columns, dev_gen)
    header = check_stream(stream, columns=columns, dev_gen=dev_gen, ninstr_words=5)
    assert header.num_ops == 1 and header.size == 20


@pytest.mark.parametrize("stream, kwargs, words", [
    (nop_stream(8), {"columns": 4, "dev_gen": 4}, "addresses 8 columns"),
    (nop_stream(4, 3), {"columns": 4, "dev_gen": 4}, "device generation 3"),
    (nop_stream(4), {"columns": 4, "dev_gen": 4, "ninstr_words": 20 // 8}, "ninstr=2"),
    (bytes(16), {"columns": 4, "dev_gen": 4}, "TXN version 0.0"),
    (b"\x01", {"columns": 4, "dev_gen": 4}, "shorter than"),
    (nop_stream(4)[:-4] + struct.pack("<I", 0x42), {"columns": 4, "dev_gen": 4},
     "unknown opcode"),
])
def test_rejections_say_why(stream, kwargs, words):
    with pytest.raises(TxnError, match=words):
        check_stream(stream, **kwargs)


@given(st.binary(max_size=256), st.integers(1, 8), st.sampled_from([3, 4]),
       st.one_of(st.none(), st.integers(0, 100)))
def test_checker_only_raises_txn_error(data, columns, dev_gen, ninstr):
    try:
        check_stream(data, columns=columns, dev_gen=dev_gen, ninstr_words=ninstr)
    except TxnError:
        pass


@given(st.binary(min_size=1, max_size=64))
def test_checker_on_valid_header_with_random_ops(ops):
    header = struct.pack("<BBBBBBxxII", 0, 1, 4, 6, 4, 1, 3, 16 + len(ops))
    try:
        check_stream(header + ops, columns=4, dev_gen=4)
    except TxnError:
        pass
