"""Read xclbin (axlf) files in pure Python, no XRT needed.

Layouts from Xilinx/XRT `xclbin.h` and amd/xdna-driver `amdxdna_axlf.h`:
the axlf header (magic, signature length, key block, unique id, then
`axlf_header`), a table of 40-byte section headers from offset 456, and the
sections it points to. Parsed here: IP_LAYOUT, EMBEDDED_METADATA (XML),
AIE_PARTITION, MEM_TOPOLOGY and (GROUP_)CONNECTIVITY, the last two because
`kernel.group_id(arg)` is answered from them.

Every malformed input raises `XclbinError` naming what is wrong and at which
file offset; the parser never lets another exception out. (The module is
longer than most here because the format is: each section's structure and the
bounds checks that guard it are kept side by side.)
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import struct
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from harness.formats.regular import read_regular
from harness.model.errors import XclbinError

MAGIC = b"xclbin2\0"
HEADER_END = 456          # sizeof(struct axlf) without the section array
SECTION_HEADER_SIZE = 40
MAX_SECTIONS = 0x10000    # XCLBIN_MAX_NUM_SECTION
SYNTHETIC_PROJECT = "xdna-runlist-harness-synthetic"

SECTION_KINDS = {
    0: "BITSTREAM", 1: "CLEARING_BITSTREAM", 2: "EMBEDDED_METADATA", 3: "FIRMWARE",
    4: "DEBUG_DATA", 5: "SCHED_FIRMWARE", 6: "MEM_TOPOLOGY", 7: "CONNECTIVITY",
    8: "IP_LAYOUT", 9: "DEBUG_IP_LAYOUT", 10: "DESIGN_CHECK_POINT",
    11: "CLOCK_FREQ_TOPOLOGY", 12: "MCS", 13: "BMC", 14: "BUILD_METADATA",
    15: "KEYVALUE_METADATA", 16: "USER_METADATA", 17: "DNA_CERTIFICATE", 18: "PDI",
    19: "BITSTREAM_PARTIAL_PDI", 20: "PARTITION_METADATA", 21: "EMULATION_DATA",
    22: "SYSTEM_METADATA", 23: "SOFT_KERNEL", 24: "ASK_FLASH", 25: "AIE_METADATA",
    26: "ASK_GROUP_TOPOLOGY", 27: "ASK_GROUP_CONNECTIVITY", 28: "SMARTNIC",
    29: "AIE_RESOURCES", 30: "OVERLAY", 31: "VENDER_METADATA", 32: "AIE_PARTITION",
    33: "IP_METADATA", 34: "AIE_RESOURCES_BIN", 35: "AIE_TRACE_METADATA",
}
KIND = {name: number for number, name in SECTION_KINDS.items()}
IP_TYPES = {0: "IP_MB", 1: "IP_KERNEL", 2: "IP_DNASC", 3: "IP_DDR4_CONTROLLER",
            4: "IP_MEM_DDR4", 5: "IP_MEM_HBM", 6: "IP_MEM_HBM_ECC", 7: "IP_PS_KERNEL"}

IP_DATA_SIZE = 80
MEM_DATA_SIZE = 40
CONNECTION_SIZE = 12
AIE_PARTITION_FIXED = 128   # through `aie_pdis`; the rest of the struct is reserved
AIE_PDI_SIZE = 96
CDO_GROUP_SIZE = 96


@dataclass(frozen=True)
class Section:
    """An entry of the xclbin's section table."""

    index: int
    kind: int
    name: str
    offset: int
    size: int

    @property
    def kind_name(self) -> str:
        return SECTION_KINDS.get(self.kind, f"kind {self.kind}")


@dataclass(frozen=True)
class IpEntry:
    """An IP_LAYOUT entry: a kernel instance (or other IP) and its base address."""

    type: int
    properties: int
    base_address: int
    name: str

    @property
    def type_name(self) -> str:
        return IP_TYPES.get(self.type, f"type {self.type}")


@dataclass(frozen=True)
class KernelArg:
    """A kernel argument, as the embedded metadata declares it."""

    name: str
    index: int
    address_qualifier: int
    size: int
    offset: int
    type: str

    @property
    def is_global(self) -> bool:
        return self.address_qualifier == 1


@dataclass(frozen=True)
class Kernel:
    """A kernel of the embedded metadata: its type, arguments, instances and DPU kernel id."""

    name: str
    type: str
    args: tuple[KernelArg, ...]
    instances: tuple[str, ...] = ()
    dpu_kernel_id: int | None = None

    @property
    def arg_bytes(self) -> int:
        return sum(arg.size for arg in self.args)


