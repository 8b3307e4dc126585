"""Who else holds the NPU or /dev/kfd (`harness.probe.holders`), read from a fabricated
/proc: found where a watched node exists, and /proc is not walked where none does."""

from __future__ import annotations

import os

from machines import Tree

from harness.probe import holders
from harness.probe.holders import device_users


def _holder(tree: Tree, pid: int, comm: str, *targets: str) -> None:
    tree.write(f"/proc/{pid}/comm", comm)
    fd = tree.root / "proc" / str(pid) / "fd"
    fd.mkdir(parents=True, exist_ok=True)
    for number, target in enumerate(targets, start=3):
        (fd / str(number)).symlink_to(target)


def test_a_process_holding_the_npu_is_named_and_excluded_pids_are_not(tmp_path):
    tree = Tree(tmp_path)
    tree.npu()
    _holder(tree, 4242, "ollama-rocm", "/dev/kfd", "/dev/null")
    _holder(tree, 5000, "flm", "/dev/accel/accel0")
    _holder(tree, 6000, "harness-worker", "/dev/accel/accel0")
    found = device_users(tree.sources(), exclude=[6000])
    assert found == {"uninspectable": 0, "users": [
        {"pid": 4242, "command": "ollama-rocm", "devices": ["/dev/kfd"]},
        {"pid": 5000, "command": "flm", "devices": ["/dev/accel/accel0"]}]}


def test_a_kfd_node_alone_is_watched(tmp_path):
    tree = Tree(tmp_path)
    tree.write("/dev/kfd", "")
    _holder(tree, 4242, "ollama-rocm", "/dev/kfd")
    assert device_users(tree.sources())["users"][0]["pid"] == 4242


def test_with_no_watched_node_proc_is_not_walked(tmp_path, monkeypatch):
    tree = Tree(tmp_path)
    _holder(tree, 4242, "stale", "/dev/accel/accel0")   # a link to a node that is not there
    listed: list[str] = []
    real_listdir = os.listdir
    monkeypatch.setattr(holders.os, "listdir",
                        lambda path: listed.append(str(path)) or real_listdir(path))
    assert device_users(tree.sources()) == {"users": [], "uninspectable": 0}
    assert listed == []
