"""What the harness says of a wrong or hostile input, and what it echoes of other programs'
text: an error names a wrong file and what it is without quoting it (a `.env`, a private
key); a case file that is a device or a FIFO is named so; a report cut short names what
it lacks; `report check` holds a runlist's chains to its runs; invisible characters that
reorder or hide text are escaped; a program's and a server's lines on the console are
redacted as the report is; and the lines that are commands for the user name their own
files as they are called."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakeflm import Behaviour, FakeFlm
from privacy_kit import as_private_user

from harness.app.cli import main
from harness.formats.printable import escape_controls

ENV = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGSECRET9\n"
KEY = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUSECRETKEY\n"
       "-----END OPENSSH PRIVATE KEY-----\n")


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("name, text", [(".env", ENV), ("id_ed25519", KEY),
                                        ("secret.json", '"SECRETJSON"')])
@pytest.mark.parametrize("command", [("run",), ("reproduce", "--capture")])
def test_a_wrong_file_is_named_and_never_quoted(tmp_path, name, text, command):
    (tmp_path / name).write_text(text)
    done = invoke(*command, name)
    assert done.exit_code == 2, done.output
    assert "SECRET" not in done.output and "BEGIN" not in done.output
    assert name in done.output and "is this the file you meant?" in done.output
    assert re.search(r"got a text of \d+ characters", done.output)


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_resumed_report_whose_case_is_no_file_names_what_it_is(tmp_path, kind):
    out = tmp_path / "r.yaml"
    assert invoke("run", "minicpm5-2b-decode", "--trials", "2", "--no-isolate", "--out",
                  str(out)).exit_code == 0
    if kind == "fifo":
        target = tmp_path / "case.yaml"
        os.mkfifo(target)
    else:
        target = Path("/dev/zero")
    text = out.read_text()
    text = re.sub(r"(?m)^  (file|reference): .*minicpm5-2b-decode\.yaml$",
                  lambda m: f"  {m.group(1)}: {target}", text)
    out.write_text(re.sub(r"\nfinished: .*\n", "\nfinished: null\n", text, count=1))
    done = invoke("run", "--resume", str(out))
    assert done.exit_code == 2, done.output
    assert "does not exist" not in done.output
    assert ("is a FIFO (named pipe), not a file" if kind == "fifo" else
            "is a character device, not a file") in done.output


def test_a_report_cut_short_in_its_header_names_what_it_lacks(tmp_path):
    out = tmp_path / "r.yaml"
    assert invoke("run", "minicpm5-2b-decode", "--trials", "2", "--no-isolate", "--out",
                  str(out)).exit_code == 0
    head, journal = out.read_text().split("\njournal:\n")
    head = re.sub(r"\ncase:\n(?:  .*\n)+", "\n", head + "\n")
    out.write_text(re.sub(r"\nfinished: .*\n", "\nfinished: null\n", head) + "journal:\n"
                   + journal)
    done = invoke("run", "--resume", str(out))
    assert done.exit_code == 2, done.output
    assert "KeyError" not in done.output
    assert "its header has no case: the report is cut short or was edited" in done.output


def test_report_check_holds_a_runlist_s_chains_to_its_runs(tmp_path):
    out = tmp_path / "r.yaml"
    assert invoke("run", "minicpm5-2b-decode", "--plan", "42", "--trials", "1",
                  "--no-isolate", "--out", str(out)).exit_code == 0
    out.write_text(out.read_text().replace('"runs": 42, "chains": [24, 18]',
                                           f'"runs": {10**30}, "chains": [24, 18]', 1))
    done = invoke("report", "check", str(out))
    assert done.exit_code == 2, done.output
    assert "runlists[0]: runs is a number of 31 digits, but its chains 24+18 add up to 42" \
        in done.output


def test_characters_that_reorder_or_hide_text_are_escaped():
    """U+202E (right-to-left override) and U+200B (zero-width space) from a stranger's
    kernel-log line reached the render as they were (CVE-2021-42574, UAX #9)."""
    line = "amdxdna: job \u202etimeout\u202c ok\u200bhidden \u2066x\u2069 \ufeff\u00ad é —"
    assert escape_controls(line) == ("amdxdna: job \\u202etimeout\\u202c ok\\u200bhidden "
                                     "\\u2066x\\u2069 \\ufeff\\u00ad é —")


def test_the_programs_lines_on_the_console_are_redacted_as_the_report(monkeypatch, tmp_path):
    home = as_private_user(monkeypatch, tmp_path, "quill5", "brisk-otter-77")
    monkeypatch.setenv("HOME", str(home))
    said = ("echo 'loading /home/quill5/models/m.bin with hf_CanaryHuggingFace0123456789ab "
            "AKIAIOSFODNN7CANARY1'; echo 'error: runlist failed execution "
            "(ERT_CMD_STATE_TIMEOUT) at /home/quill5/x' >&2")
    done = CliRunner().invoke(main, ["capture", "record", "--after", "0", "--no-capture",
                                     "--no-recovery-check", "--out", "cap", "--", "sh", "-c",
                                     said])
    assert done.exit_code == 0, done.output
    for canary in ("quill5", "CanaryHuggingFace", "AKIAIOSFODNN7CANARY1"):
        assert canary not in done.output, canary
    assert "report: cap/report.yaml" in done.output
    kept = CliRunner().invoke(main, ["capture", "record", "--after", "0", "--no-capture",
                                     "--no-recovery-check", "--no-redact", "--out", "cap2",
                                     "--", "sh", "-c", said])
    assert "/home/quill5/models/m.bin" in kept.output


def test_the_server_s_words_on_the_console_are_redacted_as_the_report(monkeypatch, tmp_path):
    home = as_private_user(monkeypatch, tmp_path, "quill5", "brisk-otter-77")
    monkeypatch.setenv("HOME", str(home))
    error = ("runlist failed execution (ERT_CMD_STATE_TIMEOUT) loading "
             "/home/quill5/models with hf_CanaryHuggingFace0123456789ab")
    with FakeFlm(Behaviour(chat="error", error=error)) as server:
        done = invoke("serve-probe", "--url", server.url, "--model", "minicpm5:2b",
                      "--requests", "1", "--out", "s_quill5.yaml")
    assert done.exit_code == 1, done.output
    assert "ERT_CMD_STATE_TIMEOUT" in done.output
    for canary in ("/home/quill5/models", "CanaryHuggingFace"):
        assert canary not in done.output, canary
    assert "report: s_quill5.yaml" in done.output


def test_the_commands_for_the_user_name_their_files_as_they_are(monkeypatch, tmp_path):
    """`investigate --out inv_quill5c.yaml` printed `report: inv_<user-1>c.yaml` and a
    `diagnose` command naming it so (a shell reads `<user-1>` as a redirection); the
    evidence lines stay redacted."""
    as_private_user(monkeypatch, tmp_path, "quill5", "brisk-otter-77")
    done = CliRunner().invoke(main, ["investigate", "--no-isolate", "--profile",
                                     "inflight-cap:40", "--budget", "1", "--out",
                                     "inv_quill5c.yaml"])
    assert (tmp_path / "inv_quill5c.yaml").is_file(), done.output
    out = done.stdout
    assert "report: inv_quill5c.yaml" in out
    assert "diagnose: runlist-harness diagnose inv_quill5c.yaml" in out
    assert "evidence: inv_<user-1>c.yaml" in out
    diagnosed = invoke("diagnose", "inv_quill5c.yaml").stdout
    assert "evidence: inv_<user-1>c.yaml" in diagnosed
    assert not [line for line in diagnosed.splitlines()
                if "runlist-harness" in line and "<user-" in line]


def test_only_a_line_that_tells_what_to_run_or_open_keeps_the_user_s_paths():
    from harness.report.pasted import COMMAND_LINE
    assert COMMAND_LINE.match("next: runlist-harness run --resume r.yaml")
    assert COMMAND_LINE.match("report: r.yaml")
    assert COMMAND_LINE.match("  then reproduce_ert_timeout --capture cap")
    assert not COMMAND_LINE.match("evidence: r.yaml (run, SIMULATED)")
    assert not COMMAND_LINE.match("  monolithic 42: TIMEOUT [r.yaml: plans[0]]")