@dataclass(frozen=True)
class CdoGroup:
    """A CDO group of an AIE partition's PDI."""

    name: str
    type: int
    pdi_id: int
    dpu_kernel_ids: tuple[int, ...]


@dataclass(frozen=True)
class AiePdi:
    """A PDI of the AIE partition, with its CDO groups."""

    uuid: str
    image_size: int
    cdo_groups: tuple[CdoGroup, ...]
    image_sha256: str = ""        # what a driver sees of it: the shim copies the image to a BO


@dataclass(frozen=True)
class AiePartition:
    """The AIE_PARTITION section: the partition's columns and its PDIs."""

    name: str
    column_width: int
    start_columns: tuple[int, ...]
    operations_per_cycle: int
    pdis: tuple[AiePdi, ...]

    @property
    def pdi_count(self) -> int:
        return len(self.pdis)


@dataclass(frozen=True)
class MemBank:
    """A MEM_TOPOLOGY entry: one memory bank."""

    index: int
    type: int
    used: bool
    size_kb: int
    base_address: int
    tag: str


@dataclass(frozen=True)
class Connection:
    """A (GROUP_)CONNECTIVITY entry: which memory bank an IP's argument is connected to."""

    arg_index: int
    ip_index: int
    mem_index: int


@dataclass(frozen=True)
class Xclbin:
    """A parsed xclbin: its header, sections, and the parts the harness reads (IP layout,
    kernels, AIE partition, memory topology, connectivity)."""

    size: int
    sha256: str
    md5: str
    length: int
    signature_length: int
    timestamp: int
    version: str
    mode: int
    uuid: str
    interface_uuid: str
    vbnv: str
    sections: tuple[Section, ...]
    ip_layout: tuple[IpEntry, ...] = ()
    kernels: tuple[Kernel, ...] = ()
    partition: AiePartition | None = None
    mem_topology: tuple[MemBank, ...] = ()
    connectivity: tuple[Connection, ...] = ()
    project: str = ""
    path: str | None = field(default=None, compare=False)

    @property
    def synthetic(self) -> bool:
        return self.project == SYNTHETIC_PROJECT

    def kernel(self, name: str) -> Kernel:
        for kernel in self.kernels:
            if kernel.name == name:
                return kernel
        known = ", ".join(k.name for k in self.kernels) or "none"
        raise XclbinError(f"{self.label}: no kernel named {name!r} (kernels: {known})")

    def group_id(self, kernel_name: str, arg_index: int) -> int:
        """The memory group an argument is connected to, or -1 (XRT's answer)."""
        ips = {i for i, ip in enumerate(self.ip_layout)
               if ip.name.split(":", 1)[0] == kernel_name}
        for conn in self.connectivity:
            if conn.arg_index == arg_index and conn.ip_index in ips:
                return conn.mem_index
        return -1

    def arg_banks(self, kernel_name: str, arg_index: int) -> frozenset[int]:
        """Every memory bank some IP of the kernel connects the argument to (XRT's
        `valid_arg_connection` over the kernel's IPs)."""
        ips = {i for i, ip in enumerate(self.ip_layout)
               if ip.name.split(":", 1)[0] == kernel_name}
        return frozenset(conn.mem_index for conn in self.connectivity
                         if conn.arg_index == arg_index and conn.ip_index in ips)

    @property
    def label(self) -> str:
        return self.path or f"xclbin {self.uuid}"


MAX_XCLBIN_BYTES = 1 << 30      # FastFlowLM's are a few MB; a GiB is no xclbin


def read_xclbin(path: str | Path) -> Xclbin:
    data = read_regular(path, "xclbin", limit=MAX_XCLBIN_BYTES, error=XclbinError)
    return parse_xclbin(data, str(path))


def read_xclbin_cached(path: str | Path) -> Xclbin:
    """`read_xclbin`, remembered while the file's size and mtime stay the same (trials
    re-open the same four files thousands of times in a sweep, and a run's start reads
    each several times: the pack's check, each trial's spec, the report, the export).
    An `Xclbin` is frozen, so every caller can share one."""
    try:
        st = Path(path).stat()
    except OSError as err:
        raise XclbinError(f"cannot read {path}: {err.strerror or err}") from None
    return _cached(str(path), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=64)
def _cached(path: str, mtime_ns: int, size: int) -> Xclbin:
    return read_xclbin(path)


