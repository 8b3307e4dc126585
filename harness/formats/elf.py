"""Read control-code ELFs (aiebu's output, XRT's `nop.elf`, full ELFs) in pure Python.

The layout is plain ELF (System V gABI): a 52- or 64-byte header, program
headers, section headers named through `.shstrtab`. XRT's control code
(STACK.md 8) is ELF32, little-endian, OS/ABI 0x45, with the TXN instruction
stream in `.ctrltext` and a build id in `.note.xrt.UID` (owner ``XRT``, the id
as hex text). Every malformed input raises `ElfError` naming what is wrong and
at which offset; no other exception escapes.

A *full* ELF (mlir-aie's ``aiecc --generate-full-elf``, IRON's FullELFCallable) also
configures the array, so a hardware context can be made from it alone: XRT calls an
ELF full when it has a `.note.xrt.configuration` section (its first word the partition
size in columns; `elf_impl::is_full_elf`, `get_partition_size`). On AIE2P (OS/ABI 0x45)
an ELF of ABI version 1.0 or newer groups its sections per kernel (`is_group_elf`): each
`SHT_GROUP` section names, through its `sh_info`, a sub-kernel symbol (STT_OBJECT) whose
`st_shndx` is the index of its kernel's symbol (STT_FUNC, an Itanium-mangled signature
such as ``_Z4mainPvPvi`` for ``main(void*, void*, int)``), and lists the sections of that
kernel (its `.ctrltext*`, `.pdi*`); `xrt_elf.cpp` `parse_single_group_section`, `demangle`.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field
from pathlib import Path

from harness.formats.regular import read_regular
from harness.model.errors import BadInput

MAGIC = b"\x7fELF"
SHT_NULL, SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_NOTE, SHT_NOBITS = 0, 1, 2, 3, 7, 8
SHT_GROUP = 17
STT_OBJECT, STT_FUNC = 1, 2
SECTION_TYPES = {0: "NULL", 1: "PROGBITS", 2: "SYMTAB", 3: "STRTAB", 4: "RELA", 5: "HASH",
                 6: "DYNAMIC", 7: "NOTE", 8: "NOBITS", 9: "REL", 11: "DYNSYM", 17: "GROUP"}
PROGRAM_TYPES = {0: "NULL", 1: "LOAD", 2: "DYNAMIC", 3: "INTERP", 4: "NOTE", 6: "PHDR"}
CTRLTEXT = ".ctrltext"
UID_NOTE = ".note.xrt.UID"
CONFIG_NOTE = ".note.xrt.configuration"
# xrt_core::elf_patcher section names of preemption's save and restore code (elf_patcher.h)
PREEMPT_SAVE, PREEMPT_RESTORE, PDI = ".preempt_save", ".preempt_restore", ".pdi"
OSABI_AIE2P = 0x45
_DEMANGLED = {"v": "void", "c": "char", "i": "int"}
MAX_SECTIONS = 0xFF00       # SHN_LORESERVE: larger counts need extended numbering


class ElfError(BadInput):
    """A file is not a well-formed ELF."""


@dataclass(frozen=True)
class ElfSection:
    """A section header of an ELF file, with the section's bytes."""

    index: int
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    align: int
    entsize: int
    data: bytes = field(repr=False)

    @property
    def type_name(self) -> str:
        return SECTION_TYPES.get(self.type, f"type {self.type:#x}")

    @property
    def flag_text(self) -> str:
        return "".join(ch for bit, ch in ((1, "W"), (2, "A"), (4, "X")) if self.flags & bit)


@dataclass(frozen=True)
class ElfSegment:
    """A program header of an ELF file."""

    type: int
    offset: int
    vaddr: int
    filesz: int
    memsz: int
    flags: int
    align: int

    @property
    def type_name(self) -> str:
        return PROGRAM_TYPES.get(self.type, f"type {self.type:#x}")


@dataclass(frozen=True)
class ElfNote:
    """A note of an ELF file: the section it is in, its owner, type and descriptor."""

    section: str
    owner: str
    type: int
    desc: bytes


@dataclass(frozen=True)
class ElfSymbol:
    """A symbol table entry of an ELF file."""

    name: str
    value: int
    size: int
    type: int
    shndx: int


@dataclass(frozen=True)
class ElfKernel:
    """A kernel of a grouped (full) ELF: its name, argument types and one sub-kernel."""

    name: str
    args: tuple[str, ...]         # demangled types: "void*", "int", "char*" ...
    subkernel: str
    group: int                    # the SHT_GROUP section's index (XRT's ctrl code id)
    members: tuple[int, ...]      # the sections of this kernel

    @property
    def signature(self) -> str:
        return f"{self.name}({', '.join(self.args)})"


