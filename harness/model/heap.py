"""A client's device heap, as each driver tree keeps it, and what a buffer past it gets.

XRT's XDNA shim makes every cacheable buffer a device buffer (AMDXDNA_BO_DEV) carved out of
the client's device heap (amd/xdna-driver 856409ca `src/shim/buffer.cpp`
`bo_flags_to_type`: cacheable and a heap -> DEV; host-only -> SHARE, the driver's shmem,
which no heap bounds). The shim opens with one 64 MiB heap object and, when the driver
answers a device buffer EAGAIN, adds a 64 MiB heap object and asks again, up to 512 MiB
(`src/shim/kmq/pcidev.cpp` `on_first_open`, `create_drm_bo`); any other errno it passes
on as XRT's `system_error`, "DRM_IOCTL_AMDXDNA_CREATE_BO IOCTL failed (err=-N)"
(`src/shim/host/platform_host.cpp` `ioctl`). What the driver does with it is the tree's:

- the in-tree driver (Linux 7.0 and 7.1 as amd/xdna-driver 234824b1 and f13c7f41 import
  it, `amdxdna_gem.c`): one heap, at most `dev_mem_size` (64 MiB); a device buffer larger
  than the heap is refused -EINVAL ("Invalid dev bo size 0x%lx, limit 0x%lx", then
  `amdxdna_drm_alloc_dev_bo` "Failed to alloc dev bo memory, ret -22"), one that does not
  fit what is left -ENOSPC (drm_mm: "Failed to alloc dev bo memory, ret -28", twice), a
  second heap object -EBUSY (a debug line only). It never answers EAGAIN, so the shim
  never grows it. The earlier series modelled (6.16-6.19) are assumed to be the same.
- staging (856409ca, from b9d18f04 "Add expandable device heap support", 2026-04, after
  7.0): a drm_mm over the whole `dev_heap_max_size` (512 MiB on npu4/5/6, 64 MiB on npu1,
  `npuN_regs.c`); a device buffer past it -EINVAL ("Invalid dev bo size 0x%lx, max heap
  0x%lx"), one that lands past the heap objects made so far -EAGAIN (debug only: the shim
  grows the heap), one the whole range cannot hold -ENOSPC ("Failed to alloc dev bo
  memory, ret -28"); a heap object past the maximum -ENOSPC ("Heap size 0x%lx + 0x%lx
  exceeds max 0x%lx").
- the legacy out-of-tree driver (856409ca `src/driver/amdxdna/amdxdna_gem.c`): one heap of
  the size the shim asks (a multiple of 64 MiB: 64 MiB unless `Debug.num_heap_pages`),
  refused as the in-tree one refuses (`amdxdna_drm_create_dev_bo` prints the second line),
  and a second heap object "dev heap is already created", -EBUSY.

Every tree aligns a device buffer to 32 KiB (`dev_mem_buf_shift` 15, every `npuN_regs.c`)
and takes four 4 KiB command buffers for each hardware context from the same heap
(`aie2_hwctx_init`, `priv->cmd_buf`); a context that finds no room for them is refused
with the heap's errno ("Init hwctx failed, ret %d").
"""

from __future__ import annotations

import bisect
import errno
import os
from dataclasses import dataclass, field

from harness.model.printed import ERR, Printed

MIB = 1 << 20
PAGE = 4096
CHUNK = 64 * MIB                 # AIE2_DEVM_SIZE; the shim's heap_page_size
SHIM_MOST = 512 * MIB            # the shim's max_heap_sz (src/shim/kmq/pcidev.cpp)
ALIGN = 1 << 15                  # dev_mem_buf_shift 15: 32 KiB
CONTEXT_BUFFERS = (4096,) * 4    # aie2_hwctx_init: one MAX_CHAIN_CMDBUF_SIZE per job slot
CREATE_BO = "DRM_IOCTL_AMDXDNA_CREATE_BO"
SHIM_SOURCE = ("amd/xdna-driver 856409ca src/shim/kmq/pcidev.cpp on_first_open, "
               "create_drm_bo; src/shim/buffer.cpp bo_flags_to_type, buffer::expand; "
               "src/shim/host/platform_host.cpp ioctl")


