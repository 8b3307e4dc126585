"""The device heap cacheable buffers come from, as each driver tree bounds it, in the
simulated binding and in the emulated driver (harness.model.heap).

Facts pinned, each read at the commit named: XRT's XDNA shim makes a cacheable buffer a
device buffer (AMDXDNA_BO_DEV) in the client's heap, opens with one 64 MiB heap object and
adds one per EAGAIN up to 512 MiB, passing any other errno on as "DRM_IOCTL_AMDXDNA_CREATE_BO
IOCTL failed (err=-N)" (amd/xdna-driver 856409ca src/shim/buffer.cpp bo_flags_to_type,
src/shim/kmq/pcidev.cpp create_drm_bo, src/shim/host/platform_host.cpp ioctl); the in-tree
driver keeps one 64 MiB heap, refusing a larger buffer -EINVAL, a full heap -ENOSPC, a
second heap -EBUSY (234824b1 / f13c7f41 drivers/accel/amdxdna/amdxdna_gem.c); staging grows
it to dev_heap_max_size, 512 MiB on npu4/5/6 and 64 MiB on npu1 (856409ca, from b9d18f04);
the legacy tree keeps one heap and prints "dev heap is already created" (856409ca
src/driver/amdxdna/amdxdna_gem.c); every tree aligns to 32 KiB and takes four 4 KiB command
buffers per context (aie2_hwctx_init).
"""

from __future__ import annotations

import errno

import pytest

import harness.sim.pyxrt as pyxrt
from harness.emulator import uapi
from harness.emulator.memory import DriverError, Heap, Memory
from harness.model.heap import CHUNK, IN_TREE, LEGACY, MIB, HeapSpace, staging_rule
from harness.sim import control

DEV = "amdxdna 0000:00:00.9: [drm] *ERROR* "
LEGACY_DEV = "amdxdna 0000:00:00.9: "          # the legacy tree prints no [drm] prefix
FULL = "DRM_IOCTL_AMDXDNA_CREATE_BO IOCTL failed (err=-28): No space left on device"
TOO_BIG = "DRM_IOCTL_AMDXDNA_CREATE_BO IOCTL failed (err=-22): Invalid argument"


def cacheable(device, size):
    return pyxrt.bo(device, size, pyxrt.bo.cacheable, 0)


def fill(profile: str, size: int, count: int = 40):
    """Cacheable buffers of `size` until the driver refuses one: those made, the error, the
    kernel lines the refusal printed."""
    stack = control.configure(profile)
    device = pyxrt.device(0)
    made = []
    with pytest.raises(RuntimeError) as refused:
        for _ in range(count):
            made.append(cacheable(device, size))
    return made, str(refused.value), [r.text for r in stack.kernel_log.records], stack


@pytest.mark.parametrize("profile, prefix, caller", [
    ("mainline", DEV, "amdxdna_drm_alloc_dev_bo"),
    ("mainline,kernel:7.1", DEV, "amdxdna_drm_alloc_dev_bo"),
    ("oot", LEGACY_DEV, "amdxdna_drm_create_dev_bo")])
def test_one_heap_of_64_mib_takes_two_32_mib_buffers_and_refuses_the_third(profile, prefix,
                                                                           caller):
    made, error, lines, stack = fill(profile, 32 * MIB)
    assert len(made) == 2 and error == FULL
    assert lines == [f"{prefix}amdxdna_gem_heap_alloc: Failed to alloc dev bo memory, ret -28",
                     f"{prefix}{caller}: Failed to alloc dev bo memory, ret -28"]
    assert stack.heap.heap_objects == 1                  # never answered EAGAIN: never grown