def parse_xclbin(data: bytes, path: str | None = None) -> Xclbin:
    try:
        return _Parser(data, path).parse()
    except XclbinError:
        raise
    except Exception as err:  # the contract: only XclbinError escapes
        where = path or "xclbin"
        raise XclbinError(f"{where}: malformed xclbin ({type(err).__name__}: {err})") from None


class _Parser:
    def __init__(self, data: bytes, path: str | None) -> None:
        self.data = data
        self.where = path or "xclbin"

    def fail(self, offset: int, what: str) -> XclbinError:
        return XclbinError(f"{self.where}: {what} (at offset {offset})")

    def parse(self) -> Xclbin:
        data = self.data
        if len(data) < len(MAGIC) or data[:8] != MAGIC:
            # what the file holds instead is not ours to print: it may be anything
            raise self.fail(0, "bad magic: it does not start with b'xclbin2\\x00'; this is "
                               "not an xclbin (axlf) file")
        if len(data) < HEADER_END:
            raise self.fail(len(data), f"truncated header: the file has {len(data)} bytes, "
                                       f"the axlf header needs {HEADER_END}")
        signature_length = struct.unpack_from("<i", data, 8)[0]
        length, timestamp = struct.unpack_from("<QQ", data, 304)
        patch, major, minor, mode = struct.unpack_from("<HBBI", data, 328)
        allowed = {length}
        if signature_length > 0:
            allowed.add(length + signature_length)
        if len(data) not in allowed:
            raise self.fail(304, f"length field says {length} bytes, the file has {len(data)}"
                                 + ("; the file is truncated" if len(data) < length else ""))
        interface_uuid = uuid_text(data[336:352])
        vbnv = self.cstring(data[352:416], 352, "platform VBNV")
        xuid = uuid_text(data[416:432])
        count = struct.unpack_from("<I", data, 448)[0]
        if count > MAX_SECTIONS:
            raise self.fail(448, f"absurd section count {count} (limit {MAX_SECTIONS})")
        table_end = HEADER_END + count * SECTION_HEADER_SIZE
        if table_end > length:
            raise self.fail(HEADER_END, f"section table of {count} entries needs "
                                        f"{table_end} bytes, the file has {length}")
        sections = tuple(self.section(i, table_end, length) for i in range(count))
        self.check_overlaps(sections)

        ip_layout = self.first(sections, "IP_LAYOUT", self.ip_layout, ())
        kernels, project = self.first(sections, "EMBEDDED_METADATA", self.metadata, ((), ""))
        partition = self.first(sections, "AIE_PARTITION", self.partition, None)
        mem = self.first(sections, "ASK_GROUP_TOPOLOGY", self.mem_topology, None)
        if mem is None:
            mem = self.first(sections, "MEM_TOPOLOGY", self.mem_topology, ())
        conn = self.first(sections, "ASK_GROUP_CONNECTIVITY", self.connectivity, None)
        if conn is None:
            conn = self.first(sections, "CONNECTIVITY", self.connectivity, ())
        return Xclbin(
            size=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
            md5=hashlib.md5(data).hexdigest(),
            length=length,
            signature_length=signature_length,
            timestamp=timestamp,
            version=f"{major}.{minor}.{patch}",
            mode=mode,
            uuid=xuid,
            interface_uuid=interface_uuid,
            vbnv=vbnv,
            sections=sections,
            ip_layout=ip_layout,
            kernels=kernels,
            partition=partition,
            mem_topology=mem,
            connectivity=conn,
            project=project,
            path=self.where if self.where != "xclbin" else None,
        )

    # -- helpers ----------------------------------------------------------

    def cstring(self, raw: bytes, offset: int, what: str) -> str:
        text = raw.split(b"\0", 1)[0]
        try:
            return text.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(offset, f"{what} is not valid UTF-8") from None

    def section(self, index: int, table_end: int, length: int) -> Section:
        at = HEADER_END + index * SECTION_HEADER_SIZE
        kind, raw_name, _, offset, size = struct.unpack_from("<I16s4sQQ", self.data, at)
        name = self.cstring(raw_name, at + 4, f"section {index} name")
        kind_name = SECTION_KINDS.get(kind, f"kind {kind}")
        if offset < table_end:
            raise self.fail(at + 24, f"section {index} ({kind_name}) starts at {offset}, "
                                     f"inside the header and section table (which end at "
                                     f"{table_end})")
        if offset + size > length:
            raise self.fail(at + 24, f"section {index} ({kind_name}) at offset {offset} of "
                                     f"{size} bytes runs past the end of the file "
                                     f"({length} bytes)")
        return Section(index, kind, name, offset, size)

    def check_overlaps(self, sections: tuple[Section, ...]) -> None:
        ordered = sorted((s for s in sections if s.size), key=lambda s: s.offset)
        for before, after in itertools.pairwise(ordered):
            if before.offset + before.size > after.offset:
                raise self.fail(after.offset, f"sections {before.index} ({before.kind_name}) "
                                              f"and {after.index} ({after.kind_name}) overlap")

    def first(self, sections, kind_name, parse, default):
        for section in sections:
            if section.kind == KIND[kind_name]:
                return parse(section)
        return default

    def body(self, section: Section) -> bytes:
        return self.data[section.offset:section.offset + section.size]

    def need(self, section: Section, size: int, what: str) -> None:
        if section.size < size:
            raise self.fail(section.offset, f"{section.kind_name} section of {section.size} "
                                            f"bytes is too small for {what} ({size} bytes)")

    def array(self, section: Section, count: int, start: int, item: int, what: str) -> None:
        if count < 0:
            raise self.fail(section.offset, f"{section.kind_name}: negative {what} count "
                                            f"{count}")
        end = start + count * item
        if end > section.size:
            raise self.fail(section.offset + start,
                            f"{section.kind_name}: {count} {what} of {item} bytes from "
                            f"offset {start} need {end} bytes, the section has {section.size}")

    # -- sections ---------------------------------------------------------

    def ip_layout(self, section: Section) -> tuple[IpEntry, ...]:
        self.need(section, 8, "the IP count")
        body = self.body(section)
        count = struct.unpack_from("<i", body, 0)[0]
        self.array(section, count, 8, IP_DATA_SIZE, "IP entries")
        entries = []
        for i in range(count):
            at = 8 + i * IP_DATA_SIZE
            ip_type, props, base, raw_name = struct.unpack_from("<IIQ64s", body, at)
            name = self.cstring(raw_name, section.offset + at + 16, f"IP {i} name")
            entries.append(IpEntry(ip_type, props, base, name))
        return tuple(entries)

    def mem_topology(self, section: Section) -> tuple[MemBank, ...]:
        self.need(section, 8, "the memory bank count")
        body = self.body(section)
        count = struct.unpack_from("<i", body, 0)[0]
        self.array(section, count, 8, MEM_DATA_SIZE, "memory banks")
        banks = []
        for i in range(count):
            at = 8 + i * MEM_DATA_SIZE
            mem_type, used, size_kb, base, raw_tag = struct.unpack_from("<BB6xQQ16s", body, at)
            tag = self.cstring(raw_tag, section.offset + at + 24, f"memory bank {i} tag")
            banks.append(MemBank(i, mem_type, bool(used), size_kb, base, tag))
        return tuple(banks)

    def connectivity(self, section: Section) -> tuple[Connection, ...]:
        self.need(section, 4, "the connection count")
        body = self.body(section)
        count = struct.unpack_from("<i", body, 0)[0]
        self.array(section, count, 4, CONNECTION_SIZE, "connections")
        return tuple(Connection(*struct.unpack_from("<iii", body, 4 + i * CONNECTION_SIZE))
                     for i in range(count))

    def metadata(self, section: Section) -> tuple[tuple[Kernel, ...], str]:
        body = self.body(section).rstrip(b"\0")
        if b"<!DOCTYPE" in body or b"<!ENTITY" in body:
            raise self.fail(section.offset, "EMBEDDED_METADATA declares a DTD or entities; "
                                            "refusing to expand them")
        try:
            root = ET.fromstring(body)
        except ET.ParseError as err:
            line, column = err.position
            raise self.fail(section.offset, f"EMBEDDED_METADATA is not well-formed XML "
                                            f"(line {line}, column {column})") from None
        except (LookupError, ValueError) as err:   # e.g. an unknown declared encoding
            raise self.fail(section.offset, f"EMBEDDED_METADATA cannot be decoded: "
                                            f"{err}") from None
        kernels = []
        for element in root.iter("kernel"):
            kernels.append(self.kernel(element, section))
        names = [k.name for k in kernels]
        if len(set(names)) != len(names):
            raise self.fail(section.offset, f"EMBEDDED_METADATA declares kernel names twice: "
                                            f"{names}")
        return tuple(kernels), root.get("name", "")

    def kernel(self, element: ET.Element, section: Section) -> Kernel:
        name = element.get("name")
        if not name:
            raise self.fail(section.offset, "EMBEDDED_METADATA has a kernel without a name")
        args = []
        for arg in element.findall("arg"):
            arg_name = arg.get("name", "")
            args.append(KernelArg(
                name=arg_name,
                index=self.xml_int(arg, "id", name, section),
                address_qualifier=self.xml_int(arg, "addressQualifier", name, section),
                size=self.xml_int(arg, "size", name, section),
                offset=self.xml_int(arg, "offset", name, section),
                type=arg.get("type", ""),
            ))
        args.sort(key=lambda a: a.index)
        indices = [a.index for a in args]
        if indices != list(range(len(args))):
            raise self.fail(section.offset, f"kernel {name}: argument ids {indices} are not "
                                            f"0..{len(args) - 1}")
        extended = element.find("extended-data")
        dpu_id = None
        if extended is not None and extended.get("dpu_kernel_id"):
            dpu_id = self.xml_int(extended, "dpu_kernel_id", name, section)
        instances = tuple(i.get("name", "") for i in element.findall("instance"))
        return Kernel(name, element.get("type", ""), tuple(args), instances, dpu_id)

    def xml_int(self, element: ET.Element, attr: str, kernel: str, section: Section) -> int:
        raw = element.get(attr)
        if raw is None:
            raise self.fail(section.offset, f"kernel {kernel}: <{element.tag}> lacks {attr}")
        try:
            value = int(raw, 0)
        except ValueError:
            raise self.fail(section.offset, f"kernel {kernel}: <{element.tag}> {attr}="
                                            f"{raw!r} is not a number") from None
        if not 0 <= value < 2**32:
            raise self.fail(section.offset, f"kernel {kernel}: <{element.tag}> {attr}={raw} "
                                            "is out of range")
        return value

    def partition(self, section: Section) -> AiePartition:
        self.need(section, AIE_PARTITION_FIXED, "the aie_partition header")
        body = self.body(section)
        name_at, ops = struct.unpack_from("<II", body, 4)
        width = struct.unpack_from("<H", body, 32)[0]
        ncols, cols_at = struct.unpack_from("<II", body, 40)
        npdis, pdis_at = struct.unpack_from("<II", body, 120)
        name = self.mpo(section, body, name_at, "partition name")
        if width == 0:
            raise self.fail(section.offset + 32, "AIE_PARTITION column width is 0")
        self.array(section, ncols, cols_at, 2, "start columns")
        columns = struct.unpack_from(f"<{ncols}H", body, cols_at)
        self.array(section, npdis, pdis_at, AIE_PDI_SIZE, "PDIs")
        pdis = tuple(self.pdi(section, body, pdis_at + i * AIE_PDI_SIZE) for i in range(npdis))
        return AiePartition(name, width, tuple(columns), ops, pdis)

    def pdi(self, section: Section, body: bytes, at: int) -> AiePdi:
        image_size, image_at, ngroups, groups_at = struct.unpack_from("<IIII", body, at + 16)
        self.array(section, image_size, image_at, 1, "PDI image bytes")
        self.array(section, ngroups, groups_at, CDO_GROUP_SIZE, "CDO groups")
        groups = []
        for g in range(ngroups):
            gat = groups_at + g * CDO_GROUP_SIZE
            name_at, cdo_type, pdi_id, nids, ids_at = struct.unpack_from("<IB3xQII", body, gat)
            self.array(section, nids, ids_at, 8, "DPU kernel ids")
            ids = struct.unpack_from(f"<{nids}Q", body, ids_at)
            groups.append(CdoGroup(self.mpo(section, body, name_at, "CDO group name"),
                                   cdo_type, pdi_id, tuple(ids)))
        return AiePdi(uuid_text(body[at:at + 16]), image_size, tuple(groups),
                      hashlib.sha256(body[image_at:image_at + image_size]).hexdigest())

    def mpo(self, section: Section, body: bytes, at: int, what: str) -> str:
        if at >= len(body):
            raise self.fail(section.offset, f"{section.kind_name}: {what} offset {at} is past "
                                            f"the section end ({len(body)})")
        end = body.find(b"\0", at)
        if end < 0:
            raise self.fail(section.offset + at, f"{section.kind_name}: {what} is not "
                                                 "NUL-terminated")
        return self.cstring(body[at:end], section.offset + at, what)


def uuid_text(raw: bytes) -> str:
    """16 bytes as `str(uuid.UUID(bytes=raw))` writes them (8-4-4-4-12 lowercase hex),
    without the uuid module, which loads platform and its regular expressions at start."""
    raw = bytes(raw)
    if len(raw) != 16:
        raise ValueError("bytes is not a 16-char string")    # as uuid.UUID says
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"

