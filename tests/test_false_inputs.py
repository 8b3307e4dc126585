"""Inputs that are not what they claim: a data file larger than the buffer it fills, a
fabricated tree whose links lead out of it, a device or FIFO given as a file, another
program's control characters, a file that is no report, a bundle over its own report, a
disk that fills while a bundle is written, and what a killed bundle left. Each is one line
naming the file and what it is (exit 2), or refused before anything is lost."""

from __future__ import annotations

import errno
import json
import os
import resource
import stat
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from captures import CaptureWriter, decode_capture
from click.testing import CliRunner
from fakeflm import Behaviour, FakeFlm
from machines import Tree
from simkit import simulated_report

from harness.app.cli import main
from harness.formats.xclbin_writer import flm_spec, synthesize

ESC = "\x1b]0;owned\x07\x1b[2J"


def invoke(*args: str, **kwargs):
    return CliRunner().invoke(main, list(args), **kwargs)


def harness(*args: str, timeout: float = 60, **env: str) -> subprocess.CompletedProcess:
    """The command line in a process of its own, with memory and time bounded: what these
    inputs did before was fill memory (/dev/zero) or wait for ever (a FIFO)."""
    def bounded() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True,
                          text=True, timeout=timeout, preexec_fn=bounded,
                          env=dict(os.environ, **env))


@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "named.xclbin"
    os.mkfifo(path)
    return path


# -- a data file larger than its buffer ----------------------------------------------------------

def test_a_capture_s_data_file_past_its_buffer_is_refused_naming_both(tmp_path):
    """A frame's data file larger than the buffer it restores was read whole (6 GB for a
    4 KiB buffer) and ended as a device failure, exit 1."""
    writer = CaptureWriter(tmp_path / "capture")
    ctx = writer.hwctx("layer")
    kernel = writer.kernel(ctx)
    bos = [writer.buffer() for _ in range(5)]
    writer.frame([writer.run(kernel, bos) for _ in range(4)], dump={bos[1]: b"\x02" * 9000})
    folder = writer.save()
    result = invoke("run", str(folder), "--trials", "1", "--no-isolate",
                    "--out", str(tmp_path / "r.yaml"))
    assert result.exit_code == 2, result.output
    assert "capture_2.bin is 9000 bytes, more than the 4096 bytes of buffer bo_1" in \
        result.output
    assert result.output.count("\n") == 1 and not (tmp_path / "r.yaml").exists()


def test_a_recipe_s_init_file_past_its_buffer_is_refused_naming_both(validate_artefacts,
                                                                     tmp_path):
    (tmp_path / "arg0.bin").write_bytes(b"\x07" * 5000)
    profile = tmp_path / "p.json"
    profile.write_text(json.dumps({"version": "1.0", "bindings": [
        {"name": "arg0", "size": 20, "init": {"file": "arg0.bin"}}],
        "execution": {"iterations": 1}}))
    result = invoke("run", str(validate_artefacts / "recipe_latency_strx.json"),
                    "--recipe-profile", str(profile), "--trials", "1", "--no-isolate",
                    "--out", str(tmp_path / "r.yaml"))
    assert result.exit_code == 2, result.output
    assert "arg0.bin is 5000 bytes, more than the 20 bytes of buffer arg0" in result.output
    assert "bindings[0].init.file" in result.output


# -- what is no file -----------------------------------------------------------------------------

@pytest.mark.parametrize("command", [["xclbin", "inspect"], ["elf", "inspect"]])
@pytest.mark.parametrize("what", ["/dev/zero", "fifo"])
def test_a_device_or_fifo_given_as_a_file_is_exit_2_at_once(command, what, fifo):
    """/dev/zero was read whole (MemoryError, exit 4, or the memory killer) and a FIFO
    waited for ever."""
    path = "/dev/zero" if what == "/dev/zero" else str(fifo)
    done = harness(*command, path)
    assert done.returncode == 2, done.stderr
    kind = "a character device" if what == "/dev/zero" else "a FIFO (named pipe)"
    assert f"{path} is {kind}, not a file" in done.stderr