@dataclass(frozen=True)
class HeapRule:
    """How one driver tree keeps a client's device heap: the most it reaches, whether it
    grows when the shim adds heap objects, and what it prints refusing a device buffer
    (`too_big`: {size} and {limit} filled in; `full`) or a heap object (`extra_heap`)."""

    tree: str                       # the tree's name, in words
    most: int
    grows: bool
    too_big: tuple[Printed, ...]
    full: tuple[Printed, ...]
    extra_heap_errno: int
    extra_heap: tuple[Printed, ...] = ()
    source: str = ""

    def rule_text(self, npu1: HeapRule | None = None) -> str:
        """The rule in words, for `sim profiles`; `npu1`: the same tree's rule on npu1,
        said only where its bound differs."""
        most = f"{self.most // MIB} MiB" + (f" ({npu1.most // MIB} MiB on npu1)"
                                            if npu1 is not None and npu1.most != self.most
                                            else "")
        grows = (f"grows from one 64 MiB heap object to {most} as the shim adds them "
                 "(EAGAIN)" if self.grows else f"is one heap of {most} that never grows")
        return (f"the device heap cacheable buffers come from {grows}; a buffer larger than "
                "the heap EINVAL, one that does not fit what is left ENOSPC")


def _alloc_failed(caller: str | None, ret: int) -> tuple[Printed, ...]:
    line = f"Failed to alloc dev bo memory, ret {ret}"
    first = (Printed(ERR, "amdxdna_gem_heap_alloc", line),)
    return first + ((Printed(ERR, caller, line),) if caller else ())


def _single_heap(tree: str, caller: str, extra: tuple[Printed, ...], source: str
                 ) -> HeapRule:
    return HeapRule(
        tree, CHUNK, False,
        (Printed(ERR, "amdxdna_gem_heap_alloc", "Invalid dev bo size {size:#x}, limit "
                                                "{limit:#x}"),
         Printed(ERR, caller, f"Failed to alloc dev bo memory, ret -{errno.EINVAL}")),
        _alloc_failed(caller, -errno.ENOSPC), errno.EBUSY, extra, source)


IN_TREE = _single_heap(   # a second heap -EBUSY with an XDNA_DBG line only
    "in-tree", "amdxdna_drm_alloc_dev_bo", (),
    "amd/xdna-driver 234824b1 and f13c7f41 drivers/accel/amdxdna/amdxdna_gem.c "
    "amdxdna_gem_heap_alloc, amdxdna_drm_alloc_dev_bo, amdxdna_drm_create_dev_heap")
LEGACY = _single_heap(
    "legacy", "amdxdna_drm_create_dev_bo",
    (Printed(ERR, "amdxdna_drm_create_dev_heap_bo", "dev heap is already created"),),
    "amd/xdna-driver 856409ca src/driver/amdxdna/amdxdna_gem.c amdxdna_gem_heap_alloc, "
    "amdxdna_drm_create_dev_bo, amdxdna_drm_create_dev_heap_bo")


def staging_rule(npu4_class: bool) -> HeapRule:
    most = SHIM_MOST if npu4_class else CHUNK        # AIE2_DEVM_MAX_SIZE; npu1: one chunk
    return HeapRule(
        "staging", most, True,
        (Printed(ERR, "amdxdna_gem_heap_alloc", "Invalid dev bo size {size:#x}, max heap "
                                                "{limit:#x}"),),
        _alloc_failed(None, -errno.ENOSPC), errno.ENOSPC,
        (Printed(ERR, "amdxdna_drm_create_dev_heap_bo",
                 "Heap size {used:#x} + {size:#x} exceeds max {limit:#x}"),),
        "amd/xdna-driver 856409ca drivers/accel/amdxdna/amdxdna_gem.c "
        "amdxdna_gem_heap_alloc, amdxdna_init_dev_bo, amdxdna_drm_create_dev_heap_bo "
        "(b9d18f04), npu1_regs.c and npu4_regs.c dev_heap_max_size")


