"""Write control-code ELFs laid out exactly as XRT's validate suite ships them, and
full ELFs shaped as XRT parses them.

The shipped `nop.elf` and `gemm_int8_strx.elf` (amd/xdna-driver tools/bins/Runner at
3af6ca94) share one layout, reproduced here field for field: ELF32 little-endian,
OS/ABI 0x45 with ABI version 2, EXEC, two program headers (PHDR over the
program-header table, LOAD over `.ctrltext`, 16-byte aligned), then
`.ctrltext` (the TXN), `.shstrtab`, `.note.xrt.UID` and the section headers
16-byte aligned. The UID note (owner ``XRT``, type 4) holds the md5 of
`.ctrltext` as 32 hex digits: that is what both shipped files hold.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
from pathlib import Path

from harness.formats.cache import cache_dir
from harness.formats.elf import (
    CONFIG_NOTE,
    CTRLTEXT,
    SHT_GROUP,
    SHT_NOTE,
    SHT_PROGBITS,
    SHT_STRTAB,
    SHT_SYMTAB,
    STT_FUNC,
    STT_OBJECT,
    UID_NOTE,
)

ELF_HEADER = 52
PROGRAM_HEADER = 32
SECTION_HEADER = 40
OSABI_XRT = 0x45
ABI_VERSION = 2
ET_EXEC = 2
UID_NOTE_TYPE = 4
GROUP_ABI_VERSION = 0x10        # 1.0: AIE2P sections grouped per kernel (is_group_elf)
CONFIG_NOTE_TYPE = 1
MANGLED = {"void*": "Pv", "char*": "Pc", "int*": "Pi", "int": "i", "char": "c"}
NAMES = b"\0.shstrtab\0" + CTRLTEXT.encode() + b"\0" + UID_NOTE.encode() + b"\0"


def control_code_uid(control_code: bytes) -> str:
    return hashlib.md5(control_code).hexdigest()


def control_code_elf(control_code: bytes, uid: str | None = None) -> bytes:
    """An ELF holding `control_code` (a TXN stream) as XRT's tools lay it out."""
    uid_text = (uid or control_code_uid(control_code)).encode("ascii")
    phoff = ELF_HEADER
    text_at = _align(phoff + 2 * PROGRAM_HEADER, 16)
    names_at = text_at + len(control_code)
    note_at = names_at + len(NAMES)
    note = struct.pack("<III", 4, len(uid_text), UID_NOTE_TYPE) + b"XRT\0" + uid_text \
        + b"\0" * (_align(len(uid_text), 4) - len(uid_text))
    shoff = _align(note_at + len(note), 16)

    ident = b"\x7fELF" + bytes([1, 1, 1, OSABI_XRT, ABI_VERSION]) + bytes(7)
    header = ident + struct.pack("<HHIIIIIHHHHHH", ET_EXEC, 1, 1, 0, phoff, shoff, 0,
                                 ELF_HEADER, PROGRAM_HEADER, 2, SECTION_HEADER, 4, 1)
    phdr = struct.pack("<IIIIIIII", 6, phoff, 0, 0, 2 * PROGRAM_HEADER, 2 * PROGRAM_HEADER,
                       4, 0)
    load = struct.pack("<IIIIIIII", 1, text_at, 0, 0, len(control_code), len(control_code),
                       5, 16)
    sections = b"".join([
        bytes(SECTION_HEADER),
        struct.pack("<IIIIIIIIII", 1, 3, 0, 0, names_at, len(NAMES), 0, 0, 1, 0),
        struct.pack("<IIIIIIIIII", NAMES.index(CTRLTEXT.encode()), 1, 6, 0, text_at,
                    len(control_code), 0, 0, 16, 0),
        struct.pack("<IIIIIIIIII", NAMES.index(UID_NOTE.encode()), 7, 0, 0, note_at, len(note),
                    0, 0, 1, 0),
    ])
    body = header + phdr + load
    body += bytes(text_at - len(body)) + control_code + NAMES + note
    return body + bytes(shoff - len(body)) + sections


def mangled(kernel: str, args: tuple[str, ...]) -> str:
    """``main(void*, void*, int)`` the way XRT's `demangle` reads it back: _Z4mainPvPvi."""
    return f"_Z{len(kernel)}{kernel}" + "".join(MANGLED[a] for a in args)