def test_a_buffer_larger_than_the_in_tree_heap_is_refused_einval():
    stack = control.configure("mainline")
    device = pyxrt.device(0)
    with pytest.raises(RuntimeError) as refused:
        cacheable(device, 600 * MIB)
    assert str(refused.value) == TOO_BIG
    assert [r.text for r in stack.kernel_log.records] == [
        f"{DEV}amdxdna_gem_heap_alloc: Invalid dev bo size 0x25800000, limit 0x4000000",
        f"{DEV}amdxdna_drm_alloc_dev_bo: Failed to alloc dev bo memory, ret -22"]


def test_staging_grows_its_heap_to_512_mib_and_refuses_past_it():
    made, error, lines, stack = fill("staging", 32 * MIB)
    assert len(made) == 16 and error == FULL
    assert lines == [f"{DEV}amdxdna_gem_heap_alloc: Failed to alloc dev bo memory, ret -28"]
    assert stack.heap.heap_objects == 8 and stack.heap.committed == 512 * MIB
    with pytest.raises(RuntimeError) as refused:
        cacheable(pyxrt.device(0), 600 * MIB)
    assert str(refused.value) == TOO_BIG
    assert stack.kernel_log.records[-1].text == \
        f"{DEV}amdxdna_gem_heap_alloc: Invalid dev bo size 0x25800000, max heap 0x20000000"


def test_staging_on_npu1_keeps_one_64_mib_heap():
    made, error, _, stack = fill("staging,device:npu1", 32 * MIB)
    assert len(made) == 2 and error == FULL and stack.heap.committed == CHUNK


@pytest.mark.parametrize("profile", ["mainline", "staging", "oot"])
def test_host_only_buffers_are_not_bounded_by_the_heap_and_a_freed_one_gives_it_back(profile):
    control.configure(profile)
    device = pyxrt.device(0)
    big = pyxrt.bo(device, 96 * MIB, pyxrt.bo.host_only, 0)   # the driver's shmem, past
    assert big.size() == 96 * MIB                             # any 64 MiB heap
    first = cacheable(device, 60 * MIB)
    del first                                             # XRT frees it: the range is back
    assert cacheable(device, 60 * MIB).size() == 60 * MIB


def test_a_context_finds_no_room_for_its_command_buffers_in_a_full_in_tree_heap(tmp_path):
    from harness.formats.xclbin_writer import flm_spec, synthesize
    stack = control.configure("mainline")
    device = pyxrt.device(0)
    keep = [cacheable(device, 32 * MIB), cacheable(device, 32 * MIB - 64 * 1024)]
    path = tmp_path / "layer.xclbin"
    path.write_bytes(synthesize(flm_spec("Heap/layer")))
    xclbin = pyxrt.xclbin(str(path))
    device.register_xclbin(xclbin)
    with pytest.raises(RuntimeError) as refused:
        pyxrt.hw_context(device, xclbin.get_uuid())
    assert str(refused.value) == ("DRM_IOCTL_AMDXDNA_CREATE_HWCTX IOCTL failed (err=-28): No "
                                  "space left on device")
    assert [r.text for r in stack.kernel_log.records][-1] == \
        f"{DEV}amdxdna_drm_create_hwctx_ioctl: Init hwctx failed, ret -28"
    del keep


def test_the_heap_space_aligns_each_buffer_to_32_kib():
    space = HeapSpace(IN_TREE)
    assert [space.allocate(100) for _ in range(3)] == [0, 1 << 15, 2 << 15]


# -- the emulated driver's heap, the same rules ---------------------------------------------

@pytest.fixture
def memory(tmp_path):
    return Memory(tmp_path / "bo")


def _heap(memory: Memory, rule) -> Heap:
    heap = Heap()
    memory.create(uapi.BO_DEV_HEAP, CHUNK, heap, rule)
    return heap


@pytest.mark.parametrize("rule, extra", [(IN_TREE, ()), (LEGACY, ("dev heap is already created",))])
def test_the_emulated_single_heap_refuses_a_second_heap_ebusy(memory, rule, extra):
    heap = _heap(memory, rule)
    with pytest.raises(DriverError) as refused:
        memory.create(uapi.BO_DEV_HEAP, CHUNK, heap, rule)
    assert refused.value.code == errno.EBUSY
    assert tuple(p.text for p in refused.value.lines) == extra


