"""Buffer objects of the emulated driver: each one a file in the run folder that the
program (through the preload library's mmap) and the model map alike, so the model reads
the command packets XRT writes and writes back what the driver would.

As amd/xdna-driver `amdxdna_gem.c` and `aie2_pci.h` have it: a client first creates its
device heap (AMDXDNA_BO_DEV_HEAP, 64 MiB, `AIE2_DEVM_SIZE`, at device address
`AIE2_DEVM_BASE` 0x4000000); device buffers (AMDXDNA_BO_DEV) are carved out of it, 32 KiB
aligned (`dev_mem_buf_shift` 15), have no mmap offset of their own and live at the heap's
mapping plus their offset. How far the heap goes is the flavour's (`harness.model.heap`):
staging grows it by further heap objects up to 512 MiB (64 MiB on npu1), answering a
device buffer that does not fit EAGAIN so the shim adds one and retries; the in-tree and
legacy drivers keep the one heap, and refuse a buffer larger than it (EINVAL), one that
does not fit what is left (ENOSPC) and a second heap object (EBUSY), printing their lines
(`DriverError.lines`, which the emulated driver prints to its kernel log). Shared and
command buffers (SHARE, CMD) are their own mappings. Handles are per open file, as DRM's
are; an exported buffer is its backing file, and importing it in another file names the
same buffer.
"""

from __future__ import annotations

import errno
import itertools
import logging
import mmap
import os
from dataclasses import dataclass, field
from pathlib import Path

from harness.emulator import uapi
from harness.model.heap import HeapRule, give_range, take_range
from harness.model.printed import Printed

log = logging.getLogger("harness.emulator")

PAGE = 4096
HEAP_BASE = 0x4000000
HEAP_CHUNK = 64 << 20
DEV_ALIGN = 1 << 15
HOST_BASE = 0x1_0000_0000      # where shared and command buffers appear to the device
U64 = 1 << 64
# include/drm/drm_vma_manager.h DRM_FILE_PAGE_OFFSET_SIZE (64-bit): the mmap offsets every
# object of a device shares; an object needing more pages fails its create (ENOSPC)
OFFSET_PAGES = (0xFFFFFFFF >> 12) * 256
# the emulator's own limit: a buffer's mmap offset carries its id above bit 32, so one
# buffer maps within 4 GiB (a larger one is answered ENOMEM and counted as unanswered)
WINDOW = 1 << 32


class DriverError(Exception):
    """An ioctl's failure: the errno the program sees; `unanswered` when the emulator
    fails it for want of a model the driver has (counted, and said by `emulate`)."""

    def __init__(self, code: int, why: str = "", *, unanswered: bool = False,
                 lines: tuple[Printed, ...] = ()) -> None:
        super().__init__(why or os.strerror(code))
        self.code = code
        self.unanswered = unanswered
        self.lines = lines               # what the driver prints refusing it


def _round(size: int, to: int) -> int:
    return (size + to - 1) // to * to


