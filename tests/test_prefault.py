"""Copying a fork server's pages ahead of a trial (harness.execution.prefault), in real
forked processes: a child sees which pages it came to own, and copying them ahead changes
no byte and leaves nothing for the trial to copy."""

from __future__ import annotations

import ctypes
import os
import sys
from array import array

import pytest

from harness.execution import prefault

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="/proc/self/pagemap and MADV_POPULATE_WRITE are Linux's")

PAGES = 64


def _in_child(body) -> str:
    """Run `body()` in a forked child; what it returns (a short text), or its failure."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            os.write(write, str(body()).encode())
        except BaseException as err:  # noqa: BLE001 - said back to the test
            os.write(write, f"failed: {err!r}".encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read().decode()
    os.waitpid(pid, 0)
    return said


def _buffer() -> tuple[bytearray, int, int]:
    data = bytearray(os.urandom(PAGES * prefault.PAGE + prefault.PAGE))
    start = -(-ctypes.addressof(ctypes.c_char.from_buffer(data)) // prefault.PAGE) * prefault.PAGE
    return data, start, start + PAGES * prefault.PAGE


def _pages_in(ranges: array, start: int, end: int) -> int:
    return sum(max(0, min(ranges[i + 1], end) - max(ranges[i], start))
               for i in range(0, len(ranges), 2)) // prefault.PAGE


def test_a_child_sees_the_pages_it_wrote_and_no_other():
    data, start, end = _buffer()
    first = start - ctypes.addressof(ctypes.c_char.from_buffer(data))

    def body() -> str:
        before = prefault.snapshot()
        for page in range(0, PAGES, 2):                  # every other page
            data[first + page * prefault.PAGE] ^= 0xFF
        return str(_pages_in(prefault.written_since(before), start, end))
    assert _in_child(body) == str(PAGES // 2)


def test_copying_ahead_changes_no_byte_and_leaves_no_copy_for_later():
    data, start, end = _buffer()
    kept = bytes(data)

    def body() -> str:
        before = prefault.snapshot()
        asked = prefault.copy_ahead(prefault.copy_plan(array("Q", [start, end])))
        if asked == 0:
            return "no MADV_POPULATE_WRITE here"
        owned = _pages_in(prefault.written_since(before), start, end)
        return f"{asked} {owned} {bytes(data) == kept}"
    said = _in_child(body)
    if said == "no MADV_POPULATE_WRITE here":
        pytest.skip("this kernel has no MADV_POPULATE_WRITE (Linux 5.14)")
    assert said == f"{PAGES} {PAGES} True"


def test_a_report_round_trips_and_ranges_merge(tmp_path):
    ranges = prefault.merged(array("Q", [0x3000, 0x5000, 0x1000, 0x2000]),
                             array("Q", [0x2000, 0x3000, 0x8000, 0x9000]), None)
    assert list(ranges) == [0x1000, 0x5000, 0x8000, 0x9000]
    path = tmp_path / "pages"
    prefault.report(path, ranges)
    assert prefault.read_report(path) == ranges
    assert prefault.read_report(tmp_path / "none") is None


def test_a_plan_keeps_only_private_writable_memory_and_says_it_as_lengths():
    data, start, end = _buffer()
    mapped = prefault.writable_ranges()
    below = min(low for low, _ in mapped)
    # a range that begins below every writable mapping and one in the buffer's pages
    plan = prefault.copy_plan(array("Q", [0, below, start, end]))
    assert list(plan) == [start, end - start]
