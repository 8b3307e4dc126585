"""The emulated amdxdna driver without XRT: the preload library compiled, and its interface
driven from Python in a process of its own under LD_PRELOAD (tests/emulator_client.py:
real open, stat, ioctl and mmap calls), as XRT's XDNA shim drives it.

What each test pins comes from amd/xdna-driver at the commit the shim is built from
(856409ca): the shim's discovery (`src/shim/host/pcidrv_amdxdna.cpp`, XRT
`core/pcie/linux/pcidrv.cpp`), the uapi (`include/uapi/drm/amdxdna_accel.h` and the shim's
`drm_local` copy), `amdxdna_ctx.c` (`amdxdna_cmd_set_error`, the submit and wait ioctls),
`aie2_ctx.c` (job_sem, the context's syncobj), `npu*_regs.c` (hwctx_limit, vbnv); and one
model: what a chain ends as is what the simulated binding's driver and firmware say.

One emulation per profile serves several tests (each scenario on a device file of its
own), and the device's clock runs faster than the wall clock (`--clock-rate`), so that
the drivers' timeouts cost a fraction of a second.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from emulation_kit import cli, emulate
from hypothesis import given, settings
from hypothesis import strategies as st
from simkit import Rig, outcome

from harness.app import exits
from harness.app.cli import main
from harness.emulator import build, uapi
from harness.emulator.memory import HEAP_CHUNK, DriverError, Heap, Memory
from harness.emulator.packets import read_packet
from harness.emulator.uapi import iowr
from harness.formats.txn import nop_stream, work_stream
from harness.model.errors import EnvironmentNotReady
from harness.model.firmware import NOT_MODELLED_WORD
from harness.model.heap import staging_rule
from harness.probe.emulation import emulation, preload_mapped
from harness.sim.driver_log import BDF

COMPLETED, ERROR, ABORT, TIMEOUT = 4, 5, 6, 8
FF = 0xFFFFFFFF
ETIME = 62
pytestmark = pytest.mark.skipif(shutil.which("cc") is None,
                                reason="no C compiler: the emulator's library cannot be built")


# -- the library -----------------------------------------------------------------------------

def test_the_library_is_cached_by_the_hash_of_its_source(preload, monkeypatch):
    def no_compiler() -> str:
        raise EnvironmentNotReady("no compiler here")
    monkeypatch.setattr(build, "compiler", no_compiler)
    assert build.library(preload.parent) == preload           # found, not built again
    changed = build.source() + b"\n/* another revision */\n"
    monkeypatch.setattr(build, "source", lambda: changed)
    with pytest.raises(EnvironmentNotReady):                  # another source: another build
        build.library(preload.parent)


def test_without_a_compiler_emulate_says_so_in_one_line_and_exits_3(monkeypatch):
    monkeypatch.setenv("CC", "no-such-compiler")
    result = CliRunner().invoke(main, ["emulate", "--", "true"])
    assert result.exit_code == 3
    assert result.output.count("\n") == 1
    assert result.output.startswith("error: no C compiler ('no-such-compiler' is not on PATH)")


def test_a_compiler_that_fails_is_named_with_its_first_error(monkeypatch, tmp_path):
    """The compiler runs like every other program (harness.formats.capped_run): its output
    read up to a cap, its error line quoted once."""
    for noise, says in ((199_998, "preload.c:1: error: it broke; set CC"),
                        (3_000_000, "nois (its output cut at 1 MiB); set CC")):
        fake = tmp_path / "badcc"
        fake.write_text(f"#!/bin/sh\nyes 'noise' | head -c {noise} >&2\n"
                        "echo 'preload.c:1: error: it broke' >&2\nexit 1\n")
        fake.chmod(0o755)
        monkeypatch.setenv("CC", str(fake))
        with pytest.raises(EnvironmentNotReady) as raised:
            build.library(tmp_path / "cache")
        message = str(raised.value)
        assert f"failed on the emulator's preload library: {says}" in message, message
        assert "\n" not in message and len(message) < 500


def test_the_ioctl_numbers_and_layouts_are_the_documented_ones():
    # STACK.md 4: DRM_IOCTL_VERSION and DRM_IOCTL_AMDXDNA_GET_INFO as the probe uses them
    assert iowr(0x00, 64) == 0xC0406400 and iowr(0x47, 16) == 0xC0106447
    # struct amdxdna_drm_hwctx_entry, amdxdna_drm_query_aie_metadata, get_bo_info
    assert (uapi.HWCTX_ENTRY.size, uapi.AIE_METADATA.size, uapi.GET_BO_INFO_ARGS.size) == \
        (160, 64, 48)


# -- the documented staging driver ---------------------------------------------------------

@pytest.fixture(scope="module")
def staging(preload) -> dict[str, Any]:
    steps = {
        "discovery": ("discovery", {}),
        "complete": ("chains", {"runs": 42, "chain": 24}),
        "fault": ("chains", {"runs": 24, "chain": 24, "bad_at": 5}),
        "wait_shim": ("chains", {"runs": 24, "chain": 24, "wait": "ioctl"}),
        "wait_uapi": ("chains", {"runs": 24, "chain": 24, "wait": "ioctl-uapi"}),
        "contexts": ("contexts", {"columns": 8}),
        "no_heap": ("no_heap", {}),
        "share": ("share", {}),
        "syncobjs": ("syncobjs", {}),
        "corrupt": ("chains", {"runs": 2, "chain": 2, "corrupt": True}),
    }
    return dict(zip(steps, emulate(preload, "staging", list(steps.values())), strict=True))


def test_the_device_is_where_the_shim_looks(staging):
    seen = staging["discovery"]
    assert seen["bdf"] in seen["links"]
    assert seen["real"] == f"/sys/devices/pci0000:00/0000:00:08.2/{seen['bdf']}"
    assert seen["files"] == {"vendor": "0x1022", "device": "0x17f0", "revision": "0x11",
                             "subsystem_vendor": "0x1022", "subsystem_device": "0x17f0",
                             "vbnv": "RyzenAI-npu5", "device_type": "0",    # a KMQ device
                             "fw_version": "1.1.2.65"}
    assert seen["accel"] == ["accel0"]
    assert seen["node_is_char"] and seen["node_rdev"] == [261, 0]
    # the staging driver's parameters, and its DKMS version file
    assert sorted(seen["params"]) == ["aie2_max_col", "force_cmdlist", "force_iova",
                                      "tdr_timeout_ms"]
    assert seen["module_version"]


def test_chains_complete_and_only_the_chain_packets_are_written(staging):
    seen = staging["complete"]
    assert seen["driver"] == {"name": "amdxdna_accel_driver", "version": [0, 16, 0]}
    assert seen["firmware"] == [1, 1, 2, 65]
    assert seen["heap_addr"] == 0x4000000                     # AIE2_DEVM_BASE
    assert seen["seqs"] == [0, 1] and seen["waits"] == [0, 0]
    assert [(c["state"], c["opcode"]) for c in seen["chains"]] == [(COMPLETED, 19)] * 2
    assert set(seen["runs"]) == {1}                           # member packets stay NEW
    assert "TDR" not in seen["kmsg"]


def test_a_firmware_error_ends_the_chain_at_the_faulty_command(staging):
    chains = staging["fault"]["chains"]
    assert [(c["state"], c["error_index"]) for c in chains] == [(ERROR, 5)]


def test_wait_cmd_answers_both_numbers_of_the_ioctl(staging):
    # _IOWR in the shim's copy of the uapi, _IOW in the driver's: the same ioctl, 9
    for name in ("wait_shim", "wait_uapi"):
        assert staging[name]["waits"] == [0]
        assert staging[name]["chains"][0]["state"] == COMPLETED


def test_contexts_up_to_the_device_limit_then_einval(staging):
    assert staging["contexts"] == {"made": 16, "errno": "EINVAL"}   # npu5 hwctx_limit


def test_a_context_needs_the_client_heap(staging):
    assert staging["no_heap"] == {"errno": "ENOENT"}


def test_an_exported_buffer_is_the_same_object_on_import(staging):
    assert staging["share"] == {"size": 8192, "same_handle": True, "seen": "hello"}


def test_a_program_s_own_timeline_syncobj(staging):
    # signalled to 5: a wait for 3 returns at once, one for 7 times out; exported and
    # imported it is the same object under another handle
    assert staging["syncobjs"] == {"queried": 5, "imported_is_new_handle": True,
                                   "reached": 0, "later": -ETIME}


def test_a_chain_naming_no_command_buffer_is_refused_at_submit(staging):
    assert staging["corrupt"] == {"submit_error": "EINVAL"}


# -- hangs -------------------------------------------------------------------------------------

def test_hang_at_times_out_with_the_health_data_the_staging_driver_writes(preload):
    """Run 30 of 42 never completes: its chain (the second) ends TIMEOUT after the staging
    driver's 2 s; error_index 0 (PCI 17f0 firmware leaves run_list_id at 0); sub-command
    0's payload holds the version-1 health data, then 0xFF (`amdxdna_cmd_set_error`).
    XRT never re-encodes a payload: submitted again, sub-command 0 is that garbage, and the
    firmware model refuses it (ERROR at 0) before run 30 is reached."""
    (seen,) = emulate(preload, "staging,hang-at:30",
                      [("chains", {"runs": 42, "chain": 24, "again": True})], rate=10)
    first, second = seen["chains"]
    assert first["state"] == COMPLETED
    assert (second["state"], second["error_index"]) == (TIMEOUT, 0)
    # v1, AIE2, then txn_op_id and ctx_pc: words the model does not know, which the device
    # must still write (a report reads them back as "not modelled")
    assert second["sub0_words"] == [1, 0, NOT_MODELLED_WORD, NOT_MODELLED_WORD]
    assert seen["again"] == {"wait": 0, "state": ERROR, "opcode": 19, "error_index": 0}
    assert "[drm] *ERROR* aie2_tdr_detect: TDR timeout detected" in seen["kmsg"]
    assert "Timed out sub command ID: 0" in seen["kmsg"]


def _simulated_chains(folder: Path, profile: str, runs: int, columns: int) -> list:
    rig = Rig(folder, profile, columns=columns)
    rl, _ = rig.runlist(runs)
    outcome(rl)
    return [[job.state, job.error_index] for job in rig.stack.jobs]


def _chains_of(seen: dict) -> list:
    return [[c["state"], c["error_index"]] for c in seen["chains"]]


def test_the_fifth_submit_waits_and_a_hang_ends_as_the_simulated_binding_says(preload,
                                                                              tmp_path):
    """staging: aie2_cmd_submit takes job_sem (4 per context), so the 5th EXEC_CMD returns
    only once the hung first job has ended; a wait shorter than the timeout ends ETIME;
    and the chains XRT submits for a 72-run runlist end as in the simulated binding (one
    model): the hung chain TIMEOUT, the others ABORT."""
    profile = "staging,hang-at:0"
    queued, chains, short = emulate(preload, profile, [
        ("chains", {"runs": 6, "chain": 1}), ("chains", {"runs": 72, "chain": 24}),
        ("chains", {"runs": 24, "chain": 24, "timeout_s": 0.05})], rate=20)
    assert queued["seqs"] == [0, 1, 2, 3, 4, 5]
    assert queued["first_after_fifth_submit"] == TIMEOUT
    assert _chains_of(chains) == [[TIMEOUT, 0], [ABORT, 0], [ABORT, 0]]
    assert _chains_of(chains) == _simulated_chains(tmp_path, profile, 72, 8)
    assert short["waits"] == [-ETIME]


@pytest.mark.parametrize("profile, version, params", [
    # amdxdna_pci_drv.c AMDXDNA_DRIVER_MINOR: staging 16 (856409ca); Linux 7.0 6 (xdna-driver
    # 234824b1), 7.1 8 (de954711; flm validate on 7.1.3, noamsto/nix-amd-ai#79), 6.18 1
    # (flm validate on 6.18.10, ROCm/FastFlowLM#536); the legacy tree's uapi header 1.0.
    # force_cmdlist (0600, shown to root): true in staging and the legacy tree, and in
    # mainline from c68a6af400ca (7.0, 6.19.7); the legacy tree writes the limits it
    # settled on back into hwctx_limit and context_limit (0444, aie2_ctx_runqueue.c)
    ("staging", [0, 16, 0], {"force_cmdlist": "Y", "tdr_timeout_ms": "2000"}),
    ("mainline", [0, 6, 0], {"aie2_max_col": "128", "force_cmdlist": "Y"}),
    ("mainline,kernel:7.1", [0, 8, 0], {"aie2_max_col": "128", "force_cmdlist": "Y"}),
    ("mainline,kernel:6.18.13,firmware:1.0.0.63", [0, 1, 0], {"force_cmdlist": "N"}),
    ("mainline,kernel:6.19.6,firmware:1.0.0.63", [0, 6, 0],
     {"aie2_max_col": "128", "force_cmdlist": "N"}),
    ("oot", [1, 0, 0], {"force_cmdlist": "Y", "hwctx_limit": "16", "context_limit": "32"}),
    ("oot,device:npu1", [1, 0, 0], {"hwctx_limit": "6", "context_limit": "6"}),
])
def test_the_emulated_driver_identifies_as_its_flavour(preload, profile, version, params):
    (seen,) = emulate(preload, profile, [("identity", {})])
    assert seen["name"] == "amdxdna_accel_driver" and seen["version"] == version
    readable = {k: v for k, v in seen["params"].items() if v != "unreadable"}
    hidden = {k for k, v in seen["params"].items() if v == "unreadable"}
    assert hidden <= {"aie2_max_col", "force_cmdlist", "force_iova", "tdr_timeout_ms"}
    for name, value in params.items():
        assert readable.get(name, value) == value and name in seen["params"], name


def test_mainline_ends_a_hang_as_the_simulated_binding_says(preload, tmp_path):
    """Mainline 7.0 on an NPU6: after drm_sched's 60 s (here 0.5 s) the hung chain TIMEOUT
    with error_index 0 and sub-command 0 filled with 0xFF, no health data (89ff45359abb);
    the in-tree parameter set, no version file."""
    profile = "mainline,hang-at:0,device:npu6"
    discovery, chains = emulate(preload, profile, [
        ("discovery", {}), ("chains", {"runs": 72, "chain": 24})], rate=120)
    assert discovery["files"]["revision"] == "0x20"
    assert discovery["files"]["vbnv"] == "RyzenAI-npu6"
    assert list(discovery["params"]) == ["aie2_max_col", "force_cmdlist"]
    assert not discovery["module_version"]
    assert _chains_of(chains) == [[TIMEOUT, 0], [ABORT, 0], [ABORT, 0]]
    assert chains["chains"][0]["sub0_words"] == [FF] * 4
    assert _chains_of(chains) == _simulated_chains(tmp_path, profile, 72, 8)


def test_the_legacy_driver_ends_a_hang_as_the_simulated_binding_says(preload, tmp_path):
    """The out-of-tree driver on an NPU1 (4 columns, 6 contexts): every chain in flight
    ends TIMEOUT at the firmware's run_list_id, which the firmware leaves at 0 on a timeout
    on every device (xdna-driver test/shim_test/io_test.cpp); the context is dumped to the
    kernel log as `aie2_dump_ctx` does; the 7th context is refused by the legacy tree itself
    (`aie2_rq_add`, -ENOENT)."""
    profile = "oot,hang-at:3,device:npu1"
    stream = nop_stream(4, 3).hex()
    discovery, chains, contexts = emulate(preload, profile, [
        ("discovery", {}),
        ("chains", {"runs": 72, "chain": 24, "columns": 4, "stream": stream}),
        ("contexts", {"columns": 4})], rate=10)
    assert (discovery["files"]["device"], discovery["files"]["vbnv"]) == \
        ("0x1502", "RyzenAI-npu1")
    assert "timeout_in_sec" in discovery["params"] and not discovery["module_version"]
    assert _chains_of(chains)[0] == [TIMEOUT, 0]
    assert [s for s, _ in _chains_of(chains)] == [TIMEOUT] * 3
    assert _chains_of(chains) == _simulated_chains(tmp_path, profile, 72, 4)
    assert "aie2_dump_ctx: Dumping ctx" in chains["kmsg"]
    assert contexts == {"made": 6, "errno": "ENOENT"}


# -- the hypotheses as the simulated binding plays them ------------------------------------

def _simulated_work_chains(folder: Path, profile: str, kinds: str) -> list:
    rig = Rig(folder, profile)
    outcome(rig.mixed_runlist(kinds)[0])
    return [[job.state, job.error_index] for job in rig.stack.jobs]


def test_what_is_queued_is_counted_in_device_time_whatever_the_host_takes(preload,
                                                                          tmp_path):
    """inflight-cap:40 on 42 runs (chains 24 + 18) from a host that takes 50 ms between
    its two submits (the first chain's 24 x 50 us take 1.2 ms of device time): the
    device's clock runs only while the program waits on it, so both chains are queued at
    once as on the simulated clock, and the runlist ends as the simulated binding says
    (TIMEOUT), not COMPLETED as it did when the queue drained in real time."""
    profile = "staging,inflight-cap:40"
    (seen,) = emulate(preload, profile, [("chains", {"runs": 42, "chain": 24,
                                                      "pause_s": 0.05})], rate=10)
    assert _chains_of(seen)[0] == [TIMEOUT, 0]
    assert _chains_of(seen) == _simulated_chains(tmp_path, profile, 42, 8)


def test_work_hang_and_reject_at_play_as_the_simulated_binding_says(preload, tmp_path):
    """work-hang:30 hangs the 30th run carrying work (chain 1) and never a NOOP run;
    reject-at:30 fails run 30 at once, ERROR at error_index 6 of chain 1, NOOPs alike."""
    work = work_stream(8).hex()
    hung, noops = emulate(preload, "staging,work-hang:30", [
        ("chains", {"runs": 42, "chain": 24, "stream": work}),
        ("chains", {"runs": 42, "chain": 24})], rate=10)
    assert _chains_of(hung) == [[COMPLETED, 0], [TIMEOUT, 0]] == \
        _simulated_work_chains(tmp_path, "staging,work-hang:30", "w" * 42)
    assert _chains_of(noops) == [[COMPLETED, 0], [COMPLETED, 0]]
    (refused,) = emulate(preload, "staging,reject-at:30",
                         [("chains", {"runs": 42, "chain": 24})])
    assert _chains_of(refused) == [[COMPLETED, 0], [ERROR, 6]] == \
        _simulated_chains(tmp_path, "staging,reject-at:30", 42, 8)


def test_held_contexts_leave_a_program_the_rest_of_the_device_s_limit(preload):
    """held-contexts:13 on staging: the firmware's 16 (npu5) hold 13 of other processes, a
    program makes 3 and the 4th fails EINVAL; on the out-of-tree driver, 30 held of its 32
    virtual contexts leave 2, then ENOENT (aie2_rq_add), as the simulated binding plays."""
    (firmware,) = emulate(preload, "staging,held-contexts:13", [("contexts", {"columns": 8})])
    assert firmware == {"made": 3, "errno": "EINVAL"}
    (virtual,) = emulate(preload, "oot,held-contexts:30", [("contexts", {"columns": 8})])
    assert virtual == {"made": 2, "errno": "ENOENT"}


# -- which run of its runlist a chain starts at ------------------------------------------

def test_a_chain_continues_a_full_one_only_if_it_existed_when_that_was_submitted():
    from types import SimpleNamespace as NS

    from harness.emulator.objects import HwContext

    ctx = HwContext(1, None, None, 8, None, [])

    def chain(buffer_id: int, runs: int):
        return NS(command=NS(id=buffer_id), members=[None] * runs)
    # one runlist of 60: its chains 10, 11, 12 all made before the first is submitted
    assert [ctx.chain_start(chain(i, n), 24, newest=20) for i, n in
            ((10, 24), (11, 24), (12, 12))] == [0, 24, 48]
    # re-executed: each chain keeps its start
    assert ctx.chain_start(chain(11, 24), 24, newest=20) == 24
    # a runlist made after the last one ran starts at 0, even after a full chain
    assert ctx.chain_start(chain(10, 24), 24, newest=30) == 0
    assert ctx.chain_start(chain(31, 5), 24, newest=31) == 0
    # after a chain that was not full, a new chain starts a runlist
    assert ctx.chain_start(chain(32, 24), 24, newest=40) == 0


# -- the heap --------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 3 << 20)), max_size=40))
def test_heap_ranges_never_overlap_and_all_come_back(steps):
    heap = Heap()
    heap.grow(object())
    held: list[tuple[int, int]] = []
    for take, size in steps:
        if take or not held:
            start = heap.take(size)
            if start is not None:
                held.append((start, size))
        else:
            heap.give(*held.pop(0))
        spans = sorted((start, start + -(-size // (1 << 15)) * (1 << 15))
                       for start, size in held)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))
        assert all(start % (1 << 15) == 0 and end <= HEAP_CHUNK for start, end in spans)
    for start, size in held:
        heap.give(start, size)
    assert heap.free == [(0, HEAP_CHUNK)]


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=0, max_size=64), st.integers(0, 15))
def test_any_bytes_read_as_a_packet_or_refused_and_state_writes_keep_the_rest(data, state):
    """A command BO holding anything: read as a packet or refused with EINVAL (never a
    crash of the model); writing a state changes bits 3:0 only."""
    import tempfile
    with tempfile.TemporaryDirectory() as folder:
        memory = Memory(Path(folder))
        buffer = memory.create(uapi.BO_CMD, 64, Heap(), staging_rule(True))
        buffer.write(0, data)
        try:
            packet = read_packet(buffer)
        except DriverError as err:
            assert err.code == errno.EINVAL
        else:
            assert len(packet.payload) <= 60
        header = buffer.word(0)
        written = uapi.with_state(header, state)
        assert written & 0xF == state and written >> 4 == header >> 4
        assert uapi.header_fields(written)[1:] == uapi.header_fields(header)[1:]
        buffer.release()


def test_the_heap_hands_out_32k_aligned_ranges_and_takes_them_back():
    heap = Heap()
    assert heap.take(1) is None
    heap.grow(object())                       # one 64 MiB chunk
    first, second = heap.take(100), heap.take(40000)
    assert (first, second) == (0, 1 << 15)
    assert heap.take(HEAP_CHUNK) is None
    heap.give(first, 100)
    heap.give(second, 40000)
    assert heap.free == [(0, HEAP_CHUNK)] and heap.take(HEAP_CHUNK) == 0


# -- the command line and the labels --------------------------------------------------------

def test_a_driver_that_refuses_the_firmware_leaves_no_node_and_probe_names_the_fix(preload):
    # kernel.org mainline before f1eac46fe5f7 (7.0) refuses firmware 1.1.2.65 (protocol
    # 7.2) at probe: the device is never bound, the log says why (a Debian 6.19.6 log,
    # dri-devel 2026-03), and the probe reads it there
    done = cli(preload, "emulate", "--profile", "mainline,kernel:6.18", "--",
                sys.executable, "-m", "harness", "probe")
    assert "the driver refused it at probe: no /dev/accel node" in done.stderr
    assert "no NPU: this machine has no /dev/accel/accel* node" in done.stdout
    assert ("FAIL device node: no /dev/accel/accel* node: the driver refused the NPU "
            "firmware at probe (kernel log: Incompatible firmware protocol, protocol 7.2) -> "
            "boot a kernel with f1eac46fe5f7") in done.stdout


def test_emulate_exits_with_the_program_s_status_and_says_emulated(preload):
    done = cli(preload, "emulate", "--", "sh", "-c", "exit 7; echo unreachable")
    assert done.returncode == 7
    # the default: the #712 machine's stack (in-tree driver on Linux 7.0, firmware 1.1.2.65)
    assert done.stderr.startswith("emulate: one EMULATED NPU5 Strix Halo (mainline driver on "
                                  "Linux 7.0, firmware 1.1.2.65), profile mainline")
    # where a user meets it: a hang waits out the real timer (mainline's 60 s)
    assert "a hung job waits out the driver's 60 s timeout on the wall clock, as on " \
           "hardware (--clock-rate 100: 0.6 s)" in done.stderr
    helped = CliRunner().invoke(main, ["emulate", "--help"]).output
    assert "every hung job waits out the driver's real timeout" in " ".join(helped.split())
    assert exits.for_program(-15) == 128 + 15             # killed by SIGTERM, as a shell says
    missing = CliRunner().invoke(main, ["emulate", "--", "no-such-program-here"])
    assert missing.exit_code == 2 and "no-such-program-here: no such program" in missing.output


def test_the_banner_names_the_xrt_a_program_would_load_or_that_there_is_none(preload,
                                                                            tmp_path):
    from harness.probe.xrt import xrt_install
    # an install where XILINX_XRT points: the banner names it and its version
    install = tmp_path / "xrt"
    (install / "lib").mkdir(parents=True)
    (install / "lib" / "libxrt_coreutil.so.2").write_bytes(b"")
    (install / "version.json").write_text('{"BUILD_VERSION": "2.26.0"}')
    cache = preload.parent.parent.parent
    done = subprocess.run([sys.executable, "-m", "harness", "emulate", "--", "true"],
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, XDG_CACHE_HOME=str(cache),
                                   XILINX_XRT=str(install)))
    assert done.returncode == 0, done.stderr
    assert f"the driver and firmware are the harness's model and XRT is this machine's " \
           f"({install}, 2.26.0); not hardware evidence" in done.stderr
    # none: the banner once said "XRT is this machine's" all the same
    assert xrt_install(None, root=tmp_path / "bare") is None
    assert xrt_install(str(install)) == (str(install), "2.26.0")
    if xrt_install(None) is None:                       # this machine has none installed
        bare = subprocess.run([sys.executable, "-m", "harness", "emulate", "--", "true"],
                              capture_output=True, text=True, timeout=120,
                              env={k: v for k, v in dict(os.environ, XDG_CACHE_HOME=str(
                                  cache)).items() if k != "XILINX_XRT"})
        assert "but no XRT is installed here (XILINX_XRT is unset and /opt/xilinx/xrt " \
               "holds none)" in bare.stderr
        assert "XRT is this machine's" not in bare.stderr


def test_a_process_under_emulate_knows_it_and_the_probe_says_so(preload):
    done = cli(preload, "emulate", "--profile", "oot,hang-at:3", "--clock-rate", "5", "--",
                sys.executable, "-m", "harness", "probe", "--json")
    facts = json.loads(done.stdout)
    # the legacy tree's three checks alone, and the most idle contexts can make it skip
    assert "a hung job fails after the driver's 6 s timeout (36 s at most beside idle " \
           "connected contexts), 1.2 s on the wall clock" \
        in done.stderr
    handshake = facts["emulator"].pop("handshake")
    assert facts["emulator"] == {"profile": "oot,hang-at:3", "preload": preload.name,
                                 "xrt_libraries": [], "clock_rate": 5.0}
    # the model's answer to the library's handshake, read from the library in the probe
    assert (handshake["model"], handshake["profile"], handshake["clock_rate"]) == \
        ("harness.emulator.server", "oot,hang-at:3", 5.0)
    npu = facts["npu"]
    assert npu["generation"] == "NPU5 Strix Halo" and npu["bdf"] == BDF
    assert (npu["ioctl"]["driver_name"], npu["ioctl"]["firmware"]) == \
        ("amdxdna_accel_driver", "1.1.2.65")
    assert facts["driver"]["flavour"] == "oot"


def test_the_emulated_firmware_is_the_profile_s(preload):
    """The device answers the profile's firmware release (sysfs and GET_INFO), which the
    probe reads back with its protocol; a profile naming only a protocol is refused, since a
    device answers a version."""
    done = cli(preload, "emulate", "--profile", "staging,firmware:1.1.2.64", "--",
                sys.executable, "-m", "harness", "probe", "--json")
    facts = json.loads(done.stdout)
    assert facts["npu"]["ioctl"]["firmware"] == "1.1.2.64"
    assert facts["npu_firmware"]["protocol"] == "7.2"
    refused = CliRunner().invoke(main, ["emulate", "--profile", "firmware:protocol:6.17", "--",
                                        "true"])
    assert refused.exit_code == 2
    assert "give a release (firmware:1.1.2.65), not only its protocol" in refused.output


def test_the_variable_alone_is_not_an_emulation(monkeypatch):
    line = "7f00-7f01 r-xp 0 00:00 0 /cache/libxdna-emulator-0123456789abcdef.so\n"
    assert preload_mapped(line) == "libxdna-emulator-0123456789abcdef.so"
    monkeypatch.delenv("HARNESS_EMULATOR_DIR", raising=False)
    assert emulation(line) is None
    monkeypatch.setenv("HARNESS_EMULATOR_DIR", "/nowhere")
    answer = {"model": "harness.emulator.server", "profile": "mainline"}
    assert emulation("7f00-7f01 r-xp 0 00:00 0 /usr/lib/libc.so.6\n", answer) is None
    assert emulation(line, answer)["preload"] == "libxdna-emulator-0123456789abcdef.so"
    assert emulation(line) is None           # mapped, but no handshake answered in here


def test_sim_profiles_lists_the_emulated_driver_s_rules_with_their_sources():
    from harness.emulator.interface_rules import RULES
    flat = " ".join(CliRunner().invoke(main, ["sim", "profiles"]).output.split())
    assert "rules of the emulated driver" in flat
    for rule in RULES:
        assert f"{rule.text} [source: {rule.source}]" in flat


def test_the_emulated_machine_runs_the_profile_s_kernel(preload):
    """The kernel release a program reads (/proc/sys/kernel/osrelease, uname) is the one
    whose driver the profile plays: the probe read this machine's own, so `--backend sim`
    under emulate played it (mainline on the host's 6.18 refused the firmware that the
    emulated 7.0 took), and xrt-smi printed it as the amdxdna version beside a 7.0 driver."""
    done = cli(preload, "emulate", "--profile", "staging,kernel:6.17", "--", sys.executable,
               "-c", "import os; print(open('/proc/sys/kernel/osrelease').read().strip(), "
                     "os.uname().release)")
    assert done.stdout == "6.17.0 6.17.0\n", done.stderr
    played = cli(preload, "emulate", "--", sys.executable, "-m", "harness", "reproduce",
                 "--backend", "sim", "--trials", "1", "--no-control", "--no-isolate")
    assert "playing this machine's stack as probed: mainline,kernel:7.0.0," in played.stdout, \
        played.stdout + played.stderr
    assert played.returncode == 0, played.stdout + played.stderr


def test_emulate_warns_of_a_slow_token_it_cannot_play(preload):
    """No kernel name crosses the driver's interface (xdna-driver 856409ca src/shim
    hwctx.cpp xclbin_parser, kmq/hwctx.cpp: a context gets each CU's PDI bytes and
    function number), so `slow:` is not played under emulation: said, not ignored."""
    done = cli(preload, "emulate", "--profile", "staging,slow:layer:3000", "--",
               sys.executable, "-c", "pass")
    assert done.returncode == 0, done.stderr
    assert "emulate: warning: slow:layer:3000 is not played: no kernel name crosses the " \
        "driver's interface" in done.stderr
    plain = cli(preload, "emulate", "--profile", "staging", "--", sys.executable, "-c", "pass")
    assert "is not played" not in plain.stderr


def test_a_command_s_kernel_is_named_by_its_context_s_pdi(tmp_path, preload):
    """What the shim copies into a CU's PDI buffer is the xclbin's PDI image
    (xdna-driver 856409ca src/shim hwctx.cpp xclbin_parser::get_pdi): its bytes name the
    xclbin's stem and the kernel its CDO groups serve, a buffer larger than the image too;
    `emulate` warns of a slow: name none of the xclbins given has."""
    import hashlib

    from harness.emulator.kernels_by_pdi import KernelOfPdi, index_xclbins
    from harness.formats.xclbin import read_xclbin
    from harness.formats.xclbin_writer import flm_spec, synthesize
    path = tmp_path / "layer.xclbin"
    path.write_bytes(synthesize(flm_spec("Host/layer")))
    index = index_xclbins([tmp_path])
    (pdi,) = read_xclbin(str(path)).partition.pdis
    raw = path.read_bytes()
    layer = KernelOfPdi("layer", "MLIR_AIE")
    assert index.by_digest[pdi.image_sha256] == (layer,)
    image = next(raw[i:i + pdi.image_size] for i in range(len(raw))
                 if hashlib.sha256(raw[i:i + pdi.image_size]).hexdigest() == pdi.image_sha256)
    assert index.kernels_of(image + bytes(4096)) == (layer,)
    assert index.kernels_of(b"\x01" * len(image)) == ()
    # another xclbin with the same PDI image: the driver cannot tell them apart
    (tmp_path / "attn.xclbin").write_bytes(synthesize(flm_spec("Host/attn")))
    both = index_xclbins([tmp_path])
    assert set(both.kernels_of(image)) == {layer, KernelOfPdi("attn", "MLIR_AIE")}
    shared = cli(preload, "emulate", "--profile", "staging,slow:layer:500", "--xclbins",
                 str(tmp_path), "--", sys.executable, "-c", "pass")
    assert "slow:layer:500 is not played: its PDI image is the same as that of " \
        "attn/MLIR_AIE" in shared.stderr
    (tmp_path / "attn.xclbin").unlink()
    named = cli(preload, "emulate", "--profile", "staging,slow:attn:500", "--xclbins",
                str(path), "--", sys.executable, "-c", "pass")
    assert "slow:attn:500 is not played: no xclbin given (--xclbins) has a kernel or stem " \
        "'attn'" in named.stderr
    played = cli(preload, "emulate", "--profile", "staging,slow:layer:500", "--xclbins",
                 str(path), "--", sys.executable, "-c", "pass")
    assert "is not played" not in played.stderr


def test_an_npu_node_without_pyxrt_under_emulate_is_said_to_be_the_emulated_one(preload,
                                                                               tmp_path):
    """Under emulate without an XRT to load, the harness inside sees an NPU node and no
    pyxrt: that node is the emulator's (harness.probe.emulation: the library mapped and
    answering in this process), so it is never called this machine's NPU."""
    done = cli(preload, "emulate", "--", sys.executable, "-m", "harness", "reproduce",
               "--backend", "xrt", "--trials", "1", "--out", str(tmp_path / "r.yaml"))
    error = next(line for line in done.stderr.splitlines() if line.startswith("error:"))
    assert "is the EMULATED NPU of `runlist-harness emulate`, not this machine's" in error
    assert "this machine has an NPU" not in done.stderr
    assert not (tmp_path / "r.yaml").exists()