@dataclass(eq=False)
class BufferObject:
    id: int                      # device-wide; names the backing file and the mmap offset
    kind: int
    size: int
    xdna_addr: int
    path: Path | None = None     # SHARE, CMD and DEV_HEAP: their own file
    heap: BufferObject | None = None   # DEV: the heap chunk it lives in
    heap_offset: int = 0
    refs: int = 1
    # payload word -> (what XRT had written, what the driver wrote over it) after a failure
    driver_wrote: dict[int, tuple[int, int]] | None = None
    _map: mmap.mmap | None = field(default=None, repr=False)

    @property
    def map_offset(self) -> int:
        return uapi.INVALID_ADDR if self.kind == uapi.BO_DEV else self.id << 32

    def _view(self) -> tuple[mmap.mmap, int]:
        if self.heap is not None:
            return self.heap._view()[0], self.heap_offset
        if self._map is None:
            if self.path is None:
                raise DriverError(errno.EINVAL, f"buffer object {self.id} has no backing file")
            with open(self.path, "r+b") as file:
                self._map = mmap.mmap(file.fileno(), _round(self.size, PAGE))
        return self._map, 0

    def read(self, offset: int, length: int) -> bytes:
        view, base = self._view()
        length = max(0, min(length, self.size - offset))
        return view[base + offset:base + offset + length]

    def write(self, offset: int, data: bytes) -> None:
        view, base = self._view()
        data = data[:max(0, self.size - offset)]
        view[base + offset:base + offset + len(data)] = data

    def word(self, index: int) -> int:
        return int.from_bytes(self.read(index * 4, 4).ljust(4, b"\0"), "little")

    def set_word(self, index: int, value: int) -> None:
        self.write(index * 4, (value & 0xFFFFFFFF).to_bytes(4, "little"))

    def fill(self, offset: int, byte: int) -> None:
        """Every byte from `offset` to the end (`memset` over the rest of the object)."""
        if offset < self.size:
            self.write(offset, bytes([byte]) * (self.size - offset))

    def release(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None
        if self.path is not None:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass


@dataclass
class Heap:
    """One client's device heap: its chunks and the free ranges (offset, length)."""

    chunks: list[BufferObject] = field(default_factory=list)
    free: list[tuple[int, int]] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.chunks) * HEAP_CHUNK

    def grow(self, chunk: BufferObject) -> None:
        start = self.size
        self.chunks.append(chunk)
        give_range(self.free, start, HEAP_CHUNK)

    def take(self, size: int) -> int | None:
        return take_range(self.free, _round(max(size, 1), DEV_ALIGN))

    def give(self, start: int, size: int) -> None:
        give_range(self.free, start, _round(max(size, 1), DEV_ALIGN))


