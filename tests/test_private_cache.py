"""What the harness keeps and later loads (the emulator's compiled library, stand-in
xclbins and ELFs, validate artefacts, fault logs) lives only in a folder the running user
owns with mode 0700, never in a folder another local user could have planted a file in.

Another user is fabricated: running as root, a folder or file is given to `nobody` with
os.chown; elsewhere these tests skip, saying why.
"""

from __future__ import annotations

import datetime as dt
import os
import pwd
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from harness.app import exits
from harness.emulator import build
from harness.formats import cache
from harness.formats.cache import cache_dir
from harness.model.errors import EnvironmentNotReady

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="another user's files are fabricated "
                             "with os.chown, which only root may do")


def other_uid() -> int:
    try:
        return pwd.getpwnam("nobody").pw_uid
    except KeyError:
        return 65534


@pytest.fixture
def shared_tmp(tmp_path, monkeypatch) -> Path:
    """The system's temporary folder as every user shares it (root's, mode 1777), and a
    home whose cache cannot be made (as with `sudo -E` and an unwritable ~/.cache)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    tmp.chmod(0o1777)
    monkeypatch.setattr("tempfile.tempdir", str(tmp))
    blocker = tmp_path / "home-file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker / "cache"))      # under a file
    return tmp


def plant(path: Path, below: Path, data: bytes = b"planted") -> Path:
    """`path` written by another user, and the folders on the way to it from `below`
    (not included) theirs and open to all."""
    uid = other_uid()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    folder = path.parent
    while folder != below:
        assert below in folder.parents
        folder.chmod(0o777)
        os.chown(folder, uid, uid)
        folder = folder.parent
    os.chown(path, uid, uid)
    return path


def no_compiler() -> list[str]:
    raise EnvironmentNotReady("no compiler in this test")


@as_root
def test_a_library_planted_in_the_shared_temporary_folder_is_never_loaded(shared_tmp,
                                                                         monkeypatch):
    """The old fallback: xdna-runlist-harness/emulator/ under the system's temporary
    folder, where anyone may create it. A library of the right name planted there by
    another user was loaded by whoever ran `emulate` next."""
    name = build.library_name(build.source())
    planted = plant(shared_tmp / "xdna-runlist-harness" / "emulator" / name, shared_tmp)
    monkeypatch.setattr(build, "compiler", no_compiler)
    with pytest.raises(EnvironmentNotReady):          # no compiler: nothing found to load
        build.library()
    mine = cache_dir("emulator")
    assert mine == shared_tmp / f"xdna-runlist-harness-{os.geteuid()}" / "emulator"
    assert planted.read_bytes() == b"planted"
    for folder in (mine, mine.parent):
        st = folder.stat()
        assert st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) == 0o700


@as_root
def test_root_under_sudo_e_builds_its_own_instead_of_the_user_s(tmp_path, monkeypatch):
    """Under `sudo -E` XDG_CACHE_HOME (or HOME) is the user's: root loaded the user's own
    cached library. A cache folder owned by someone else is not root's: root's own is in
    the temporary folder, made afresh."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    tmp.chmod(0o1777)
    monkeypatch.setattr("tempfile.tempdir", str(tmp))
    home = tmp_path / "home" / "user"
    user_cache = home / ".cache"
    name = build.library_name(build.source())
    library = plant(home / ".cache" / "xdna-runlist-harness" / "emulator" / name, home.parent)
    for folder in (library.parent, library.parent.parent, user_cache, home):
        folder.chmod(0o755)
    monkeypatch.setenv("XDG_CACHE_HOME", str(user_cache))
    monkeypatch.setattr(build, "compiler", no_compiler)
    with pytest.raises(EnvironmentNotReady):
        build.library()
    assert cache_dir("emulator") == tmp / "xdna-runlist-harness-0" / "emulator"
    assert not any(p.stat().st_uid == 0 for p in home.rglob("*"))   # nothing left there


@as_root
def test_a_file_in_one_s_own_cache_that_is_not_one_s_own_is_not_trusted(tmp_path):
    folder = tmp_path / "own"
    folder.mkdir(mode=0o700)
    mine = folder / "mine.so"
    mine.write_bytes(b"x")
    theirs = plant(folder / "theirs.so", folder)
    writable = folder / "writable.so"
    writable.write_bytes(b"x")
    writable.chmod(0o666)
    link = folder / "link.so"
    link.symlink_to(mine)
    assert cache.trusted_file(mine)
    assert not any(cache.trusted_file(p) for p in (theirs, writable, link))