def test_the_emulated_in_tree_heap_refuses_past_it_and_when_full(memory):
    heap = _heap(memory, IN_TREE)
    with pytest.raises(DriverError) as too_big:
        memory.create(uapi.BO_DEV, 600 * MIB, heap, IN_TREE)
    assert too_big.value.code == errno.EINVAL
    assert too_big.value.lines[0].text == "Invalid dev bo size 0x25800000, limit 0x4000000"
    memory.create(uapi.BO_DEV, 64 * MIB, heap, IN_TREE)
    with pytest.raises(DriverError) as full:
        memory.create(uapi.BO_DEV, 4096, heap, IN_TREE)
    assert full.value.code == errno.ENOSPC and len(full.value.lines) == 2


def test_the_emulated_staging_heap_asks_for_growth_then_stops_at_its_maximum(memory):
    rule = staging_rule(True)
    heap = _heap(memory, rule)
    memory.create(uapi.BO_DEV, 64 * MIB, heap, rule)
    with pytest.raises(DriverError) as again:
        memory.create(uapi.BO_DEV, 4096, heap, rule)
    assert again.value.code == errno.EAGAIN and again.value.lines == ()   # the shim grows it
    for _ in range(7):
        memory.create(uapi.BO_DEV_HEAP, CHUNK, heap, rule)
        memory.create(uapi.BO_DEV, 64 * MIB, heap, rule)
    with pytest.raises(DriverError) as full:
        memory.create(uapi.BO_DEV, 4096, heap, rule)
    assert full.value.code == errno.ENOSPC
    with pytest.raises(DriverError) as past:
        memory.create(uapi.BO_DEV_HEAP, CHUNK, heap, rule)
    assert past.value.code == errno.ENOSPC
    assert past.value.lines[0].text == "Heap size 0x20000000 + 0x4000000 exceeds max 0x20000000"


@pytest.mark.parametrize("profile, first", [
    ("mainline", "Invalid dev bo size 0x25800000, limit 0x4000000"),
    ("staging", "Invalid dev bo size 0x25800000, max heap 0x20000000"),
])
def test_the_emulated_driver_answers_create_bo_and_prints_as_the_tree_does(tmp_path, profile,
                                                                           first):
    from harness.emulator.device import EmulatedDevice
    from harness.emulator.emulated_driver import EmulatedDriver
    from harness.sim.profiles import parse_profile
    driver = EmulatedDriver(EmulatedDevice(parse_profile(profile)), tmp_path)
    file = driver.open(1)
    cmd = uapi.iowr(uapi.CREATE_BO, uapi.CREATE_BO_ARGS.size)

    def create(kind: int, size: int) -> int:
        return driver.ioctl(file, cmd, uapi.CREATE_BO_ARGS.pack(0, 0, size, kind, 0),
                            b"").ret
    assert create(uapi.BO_DEV_HEAP, CHUNK) == 0
    assert create(uapi.BO_DEV, 600 * MIB) == -errno.EINVAL
    assert first in (tmp_path / "kmsg").read_text()


def test_sim_profiles_says_each_tree_s_heap_once_and_npu1_only_where_it_differs():
    """`sim profiles` words the heap rule per flavour, naming its tree once, and gives npu1's
    bound only for staging, whose dev_heap_max_size is 64 MiB there (npu1_regs.c) and 512
    MiB on npu4/5/6; the in-tree and legacy heaps are 64 MiB everywhere."""
    from harness.sim.rules import RULES
    text = next(r.text for r in RULES if r.text.startswith("a cacheable buffer is a device"))
    assert "staging staging" not in text
    assert text.count("on npu1") == 1 and "512 MiB (64 MiB on npu1)" in text
    assert "mainline (in-tree): the device heap" in text and "oot (legacy): the" in text
