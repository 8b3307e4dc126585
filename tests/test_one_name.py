"""One name, one definition: what reads as bad input is bad input, and a bug is a fault."""

from __future__ import annotations

from click.testing import CliRunner

from harness.app.cli import main
from harness.search.bisect import BisectSettings


def test_a_bug_behind_a_chunk_spec_is_a_fault_not_bad_input(monkeypatch, tmp_path):
    def broken(self, x):
        raise RuntimeError("a bug in the harness")
    monkeypatch.setattr(BisectSettings, "plan", broken)
    result = CliRunner().invoke(main, ["bisect", "minicpm5-2b-decode", "--lo", "1", "--hi",
                                       "8", "--chunk", "4", "--no-isolate", "--out",
                                       str(tmp_path / "r.yaml")])
    assert result.exit_code == 4, result.output
    assert "--chunk" not in result.output


def test_a_bad_chunk_spec_is_bad_input(tmp_path):
    result = CliRunner().invoke(main, ["bisect", "minicpm5-2b-decode", "--lo", "1", "--hi",
                                       "8", "--chunk", "even:0", "--no-isolate", "--out",
                                       str(tmp_path / "r.yaml")])
    assert result.exit_code == 2 and "--chunk 'even:0'" in result.output