@dataclass(frozen=True)
class Elf:
    """A parsed ELF file: its header's fields, sections, segments and notes."""

    path: str | None
    size: int
    sha256: str
    bits: int
    osabi: int
    abiversion: int
    type: int
    machine: int
    flags: int
    entry: int
    sections: tuple[ElfSection, ...]
    segments: tuple[ElfSegment, ...]
    notes: tuple[ElfNote, ...]

    def section(self, name: str) -> ElfSection | None:
        return next((s for s in self.sections if s.name == name), None)

    @property
    def uid(self) -> str | None:
        """XRT's build id: the `.note.xrt.UID` note of owner XRT, as the text it holds."""
        for note in self.notes:
            if note.section == UID_NOTE and note.owner == "XRT":
                return note.desc.rstrip(b"\0").decode("ascii", "replace")
        return None

    @property
    def control_code(self) -> bytes | None:
        section = self.section(CTRLTEXT)
        return section.data if section is not None else None

    @property
    def is_full(self) -> bool:
        return self.section(CONFIG_NOTE) is not None

    @property
    def partition_size(self) -> int | None:
        """The columns a full ELF configures (its configuration note's first word)."""
        for note in self.notes:
            if note.section == CONFIG_NOTE and len(note.desc) >= 4:
                return struct.unpack_from("<I", note.desc)[0]
        return None

    @property
    def cfg_uuid(self) -> str | None:
        """The configuration uuid XRT reads (`get_cfg_uuid`): the UID note's 16 raw bytes;
        None when it holds anything else (the hex text of aiebu's partial ELFs)."""
        for note in self.notes:
            if note.section == UID_NOTE and len(note.desc) == 16:
                h = note.desc.hex()
                return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        return None

    @property
    def grouped(self) -> bool:
        """Sections grouped per kernel: AIE2P ELFs of ABI version 1.0 and newer."""
        return self.osabi == OSABI_AIE2P and self.abiversion >> 4 >= 1

    @property
    def symbols(self) -> tuple[ElfSymbol, ...]:
        table = next((s for s in self.sections if s.type == SHT_SYMTAB), None)
        if table is None:
            return ()
        names = self.sections[table.link].data if table.link < len(self.sections) else b""
        layout, size = ("<IIIBBH", 16) if self.bits == 32 else ("<IBBHQQ", 24)
        out = []
        for at in range(0, len(table.data) - size + 1, size):
            fields = struct.unpack_from(layout, table.data, at)
            if self.bits == 32:
                name_at, value, sym_size, info, _other, shndx = fields
            else:
                name_at, info, _other, shndx, value, sym_size = fields
            end = names.find(b"\0", name_at)
            name = names[name_at:end if end >= 0 else len(names)].decode("utf-8", "replace")
            out.append(ElfSymbol(name, value, sym_size, info & 0xF, shndx))
        return tuple(out)

    @property
    def kernels(self) -> tuple[ElfKernel, ...]:
        """The kernels a grouped ELF declares, as XRT parses them (raises ElfError for a
        group that does not point at a kernel the way XRT requires)."""
        if not self.grouped:
            return ()
        symbols = self.symbols
        out = []
        for group in (s for s in self.sections if s.type == SHT_GROUP):
            where = f"{self.path or 'ELF'}: group section {group.index}"
            if not 0 <= group.info < len(symbols) or symbols[group.info].type != STT_OBJECT:
                raise ElfError(f"{where}: symbol {group.info} is not a sub-kernel "
                               "(STT_OBJECT)")
            sub = symbols[group.info]
            if not 0 <= sub.shndx < len(symbols) or symbols[sub.shndx].type != STT_FUNC:
                raise ElfError(f"{where}: sub-kernel {sub.name} does not point at a kernel "
                               "(STT_FUNC)")
            name, args = demangle(symbols[sub.shndx].name, where)
            words = struct.unpack_from(f"<{len(group.data) // 4}I", group.data)
            out.append(ElfKernel(name, args, sub.name, group.index, tuple(words[1:])))
        return tuple(out)

    def kernel_code(self, kernel: ElfKernel) -> bytes:
        """The control code of a grouped kernel: its member `.ctrltext*` sections, in order."""
        return b"".join(self.sections[i].data for i in kernel.members
                        if i < len(self.sections) and CTRLTEXT in self.sections[i].name)

    @property
    def has_pdi(self) -> bool:
        """Whether any section's name holds ".pdi", wherever it sits: XRT's
        `initialize_pdi_buf` (module_elf_aie2p, up to 2.21) and `initialize_pdi_buf_map`
        (elf_aie_gen2, from 2.23) search every section, and one found makes XRT send
        ERT_START_NPU_PREEMPT_ELF for every kernel of the ELF."""
        return any(PDI in s.name for s in self.sections)

    @property
    def preemption(self) -> str:
        """Whether the ELF carries preemption save and restore code, as XRT reads it
        (`initialize_save_restore_buf`): per `.group` (an ELF without groups is one), a
        section named with ".preempt_save" and one with ".preempt_restore". "paired" when
        some group has both (XRT then sends ERT_START_NPU_PREEMPT), "unpaired" when a group
        has one without the other (XRT refuses the ELF), else "none"."""
        if self.grouped:
            groups = [struct.unpack_from(f"<{len(g.data) // 4}I", g.data)[1:]
                      for g in self.sections if g.type == SHT_GROUP]
        else:
            groups = [tuple(range(len(self.sections)))]
        found = "none"
        for members in groups:
            names = [self.sections[i].name for i in members if i < len(self.sections)]
            save = any(PREEMPT_SAVE in n for n in names)
            restore = any(PREEMPT_RESTORE in n for n in names)
            if save != restore:
                return "unpaired"
            if save:
                found = "paired"
        return found


