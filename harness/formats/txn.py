"""aie-rt transaction ("TXN") instruction streams: the one-NOOP stream, and a checker.

Format (STACK.md 7, aie-rt `xaiegbl.h` / `xaie_txn.h`): a 16-byte
little-endian header ``{u8 major, minor, dev_gen, rows, cols, memtile_rows,
pad[2]; u32 num_ops; u32 txn_size_bytes}`` then the operations. The public
no-op that `xrt-smi validate` runs on Strix is exactly five words,
``0x06040100 0x00000104 0x00000001 0x00000014 0x00000005``; FastFlowLM writes
the same header for its 8-column partitions (word 1 = ``0x00000108``).
``ninstr`` is a count of 32-bit words.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from harness.formats.regular import read_regular
from harness.model.errors import BadInput

HEADER_SIZE = 16
DEV_GEN_NPU1 = 3     # AIE2 (Phoenix)
DEV_GEN_AIE2P = 4    # AIE2P (Strix, Strix Halo, Krackan)
ROWS = 6             # shim + memtile + 4 core rows
MEMTILE_ROWS = 1

# aie-rt XAie_TxnOpcode values this checker walks over.
OP_WRITE, OP_BLOCKWRITE, OP_MASKWRITE, OP_MASKPOLL, OP_NOOP, OP_PREEMPT = 0, 1, 3, 4, 5, 6
OP_MASKPOLL_BUSY, OP_LOADPDI, OP_CUSTOM_FIRST = 7, 8, 0x80   # 0x80 sync (TCT), 0x81 DDR_PATCH
OP_NAMES = {OP_WRITE: "WRITE", OP_BLOCKWRITE: "BLOCKWRITE", OP_MASKWRITE: "MASKWRITE",
            OP_MASKPOLL: "MASKPOLL", OP_NOOP: "NOOP", OP_PREEMPT: "PREEMPT",
            OP_MASKPOLL_BUSY: "MASKPOLL_BUSY", OP_LOADPDI: "LOADPDI",
            0x80: "SYNC", 0x81: "DDR_PATCH"}
# Where each op keeps its own byte size (v0.1 layouts: XAie_Write32Hdr is 24 bytes
# with Size at +20, XAie_MaskWrite32Hdr/MaskPoll32Hdr 32 with Size at +24,
# XAie_BlockWrite32Hdr 16 + payload with Size at +12, XAie_CustomOpHdr 8 with Size at +4).
_SIZE_FIELD = {OP_WRITE: (20, 24), OP_MASKWRITE: (24, 32), OP_MASKPOLL: (24, 32),
               OP_MASKPOLL_BUSY: (24, 32), OP_BLOCKWRITE: (12, 16)}
_FIXED_SIZE = {OP_NOOP: 4, OP_PREEMPT: 4, OP_LOADPDI: 16}

MAX_TXN_BYTES = 256 << 20       # an instruction stream is KBs


@dataclass(frozen=True)
class TxnHeader:
    """The header of a TXN instruction stream: its version, device generation, array shape,
    operation count and size in bytes."""

    major: int
    minor: int
    dev_gen: int
    rows: int
    cols: int
    memtile_rows: int
    num_ops: int
    size: int


def nop_stream(columns: int, dev_gen: int = DEV_GEN_AIE2P) -> bytes:
    """The one-NOOP stream for a partition of `columns` columns (20 bytes, 5 words)."""
    header = struct.pack("<BBBBBBxxII", 0, 1, dev_gen, ROWS, columns, MEMTILE_ROWS, 1,
                         HEADER_SIZE + 4)
    return header + struct.pack("<I", OP_NOOP)


def work_stream(columns: int, dev_gen: int = DEV_GEN_AIE2P) -> bytes:
    """A stand-in for an engine's own control code: a register write and a mask poll on
    the shim tile of column 0, then a NOOP (76 bytes). Its ops are well formed, so a
    firmware model runs it; what it would do on an array is not the point, only that it
    is not the one-NOOP stream: the simulated stack's `work-hang:N` tells work from
    NOOPs by that (`carries_work`). For the simulated stack only: never submitted to
    hardware."""
    # XAie_Write32Hdr and XAie_MaskPoll32Hdr, naturally aligned (sizes as _SIZE_FIELD)
    write = struct.pack("<BBBx4xQII", OP_WRITE, 0, 0, 0x1D204, 1, 24)
    poll = struct.pack("<BBBx4xQIII4x", OP_MASKPOLL, 0, 0, 0x1D220, 1, 1, 32)
    ops = write + poll + struct.pack("<I", OP_NOOP)
    header = struct.pack("<BBBBBBxxII", 0, 1, dev_gen, ROWS, columns, MEMTILE_ROWS, 3,
                         HEADER_SIZE + len(ops))
    return header + ops


def carries_work(stream: bytes) -> bool:
    """Whether a stream does anything but NOOPs: an op other than NOOP before its declared
    end (a stream that cannot be walked counts as work: it is not the NOOP stream)."""
    try:
        _, ops = decode_stream(stream)
    except TxnError:
        return True
    return any(op.opcode != OP_NOOP for op in ops)


def word_count(stream: bytes) -> int:
    """`ninstr` as mlir-aie C++, IRON and OpenFlowLM-Next pass it: 32-bit words."""
    return (len(stream) + 3) // 4


class TxnError(ValueError):
    """The stream is not a well-formed transaction."""


def parse_header(stream: bytes) -> TxnHeader:
    if len(stream) < HEADER_SIZE:
        raise TxnError(f"instruction stream of {len(stream)} bytes is shorter than the "
                       f"{HEADER_SIZE}-byte TXN header")
    fields = struct.unpack_from("<BBBBBBxxII", stream, 0)
    return TxnHeader(*fields)


def file_problem(path: str | Path) -> str | None:
    """Why a file named as an instruction stream is not one, or None: read before any
    trial, so a wrong file is bad input rather than a device failure. Only what every TXN
    has is checked (header, version 0.1, declared size within the file); the partition's
    own checks come when the stream is submitted. The file's bytes are never quoted."""
    try:
        stream = read_regular(path, "instruction stream", limit=MAX_TXN_BYTES)
    except BadInput as err:
        return str(err)
    try:
        header = parse_header(stream)
    except TxnError as err:
        return str(err)
    if (header.major, header.minor) != (0, 1):
        return "it is not an aie-rt TXN stream (no version 0.1 TXN header)"
    if not HEADER_SIZE <= header.size <= len(stream):
        return (f"it is not an aie-rt TXN stream (the size its header declares does not "
                f"fit the file's {len(stream)} bytes)")
    return None


