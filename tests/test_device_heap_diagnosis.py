"""`diagnose` tells the device heap apart from host memory: a cacheable buffer comes from
the client's device heap, whose bound is the heap object's size, not the memlock limit
(Linux 234824b1 drivers/accel/amdxdna/amdxdna_gem.c amdxdna_gem_heap_alloc against
heap->mem.size, capped at dev_mem_size, 64 MiB; staging grows it to 512 MiB from
amd/xdna-driver b9d18f04; legacy src/driver/amdxdna/amdxdna_gem.c keeps one heap). The
cause stays `host-memory`; its falsifier and next experiment are the heap's, and the memlock
reading stays for a failure to pin or map host memory."""

from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner

from harness.app.cli import main

DRM = "amdxdna 0000:c6:00.1: [drm] *ERROR* "
LEGACY = "amdxdna 0000:c6:00.1: "                  # the legacy tree prints no [drm] prefix
MEMLOCK = "ulimit -l unlimited"


def diagnose(*paths: str) -> str:
    result = CliRunner().invoke(main, ["diagnose", *paths])
    assert result.exit_code in (0, 1), result.output
    return result.output


def answer(output: str) -> tuple[str, str, str]:
    """The first cause, its falsifier and its next experiment as `diagnose` prints them."""
    lines = output.splitlines()
    first = next(line for line in lines if line.startswith("diagnosis: "))
    falsifier = next(line for line in lines if line.startswith("  falsified by: "))
    experiment = next(line for line in lines if line.startswith("  next: "))
    return first, falsifier, experiment


@pytest.mark.parametrize("line", [
    # in-tree 7.0 / 7.1 (234824b1, f13c7f41 amdxdna_gem.c): full, and past the one heap
    f"[  812.113204] {DRM}amdxdna_gem_heap_alloc: Failed to alloc dev bo memory, ret -28",
    f"{DRM}amdxdna_gem_heap_alloc: Invalid dev bo size 0x25800000, limit 0x4000000",
    f"{DRM}amdxdna_drm_alloc_dev_bo: Failed to alloc dev bo memory, ret -22",
    # staging (b9d18f04): past its maximum, and a heap object past it
    f"{DRM}amdxdna_gem_heap_alloc: Invalid dev bo size 0x25800000, max heap 0x20000000",
    f"{DRM}amdxdna_gem_heap_add: Heap size 0x20000000 + 0x4000000 exceeds max 0x20000000",
    # legacy (src/driver/amdxdna amdxdna_gem.c): the same words without [drm]
    f"Dec 07 10:01:02 host kernel: {LEGACY}amdxdna_drm_create_dev_bo: Failed to alloc dev "
    "bo memory, ret -28",
])
def test_a_device_heap_line_of_each_tree_is_the_heap_not_the_memlock_limit(tmp_path, line):
    log = tmp_path / "dmesg.txt"
    log.write_text(line + "\n")
    first, falsifier, experiment = answer(diagnose(str(log)))
    assert first.startswith("diagnosis: host-memory")
    assert "device heap" in falsifier and "memlock" not in falsifier
    assert "cacheable buffers" in experiment and "host_only" in experiment
    assert MEMLOCK not in experiment


def test_a_failure_to_pin_host_memory_keeps_the_memlock_reading(tmp_path):
    log = tmp_path / "dmesg.txt"
    log.write_text(f"{DRM}amdxdna_gem_obj_vmap: Failed to pin pages ret -12\n")
    first, falsifier, experiment = answer(diagnose(str(log)))
    assert first.startswith("diagnosis: host-memory")
    assert "memlock" in falsifier and MEMLOCK in experiment


def test_the_heap_beside_a_failed_pin_is_still_host_memory_s_memlock_reading(tmp_path):
    log = tmp_path / "dmesg.txt"
    log.write_text(f"{DRM}amdxdna_gem_heap_alloc: Failed to alloc dev bo memory, ret -28\n"
                   f"{DRM}amdxdna_gem_obj_vmap: Failed to pin pages ret -12\n")
    _, falsifier, experiment = answer(diagnose(str(log)))
    assert "memlock" in falsifier and MEMLOCK in experiment


PROGRAM = """import pyxrt
device = pyxrt.device(0)
kept = [pyxrt.bo(device, 32 << 20, pyxrt.bo.cacheable, 0) for _ in range(3)]
"""


@pytest.mark.parametrize("profile", ["mainline", "oot"])
def test_a_simulated_program_whose_cacheable_buffers_pass_the_heap(tmp_path, monkeypatch,
                                                                   profile):
    """Three 32 MiB cacheable buffers on one 64 MiB heap (harness.model.heap): the third
    is refused -ENOSPC, which `capture record` keeps with the driver's lines."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "buffers.py").write_text(PROGRAM)
    recorded = CliRunner().invoke(main, [
        "capture", "record", "--after", "0", "--no-capture", "--profile", profile, "--out",
        "run", "--", sys.executable, "-m", "harness", "sim", "exec", "buffers.py"])
    assert recorded.exit_code == 0, recorded.output
    first, falsifier, experiment = answer(diagnose(str(tmp_path / "run" / "report.yaml")))
    assert first.startswith("diagnosis: host-memory")
    assert "device heap" in falsifier and MEMLOCK not in experiment