def full_elf(control_code: bytes, columns: int, *, kernel: str = "main",
             subkernel: str = "sequence", args: tuple[str, ...] = ("void*",) * 3,
             pdi: bytes | None = b"PDI\0", save: bytes | None = None,
             restore: bytes | None = None, pdi_in_group: bool = True) -> bytes:
    """A full ELF as XRT's `elf_aie_gen2` parses one: ABI version 1.0 (grouped), a
    `.note.xrt.configuration` giving the partition size, `.symtab` with the kernel's
    mangled signature (STT_FUNC) and its sub-kernel (STT_OBJECT, st_shndx pointing at the
    kernel symbol), and a `.group` listing the kernel's `.ctrltext` (and `.pdi`, which
    makes XRT send ERT_START_NPU_PREEMPT_ELF; `.preempt_save` and `.preempt_restore`
    without one, ERT_START_NPU_PREEMPT; XRT looks for `.pdi` in the whole ELF, so
    `pdi_in_group=False` leaves it out of the group with the same effect). The UID note
    holds 16 raw bytes, the configuration uuid."""
    strtab = b"\0" + mangled(kernel, args).encode() + b"\0" + subkernel.encode() + b"\0"
    symtab = bytes(16) + struct.pack("<IIIBBH", 1, 0, 0, (1 << 4) | STT_FUNC, 0, 0) \
        + struct.pack("<IIIBBH", strtab.index(subkernel.encode() + b"\0"), 0, 0,
                      (1 << 4) | STT_OBJECT, 0, 1)
    config = _note(struct.pack("<I", columns), CONFIG_NOTE_TYPE)
    uid = _note(hashlib.md5(control_code).digest(), UID_NOTE_TYPE)
    # (name, type, flags, data, link, info, align, entsize)
    sections: list[tuple[str, int, int, bytes, int, int, int, int]] = [
        (".strtab", SHT_STRTAB, 0, strtab, 0, 0, 1, 0),
        (".symtab", SHT_SYMTAB, 0, symtab, 2, 1, 4, 16),
        (".group", SHT_GROUP, 0, b"", 3, 2, 4, 4),
        (f"{CTRLTEXT}.{subkernel}", SHT_PROGBITS, 6, control_code, 0, 0, 16, 0),
    ]
    members = [5]
    for name, data in ((f".pdi.{subkernel}", pdi), (f".preempt_save.{subkernel}", save),
                       (f".preempt_restore.{subkernel}", restore)):
        if data is not None:
            sections.append((name, SHT_PROGBITS, 2, data, 0, 0, 16, 0))
            if pdi_in_group or data is not pdi:
                members.append(len(sections) + 1)  # after the null and .shstrtab headers
    sections += [(CONFIG_NOTE, SHT_NOTE, 0, config, 0, 0, 4, 0),
                 (UID_NOTE, SHT_NOTE, 0, uid, 0, 0, 4, 0)]
    group = struct.pack(f"<{len(members) + 1}I", 0, *members)
    sections[2] = sections[2][:3] + (group,) + sections[2][4:]
    names = b"\0.shstrtab\0" + b"".join(n.encode() + b"\0" for n, *_ in sections)
    body = bytearray(b"\x7fELF" + bytes([1, 1, 1, OSABI_XRT, GROUP_ABI_VERSION]) + bytes(7)
                     + bytes(ELF_HEADER - 16))
    offsets = []
    for _, _, _, data, *_ in [(".shstrtab", SHT_STRTAB, 0, names)] + sections:
        body += bytes(_align(len(body), 16) - len(body))
        offsets.append(len(body))
        body += data
    shoff = _align(len(body), 16)
    body += bytes(shoff - len(body))
    headers = [bytes(SECTION_HEADER),
               struct.pack("<IIIIIIIIII", 1, SHT_STRTAB, 0, 0, offsets[0], len(names), 0, 0, 1,
                           0)]
    for (name, kind, flags, data, link, info, align, entsize), offset in zip(
            sections, offsets[1:], strict=True):
        headers.append(struct.pack("<IIIIIIIIII", names.index(b"\0" + name.encode() + b"\0") + 1,
                                   kind, flags, 0, offset, len(data), link, info, align,
                                   entsize))
    body[16:ELF_HEADER] = struct.pack("<HHIIIIIHHHHHH", ET_EXEC, 1, 1, 0, 0, shoff, 0,
                                      ELF_HEADER, PROGRAM_HEADER, 0, SECTION_HEADER,
                                      len(headers), 1)
    return bytes(body) + b"".join(headers)


def _note(desc: bytes, note_type: int) -> bytes:
    return struct.pack("<III", 4, len(desc), note_type) + b"XRT\0" + desc \
        + bytes(_align(len(desc), 4) - len(desc))


def _align(n: int, to: int) -> int:
    return (n + to - 1) // to * to


def control_code_file(control_code: bytes) -> Path:
    """The ELF of `control_code` as a file (`pyxrt.elf` takes a path), kept in the cache
    under its UID, so every trial and worker of a run shares one."""
    return _cached_file(control_code_elf(control_code),
                        f"{control_code_uid(control_code)}.elf")


def full_elf_file(control_code: bytes, columns: int, *, kernel: str,
                  args: tuple[str, ...]) -> Path:
    """`full_elf` as a cached file (a simulator stand-in for a design's full ELF)."""
    data = full_elf(control_code, columns, kernel=kernel, args=args)
    return _cached_file(data, f"full-{hashlib.sha256(data).hexdigest()[:24]}.elf")


def _cached_file(data: bytes, name: str) -> Path:
    path = cache_dir("control-code") / name
    try:
        if path.read_bytes() == data:
            return path
    except OSError:
        pass
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return path
