"""The canary suite: a report and a machine full of private values (a kernel log, the
environment, paths, the host name, the command line, a serve-probe URL, prompt and server
text), in every form they take (URL secrets and passwords holding @, e-mail addresses,
access tokens, MACs in every notation, labelled serials and serials of every shape, bare
UUIDs, IPv6 with an IPv4 tail, the user's name in any letter case, `cryptdevice=luks-`),
and every output meant to be attached or pasted (each file of the bundle, the render, the
YAML, `probe`'s lines, Markdown, JSON and YAML asked to be redacted) holding none of them,
run as the user, under sudo (`SUDO_USER`), and rendered on another machine that knows none
of the names. Control characters from other programs reach neither the render nor a
terminal."""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakeflm import Behaviour, FakeFlm
from machines import Tree
from privacy_kit import as_private_user
from simkit import simulated_report

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
# the forms of round 4: each in a line of the kernel log, xrt-smi's output and a message
URL_SECRETS = {"api_token": "TOKSECRET1", "client_secret": "CLSECRET2",
               "X-Amz-Signature": "SIGSECRET3", "private_token": "PRIVSECRET4",
               "access_key": "ACCSECRET5", "session": "SESSSECRET6",
               "my_refresh_token": "ANYSECRET8"}
AT_PASSWORD = "p@ss-ATSECRET7"
EMAIL = "jane.doe.canary@acme-mail.org"
HF_TOKEN = "hf_CanaryHuggingFace0123456789ab"
GH_TOKEN = "ghp_CanaryGitHub0123456789abcdefAB"
PAT = "github_pat_11CANARY0123456789_abcdefgh"
MAC_BARE = "3c7c3f1a2b5e"
MAC_DOTTED = "3c7c.3f1a.2b6f"
SN = "77XQ1234"
SERVICE_TAG = "JXQ4Z53"
BARE_UUID = "9a8b7c6d-1111-4222-8333-444455556666"
MAPPED = "192.168.77.20"
LUKS = "0d1e2f30-4152-4637-8899-aabbccddeeff"
INT_SERIAL, WORDS_SERIAL, LIST_SERIALS = 987654321, "AB12 CD34 EF56", ["SNLISTA111",
                                                                      "SNLISTB222"]
ROUND4 = [*URL_SECRETS.values(), "ATSECRET7", "jane.doe.canary", HF_TOKEN[3:], GH_TOKEN[4:],
          PAT[11:], MAC_BARE, MAC_DOTTED, SN, SERVICE_TAG, BARE_UUID, MAPPED, LUKS,
          str(INT_SERIAL), WORDS_SERIAL, *LIST_SERIALS]
# the forms of round 5: encoded, unnamed, joined to other text
ROUND5 = {"encoded e-mail": "corp-canary", "AWS key": "CANARY0123456789",
          "JWT": "SIGCANARYJWT", "JWT payload": "eyJzdWIiOiJjYW5hcnkifQ",
          "query value": "CODECANARY1", "query jwt": "JWTCANARY2", "WWN": "5002538e4ca1ab77",
          "SSID": "CanaryHomeNet"}
ROUND5_FORMS = (f"by jane5%40{ROUND5['encoded e-mail']}.example with AKIA{ROUND5['AWS key']} "
                f"and eyJhbGciOiJIUzI1NiJ9.{ROUND5['JWT payload']}.{ROUND5['JWT']} from "
                f"https://sso.example/cb?code={ROUND5['query value']}&jwt={ROUND5['query jwt']}"
                f"&page=3 on /dev/disk/by-id/wwn-0x{ROUND5['WWN']}; wlan0: Trying to associate "
                f"with SSID '{ROUND5['SSID']}'; client {USER}_jupyter /data/proj_{USER}/m.bin "
                f"host {HOST}_vm {USER.title()}Lab")
FORMS = ("GET https://hub.example/v1?" + "&".join(f"{k}={v}" for k, v in URL_SECRETS.items())
         + f" via http://bob:{AT_PASSWORD}@proxy.example:3128 for {EMAIL} with {HF_TOKEN} "
         f"{GH_TOKEN} {PAT}; enx{MAC_BARE} port {MAC_DOTTED}; SN: {SN}, Service Tag: "
         f"{SERVICE_TAG}, product {BARE_UUID}, peer ::ffff:{MAPPED}; also {INT_SERIAL}, "
         f"{WORDS_SERIAL}, {LIST_SERIALS[1]}; ran by {USER.upper()} and {USER.title()} "
         f"cryptdevice=luks-{LUKS} {ROUND5_FORMS}")