def demangle(mangled: str, where: str = "ELF") -> tuple[str, tuple[str, ...]]:
    """XRT's `demangle`: ``_Z<length><name><types>``, each type a run of ``P`` (pointer)
    then one of v, c, i."""
    if len(mangled) <= 2 or not mangled.startswith("_Z"):
        raise ElfError(f"{where}: {mangled!r} is not a mangled kernel name (no _Z prefix)")
    at, length = 2, 0
    while at < len(mangled) and mangled[at].isdigit():
        length = length * 10 + int(mangled[at])
        at += 1
    if at + length > len(mangled):
        raise ElfError(f"{where}: {mangled!r} is shorter than its kernel name length")
    name = mangled[at:at + length]
    at += length
    args = []
    while at < len(mangled):
        depth = 0
        while at < len(mangled) and mangled[at] == "P":
            depth, at = depth + 1, at + 1
        if at >= len(mangled) or mangled[at] not in _DEMANGLED:
            raise ElfError(f"{where}: {mangled!r}: unknown argument type at {at}")
        args.append(_DEMANGLED[mangled[at]] + "*" * depth)
        at += 1
    return name, tuple(args)


MAX_ELF_BYTES = 256 << 20       # control code is KBs to a few MB


def read_elf(path: str | Path) -> Elf:
    data = read_regular(path, "ELF", limit=MAX_ELF_BYTES, error=ElfError)
    return parse_elf(data, str(path))


def parse_elf(data: bytes, path: str | None = None) -> Elf:
    try:
        return _Parser(data, path).parse()
    except ElfError:
        raise
    except Exception as err:  # the contract: only ElfError escapes
        raise ElfError(f"{path or 'ELF'}: malformed ELF ({type(err).__name__}: {err})") \
            from None


