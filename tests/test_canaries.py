"""The canary suite: a report and a machine full of private values (a kernel log, the
environment, paths, the host name, the command line, a serve-probe URL), and every
output meant to be attached or pasted (each file of the bundle, the render, the YAML,
`probe`'s lines and Markdown) holding none of them, run as the user, under sudo
(`SUDO_USER`), and rendered on another machine that knows none of the names. Control
characters from other programs reach neither the render nor a terminal."""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakeflm import Behaviour, FakeFlm
from machines import Tree

from harness.app.cli import main
from harness.formats.yamlio import dump_yaml, load_yaml_text

USER = "zelda9"
HOST = "zelda9-box"
DOMAIN = "lab.acme-widgets.com"
FQDN = f"{HOST}.{DOMAIN}"
MACHINE_ID = "5eed1e55c0ffee00d00dfeed12345678"
SERIAL = "PF4X7K2Q"                  # in free text: "Serial Number: PF4X7K2Q"
KEYED_SERIAL = "SNCANARY4455"        # under a key naming a serial
DISK_UUID = "3f1c2b9a-7e4d-4a21-9c0b-5d6e7f801234"
MAC = "3c:7c:3f:1a:2b:4d"
IPV6 = "2001:db8:85a3::8a2e:370:7334"
NEAR_WORDS = {"kernel": "10.20.30.40", "xrt": "192.168.50.7", "version": "172.16.9.9",
              "release": "100.64.12.34"}
SECRET = "hunter2-PASSWORD"
TOKEN = "tok-CANARY-8812"
ESC = "\x1b]0;owned\x07\x1b[2J"

CANARIES = [USER, HOST, "acme-widgets", MACHINE_ID, SERIAL, KEYED_SERIAL, DISK_UUID, MAC,
            IPV6, *NEAR_WORDS.values(), SECRET, TOKEN]


def survivors(text: str) -> list[str]:
    low = text.lower()
    return [c for c in CANARIES if c.lower() in low]


def invoke(*args: str, **kwargs):
    return CliRunner().invoke(main, list(args), **kwargs)


# -- the machines the commands run on -----------------------------------------------------

MODES = ["as-the-user", "under-sudo", "elsewhere"]


@pytest.fixture(params=MODES)
def mode(request, monkeypatch) -> str:
    """Who runs the command: the user; root under sudo by the user; or a maintainer's
    machine that knows none of the names (the report alone gives them away)."""
    for name in ("SUDO_USER", "SUDO_UID", "USER", "LOGNAME", "LNAME", "USERNAME"):
        monkeypatch.delenv(name, raising=False)
    user = {"as-the-user": USER, "under-sudo": "root", "elsewhere": "maintainer"}
    monkeypatch.setenv("USER", user[request.param])
    monkeypatch.setenv("LOGNAME", user[request.param])
    monkeypatch.setenv("HOME", {"as-the-user": f"/var/home/{USER}", "under-sudo": "/root",
                                "elsewhere": "/home/maintainer"}[request.param])
    if request.param == "under-sudo":
        monkeypatch.setenv("SUDO_USER", USER)
    return request.param


# -- a report full of private values ------------------------------------------------------

def kernel_lines() -> list[str]:
    return [f"[ 1002.000000] amdxdna 0000:c7:00.1: [drm] *ERROR* aie2_tdr_detect: TDR timeout "
            f"detected on {FQDN} (Serial Number: {SERIAL})",
            f"[ 1002.000010] kernel: eth0 {NEAR_WORDS['kernel']} {MAC} {IPV6} {ESC}",
            f"[ 1002.000020] amdxdna 0000:c7:00.1: mounted root=UUID={DISK_UUID} for {USER}"]


