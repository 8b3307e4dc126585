"""Synthesize small, valid xclbins shaped like FastFlowLM's or XRT's validate one.

Used by the tests (no binary fixtures are committed) and by the simulated
stack when no real pack is present. The layout mirrors a real FastFlowLM
xclbin (STACK.md 5): MEM_TOPOLOGY (HOST, SRAM), AIE_PARTITION, XML
EMBEDDED_METADATA, IP_LAYOUT with one IP_PS_KERNEL, CONNECTIVITY and the
group sections. Files are marked synthetic through the metadata's project
name, which `harness.formats.xclbin` reports as `synthetic`.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field

from harness.formats.xclbin import (
    AIE_PDI_SIZE,
    CDO_GROUP_SIZE,
    HEADER_END,
    KIND,
    MAGIC,
    SECTION_HEADER_SIZE,
    SYNTHETIC_PROJECT,
    KernelArg,
    uuid_text,
)

AIE_PARTITION_STRUCT = 184
IP_PS_KERNEL = 7
MEM_DRAM = 2



def quoteattr(value: str) -> str:
    """An XML attribute value, quoted: what xml.sax.saxutils.quoteattr writes, without
    importing it (it pulls in urllib.request, http, email and ssl: a fifth of start-up)."""
    value = (value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
             .replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;"))
    if '"' not in value:
        return f'"{value}"'
    if "'" not in value:
        return f"'{value}'"
    return '"{}"'.format(value.replace('"', "&quot;"))

def npu_kernel_args(data_buffers: int = 5) -> tuple[KernelArg, ...]:
    """opcode (u64), instr (BO), ninstr (u32), bo0..boN: FastFlowLM's MLIR_AIE layout."""
    args = [
        KernelArg("opcode", 0, 0, 8, 0x0, "uint64_t"),
        KernelArg("instr", 1, 1, 8, 0x8, "char *"),
        KernelArg("ninstr", 2, 0, 4, 0x10, "uint32_t"),
    ]
    offset = 0x14
    for i in range(data_buffers):
        args.append(KernelArg(f"bo{i}", 3 + i, 1, 8, offset, "void*"))
        offset += 8
    return tuple(args)


@dataclass(frozen=True)
class XclbinSpec:
    """What a synthesized xclbin holds: its uuid, the kernel and its arguments, and the AIE
    partition."""

    uuid: str
    kernel_name: str = "MLIR_AIE"
    instance_name: str = "MLIRAIE"
    kernel_type: str = "dpu"
    args: tuple[KernelArg, ...] = field(default_factory=npu_kernel_args)
    dpu_kernel_id: int = 0x901
    column_width: int = 8
    start_columns: tuple[int, ...] = (0,)
    partition_name: str = "synthetic"
    pdi_uuid: str = "00000000-0000-0000-0000-000000000000"
    pdi_size: int = 64
    timestamp: int = 0
    version: tuple[int, int, int] = (2, 21, 75)
    vbnv: str = ""
    synthetic: bool = True


def flm_spec(name: str, *, columns: int = 8) -> XclbinSpec:
    """A FastFlowLM-shaped xclbin whose uuids derive from `name` (stable per name)."""
    return XclbinSpec(uuid=_uuid_for(name), pdi_uuid=_uuid_for(name + "/pdi"),
                      column_width=columns, partition_name=f"synthetic {name}")


def validate_spec(name: str = "validate") -> XclbinSpec:
    """XRT's validate.xclbin shape: kernel DPU, same arguments, 4-column partition."""
    return XclbinSpec(uuid=_uuid_for(name), kernel_name="DPU", instance_name="DPU",
                      column_width=4, pdi_uuid=_uuid_for(name + "/pdi"),
                      partition_name=f"synthetic {name}")


def _uuid_bytes(text: str) -> bytes:
    import uuid  # every form uuid.UUID reads; loaded only to write a file
    return uuid.UUID(text).bytes


def _uuid_for(name: str) -> str:
    return uuid_text(hashlib.sha256(name.encode()).digest()[:16])


def synthesize(spec: XclbinSpec) -> bytes:
    sections = [
        (KIND["MEM_TOPOLOGY"], "mem_topology", _mem_topology()),
        (KIND["AIE_PARTITION"], "aie_partition", _partition(spec)),
        (KIND["EMBEDDED_METADATA"], "", _metadata(spec)),
        (KIND["IP_LAYOUT"], "", _ip_layout(spec)),
        (KIND["CONNECTIVITY"], "", _connectivity(spec)),
        (KIND["ASK_GROUP_CONNECTIVITY"], "", _connectivity(spec)),
        (KIND["ASK_GROUP_TOPOLOGY"], "", _mem_topology()),
    ]
    table = bytearray()
    payload = bytearray()
    offset = _align(HEADER_END + SECTION_HEADER_SIZE * len(sections))
    for kind, name, body in sections:
        table += struct.pack("<I16s4xQQ", kind, name.encode(), offset, len(body))
        payload += body + bytes(_align(len(body)) - len(body))
        offset += _align(len(body))
    head_pad = _align(HEADER_END + len(table)) - (HEADER_END + len(table))
    length = HEADER_END + len(table) + head_pad + len(payload)

    header = bytearray(HEADER_END)
    header[0:8] = MAGIC
    struct.pack_into("<i", header, 8, -1)
    header[12:40] = b"\xff" * 28
    struct.pack_into("<Q", header, 296, spec.timestamp)
    struct.pack_into("<QQQ", header, 304, length, spec.timestamp, 0)
    major, minor, patch = spec.version
    struct.pack_into("<HBBI", header, 328, patch, major, minor, 0)
    vbnv = spec.vbnv.encode()[:63]
    header[352:352 + len(vbnv)] = vbnv
    header[416:432] = _uuid_bytes(spec.uuid)
    struct.pack_into("<I", header, 448, len(sections))
    return bytes(header + table + bytes(head_pad) + payload)


