"""An emulated run is emulated, or says it is not; the emulated device answers every ioctl
as the driver would and never dies; a program waiting on it can be interrupted and is
never left hanging; what a killed run leaves is cleaned by the next.

The driver's answers pinned here come from amd/xdna-driver at 856409ca (the commit the
shim is built from), drivers/accel/amdxdna: `amdxdna_cmd_submit` takes a reference on the
command BO and the argument BOs (`amdxdna_gem_get_obj`, `amdxdna_arg_bos_lookup`) that
`amdxdna_sched_job_cleanup` drops when the job ends, so GEM_CLOSE meanwhile drops only the
handle (DRM core: `drm_gem_handle_delete`); `amdxdna_cmd_set_error` looks a chain's
sub-command 0 up by its handle when the job ends. `amdxdna_drm_create_bo_ioctl`: nonzero
flags EINVAL; a DEV BO whose PAGE_ALIGN'd size is 0 (a size within a page of 2^64) or past
the heap's maximum EINVAL (`amdxdna_drm_create_dev_bo`, `amdxdna_gem_heap_alloc`); a SHARE
or CMD BO is `drm_gem_shmem_create`, where that size is 0 pages and gets no mmap offset
(`drm_mm_insert_node_in_range`: ENOSPC), a size negative as a file size is refused by
`shmem_file_setup` (EINVAL), and more pages than the device's offset space (Linux
include/drm/drm_vma_manager.h DRM_FILE_PAGE_OFFSET_SIZE) is ENOSPC.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner
from emulation_kit import CLIENT, cache_of, cli, emulate

from harness.app.cli import main
from harness.emulator import launch
from harness.sim.profiles import parse_profile

TIMEOUT = 8                   # ERT_CMD_STATE_TIMEOUT


# -- the device answers as the driver would, and lives ----------------------------------------

def test_a_buffer_freed_while_its_job_runs_is_kept_by_the_job_and_the_device_answers_on(
        preload):
    """The chain hangs (TDR at 2 s, 0.1 s at 20x); its command BO, sub-command 0 and an
    argument BO are closed while it runs: the closes succeed, the job ends TIMEOUT into
    the command BO the program still maps, sub-command 0 (no handle left) is not written,
    and the device answers the next call (it died with a traceback before)."""
    (seen,) = emulate(preload, "staging,hang-at:0", [("freed_while_running", {})], rate=20)
    assert seen == {"closed": [None, None, None], "wait": 0, "state": TIMEOUT,
                    "sub0_untouched": True, "after": True}


def test_create_bo_of_impossible_sizes_gets_the_driver_s_errno_and_breaks_nothing(preload):
    """2^64-1 bytes used to leave the device's address counter past 64 bits: every later
    GET_BO_INFO failed EIO. Now each size gets the driver's answer and later buffers are
    whole. 2^50 bytes is more pages than the DRM offset space has (about 1 TiB); 64 GiB
    fits it, and the real driver would take it (shmem is sparse), but the emulator's
    buffers map within 4 GiB, so it answers ENOMEM and counts it unanswered (`emulate`
    lists it)."""
    (seen,) = emulate(preload, "mainline", [("huge_bo", {})])
    assert seen == {"share_max": "ENOSPC", "cmd_max": "ENOSPC", "dev_max": "EINVAL",
                    "share_zero": "ENOSPC", "share_2_63": "EINVAL", "share_2_50": "ENOSPC",
                    "share_64g": "ENOMEM",
                    "flags": "EINVAL", "later": [[True, True], [True, True]]}


def test_a_duplicated_device_fd_is_the_same_device_file(preload):
    """dup, fcntl(F_DUPFD_CLOEXEC) (Python's os.dup) and dup2 of the device node's fd: the
    copies reach the same device file (ENOTTY on the copy before)."""
    (seen,) = emulate(preload, "mainline", [("duplicated", {})])
    assert seen == {"offset": True, "through_dup2": "same", "still": True}


def test_a_child_forked_while_threads_use_the_device_uses_it_too(preload):
    """fork while three threads are in ioctls: each child's own open and CREATE_BO work
    (the child starts with the pool's lock released and none of its parent's
    connections)."""
    (seen,) = emulate(preload, "mainline", [("forked", {})])
    assert seen == {"children": [0] * 20}


# -- waits that end ---------------------------------------------------------------------------

def _waiting_client(emu: launch.Emulation) -> subprocess.Popen:
    client = subprocess.Popen([sys.executable, str(CLIENT), json.dumps([["wait_forever", {}]])],
                              env=emu.environment(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    assert client.stderr.readline() == "waiting\n"
    time.sleep(0.3)                                  # in the ioctl by now
    return client


def _result(client: subprocess.Popen) -> dict:
    out, err = client.communicate(timeout=20)
    assert client.returncode == 0, err
    return json.loads(out)[0]


def test_ctrl_c_reaches_a_program_waiting_in_an_emulated_ioctl(preload):
    """A wait for ever on a syncobj nothing signals: SIGINT interrupts it (EINTR, as the
    driver's interruptible wait gives to a handler without SA_RESTART), so Python raises
    KeyboardInterrupt; the library used to retry for ever."""
    emu = launch.start(parse_profile("mainline"), preload=preload)
    try:
        client = _waiting_client(emu)
        client.send_signal(signal.SIGINT)
        seen = _result(client)
    finally:
        emu.stop()
    assert seen["interrupted"] is True and seen["later"] is None


def test_a_stopped_model_fails_a_wait_with_etime_instead_of_hanging_it(preload, monkeypatch):
    """The model stopped (SIGSTOP): the waiting ioctl asks whether it still answers, gets
    nothing for HARNESS_EMULATOR_SILENCE_MS, and ends ETIME as a timed-out wait does."""
    monkeypatch.setenv("HARNESS_EMULATOR_SILENCE_MS", "300")
    emu = launch.start(parse_profile("mainline"), preload=preload)
    try:
        client = _waiting_client(emu)
        os.kill(emu.model.pid, signal.SIGSTOP)
        try:
            out, err = client.communicate(timeout=20)
        finally:
            os.kill(emu.model.pid, signal.SIGCONT)
    finally:
        emu.stop()
    seen = json.loads(out)[0]
    assert seen["wait"] == -62 and seen["seconds"] < 10, err          # -ETIME


def _model_of(process: psutil.Process) -> psutil.Process:
    for _ in range(200):
        for child in process.children():
            if "harness.emulator.server" in " ".join(child.cmdline()):
                return child
        time.sleep(0.05)
    raise AssertionError("no model process")


def test_a_model_that_dies_fails_the_program_s_calls_at_once_and_emulate_says_so(preload):
    """SIGKILL to the model while the program waits: the wait fails at once (EIO), later
    calls fail too, and `emulate` says the model ended and exits 4 (it used to say
    nothing and exit with the program's 0)."""
    env = dict(os.environ, XDG_CACHE_HOME=str(cache_of(preload)))
    run = subprocess.Popen([sys.executable, "-m", "harness", "emulate", "--", sys.executable,
                            str(CLIENT), json.dumps([["wait_forever", {}]])], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = ""
        while line != "waiting\n":
            line = run.stderr.readline()
            assert line, "the client never waited"
        time.sleep(0.3)
        _model_of(psutil.Process(run.pid)).kill()
        out, err = run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
    seen = json.loads(out)[0]
    assert seen["wait"] == -5 and seen["seconds"] < 5 and seen["later"] in ("EIO", "ENODEV")
    assert run.returncode == 4
    assert "the emulated NPU's model process ended while" in err
    assert "killed by SIGKILL" in err


# -- emulated, or not run ---------------------------------------------------------------------

def test_a_cache_path_ld_preload_cannot_carry_still_emulates(preload, tmp_path):
    """LD_PRELOAD splits at spaces and colons: a library in `cache dir:x` was never loaded
    and the program ran on whatever device is there, labelled EMULATED, exit 0. The library
    now runs from the run folder, and the program's probe sees the handshake."""
    cache = tmp_path / "my cache:x"
    folder = cache / "xdna-runlist-harness" / "emulator"
    folder.mkdir(parents=True)
    shutil.copy2(preload, folder / preload.name)
    done = subprocess.run([sys.executable, "-m", "harness", "emulate", "--", sys.executable,
                           "-m", "harness", "probe", "--json"], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, XDG_CACHE_HOME=str(cache)))
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout)
    assert facts["emulator"]["handshake"]["model"] == "harness.emulator.server"
    assert facts["npu"]["generation"] == "NPU5 Strix Halo"


def test_a_run_folder_past_the_library_s_limit_is_refused_before_the_program_runs(
        preload, tmp_path, monkeypatch):
    """The library takes a run folder of at most 64 characters; a longer one left it
    loaded but inert, and `emulate` said EMULATED and exited 0. Refused now, exit 3, the
    program never started."""
    deep = tmp_path / ("t" * 70)
    deep.mkdir()
    monkeypatch.setattr(launch, "SHM", tmp_path / "no-shm")
    monkeypatch.setattr("tempfile.tempdir", str(deep))
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_of(preload)))
    marker = tmp_path / "ran"
    result = CliRunner().invoke(main, ["emulate", "--", "touch", str(marker)])
    assert result.exit_code == 3, result.output
    assert "past the 64 the emulator's library takes; set TMPDIR" in result.output
    assert not marker.exists() and list(deep.iterdir()) == []