CANARIES = [USER, HOST, "acme-widgets", MACHINE_ID, SERIAL, KEYED_SERIAL, DISK_UUID, MAC,
            IPV6, *NEAR_WORDS.values(), SECRET, TOKEN, *ROUND4, *ROUND5.values()]


# what only a report's keys name: a machine the probe reads does not give these away
KEYED_ONLY = [str(INT_SERIAL), WORDS_SERIAL, *LIST_SERIALS]


def survivors(text: str, canaries: list[str] = CANARIES) -> list[str]:
    low = text.lower()
    return [c for c in canaries if c.lower() in low]


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
            f"[ 1002.000020] amdxdna 0000:c7:00.1: mounted root=UUID={DISK_UUID} for {USER}",
            f"[ 1002.000030] kernel: {FORMS}"]


def planted(source: Path, target: Path, mode: str) -> Path:
    head, journal = source.read_text().split("\njournal:\n")
    header = load_yaml_text(head)
    system = header["environment"]["system"]
    system.update({"hostname": FQDN, "machine_id": MACHINE_ID,
                   "user": USER if mode == "as-the-user" else "root",
                   "boot_flags": {"root": f"UUID={DISK_UUID}", "iommu": "pt"}})
    header["environment"]["npu"]["sysfs"] = {"serial_number": KEYED_SERIAL,
                                             "fw_version": "1.1.2.65"}
    system["boot_flags"]["cryptdevice"] = f"luks-{LUKS}"
    header["environment"]["xrt"]["LD_LIBRARY_PATH"] = f"/var/home/{USER}/xrt/lib:/opt/x"
    header["environment"]["xrt"]["XILINX_XRT"] = f"/nfs/home/{USER}/xrt"
    header["environment"]["xrt_smi"] = {"examine": {
        "exit_status": 0, "output": f"{ESC}Host {FQDN}\nSerial Number : {SERIAL}\n"
                                    f"xrt server {NEAR_WORDS['xrt']}\n"
                                    f"version check from {NEAR_WORDS['version']}\n"
                                    f"{FORMS}\n"}}
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
            # serials under keys naming one: a number, several words, a list
            trial["worker"] = {"board_serial": WORDS_SERIAL, "serials": LIST_SERIALS,
                               "serial_number": INT_SERIAL}
            for outcome in trial["runlists"]:
                if outcome.get("message"):
                    outcome["message"] += (f" ran by {USER} on {HOST}; release mirror "
                                           f"{NEAR_WORDS['release']}; {FORMS}")
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
    done = invoke("report", "bundle", str(report), "--force")
    assert done.exit_code == 0, done.output
    bundle = Path(done.output.split("bundle: ", 1)[1].split(" (", 1)[0])
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


def test_a_name_joined_to_other_text_leaves_no_output_nor_member_name(tmp_path, monkeypatch):
    """With USER=quill5: `quill5_jupyter`, `/data/proj_quill5/`, a host `brisk-otter-77_vm`
    reached the render and the bundle (a name was matched as a whole word, and `_` is a
    word character); another process named `zelda9-jupyter` holding the NPU reached the
    "other NPU users" rows (a process's name sat under a key kept as the harness's own);
    and `--out r_quill5.yaml` reached the render's command line, `cd r_quill5.recipes`,
    the bundle's member names and its README."""
    user, host = "quill5", "brisk-otter-77"
    as_private_user(monkeypatch, tmp_path, user, host)
    report = tmp_path / f"r_{user}.yaml"
    done = invoke("reproduce", "--trials", "1", "--no-isolate", "--no-control", "--profile",
                  "inflight-cap:40", "--out", str(report))
    assert done.exit_code == 1, done.output
    assert (tmp_path / f"r_{user}.recipes").is_dir()
    holder = {"pid": 4242, "command": f"{user}-jupyter", "devices": ["/dev/accel/accel0"]}
    text = report.read_text()
    head, journal = text.split("\njournal:\n")
    header = load_yaml_text(head)
    header["environment"]["device_users"] = {"users": [holder], "uninspectable": 0}
    lines = []
    for line in journal.splitlines():
        entry = json.loads(line[2:])
        trial = entry.get("trial")
        if trial and trial.get("status") == "failed":
            trial["device_users"] = {"users": [holder], "uninspectable": 0}
            trial["kernel_log"]["lines"] = [
                f"[ 9.0] client {user}_jupyter opened /data/proj_{user}/m.bin on {host}_vm"]
        lines.append("- " + json.dumps(entry, separators=(", ", ": ")))
    report.write_text(text.split("\n", 1)[0] + "\n" + dump_yaml(header) + "journal:\n"
                      + "\n".join(lines) + "\n")
    assert invoke("report", "check", str(report)).exit_code == 0
    outputs = every_output(report)
    canaries = [user, host]
    assert {name: survivors(text, canaries) for name, text in outputs.items()
            if survivors(text, canaries)} == {}
    assert survivors(" ".join(outputs), canaries) == []          # the member names too
    assert "| other NPU/GPU users at start | 4242 &lt;user-1>-jupyter |" in outputs["render"]
    assert "r_<user-1>.yaml" in outputs["render"]
    assert "r_user-1.bundle/r_user-1.yaml" in outputs       # a name a shell takes as it is
    assert (tmp_path / "r_user-1.bundle.tar.gz").is_file()