class Memory:
    """Every buffer of the emulated device, and each open file's handles to them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._ids = itertools.count(1)
        self._host_next = HOST_BASE
        self.buffers: dict[int, BufferObject] = {}
        self.newest = 0                      # the id of the buffer made last

    def _file(self, buffer_id: int, size: int) -> Path:
        path = self.folder / str(buffer_id)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            os.ftruncate(fd, _round(size, PAGE))
        except OSError:
            path.unlink(missing_ok=True)
            raise
        finally:
            os.close(fd)
        return path

    def create(self, kind: int, size: int, heap: Heap, rule: HeapRule) -> BufferObject:
        """A new buffer (CREATE_BO), its heap ranges taken from `heap` for DEV, as the
        flavour's heap `rule` bounds it.

        Sizes are judged as amd/xdna-driver drivers/accel/amdxdna/amdxdna_gem.c and the DRM
        core judge them (a u64 from the program, whatever it holds): PAGE_ALIGN wraps a
        size within a page of 2^64 to 0, which a DEV BO refuses (EINVAL, "Invalid BO
        size"), while a SHARE or CMD BO (drm_gem_shmem_create) gets no mmap offset for 0
        pages (drm_mm_insert_node_in_range: ENOSPC); shmem_file_setup refuses a size that
        is negative as a file size (EINVAL), and the offset space, more pages than it has
        (ENOSPC). Nothing of the device changes when a create fails."""
        if kind not in uapi.BO_TYPES:
            raise DriverError(errno.EINVAL, f"unknown BO type {kind}")
        aligned = _round(size, PAGE) % U64
        if kind == uapi.BO_DEV:
            if aligned == 0:
                raise DriverError(errno.EINVAL, f"Invalid BO size {size:#x}")
            if not heap.chunks:
                raise DriverError(errno.EINVAL, "device BO before the client's heap")
            limit = rule.most if rule.grows else heap.size
            if aligned > limit:                       # amdxdna_gem_heap_alloc
                raise DriverError(errno.EINVAL, f"Invalid dev bo size {aligned:#x}", lines=tuple(
                    Printed(p.level, p.function, p.text.format(size=aligned, limit=limit))
                    for p in rule.too_big))
            start = heap.take(aligned)
            if start is None:
                raise self.heap_full(heap, rule)
            buffer_id = self.newest = next(self._ids)
            chunk = heap.chunks[start // HEAP_CHUNK]
            buffer = BufferObject(buffer_id, kind, size, HEAP_BASE + start, heap=chunk,
                                  heap_offset=start % HEAP_CHUNK)
        elif kind == uapi.BO_DEV_HEAP:
            if heap.chunks and not rule.grows:   # amdxdna_drm_create_dev_heap(_bo): one heap
                raise DriverError(rule.extra_heap_errno, "the client has its heap",
                                  lines=rule.extra_heap)
            if heap.size + HEAP_CHUNK > rule.most:
                raise DriverError(rule.extra_heap_errno, "past the heap's maximum", lines=tuple(
                    Printed(p.level, p.function,
                            p.text.format(used=heap.size, size=size, limit=rule.most))
                    for p in rule.extra_heap))
            if size != HEAP_CHUNK:
                raise DriverError(errno.EINVAL, f"heap object of {size} bytes")
            buffer_id = self.newest = next(self._ids)
            buffer = BufferObject(buffer_id, kind, size, HEAP_BASE + heap.size,
                                  path=self._file(buffer_id, size))
            heap.grow(buffer)
        else:
            if aligned >= 1 << 63:
                raise DriverError(errno.EINVAL, f"BO size {size:#x} (shmem_file_setup)")
            if aligned == 0 or aligned // PAGE > OFFSET_PAGES:
                raise DriverError(errno.ENOSPC, f"no mmap offset for {aligned // PAGE} pages")
            if aligned > WINDOW:
                raise DriverError(errno.ENOMEM, "CREATE_BO of more than 4 GiB (the "
                                  "emulator's buffer window)", unanswered=True)
            buffer_id = next(self._ids)
            try:
                path = self._file(buffer_id, size)
            except OSError as err:
                log.warning("CREATE_BO of %d bytes: %s", size, err.strerror)
                raise DriverError(errno.ENOMEM, "CREATE_BO the run folder could not back",
                                  unanswered=True) from None
            self.newest = buffer_id
            address = self._host_next
            self._host_next += aligned
            buffer = BufferObject(buffer_id, kind, size, address, path=path)
        self.buffers[buffer_id] = buffer
        return buffer

    @staticmethod
    def heap_full(heap: Heap, rule: HeapRule) -> DriverError:
        """A device buffer the heap has no room for: EAGAIN where the flavour lets the shim
        add a heap object (debug only), else ENOSPC with its lines."""
        if rule.grows and heap.size < rule.most:
            return DriverError(errno.EAGAIN, "device heap full: add a heap object")
        return DriverError(errno.ENOSPC, "device heap full", lines=rule.full)

    def drop(self, buffer: BufferObject, heap: Heap) -> None:
        buffer.refs -= 1
        if buffer.refs > 0:
            return
        self.buffers.pop(buffer.id, None)
        if buffer.kind == uapi.BO_DEV:
            heap.give(buffer.xdna_addr - HEAP_BASE, buffer.size)
        buffer.release()

    def by_path(self, path: str) -> BufferObject | None:
        """The buffer an exported fd's file is (PRIME_FD_TO_HANDLE)."""
        name = Path(path)
        if name.parent != self.folder or not name.name.isdigit():
            return None
        return self.buffers.get(int(name.name))


class Handles:
    """One open file's view: handle -> buffer, its heap, and device addresses."""

    def __init__(self) -> None:
        self.table: dict[int, BufferObject] = {}
        self.heap = Heap()
        self._next = itertools.count(1)

    def add(self, buffer: BufferObject) -> int:
        for handle, held in self.table.items():
            if held is buffer:           # DRM gives an imported object its existing handle
                buffer.refs -= 1
                return handle
        handle = next(self._next)
        self.table[handle] = buffer
        return handle

    def get(self, handle: int) -> BufferObject:
        try:
            return self.table[handle]
        except KeyError:
            raise DriverError(errno.ENOENT, f"no BO handle {handle}") from None

    def at(self, address: int) -> tuple[BufferObject, int] | None:
        """The buffer holding device address `address`, and the offset into it."""
        for buffer in self.table.values():
            if buffer.kind != uapi.BO_DEV_HEAP and \
                    buffer.xdna_addr <= address < buffer.xdna_addr + buffer.size:
                return buffer, address - buffer.xdna_addr
        return None