@pytest.fixture(scope="module")
def static_program(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("static")
    (folder / "p.c").write_text('#include <stdio.h>\nint main(void){puts("ran");return 0;}\n')
    done = subprocess.run(["cc", "-static", "-o", str(folder / "p"), str(folder / "p.c")],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"no static C library here: {done.stderr.strip()[:200]}")
    return folder / "p"


def test_a_program_that_never_loaded_the_library_is_said_not_emulated(preload,
                                                                      static_program):
    """A statically linked program ignores LD_PRELOAD: it ran on this machine as it is,
    and `emulate` said EMULATED and exited 0. It now says NOT EMULATED and exits 3."""
    done = cli(preload, "emulate", "--", str(static_program))
    assert done.stdout == "ran\n"
    assert done.returncode == 3
    assert "emulate: NOT EMULATED:" in done.stderr


@pytest.mark.parametrize("long", [False, True])
def test_a_process_whose_library_cannot_reach_its_model_does_not_run(preload, tmp_path, long):
    """The library loaded in a process whose run folder has no model (the emulation ended,
    or was never started), or names a folder too long for it: the process ends before its
    own code runs, saying why (with a long folder it used to run, the library inert)."""
    folder = Path(tempfile.mkdtemp(prefix="emu-", dir=tmp_path if long else "/tmp"))
    try:
        (folder / "redirects").write_text("/dev/accel\n")
        done = subprocess.run([sys.executable, "-c", "print('ran')"], capture_output=True,
                              text=True, env=dict(os.environ, LD_PRELOAD=str(preload),
                                                  HARNESS_EMULATOR_DIR=str(folder)))
    finally:
        shutil.rmtree(folder)
    assert done.returncode == 69 and done.stdout == ""
    why = "its run folder's path is not absolute or longer than 64 characters" if long else \
        "its model process is not there"
    assert f"cannot reach the emulated NPU ({why})" in done.stderr


# -- what a killed run leaves -----------------------------------------------------------------

def test_the_run_folder_of_a_killed_emulate_is_removed_by_the_next(preload, tmp_path):
    """kill -9 of `emulate` left its run folder (the device's buffers) in /dev/shm for good;
    the next `emulate` removes it once the processes using it are gone."""
    env = dict(os.environ, XDG_CACHE_HOME=str(cache_of(preload)), TMPDIR=str(tmp_path))
    run = subprocess.Popen([sys.executable, "-m", "harness", "emulate", "--", "sleep", "30"],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    parents = [Path("/dev/shm"), tmp_path]
    left = None
    # a bound on the wait, not a measure: the run's start under a loaded machine's
    # parallel tests takes seconds
    until = time.monotonic() + 120
    while time.monotonic() < until and run.poll() is None:
        for parent in parents:
            for folder in parent.glob("xdna-emu-*"):
                owners = folder / "owners"
                if owners.is_file() and str(run.pid) in owners.read_text().split() and \
                        len(owners.read_text().split()) == 3:
                    left = folder
        if left is not None:
            break
        time.sleep(0.05)
    assert left is not None
    pids = [int(p) for p in (left / "owners").read_text().split()]
    run.kill()
    run.wait()
    for pid in pids[1:]:
        try:
            os.kill(pid, signal.SIGKILL)         # the program; the model follows its parent
        except ProcessLookupError:
            pass
    for _ in range(200):
        if not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"
                   for pid in pids):
            break
        time.sleep(0.05)
    assert left.exists()
    done = subprocess.run([sys.executable, "-m", "harness", "emulate", "--", "true"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not left.exists()