def planted(source: Path, target: Path, mode: str) -> Path:
    head, journal = source.read_text().split("\njournal:\n")
    header = load_yaml_text(head)
    system = header["environment"]["system"]
    system.update({"hostname": FQDN, "machine_id": MACHINE_ID,
                   "user": USER if mode == "as-the-user" else "root",
                   "boot_flags": {"root": f"UUID={DISK_UUID}", "iommu": "pt"}})
    header["environment"]["npu"]["sysfs"] = {"serial_number": KEYED_SERIAL,
                                             "fw_version": "1.1.2.65"}
    header["environment"]["xrt"]["LD_LIBRARY_PATH"] = f"/var/home/{USER}/xrt/lib:/opt/x"
    header["environment"]["xrt"]["XILINX_XRT"] = f"/nfs/home/{USER}/xrt"
    header["environment"]["xrt_smi"] = {"examine": {
        "exit_status": 0, "output": f"{ESC}Host {FQDN}\nSerial Number : {SERIAL}\n"
                                    f"xrt server {NEAR_WORDS['xrt']}\n"
                                    f"version check from {NEAR_WORDS['version']}\n"}}
    header["harness"]["argv"] = ["runlist-harness", "run", "minicpm5-2b-decode", "--xclbins",
                                 f"/home/{USER}/packs", "--out", f"/nfs/home/{USER}/r.yaml",
                                 "--note", f"{USER}-jupyter",
                                 f"--url=http://{USER}:{SECRET}@127.0.0.1:52625/v1?api_key="
                                 f"{TOKEN}"]
    header["case"]["file"] = f"/home/{USER}/cases/x.yaml"
    lines = []
    for line in journal.splitlines():
        entry = json.loads(line[2:])
        trial = entry.get("trial")
        if trial and trial.get("status") == "failed":
            trial["kernel_log"]["lines"] = kernel_lines()
            for outcome in trial["runlists"]:
                if outcome.get("message"):
                    outcome["message"] += (f" ran by {USER} on {HOST}; release mirror "
                                           f"{NEAR_WORDS['release']}")
        lines.append("- " + json.dumps(entry, separators=(", ", ": ")))
    target.write_text("# xdna-runlist-harness report: SIMULATED stack, not hardware "
                      "evidence\n" + dump_yaml(header) + "journal:\n" + "\n".join(lines) + "\n")
    assert invoke("report", "check", str(target)).exit_code == 0
    return target