def test_a_serve_probe_url_with_credentials_leaves_none_in_any_output(tmp_path, mode):
    """Nor the prompt the user typed, nor the server's own error text (which may quote it):
    both were recorded and bundled; they are withheld whole, their length said."""
    prompt, said = "PROMPT-CANARY-551 about my files", "SERVER-CANARY-552 quoted the prompt"
    with FakeFlm(Behaviour(chat="error", error=said)) as server:
        url = server.url.replace("http://", f"http://{USER}:{SECRET}@") + f"/?token={TOKEN}"
        done = invoke("serve-probe", "--url", url, "--model", "minicpm5:2b", "--requests",
                      "1", "--prompt", prompt, "--out", str(tmp_path / "s.yaml"))
    assert done.exit_code == 1, done.output
    raw = (tmp_path / "s.yaml").read_text()
    # the URL is normalised before it is recorded: the harness never sends its user-info
    # nor its query, so neither is kept, even unredacted
    assert SECRET not in raw and TOKEN not in raw and USER not in raw.split("argv:")[1][:400]
    outputs = every_output(tmp_path / "s.yaml")
    found = {name: survivors(text, CANARIES + ["PROMPT-CANARY", "SERVER-CANARY"])
             for name, text in outputs.items()}
    assert {name: hit for name, hit in found.items() if hit} == {}
    assert "`runlist-harness serve-probe --url http://127.0.0.1:" in outputs["render"]
    assert "<prompt withheld: 32 characters>" in outputs["s.bundle/s.yaml"]
    assert "<server text withheld: 35 characters>" in outputs["s.bundle/s.yaml"]


@pytest.mark.parametrize("form", ["{user}:pw%2FSECRETA@{host}", "//{user}:pw%2FSECRETA@{host}",
                                  "{user}%40corp:p@ss%2FSECRETA@{host}/v1"])
def test_a_password_in_a_url_without_a_scheme_is_never_recorded(tmp_path, form):
    """`serve-probe --url 'quill5:pw%2FSECRETA@127.0.0.1:P'` was accepted (the client adds
    http://) and the render, the bundle's README, report.md and the YAML carried the
    password: the user-info rule looked only after `scheme://`."""
    with FakeFlm(Behaviour()) as server:
        url = form.format(user=USER, host=server.url.removeprefix("http://"))
        done = invoke("serve-probe", "--url", url, "--model", "minicpm5:2b", "--requests",
                      "1", "--no-made-up-tag", "--out", str(tmp_path / "s.yaml"))
    assert done.exit_code == 0, done.output
    assert "the user and password before the host are never sent" in done.stderr
    raw = (tmp_path / "s.yaml").read_text()
    assert "SECRETA" not in raw and "--url\n  - http://127.0.0.1:" in raw
    outputs = every_output(tmp_path / "s.yaml")
    assert {name: text for name, text in outputs.items() if "SECRETA" in text} == {}


# -- probe --------------------------------------------------------------------------------