class _Parser:
    def __init__(self, data: bytes, path: str | None) -> None:
        self.data = data
        self.where = path or "ELF"

    def fail(self, offset: int, what: str) -> ElfError:
        return ElfError(f"{self.where}: {what} (at offset {offset})")

    def parse(self) -> Elf:
        data = self.data
        if data[:4] != MAGIC:
            raise self.fail(0, "bad magic: it does not start with b'\\x7fELF'; not an ELF "
                               "file")
        if len(data) < 16:
            raise self.fail(len(data), "truncated identification bytes")
        ei_class, ei_data = data[4], data[5]
        if ei_class not in (1, 2):
            raise self.fail(4, f"unknown ELF class {ei_class} (1 is ELF32, 2 ELF64)")
        if ei_data != 1:
            raise self.fail(5, "big-endian ELF; XRT control code is little-endian")
        self.bits = 32 if ei_class == 1 else 64
        header = "<HHIIIIIHHHHHH" if self.bits == 32 else "<HHIQQQIHHHHHH"
        need = 16 + struct.calcsize(header)
        if len(data) < need:
            raise self.fail(len(data), f"truncated header: {len(data)} bytes, the ELF{self.bits} "
                                       f"header needs {need}")
        (e_type, machine, _version, entry, phoff, shoff, flags, _ehsize, phentsize, phnum,
         shentsize, shnum, shstrndx) = struct.unpack_from(header, data, 16)
        segments = self.segments(phoff, phentsize, phnum)
        raw = self.section_headers(shoff, shentsize, shnum)
        if raw and not 0 <= shstrndx < len(raw):
            raise self.fail(16 + (46 if self.bits == 32 else 58),
                            f"section name table index {shstrndx} is not one of the "
                            f"{len(raw)} sections")
        names = self.section_data(raw[shstrndx], shstrndx) if raw else b""
        sections = tuple(self.section(i, entry_, names) for i, entry_ in enumerate(raw))
        notes = tuple(note for s in sections if s.type == SHT_NOTE for note in self.notes(s))
        return Elf(self.where if self.where != "ELF" else None, len(data),
                   hashlib.sha256(data).hexdigest(), self.bits, data[7], data[8], e_type,
                   machine, flags, entry, sections, segments, notes)

    def table(self, offset: int, entsize: int, count: int, minimum: int, what: str) -> None:
        if count and entsize < minimum:
            raise self.fail(offset, f"{what} entries of {entsize} bytes, at least {minimum} "
                                    "needed")
        if count > MAX_SECTIONS:
            raise self.fail(offset, f"absurd {what} count {count}")
        if offset + entsize * count > len(self.data):
            raise self.fail(offset, f"{count} {what} entries of {entsize} bytes run past the "
                                    f"end of the file ({len(self.data)} bytes)")

    def segments(self, offset: int, entsize: int, count: int) -> tuple[ElfSegment, ...]:
        layout = "<IIIIIIII" if self.bits == 32 else "<IIQQQQQQ"
        self.table(offset, entsize, count, struct.calcsize(layout), "program header")
        out = []
        for i in range(count):
            fields = struct.unpack_from(layout, self.data, offset + i * entsize)
            if self.bits == 32:
                p_type, p_off, vaddr, _paddr, filesz, memsz, p_flags, align = fields
            else:
                p_type, p_flags, p_off, vaddr, _paddr, filesz, memsz, align = fields
            out.append(ElfSegment(p_type, p_off, vaddr, filesz, memsz, p_flags, align))
        return tuple(out)

    def section_headers(self, offset: int, entsize: int, count: int) -> list[tuple]:
        layout = "<IIIIIIIIII" if self.bits == 32 else "<IIQQQQIIQQ"
        self.table(offset, entsize, count, struct.calcsize(layout), "section header")
        starts = [offset + i * entsize for i in range(count)]
        return [(at,) + struct.unpack_from(layout, self.data, at) for at in starts]

    def section_data(self, entry: tuple, index: int) -> bytes:
        at, _name, sh_type, _flags, _addr, offset, size = entry[:7]
        if sh_type in (SHT_NULL, SHT_NOBITS):
            return b""
        if offset + size > len(self.data):
            raise self.fail(at, f"section {index} of {size} bytes at offset {offset} runs past "
                                f"the end of the file ({len(self.data)} bytes)")
        return self.data[offset:offset + size]

    def section(self, index: int, entry: tuple, names: bytes) -> ElfSection:
        at, name_at, sh_type, flags, addr, offset, size, link, info, align, entsize = entry
        if name_at and name_at >= len(names):
            raise self.fail(at, f"section {index} name offset {name_at} is past the name table "
                                f"({len(names)} bytes)")
        end = names.find(b"\0", name_at)
        name = names[name_at:end if end >= 0 else len(names)].decode("utf-8", "replace")
        return ElfSection(index, name, sh_type, flags, addr, offset, size, link, info, align,
                          entsize, self.section_data(entry, index))

    def notes(self, section: ElfSection) -> list[ElfNote]:
        body, at, out = section.data, 0, []
        while at + 12 <= len(body):
            namesz, descsz, note_type = struct.unpack_from("<III", body, at)
            name_end = at + 12 + namesz
            desc_at = at + 12 + _align4(namesz)
            if name_end > len(body) or desc_at + descsz > len(body):
                raise self.fail(section.offset + at, f"note in {section.name} runs past the "
                                                     "section")
            owner = body[at + 12:name_end].rstrip(b"\0").decode("utf-8", "replace")
            out.append(ElfNote(section.name, owner, note_type, body[desc_at:desc_at + descsz]))
            at = desc_at + _align4(descsz)
        return out


def _align4(n: int) -> int:
    return (n + 3) & ~3