@pytest.fixture(scope="module")
def failing(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("failing")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HARNESS_PYXRT", "none")
        patch.setenv("XDG_CACHE_HOME", str(folder / ".cache"))
        out = folder / "r.yaml"
        done = invoke("run", "minicpm5-2b-decode", "--plan", "42", "--trials", "1",
                      "--no-isolate", "--profile", "inflight-cap:40", "--out", str(out))
        assert done.exit_code == 1, done.output
    return out


def every_output(report: Path) -> dict[str, str]:
    """What gets attached or pasted of `report`: the render (Markdown, and text asked to
    be redacted) and every file of its bundle (README, report.md, the YAML, the kernel
    log, xrt-smi's output, the recipes)."""
    outputs = {}
    for name, args in (("render", ["report", "render", str(report)]),
                       ("render --format text --redact",
                        ["report", "render", "--format", "text", "--redact", str(report)])):
        done = invoke(*args)
        assert done.exit_code == 0, done.output
        outputs[name] = done.stdout
    bundle = report.with_name(report.stem + ".bundle.tar.gz")
    done = invoke("report", "bundle", str(report), "--force")
    assert done.exit_code == 0, done.output
    with tarfile.open(bundle) as tar:
        for member in tar.getmembers():
            if member.isfile():
                outputs[member.name] = tar.extractfile(member).read().decode("utf-8",
                                                                              "replace")
    return outputs


def test_a_report_full_of_private_values_leaves_none_in_any_output(failing, tmp_path, mode):
    report = planted(failing, tmp_path / "r.yaml", mode)
    outputs = every_output(report)
    assert {"render", "r.bundle/README.md", "r.bundle/report.md", "r.bundle/r.yaml",
            "r.bundle/kernel-log.txt", "r.bundle/xrt-smi.txt"} <= set(outputs)
    found = {name: survivors(text) for name, text in outputs.items() if survivors(text)}
    assert found == {}
    for name, text in outputs.items():
        assert "\x1b" not in text and "\x07" not in text, name
    # what stays: placeholders, versions, the xclbins' identities
    assert "<hostname>" in outputs["render"] and "1.1.2.65" in outputs["render"]
    assert "/var/home/<user-" in outputs["r.bundle/r.yaml"]
    assert re.search(r"<user-\d+>-jupyter", outputs["render"])
    assert "http://<credentials>@127.0.0.1:52625" in outputs["r.bundle/README.md"]
    assert "\\x1b]0;owned" in outputs["r.bundle/kernel-log.txt"]    # shown, not obeyed
    # and the bundled YAML is still a report
    shipped = tmp_path / "shipped.yaml"
    shipped.write_text(outputs["r.bundle/r.yaml"])
    assert invoke("report", "check", str(shipped)).exit_code == 0
    # the suite can fail: asked not to redact, every planted value is there (the render
    # carries what a maintainer reads, the bundle's YAML the rest)
    plain = invoke("report", "render", "--no-redact", str(report)).stdout
    loose = tmp_path / "plain.tar.gz"
    assert invoke("report", "bundle", "--no-redact", "--out", str(loose),
                  str(report)).exit_code == 0
    with tarfile.open(loose) as tar:
        plain += tar.extractfile(next(m for m in tar.getmembers()
                                      if m.name.endswith("/r.yaml"))).read().decode()
    assert sorted(survivors(plain)) == sorted(CANARIES)


def test_a_serve_probe_url_with_credentials_leaves_none_in_any_output(tmp_path, mode):
    with FakeFlm(Behaviour(chat="error")) as server:
        url = server.url.replace("http://", f"http://{USER}:{SECRET}@") + f"/?token={TOKEN}"
        done = invoke("serve-probe", "--url", url, "--model", "minicpm5:2b", "--requests",
                      "1", "--out", str(tmp_path / "s.yaml"))
    assert done.exit_code == 1, done.output
    raw = (tmp_path / "s.yaml").read_text()
    assert SECRET in raw                      # the report keeps what the user typed
    outputs = every_output(tmp_path / "s.yaml")
    found = {name: survivors(text) for name, text in outputs.items() if survivors(text)}
    assert found == {}
    assert "<credentials>@127.0.0.1" in outputs["render"]


# -- probe --------------------------------------------------------------------------------

def private_machine(tmp_path: Path) -> Tree:
    tree = Tree(tmp_path)
    tree.npu()
    tree.identity()
    tree.write("/proc/sys/kernel/hostname", FQDN)
    tree.write("/etc/machine-id", MACHINE_ID)
    tree.write("/proc/cmdline", f"BOOT_IMAGE=/vmlinuz root=UUID={DISK_UUID} iommu=pt "
                                f"resume=/dev/disk/by-uuid/{DISK_UUID}")
    tree.write("/usr/bin/xrt-smi",
               "#!/bin/sh\n"
               f"printf '{ESC}Device on {FQDN}\\nSerial Number : {SERIAL}\\n'\n"
               f"echo 'kernel: eth0 {NEAR_WORDS['kernel']} {MAC} {IPV6}'\n"
               f"echo 'xrt server {NEAR_WORDS['xrt']}; release mirror "
               f"{NEAR_WORDS['release']}'\n", 0o755)
    return tree


@pytest.mark.parametrize("form", [[], ["--markdown"], ["--yaml", "--redact"]])
def test_probe_output_meant_to_be_pasted_leaves_nothing_private(tmp_path, mode, form,
                                                                monkeypatch):
    tree = private_machine(tmp_path)
    # the machine's tree with its programs (xrt-smi), as HARNESS_ROOT reads it
    monkeypatch.setenv("HARNESS_ROOT", str(tree.root))
    monkeypatch.setenv("PATH", "/usr/bin")
    monkeypatch.setenv("XILINX_XRT", f"/var/home/{USER}/xrt")
    done = invoke("probe", "--xrt-smi", *form)
    assert done.exit_code == 0, done.output
    assert "Serial Number : <serial-" in done.stdout           # xrt-smi's output is there
    assert survivors(done.stdout) == []
    assert "\x1b" not in done.stdout
    if form == ["--markdown"]:
        assert done.stdout.startswith("### runlist-harness probe\n\n```text\n")
    if not form:
        assert "\\x1b]0;owned" in done.stdout
    if mode == "as-the-user" and not form:
        plain = invoke("probe", "--xrt-smi", "--no-redact").stdout
        assert SERIAL in plain and f"/var/home/{USER}/xrt" in plain and "\x1b" not in plain
        assert FQDN in invoke("probe", "--yaml").stdout      # machine output: as it is


def test_errors_on_the_terminal_show_control_characters_escaped(tmp_path):
    bad = tmp_path / "bad\x1b[2Jname.yaml"
    done = invoke("report", "render", str(bad))
    assert done.exit_code == 2
    assert "\x1b" not in done.output and "\\x1b[2J" in done.output


def test_a_number_of_thousands_of_digits_is_shown_cut(tmp_path):
    done = invoke("run", "minicpm5-2b-decode", "--trials", "9" * 5000, "--no-isolate")
    assert done.exit_code == 2
    line = done.output.strip()
    assert "\n" not in line and len(line) < 400 and "(5000 digits)" in line
