"""A report redacted when it was written, rendered and bundled: its placeholders stay as the
file has them (two people, the harness's user and a user whose home folder the program
printed, keep two placeholders; the machine id keeps its own), a name learned now is
numbered after them, and the bundle's README names only the files the bundle holds."""

from __future__ import annotations

import re
import sys
import tarfile

from click.testing import CliRunner
from privacy_kit import as_private_user

from harness.app.cli import main
from harness.report.fileformat import load_report
from harness.report.redact import Redactor

USER, HOST, OTHER = "quill5", "brisk-otter-77", "alice7"


def test_rendering_and_bundling_keep_a_redacted_report_s_placeholders(tmp_path, monkeypatch):
    home = as_private_user(monkeypatch, tmp_path, USER, HOST)
    program = home / "engine.py"
    program.write_text(f"import sys\nprint('[FLM]  Loading model: /home/{OTHER}/.config/flm/"
                       "models/MiniCPM5-2B-NPU2')\nprint('[ERROR]  runlist failed execution "
                       "(ERT_CMD_STATE_TIMEOUT)', file=sys.stderr)\nsys.exit(1)\n")
    out = home / "run"
    CliRunner().invoke(main, ["capture", "record", "--after", "0", "--no-capture", "--out",
                              str(out), "--", sys.executable, str(program)])
    written = (out / "report.yaml").read_text()
    user = load_report(out / "report.yaml").environment["system"]["user"]
    other = re.search(r"/home/(<user-\d+>)/\.config", written)[1]
    assert user != other and USER not in written and OTHER not in written
    rendered = CliRunner().invoke(main, ["report", "render", str(out / "report.yaml")]).stdout
    assert f"user: {user}" in rendered and f"/home/{other}/.config" in rendered
    bundle = home / "b.tar.gz"
    assert CliRunner().invoke(main, ["report", "bundle", str(out / "report.yaml"), "--out",
                                     str(bundle)]).exit_code == 0
    with tarfile.open(bundle) as archive:
        names = {m.name.split("/", 1)[-1]: m for m in archive.getmembers()}
        copy = archive.extractfile(names["report.yaml"]).read().decode()
        readme = archive.extractfile(names["README.md"]).read().decode()
    assert f"user: {user}" in copy and f"/home/{other}/.config" in copy
    machine = re.search(r"machine_id: (\S+)", written)
    if machine:
        assert f"machine_id: {machine[1]}" in copy
    assert "a copy of the report" in readme and "the report itself" not in readme
    for name in ("kernel-log.txt", "trace-events.txt"):
        assert (name in names) == (f"`{name}`" in readme), name


def test_names_learned_from_a_redacted_report_are_numbered_after_its_placeholders():
    redactor = Redactor()
    redactor.learn({"environment": {"system": {"user": "<user-2>"}},
                    "note": "/home/<user-1>/x and <machine-id>"})
    redactor.add_literal("user", "carol9")
    assert redactor.text("by carol9") == "by <user-3>"
    assert redactor.data({"user": "<user-2>"}) == {"user": "<user-2>"}