def private_machine(tmp_path: Path) -> Tree:
    tree = Tree(tmp_path)
    tree.npu()
    tree.identity()
    tree.write("/proc/sys/kernel/hostname", FQDN)
    tree.write("/etc/machine-id", MACHINE_ID)
    tree.write("/proc/cmdline", f"BOOT_IMAGE=/vmlinuz root=UUID={DISK_UUID} iommu=pt "
                                f"resume=/dev/disk/by-uuid/{DISK_UUID} "
                                f"cryptdevice=luks-{LUKS}:cryptroot")
    tree.write("/usr/bin/xrt-smi",
               "#!/bin/sh\n"
               f"printf '{ESC}Device on {FQDN}\\nSerial Number : {SERIAL}\\n'\n"
               f"echo 'kernel: eth0 {NEAR_WORDS['kernel']} {MAC} {IPV6}'\n"
               f"echo 'xrt server {NEAR_WORDS['xrt']}; release mirror "
               f"{NEAR_WORDS['release']}'\n"
               f"cat <<'EOF'\n{FORMS}\nEOF\n", 0o755)
    return tree


@pytest.mark.parametrize("form", [[], ["--markdown"], ["--yaml", "--redact"],
                                  ["--json", "--redact"]])
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
    assert survivors(done.stdout, [c for c in CANARIES if c not in KEYED_ONLY]) == []
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


# -- a user whose name is a word the report uses -------------------------------------------

@pytest.fixture(scope="module")
def staging_report(tmp_path_factory) -> Path:
    return simulated_report(tmp_path_factory.mktemp("staging"), "--profile",
                            "staging,inflight-cap:40", exit_code=1)


@pytest.mark.parametrize("user", ["staging", "xrt", "test"])
def test_a_user_named_as_a_word_of_the_report_does_not_garble_it(staging_report, tmp_path,
                                                                  monkeypatch, user):
    """User `staging`: the profile became `<user-1>,inflight-cap:40` in the render and the
    bundle, and the bundle still passed `report check`. The name goes where it is one (a
    home folder); the report's words stay, and the bundled YAML checks."""
    for name in ("SUDO_USER", "LOGNAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("USER", user)
    monkeypatch.setenv("HOME", f"/home/{user}")
    report = tmp_path / "r.yaml"
    words = "xrt-smi test on the staging driver"          # the report's own words
    text = staging_report.read_text().replace(
        "argv:\n", f"argv:\n  - /home/{user}/bin/x\n  - --note\n  - {words}\n", 1)
    report.write_text(text)
    assert invoke("report", "check", str(report)).exit_code == 0
    outputs = every_output(report)
    assert "staging,inflight-cap:40" in outputs["render"]
    assert "staging,inflight-cap:40" in outputs["r.bundle/r.yaml"]
    assert f"/home/{user}/" not in outputs["r.bundle/r.yaml"]
    assert "/home/<user-1>/bin/x" in outputs["r.bundle/r.yaml"]
    for name in ("render", "r.bundle/r.yaml", "r.bundle/README.md"):
        assert words in outputs[name], name
    for text in outputs.values():          # no word of the report became the user
        assert "<user-1>," not in text and "<user-1>-smi" not in text and \
            "<user-1> driver" not in text
    shipped = tmp_path / "shipped.yaml"
    shipped.write_text(outputs["r.bundle/r.yaml"])
    assert invoke("report", "check", str(shipped)).exit_code == 0


def test_report_check_and_the_bundle_notice_a_garbled_report(staging_report, tmp_path,
                                                             monkeypatch):
    garbled = tmp_path / "g.yaml"
    garbled.write_text(staging_report.read_text().replace(
        "profile: staging,inflight-cap:40", "profile: <user-1>,inflight-cap:40", 1))
    done = invoke("report", "check", str(garbled))
    assert done.exit_code == 2
    assert "backend.profile: '<user-1>,inflight-cap:40' holds a redaction placeholder" in \
        done.output
    # and a redaction that would garble one (its guards taken away) writes no bundle
    monkeypatch.setattr("harness.report.redact.VOCABULARY", frozenset())
    monkeypatch.setattr("harness.report.redact.STRUCTURED_KEYS", frozenset())
    monkeypatch.setenv("USER", "staging")
    report = tmp_path / "r.yaml"
    report.write_bytes(staging_report.read_bytes())
    done = invoke("report", "bundle", str(report))
    assert done.exit_code == 4, done.output
    assert "the redacted report would be garbled (backend.profile" in done.output
    assert not list(tmp_path.glob("*.tar.gz"))