@as_root
def test_a_private_cache_squatted_by_another_user_is_refused_in_one_line(shared_tmp):
    squat = shared_tmp / f"xdna-runlist-harness-{os.geteuid()}"
    squat.mkdir(mode=0o700)
    os.chown(squat, other_uid(), other_uid())
    with pytest.raises(EnvironmentNotReady) as raised:
        cache_dir("faults")
    assert f"{squat}: {squat} belongs to uid {other_uid()}" in str(raised.value)
    assert "Set XDG_CACHE_HOME to a folder of your own" in str(raised.value)


def test_an_own_cache_folder_left_open_by_an_older_version_is_closed(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    old = tmp_path / "cache" / "xdna-runlist-harness" / "stand-ins"
    old.mkdir(parents=True)
    old.chmod(0o777)
    assert cache_dir("stand-ins") == old
    assert stat.S_IMODE(old.stat().st_mode) == stat.S_IMODE(old.parent.stat().st_mode) == 0o700


# -- fault logs -----------------------------------------------------------------------------

def _fault() -> ValueError:
    try:
        raise ValueError("broke reading /home/zelda9/models/x.yaml on zelda9-box")
    except ValueError as err:
        return err


@as_root
def test_a_fault_log_never_follows_a_link_planted_in_the_shared_folder(shared_tmp,
                                                                       tmp_path):
    """Fault logs were created following links in the shared fallback: another user's
    link turned a crash into an overwrite of the victim's file. The log is now created anew
    in the user's own folder, without following links."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    faults = shared_tmp / "xdna-runlist-harness" / "faults"
    now = dt.datetime.now(dt.timezone.utc)
    for ahead in range(4):
        stamp = (now + dt.timedelta(seconds=ahead)).strftime("%Y%m%dT%H%M%SZ")
        link = faults / f"fault-{stamp}-{os.getpid()}.log"
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(victim)
    plant(faults / ".keep", shared_tmp)
    where = Path(exits.fault_log(_fault()))
    assert victim.read_text() == "precious\n"
    assert where.parent == shared_tmp / f"xdna-runlist-harness-{os.geteuid()}" / "faults"
    st = where.lstat()
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600


def test_a_fault_log_is_private_and_redacted_like_a_report(tmp_path, monkeypatch):
    """The error line asks the user to send the log: it holds no user name, home folder or
    host; and only its user can read it."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("USER", "zelda9")
    monkeypatch.setattr(sys, "argv", ["runlist-harness", "run", "--out",
                                      "/home/zelda9/r.yaml"])
    where = Path(exits.fault_log(_fault()))
    text = where.read_text()
    assert "ValueError: broke reading /home/<user-" in text
    assert "zelda9" not in text
    assert stat.S_IMODE(where.stat().st_mode) == 0o600
    assert stat.S_IMODE(where.parent.stat().st_mode) == 0o700


# -- the compiler ---------------------------------------------------------------------------

def test_cc_is_split_into_words_as_make_does_and_the_build_says_which(tmp_path, monkeypatch):
    """CC="ccache gcc" was refused as "not on PATH"; it is a program and its arguments."""
    wrapper = tmp_path / "bin" / "wrapcc"
    wrapper.parent.mkdir()
    wrapper.write_text('#!/bin/sh\necho "$@" > "$(dirname "$0")/args"\nexec "$@"\n')
    wrapper.chmod(0o755)
    if subprocess.run(["sh", "-c", "command -v cc"], capture_output=True).returncode:
        pytest.skip("no C compiler: the emulator's library cannot be built")
    monkeypatch.setenv("PATH", f"{wrapper.parent}:{os.environ['PATH']}")
    monkeypatch.setenv("CC", "wrapcc cc -DWRAPPED=1")
    said: list[str] = []
    built = build.library(tmp_path / "cache", say=said.append)
    assert built.is_file() and (wrapper.parent / "args").read_text().startswith(
        "cc -DWRAPPED=1 -O2")
    assert said == [f"compiled the emulator's preload library with {wrapper} cc "
                    f"-DWRAPPED=1 into {built}"]
    assert build.compiler() == [str(wrapper), "cc", "-DWRAPPED=1"]
    monkeypatch.setenv("CC", "'unbalanced")
    with pytest.raises(EnvironmentNotReady, match="does not split into words"):
        build.compiler()