def _align(n: int) -> int:
    return (n + 7) & ~7


def _mem_topology() -> bytes:
    banks = [(0x10000, 0x4_0000_0000, b"HOST"), (0xC000, 0x400_0000, b"SRAM")]
    out = struct.pack("<i4x", len(banks))
    for size_kb, base, tag in banks:
        out += struct.pack("<BB6xQQ16s", MEM_DRAM, 1, size_kb, base, tag)
    return out


def _connections(spec: XclbinSpec) -> list[tuple[int, int, int]]:
    # The instruction buffer lives in the SRAM group (1), data buffers in HOST (0),
    # as the real FastFlowLM files declare.
    return [(a.index, 0, 1 if a.name == "instr" else 0) for a in spec.args if a.is_global]


def _connectivity(spec: XclbinSpec) -> bytes:
    conns = _connections(spec)
    return struct.pack("<i", len(conns)) + b"".join(struct.pack("<iii", *c) for c in conns)


def _ip_layout(spec: XclbinSpec) -> bytes:
    props = 1 | (spec.dpu_kernel_id << 16)   # sub_type ST_DPU, functional FC_DPU
    name = f"{spec.kernel_name}:{spec.instance_name}".encode()[:63]
    return struct.pack("<i4x", 1) + struct.pack("<IIQ64s", IP_PS_KERNEL, props,
                                                 0xFFFF_FFFF_FFFF_FFFF, name)


def _metadata(spec: XclbinSpec) -> bytes:
    project = f" name={quoteattr(SYNTHETIC_PROJECT)}" if spec.synthetic else ""
    lines = [
        '<?xml version="1.0" encoding="utf-8"?>',
        f"<project{project}>",
        "  <platform>",
        "    <device>",
        "      <core>",
        f'        <kernel name={quoteattr(spec.kernel_name)} language="c" '
        f"type={quoteattr(spec.kernel_type)}>",
        f'          <extended-data subtype="1" functional="0" '
        f'dpu_kernel_id="{spec.dpu_kernel_id:#x}"/>',
    ]
    for arg in spec.args:
        lines.append(
            f"          <arg name={quoteattr(arg.name)} addressQualifier="
            f'"{arg.address_qualifier}" id="{arg.index}" size="{arg.size:#x}" '
            f'offset="{arg.offset:#x}" hostOffset="0x0" hostSize="{arg.size:#x}" '
            f"type={quoteattr(arg.type)}/>")
    lines += [
        f"          <instance name={quoteattr(spec.instance_name)}/>",
        "        </kernel>",
        "      </core>",
        "    </device>",
        "  </platform>",
        "</project>",
        "",
    ]
    return "\n".join(lines).encode()


def _partition(spec: XclbinSpec) -> bytes:
    name = spec.partition_name.encode() + b"\0"
    name_at = AIE_PARTITION_STRUCT
    cols_at = _align(name_at + len(name))
    cols = struct.pack(f"<{len(spec.start_columns)}H", *spec.start_columns)
    pdi_at = _align(cols_at + len(cols))
    image_at = pdi_at + AIE_PDI_SIZE
    group_at = _align(image_at + spec.pdi_size)
    group_name_at = group_at + CDO_GROUP_SIZE
    ids_at = _align(group_name_at + len(b"DPU\0"))
    total = ids_at + 8

    body = bytearray(total)
    struct.pack_into("<B3xII", body, 0, 0, name_at, 2048)
    struct.pack_into("<H6xII", body, 32, spec.column_width, len(spec.start_columns), cols_at)
    struct.pack_into("<II", body, 120, 1, pdi_at)
    body[name_at:name_at + len(name)] = name
    body[cols_at:cols_at + len(cols)] = cols
    body[pdi_at:pdi_at + 16] = _uuid_bytes(spec.pdi_uuid)
    struct.pack_into("<IIII", body, pdi_at + 16, spec.pdi_size, image_at, 1, group_at)
    body[image_at:image_at + spec.pdi_size] = bytes(spec.pdi_size)
    struct.pack_into("<IB3xQII", body, group_at, group_name_at, 1, 1, 1, ids_at)
    body[group_name_at:group_name_at + 4] = b"DPU\0"
    struct.pack_into("<Q", body, ids_at, spec.dpu_kernel_id)
    return bytes(body)
