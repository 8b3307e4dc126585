"""A value named as a secret is a secret wherever it stands (docs/reports-and-privacy.md,
"Named secrets"): `password=x`, `HF_TOKEN=x`, `PASSWORD: x`, `"api_key": "x"` and an
option `--password x` on a command line, not only after `&` or `;` in a URL. A program's
output and its command line, as `capture record` keeps them, reached the report, its
render and its bundle."""

from __future__ import annotations

import tarfile

import pytest
from click.testing import CliRunner

from harness.app.cli import main
from harness.report.redact import Redactor

SECRETS = ["SECRETI", "abcSECRETH", "SECRETL12345", "SECRETK", "SECRETJ", "SECRETM"]
SCRIPT = ('echo "password=SECRETI token=abcSECRETH"; echo "HF_TOKEN=SECRETL12345 PASSWORD: '
          'SECRETK"; echo \'{"client_secret": "SECRETM"}\'')


def test_a_program_s_named_secrets_reach_neither_report_render_nor_bundle(tmp_path):
    done = CliRunner().invoke(main, ["capture", "record", "--after", "0", "--no-capture",
                                     "--no-recovery-check", "--out", "cap2", "--", "sh", "-c",
                                     SCRIPT, "--password", "SECRETJ"])
    assert done.exit_code == 0, done.output
    report = (tmp_path / "cap2" / "report.yaml").read_text()
    assert [s for s in SECRETS if s in report] == []
    assert "password=<secret>" in report and "- --password\n  - <secret>" in report
    assert CliRunner().invoke(main, ["report", "check", "cap2/report.yaml"]).exit_code == 0
    render = CliRunner().invoke(main, ["report", "render", "cap2/report.yaml"]).output
    assert [s for s in SECRETS if s in render] == []
    bundled = CliRunner().invoke(main, ["report", "bundle", "cap2/report.yaml"])
    assert bundled.exit_code == 0, bundled.output
    with tarfile.open(tmp_path / "cap2" / "report.bundle.tar.gz") as tar:
        held = b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())
    assert [s for s in SECRETS if s.encode() in held] == []


@pytest.mark.parametrize("text, kept", [
    ("max_tokens: 16 prompt_tokens=5", "max_tokens: 16 prompt_tokens=5"),
    ("1.2 GB per token = 3.4 GB/s", "1.2 GB per token = 3.4 GB/s"),
    ("author: bob, signal: 9, the token x, --no-token", "author: bob, signal: 9, the token x"),
    ("export HF_TOKEN=hunter2x and PASSWORD: K77", "export HF_TOKEN=<secret> and PASSWORD: "
                                                  "<secret>"),
    ("api_key = 'two words'", "api_key = '<secret>'"),
    ("run --client-secret=M99 --token t0k", "run --client-secret=<secret> --token <secret>"),
])
def test_a_named_secret_goes_and_the_words_around_it_stay(text, kept):
    assert Redactor().text(text).startswith(kept)