def check_stream(stream: bytes, *, columns: int, dev_gen: int,
                 ninstr_words: int | None = None) -> TxnHeader:
    """What a firmware would reject: wrong version or generation, a partition wider
    than the context's, operations that do not add up to the declared size, or an
    `ninstr` that stops short of the stream."""
    header = parse_header(stream)
    if (header.major, header.minor) != (0, 1):
        raise TxnError(f"TXN version {header.major}.{header.minor}, expected 0.1")
    if header.dev_gen != dev_gen:
        raise TxnError(f"TXN is for device generation {header.dev_gen}, this device is "
                       f"{dev_gen}")
    if not 1 <= header.cols <= columns:
        raise TxnError(f"TXN addresses {header.cols} columns, the partition has {columns}")
    if not HEADER_SIZE <= header.size <= len(stream):
        raise TxnError(f"TXN declares {header.size} bytes, the buffer holds {len(stream)}")
    if ninstr_words is not None and ninstr_words * 4 < header.size:
        raise TxnError(f"ninstr={ninstr_words} words covers {ninstr_words * 4} bytes, the "
                       f"TXN needs {header.size} (ninstr counts 32-bit words)")
    at = HEADER_SIZE
    for index in range(header.num_ops):
        if at + 4 > header.size:
            raise TxnError(f"TXN op {index} starts at byte {at}, past the declared size "
                           f"{header.size}")
        op = stream[at]
        at += _op_size(stream, at, header.size, op, index)
    if at != header.size:
        raise TxnError(f"TXN ops end at byte {at}, the header declares {header.size}")
    return header


@dataclass(frozen=True)
class TxnOp:
    """One operation of a TXN stream: where it is, its opcode and its size in bytes."""

    index: int
    offset: int
    opcode: int
    size: int

    @property
    def name(self) -> str:
        return OP_NAMES.get(self.opcode, f"custom {self.opcode:#x}")


def decode_stream(stream: bytes) -> tuple[TxnHeader, list[TxnOp]]:
    """The header and the operations of a stream, walked as `check_stream` walks them
    (raises TxnError where the walk cannot go on)."""
    header = parse_header(stream)
    end = min(header.size, len(stream))
    ops, at = [], HEADER_SIZE
    for index in range(header.num_ops):
        if at + 4 > end:
            raise TxnError(f"TXN op {index} starts at byte {at}, past the declared size "
                           f"{header.size}")
        size = _op_size(stream, at, end, stream[at], index)
        ops.append(TxnOp(index, at, stream[at], size))
        at += size
    return header, ops


def _op_size(stream: bytes, at: int, end: int, op: int, index: int) -> int:
    if op in _FIXED_SIZE:
        return _FIXED_SIZE[op]
    if op in _SIZE_FIELD:
        field_at, minimum = _SIZE_FIELD[op]
    elif op >= OP_CUSTOM_FIRST:
        field_at, minimum = 4, 8
    else:
        raise TxnError(f"TXN op {index} has unknown opcode {op:#x}")
    name = OP_NAMES.get(op, f"custom {op:#x}")
    if at + field_at + 4 > end:
        raise TxnError(f"TXN op {index} ({name}) is truncated")
    size = struct.unpack_from("<I", stream, at + field_at)[0]
    if size < minimum or at + size > end:
        raise TxnError(f"TXN op {index} ({name}) declares {size} bytes")
    return size