def test_a_fifo_in_a_pack_to_import_is_exit_2_at_once(tmp_path):
    pack = tmp_path / "Pack-NPU2"
    pack.mkdir()
    (pack / "attn.xclbin").write_bytes(synthesize(flm_spec("Pack-NPU2/attn")))
    os.mkfifo(pack / "layer.xclbin")
    done = harness("xclbins", "import", str(pack), "--dest", str(tmp_path / "dest"))
    assert done.returncode == 2, done.stderr
    assert "layer.xclbin is a FIFO (named pipe), not a file" in done.stderr


def test_a_probed_file_that_is_a_fifo_is_exit_2_at_once(tmp_path):
    tree = Tree(tmp_path / "root")
    tree.npu()
    tree.identity()
    target = tree.root / "etc" / "os-release"
    target.unlink(missing_ok=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(target)
    done = harness("probe", "--yaml", HARNESS_ROOT=str(tree.root))
    assert done.returncode == 2, done.stderr
    assert "os-release is a FIFO (named pipe), not a file" in done.stderr


@pytest.mark.parametrize("how", ["HARNESS_ROOT", "--root"])
def test_a_fabricated_tree_s_absolute_links_resolve_inside_it(tmp_path, how):
    """`/proc/sys/kernel/hostname -> /abs/outside` in a tree read the machine's file (as
    `/etc/shadow` was read and bundled): it is now looked up inside the tree."""
    outside = tmp_path / "outside-secret"
    outside.write_text("OUTSIDE-SECRET-7731\n")
    tree = Tree(tmp_path / "root")
    tree.npu()
    tree.identity()
    link = tree.root / "proc" / "sys" / "kernel" / "hostname"
    link.unlink(missing_ok=True)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)                                # absolute, out of the tree
    (tree.root / outside.relative_to("/")).parent.mkdir(parents=True, exist_ok=True)
    (tree.root / outside.relative_to("/")).write_text("tree-host\n")    # the tree's own
    args = ["probe", "--yaml"] + (["--root", str(tree.root)] if how == "--root" else [])
    env = {"HARNESS_ROOT": str(tree.root)} if how == "HARNESS_ROOT" else {}
    done = harness(*args, **env)
    assert done.returncode == 0, done.stderr
    assert "OUTSIDE-SECRET" not in done.stdout
    assert "tree-host" in done.stdout


# -- another program's control characters ----------------------------------------------------

def test_a_server_s_control_characters_reach_no_terminal(tmp_path):
    with FakeFlm(Behaviour(chat="error", error=f"boom {ESC} done")) as server:
        done = invoke("serve-probe", "--url", server.url, "--model", "minicpm5:2b",
                      "--requests", "1", "--no-made-up-tag", "--out", str(tmp_path / "s.yaml"))
    assert done.exit_code == 1, done.output
    assert "\x1b" not in done.output and "\x07" not in done.output
    assert "boom \\x1b]0;owned\\x07" in done.output


def test_a_capture_s_names_cfg_and_ini_reach_no_terminal(tmp_path):
    writer = CaptureWriter(tmp_path / "capture")
    ctx = writer.hwctx("layer", cfg={f"qos{ESC}": f"value{ESC}"})
    kernel = writer.kernel(ctx, instance=f"MLIR{ESC}")
    bos = [writer.buffer() for _ in range(5)]
    writer.frame([writer.run(kernel, bos) for _ in range(3)])
    document = writer.document()
    document["ini"] = {f"Runtime.{ESC}": f"4{ESC}"}
    folder = writer.save(document)
    done = invoke("capture", "show", str(folder))
    assert done.exit_code == 0, done.output
    assert "\x1b" not in done.output and "\x07" not in done.output
    assert "\\x1b]0;owned" in done.output


