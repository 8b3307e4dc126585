"""Two rules of the out-of-tree (legacy) driver, as amd/xdna-driver 856409ca
src/driver/amdxdna has them.

- Its device check first swaps out idle contexts: aie2_tdr.c aie2_tdr_detect returns "no
  hang" whenever aie2_rq_handle_idle_ctx swapped one out, which part_handle_idle_ctx does
  to a connected context with no job in flight on the check where its idle count reaches
  RQ_CTX_IDLE_COUNT (3, aie2_ctx_runqueue.c). Each connected context counts for itself, so
  beside an idle connected context a hang is declared a check later (8 s instead of 6 s),
  and beside several that went idle at different checks a check later for each (10 s
  beside two, 12 s with FastFlowLM's four contexts), at most one per other context the
  device keeps connected (hwctx_limit, 16: npu4_family.h), all of it the driver's timer.
- Its module parameters: every module_param of the PCI build (Kbuild's amdxdna-y and PCI
  objects, AMDXDNA_DEVEL from its Makefile), with its default and mode.
"""

from __future__ import annotations

import os

from simkit import Rig, outcome

from harness.emulator.device import EmulatedDevice
from harness.model.drivers import LEGACY_PARAMETERS, driver_build
from harness.report.header import read_timers
from harness.report.timing import AT_TIMER, classify, stack_timers
from harness.sim.profiles import parse_profile


def hang_time_s(rig: Rig) -> float:
    start = rig.stack.now
    assert "TIMEOUT" in outcome(rig.runlist(10)[0])      # hang-at:5: its run 5 hangs
    return (rig.stack.now - start) / 1e6


def test_a_hang_alone_is_declared_after_three_checks(tmp_path):
    assert round(hang_time_s(Rig(tmp_path, "oot,hang-at:5"))) == 6


def test_an_idle_connected_context_makes_the_check_that_swaps_it_out_skip(tmp_path):
    rig = Rig(tmp_path, "oot,hang-at:5")
    attn, kernel = rig.context("attn")
    assert outcome(rig.runlist(1, attn, kernel)[0]) == "COMPLETED"   # connected, then idle
    assert round(hang_time_s(rig)) == 8
    assert any("an idle context was swapped out" in line for line in rig.stack.log)
    # the swapped-out context was not connected when the check dumped the device
    dumped = [r.text for r in rig.stack.kernel_log.records if "Dumping ctx" in r.text]
    assert len(dumped) == 1 and rig.stack.contexts[0].name in dumped[0]


def test_idle_contexts_that_went_idle_at_different_checks_each_skip_one(tmp_path):
    rig = Rig(tmp_path, "oot,hang-at:5")
    attn, attn_kernel = rig.context("attn")
    mm, mm_kernel = rig.context("mm")
    assert outcome(rig.runlist(1, attn, attn_kernel)[0]) == "COMPLETED"
    rig.stack.run_until(lambda: False, 2e6)               # a check apart
    assert outcome(rig.runlist(1, mm, mm_kernel)[0]) == "COMPLETED"
    assert round(hang_time_s(rig)) == 10
    assert sum("an idle context was swapped out" in line for line in rig.stack.log) == 2


def test_a_hang_checks_late_is_still_the_driver_s_timer():
    header = {"backend": {"kind": "sim", "simulated": True, "isolation": False,
                          "driver": {"flavour": "oot", "kernel": "7.0"}},
              "settings": {"isolate": False}, "environment": {}}
    timers = read_timers(stack_timers(header))
    assert timers is not None
    for seconds in (8.0, 10.0, 12.0):
        assert classify(seconds * 1000, timers) == AT_TIMER, seconds
    build = driver_build("oot")
    assert [build.worst_seconds_with(n) for n in (1, 2, 3, 4)] == [6.0, 8.0, 10.0, 12.0]
    # at most one skip per other context the device keeps connected
    assert build.worst_seconds == build.worst_seconds_with(16) == 2.0 * (3 + 15)
    assert build.worst_seconds_with(40) == build.worst_seconds
    assert driver_build("mainline").worst_seconds_with(4) == 60.0      # one timer, no skips


def test_the_emulated_sysfs_holds_every_legacy_parameter_as_its_mode_lets_a_user(tmp_path):
    EmulatedDevice(parse_profile("oot")).write_tree(tmp_path, tmp_path / "kmsg")
    folder = tmp_path / "sys/module/amdxdna/parameters"
    assert sorted(os.listdir(folder)) == sorted(name for name, _, _ in LEGACY_PARAMETERS)
    assert len(LEGACY_PARAMETERS) == 31
    for name, _, mode in LEGACY_PARAMETERS:
        readable = bool(mode & 0o004)               # 0444/0644: anyone; 0400/0600: root
        assert bool(os.stat(folder / name).st_mode & 0o444) == readable, name
    # as settled by aie2_rq_init and from the sources' defaults
    assert (folder / "context_limit").read_text() == "32\n"
    assert (folder / "time_quantum_ms").stat().st_mode & 0o777 == 0   # 0400: root only
    assert (folder / "autosuspend_ms").read_text() == "5000\n"
    assert (folder / "fw_log_size").read_text() == "4194304\n"