def round_up(size: int, to: int) -> int:
    return (size + to - 1) // to * to


def ioctl_error(code: int) -> str:
    """What XRT's shim raises for a CREATE_BO the driver failed with `code`."""
    return f"{CREATE_BO} IOCTL failed (err=-{code}): {os.strerror(code)}"


class HeapRefused(RuntimeError):
    """The driver refused a device buffer: the errno, the lines it printed, and (str) what
    XRT's shim raises."""

    def __init__(self, code: int, lines: tuple[Printed, ...]) -> None:
        super().__init__(ioctl_error(code))
        self.code = code
        self.lines = lines


@dataclass
class HeapSpace:
    """One client's device heap by its offsets: the heap objects made (`committed`, a
    multiple of CHUNK) and the free ranges (offset, length), each buffer taking its size
    rounded to 32 KiB. `allocate` answers as the driver and the shim together do: it
    grows the heap a chunk at a time where the tree lets it, and refuses as the tree
    refuses."""

    rule: HeapRule
    committed: int = CHUNK
    free: list[tuple[int, int]] = field(default_factory=list)
    heap_objects: int = 1

    def __post_init__(self) -> None:
        if not self.free:
            self.free = [(0, self.committed)]

    @property
    def used(self) -> int:
        return self.committed - sum(length for _, length in self.free)

    def allocate(self, size: int, *, grow: bool = True) -> int:
        """The offset of a new device buffer of `size` bytes; HeapRefused as the driver
        refuses it. `grow` False: the driver allocates for itself (a context's command
        buffers), and nobody adds a heap object on its EAGAIN."""
        rule = self.rule
        aligned = round_up(max(size, 0), PAGE)
        limit = rule.most if rule.grows else self.committed
        if aligned == 0 or aligned > limit:
            raise HeapRefused(errno.EINVAL, tuple(
                Printed(p.level, p.function, p.text.format(size=aligned, limit=limit))
                for p in rule.too_big))
        need = round_up(aligned, ALIGN)
        while True:
            at = self._take(need)
            if at is not None:
                return at
            if not (rule.grows and self.committed < rule.most):
                raise HeapRefused(errno.ENOSPC, rule.full)
            if not grow:
                raise HeapRefused(errno.EAGAIN, ())
            self._commit()               # EAGAIN: the shim adds a heap object, asks again

    def release(self, offset: int, size: int) -> None:
        give_range(self.free, offset, round_up(round_up(max(size, 1), PAGE), ALIGN))

    def _commit(self) -> None:
        give_range(self.free, self.committed, CHUNK)
        self.committed += CHUNK
        self.heap_objects += 1

    def _take(self, need: int) -> int | None:
        return take_range(self.free, need)


def take_range(free: list[tuple[int, int]], need: int) -> int | None:
    """The offset of the first free range (offset, length) of `need` bytes or more, taken
    from `free` (kept sorted); None if none is long enough."""
    for position, (start, length) in enumerate(free):
        if length >= need:
            rest = (start + need, length - need)
            free[position:position + 1] = [rest] if rest[1] else []
            return start
    return None


def give_range(free: list[tuple[int, int]], start: int, length: int) -> None:
    """Put a range back into `free`, merged with its neighbours."""
    bisect.insort(free, (start, length))
    merged: list[tuple[int, int]] = []
    for begin, size in free:
        if merged and merged[-1][0] + merged[-1][1] == begin:
            merged[-1] = (merged[-1][0], merged[-1][1] + size)
        else:
            merged.append((begin, size))
    free[:] = merged
