"""Write control-code ELFs laid out exactly as XRT's validate suite ships them.

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

from harness.cache import cache_dir
from harness.elf import CTRLTEXT, UID_NOTE

ELF_HEADER = 52
PROGRAM_HEADER = 32
SECTION_HEADER = 40
OSABI_XRT = 0x45
ABI_VERSION = 2
ET_EXEC = 2
UID_NOTE_TYPE = 4
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


def _align(n: int, to: int) -> int:
    return (n + to - 1) // to * to


def control_code_file(control_code: bytes) -> Path:
    """The ELF of `control_code` as a file (`pyxrt.elf` takes a path), kept in the cache
    under its UID, so every trial and worker of a run shares one."""
    data = control_code_elf(control_code)
    path = cache_dir("control-code") / f"{control_code_uid(control_code)}.elf"
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
