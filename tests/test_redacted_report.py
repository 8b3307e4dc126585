"""The YAML report a run writes is redacted by default, like its render and bundle (issue
54: users attach the per-run YAML to upstream issues): no host name, machine id, user or
home folder reaches the file unless asked (`--no-redact`); `report check` passes on it;
a redacted report continues with its placeholders kept and its files found where they
are; a report older than redaction reads and continues as it was."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from privacy_kit import as_private_user

from harness.app.cli import main
from harness.report.fileformat import load_report
from harness.report.redacted_writing import WriteRedaction, machine_tag

USER, HOST = "quill5", "brisk-otter-77"
PROJECT = Path(__file__).resolve().parents[1]


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def machine_id() -> str | None:
    try:
        return Path("/etc/machine-id").read_text().strip() or None
    except OSError:
        return None


@pytest.fixture
def machine(monkeypatch, tmp_path):
    home = as_private_user(monkeypatch, tmp_path, USER, HOST)
    (home / "cases").mkdir()
    case = home / "cases" / f"{USER}_decode.yaml"
    case.write_text((PROJECT / "cases" / "minicpm5-2b-decode.yaml").read_text())
    return home, case


def private(text: str) -> list[str]:
    canaries = [USER, HOST, os.uname().nodename, *([machine_id()] if machine_id() else [])]
    return [c for c in canaries if len(c) >= 3 and c.lower() not in ("root", "localhost")
            and c.lower() in text.lower()]


def stopped(report: Path) -> Path:
    """`report` as if stopped after one of two trials of its plan."""
    text = report.read_text().replace("\n  trials: 1\n", "\n  trials: 2\n", 1)
    report.write_text(re.sub(r"\nfinished: .*\n", "\nfinished: null\n", text, count=1))
    return report


def test_the_report_on_disk_is_redacted_by_default_and_checks(machine):
    home, case = machine
    out = home / f"r_{USER}.yaml"
    done = invoke("run", str(case), "--plan", "42", "--trials", "1", "--no-isolate",
                  "--profile", "inflight-cap:40", "--out", str(out))
    assert done.exit_code == 1, done.output
    text = out.read_text()
    assert private(text) == []
    report = load_report(out)
    assert re.fullmatch(r"<hostname(-\d+)?>", report.environment["system"]["hostname"])
    assert report.case["file"].endswith("/home/<user-1>/cases/<user-1>_decode.yaml")
    assert report.sections["redaction"]["redacted"] is True and report.settings["redact"]
    assert invoke("report", "check", str(out)).exit_code == 0
    # a bundle of it still finds the case where it is (its recipes written afresh)
    bundled = invoke("report", "bundle", str(out))
    assert bundled.exit_code == 0 and "recipes/" in bundled.output, bundled.output
    # asked not to: the report keeps what the machine is
    kept = home / "kept.yaml"
    assert invoke("run", str(case), "--plan", "42", "--trials", "1", "--no-isolate",
                  "--no-redact", "--out", str(kept)).exit_code == 0
    plain = load_report(kept)
    assert plain.environment["system"]["hostname"] == \
        Path("/proc/sys/kernel/hostname").read_text().strip()
    assert plain.settings["redact"] is False and "redaction" not in plain.sections
    assert str(case) in kept.read_text()


def test_a_redacted_report_continues_with_its_placeholders_and_files(machine):
    home, case = machine
    out = home / "r.yaml"
    assert invoke("run", str(case), "--plan", "42", "--trials", "1", "--no-isolate",
                  "--out", str(out)).exit_code == 0
    before = load_report(out).case["file"]
    done = invoke("run", "--resume", str(stopped(out)))
    assert done.exit_code == 0, done.output              # the case found by its sha256
    report = load_report(out)
    assert len(report.plans[0].trials) == 2 and report.case["file"] == before
    assert private(out.read_text()) == []
    assert invoke("report", "check", str(out)).exit_code == 0
    # --no-redact is the report's setting: refused on resume, naming it
    again = invoke("run", "--resume", str(stopped(out)), "--no-redact")
    assert again.exit_code == 2 and "redacted" in again.output


def test_a_report_older_than_redaction_reads_and_goes_on_unredacted(machine):
    home, case = machine
    out = home / "old.yaml"
    assert invoke("run", str(case), "--plan", "42", "--trials", "1", "--no-isolate",
                  "--no-redact", "--out", str(out)).exit_code == 0
    out.write_text(out.read_text().replace("  redact: false\n", "", 1))   # as 0.2 wrote it
    assert "redact" not in load_report(out).settings
    assert invoke("report", "check", str(out)).exit_code == 0
    done = invoke("run", "--resume", str(stopped(out)))
    assert done.exit_code == 0, done.output
    assert str(case) in out.read_text()                  # as it began: not redacted
    assert invoke("report", "render", str(out)).exit_code == 0


def test_new_names_of_a_continued_report_are_numbered_after_its_own(tmp_path, monkeypatch):
    """On the machine that began it, its names keep their placeholders; a name first seen
    now, or another machine's, takes a number no placeholder of the file has."""
    monkeypatch.setenv("USER", USER)
    monkeypatch.delenv("SUDO_USER", raising=False)
    path = tmp_path / "r.yaml"
    path.write_text("note: <user-1> and <user-3> and <hostname>\n")
    header = {"run_id": "abc123", "redaction": {"redacted": True,
                                                "machine": machine_tag("abc123")}}
    same = WriteRedaction.for_continued(path, header).redactor
    if machine_tag("abc123") is not None:
        assert same.text(f"by {USER}") == "by <user-1>"
    same.add_literal("user", "carol7")
    assert same.text("carol7") == "<user-4>"
    elsewhere = WriteRedaction.for_continued(
        path, {"run_id": "abc123", "redaction": {"redacted": True, "machine": "0" * 32}})
    assert elsewhere.redactor.text(f"by {USER}") == "by <user-4>"


def test_the_control_s_xclbin_keeps_its_uuid_on_disk(tmp_path):
    """The depth-only control's xclbin is added to the header after it was first written:
    its UUID (an artefact's identity, which XRT's messages quote) became `<uuid-1>` on disk,
    while --no-redact and the bundle kept it."""
    out = tmp_path / "u.yaml"
    done = CliRunner().invoke(main, ["reproduce", "--trials", "1", "--no-isolate", "--out",
                                     str(out)])
    assert done.exit_code in (0, 1), done.output
    report = load_report(out)
    control = report.artifacts["control"]["xclbins"][0]
    assert control["uuid"] != "<uuid-1>" and len(control["uuid"]) == 36
    assert "<uuid-" not in out.read_text()