def test_capture_show_redacts_what_a_capture_s_paths_give_away(tmp_path, monkeypatch):
    monkeypatch.setenv("USER", "zelda9")
    folder = decode_capture(tmp_path / "home" / "zelda9" / "capture", depth=4)
    document = json.loads((folder / "replay.json").read_text())
    document["ini"] = {"Debug.trace_path": "/home/zelda9/traces on zelda9-box"}
    (folder / "replay.json").write_text(json.dumps(document))
    for form in ([], ["--json"]):
        done = invoke("capture", "show", str(folder), *form)
        assert done.exit_code == 0, done.output
        assert "zelda9" not in done.output and "<user-" in done.output
    plain = invoke("capture", "show", str(folder), "--no-redact")
    assert "/home/zelda9/traces" in plain.output


# -- what is no report ---------------------------------------------------------------------------

@pytest.mark.parametrize("content, kind", [
    ("", "an empty file"), ("- a\n- b\n", "a YAML list of 2 item(s)"),
    ("3\n", "a single YAML int"),
    ('{"version": "1.0", "resources": {}, "execution": {}}\n', "an XRT run recipe"),
])
@pytest.mark.parametrize("command", ["render", "bundle"])
@pytest.mark.parametrize("check", ["--check", "--no-check"])
def test_a_file_that_is_no_report_is_exit_2_saying_what_it_is(tmp_path, content, kind,
                                                              command, check):
    """--no-check crashed (exit 4) on these, and the checked form suggested --no-check."""
    path = tmp_path / "x.yaml"
    path.write_text(content)
    done = invoke("report", command, check, str(path))
    assert done.exit_code == 2, done.output
    assert f"{path} is not a report: it is {kind}" in done.output
    assert "--no-check renders it anyway" not in done.output


def test_a_case_file_given_as_a_report_is_named_a_case_file():
    case = Path(__file__).parent.parent / "cases" / "minicpm5-2b-decode.yaml"
    done = invoke("report", "render", "--no-check", str(case))
    assert done.exit_code == 2 and "it is a case file" in done.output


# -- a bundle ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    return simulated_report(tmp_path_factory.mktemp("bundled"))


def test_a_bundle_never_replaces_its_own_report(report, tmp_path):
    copy = tmp_path / "r.yaml"
    copy.write_bytes(report.read_bytes())
    for out in (str(copy), str(tmp_path / "." / "r.yaml")):
        done = invoke("report", "bundle", str(copy), "--out", out, "--force")
        assert done.exit_code == 2, done.output
        assert "is the report itself" in done.output
    assert copy.read_bytes() == report.read_bytes()


def test_a_full_disk_during_a_bundle_names_the_file_and_the_space(report, tmp_path,
                                                                  monkeypatch):
    copy = tmp_path / "r.yaml"
    copy.write_bytes(report.read_bytes())

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(tarfile.TarFile, "addfile", full)
    done = invoke("report", "bundle", str(copy))
    assert done.exit_code == 3, done.output
    line = done.output.strip()
    assert f"no space to write the bundle {tmp_path}/r.bundle.tar.gz" in line
    assert "MiB before compression" in line and "MiB free there" in line
    assert "permissions" not in line and "\n" not in line
    assert not list(tmp_path.glob("*.tar.gz")) and not list(tmp_path.glob(".r.bundle*"))


def test_the_scratch_folder_a_killed_bundle_left_is_removed_by_the_next(report, tmp_path,
                                                                        monkeypatch):
    """A killed `report bundle` left its harness-bundle-* folder (a redacted copy of the
    report) in the temporary folder for good."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    left = tmp_path / "harness-bundle-x1y2z3"
    left.mkdir(mode=0o700)
    (left / "report.yaml").write_text("a redacted copy\n")
    (left / "owners").write_text(f"{dead}\n")
    alive = tmp_path / "harness-bundle-alive"
    alive.mkdir(mode=0o700)
    (alive / "owners").write_text(f"{os.getpid()}\n")
    done = invoke("report", "bundle", str(report), "--out", str(tmp_path / "b.tar.gz"))
    assert done.exit_code == 0, done.output
    assert not left.exists() and alive.exists()
    assert [p.name for p in tmp_path.glob("harness-bundle-*")] == ["harness-bundle-alive"]
    assert stat.S_IMODE(alive.stat().st_mode) == 0o700
