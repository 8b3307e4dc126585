"""What `diagnose` and `investigate` print gets pasted into issues: it goes through the
render's redaction at the output layer (harness.report.pasted), text and --json alike,
lines quoted back from what they read included, unless --no-redact. Canaries: a user
`quill5` whose home folder and file names hold the name, and the forms an artefact's text
gives away."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from privacy_kit import as_private_user

from harness.app.cli import main
from harness.report.pasted import Pasted, pasteable

USER = "quill5"
QUOTED = (f"dmesg.txt:12: [ 5.1] amdxdna 0000:c7:00.1: client {USER}_jupyter on "
          "brisk-otter-77_vm (Serial Number: PF4X7K2Q) key AKIAIOSFODNN7CANARYX")
CANARIES = [USER, "brisk-otter-77", "PF4X7K2Q", "IOSFODNN7CANARY"]


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def survivors(text: str) -> list[str]:
    return [c for c in CANARIES if c.lower() in text.lower()]


@pytest.fixture
def machine(monkeypatch, tmp_path):
    return as_private_user(monkeypatch, tmp_path, USER, "brisk-otter-77")


@pytest.fixture
def report(machine):
    out = machine / f"r_{USER}.yaml"
    done = invoke("run", "minicpm5-2b-decode", "--plan", "42", "--trials", "1",
                  "--no-isolate", "--profile", "inflight-cap:40", "--out", str(out))
    assert done.exit_code == 1, done.output
    return out


def test_diagnose_prints_the_report_s_path_without_the_user_s_name(report):
    """`diagnose r.yaml` printed the report's full path, home folder and user name."""
    for form in ([], ["--json"]):
        done = invoke("diagnose", *form, str(report))
        assert done.exit_code == 0, done.output
        assert survivors(done.output) == [], form
        assert "/home/<user-1>/r_<user-1>.yaml" in done.output
    json.loads(invoke("diagnose", "--json", str(report)).output)         # still JSON
    plain = invoke("diagnose", "--no-redact", str(report)).output
    assert str(report) in plain


def test_lines_the_diagnosis_quotes_are_redacted_without_its_help(report, monkeypatch):
    """Whatever a reader of artefacts adds to what diagnose prints (a kernel-log line it
    quotes back as FILE:LINE) is redacted by the output layer."""
    from harness.app.cli import diagnose_cmd
    from harness.report.diagnosis.ranking import Diagnosis
    lines, to_json = diagnose_cmd.text_lines, Diagnosis.to_json
    monkeypatch.setattr(diagnose_cmd, "text_lines",
                        lambda d: [*lines(d), f"  quoted: {QUOTED}"])
    monkeypatch.setattr(Diagnosis, "to_json",
                        lambda self: [*to_json(self), {"quoted": QUOTED}])
    for form in ([], ["--json"]):
        done = invoke("diagnose", *form, str(report))
        assert done.exit_code == 0, done.output
        assert "dmesg.txt:12:" in done.output and survivors(done.output) == [], done.output
    assert survivors(invoke("diagnose", "--no-redact", str(report)).output) == CANARIES


def test_an_artefact_file_teaches_the_names_it_gives_away(tmp_path):
    kmsg = tmp_path / "kmsg.txt"
    kmsg.write_text("[ 1.0] loading /home/carol7/.cache/flm/x.xclbin\n"
                    "[ 2.0] board Serial Number: ZX81SPEC\n")
    said = Pasted(files=[kmsg]).text("carol7_notebook saw ZX81SPEC")
    assert "carol7" not in said and "ZX81SPEC" not in said
    assert "carol7" not in pasteable("ran as carol7-x", files=[kmsg])
    assert Pasted(redact=False, files=[kmsg]).text("carol7") == "carol7"


def test_investigate_prints_nothing_private_and_no_redact_keeps_it(machine):
    out = machine / f"i_{USER}.yaml"
    args = ["investigate", "minicpm5-2b-decode", "--no-isolate", "--profile",
            "inflight-cap:40", "--budget", "1"]
    done = invoke(*args, "--out", str(out))
    assert done.exit_code == 1, done.output
    # the lines that are commands for the user name their report as it is called (a
    # placeholder there names no file, and a shell reads it as a redirection); every other
    # line is pasteable evidence, redacted
    assert f"report: {out}" in done.output
    assert f"diagnose: runlist-harness diagnose {out} " in done.output
    evidence = [line for line in done.output.splitlines()
                if not line.startswith(("report: ", "diagnose: "))]
    assert survivors("\n".join(evidence)) == [], done.output
    shown = invoke(*args, "--json", "--out", str(machine / "j.yaml"))
    assert survivors(shown.output) == [] and json.loads(shown.stdout)["command"] == \
        "investigate"
    kept = invoke(*args, "--no-redact", "--out", str(machine / "k.yaml"))
    assert USER in kept.output
