"""What `elf inspect` shows about a control-code ELF: its sections, XRT's UID note, and
the TXN in `.ctrltext` decoded (header, operations, the columns it targets)."""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

from harness.formats.elf import Elf
from harness.formats.elf_writer import control_code_elf, control_code_uid
from harness.formats.txn import DEV_GEN_AIE2P, DEV_GEN_NPU1, TxnError, decode_stream, nop_stream

# The control code XRT's validate suite ships for Strix (amd/xdna-driver
# tools/bins/Runner at 3af6ca94, STACK.md 8), by sha256.
KNOWN = {
    "fae8668d5c979e3aca4c76b3b0370f93a1dc11b77f91f7cc2d8d79598b3f5577":
        "XRT validate nop.elf (Strix, one NOOP on 4 columns)",
    "c63a60e6b868a118df8e789e14727f4252396367fe19fedb9df2c8d835f77af3":
        "XRT validate gemm_int8_strx.elf (Strix, int8 GEMM)",
}
GENERATIONS = {DEV_GEN_NPU1: "AIE2 (NPU1, Phoenix)", DEV_GEN_AIE2P: "AIE2P (XDNA 2: Strix family)"}
SHOWN_OPS = 8


def known_as(elf: Elf) -> str | None:
    if elf.sha256 in KNOWN:
        return KNOWN[elf.sha256]
    for columns in range(1, 9):
        made = control_code_elf(nop_stream(columns))
        if hashlib.sha256(made).hexdigest() == elf.sha256:
            return f"the harness's NOP ELF for {columns} columns"
    return None


def txn_summary(code: bytes | None) -> dict[str, Any]:
    if code is None:
        return {"present": False, "problem": "no .ctrltext section: no control code"}
    try:
        header, ops = decode_stream(code)
    except TxnError as err:
        return {"present": True, "bytes": len(code), "problem": str(err)}
    counts = Counter(op.name for op in ops)
    return {
        "present": True,
        "bytes": len(code),
        "version": f"{header.major}.{header.minor}",
        "dev_gen": header.dev_gen,
        "generation": GENERATIONS.get(header.dev_gen, f"unknown ({header.dev_gen})"),
        "rows": header.rows,
        "columns": header.cols,
        "memtile_rows": header.memtile_rows,
        "ops": header.num_ops,
        "declared_bytes": header.size,
        "op_counts": dict(counts.most_common()),
        "first_ops": [{"index": op.index, "offset": op.offset, "op": op.name,
                       "bytes": op.size} for op in ops[:SHOWN_OPS]],
        "problem": (f"the TXN declares {header.size} bytes, the section holds {len(code)}"
                    if header.size != len(code) else None),
    }


def summary(elf: Elf) -> dict[str, Any]:
    """Everything `elf inspect --json` prints."""
    code = elf.control_code
    uid = elf.uid
    return {
        "path": elf.path,
        "size": elf.size,
        "sha256": elf.sha256,
        "known_as": known_as(elf),
        "class": f"ELF{elf.bits}",
        "osabi": elf.osabi,
        "abi_version": elf.abiversion,
        "type": elf.type,
        "machine": elf.machine,
        "sections": [{"index": s.index, "name": s.name, "type": s.type_name, "flags": s.flag_text,
                      "offset": s.offset, "size": s.size} for s in elf.sections],
        "segments": [{"type": p.type_name, "offset": p.offset, "filesz": p.filesz,
                      "memsz": p.memsz, "align": p.align} for p in elf.segments],
        "uid": uid,
        "uid_is_md5_of_ctrltext": (uid == control_code_uid(code)
                                   if uid is not None and code is not None else None),
        "txn": txn_summary(code),
    }


def render_text(elf: Elf) -> str:
    info = summary(elf)
    label = info["known_as"] or "not a control-code ELF the harness knows"
    lines = [f"{elf.path or elf.sha256}  ({label})",
             f"  format       {info['class']}, OS/ABI {elf.osabi:#04x} ABI version "
             f"{elf.abiversion}" + (" (XRT control code)" if elf.osabi == 0x45 else ""),
             f"  size         {elf.size} bytes",
             f"  sha256       {elf.sha256}"]
    uid = info["uid"]
    if uid is None:
        lines.append("  uid          none (no .note.xrt.UID note of owner XRT)")
    else:
        how = {True: "the md5 of .ctrltext, as XRT's tools write it",
               False: "not the md5 of .ctrltext", None: ""}[info["uid_is_md5_of_ctrltext"]]
        lines.append(f"  uid          {uid}" + (f" ({how})" if how else ""))
    lines.append(f"  sections     {len(elf.sections)}")
    for s in info["sections"]:
        name = s["name"] or "(null)"
        lines.append(f"    {s['index']:>2} {name:<16} {s['type']:<9} {s['flags']:<3} "
                     f"{s['size']:>9} bytes @{s['offset']}")
    txn = info["txn"]
    if not txn["present"]:
        lines.append(f"  control code {txn['problem']}")
    elif "version" not in txn:
        lines.append(f"  control code {txn['bytes']} bytes; not a TXN stream: {txn['problem']}")
    else:
        lines.append(f"  control code TXN {txn['version']}, {txn['generation']}, "
                     f"{txn['columns']} columns x {txn['rows']} rows "
                     f"({txn['memtile_rows']} memtile), {_count(txn['ops'], 'op')}, "
                     f"{txn['declared_bytes']} bytes")
        counts = ", ".join(f"{n} {name}" for name, n in txn["op_counts"].items())
        lines.append(f"    ops        {counts or 'none'}")
        for op in txn["first_ops"]:
            lines.append(f"    op {op['index']:>5}   {op['op']:<13} {op['bytes']:>6} bytes "
                         f"@{op['offset']}")
        if txn["ops"] > len(txn["first_ops"]):
            lines.append(f"    ... {txn['ops'] - len(txn['first_ops'])} more")
        if txn["problem"]:
            lines.append(f"  problem      {txn['problem']}")
    return "\n".join(lines)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
