"""Every word the harness writes is its vocabulary (harness.report.harness_words): a user or
host of that name loses the name where it stands as one, never the harness's word. A user
`max` left the report's own plan `max:24` as `<user-1>:24`, which `report check` then
refused, and a user `sim` the option `--backend sim` and the path harness/sim/pyxrt.py
(docs/reports-and-privacy.md, "A user or host whose name is a word the report itself
uses")."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner
from privacy_kit import as_private_user

from harness.app.cli import main
from harness.report.harness_words import VOCABULARY, is_harness_word, words_of


def _command_line_words() -> set[str]:
    """Every command, option, option value and metavar of the command line, as words."""
    found: set[str] = set()

    def walk(command: click.Command, name: str, ctx: click.Context) -> None:
        found.update(words_of(name))
        for param in command.params:
            for option in (*param.opts, *param.secondary_opts):
                found.update(words_of(option))
            if isinstance(param.type, click.Choice):
                for choice in param.type.choices:
                    found.update(words_of(str(choice)))
        if isinstance(command, click.Group):
            for sub in command.list_commands(ctx):
                inner = command.get_command(ctx, sub)
                assert inner is not None
                walk(inner, sub, click.Context(inner, parent=ctx))
    walk(main, "runlist-harness", click.Context(main))
    return found


def test_every_word_of_the_command_line_is_vocabulary():
    assert sorted(w for w in _command_line_words() if w not in VOCABULARY) == []


def test_every_profile_token_shipped_case_and_known_pack_is_vocabulary():
    from harness.formats.known import known_packs
    from harness.sim.profiles import catalogue
    from harness.sources.case import find_case  # noqa: F401 (the shipped cases' folder)
    heads = {doc.syntax.split(":")[0] for doc in catalogue()}
    cases = ["minicpm5-2b-decode", "nop-depth", "qwen3-1.7b-decode", "qwen3-4b-decode"]
    words = set().union(*(words_of(text) for text in (*heads, *cases, *known_packs())))
    assert sorted(w for w in words if not is_harness_word(w)) == []


def test_every_module_of_the_harness_is_vocabulary():
    assert is_harness_word("sim") and is_harness_word("pyxrt") and \
        is_harness_word("execution") and is_harness_word("redacted_writing")


@pytest.mark.parametrize("user", ["max", "even", "sim", "auto", "control"])
def test_a_user_named_as_a_word_of_the_harness_keeps_the_report_whole(user, monkeypatch,
                                                                      tmp_path):
    home = as_private_user(monkeypatch, tmp_path, user, "calm-heron-12")
    monkeypatch.setenv("HOME", str(home))
    done = CliRunner().invoke(main, ["run", "minicpm5-2b-decode", "--plan", "max:24", "--plan",
                                     "even:2", "--trials", "1", "--no-isolate", "--backend",
                                     "sim", "--out", "r.yaml"])
    assert done.exit_code == 0, done.output
    text = (tmp_path / "r.yaml").read_text()
    assert '"plan": "max:24"' in text and "<user-1>:24" not in text
    assert "--backend\n  - sim" in text or "- sim\n" in text
    assert "harness/sim/pyxrt.py" in text
    checked = CliRunner().invoke(main, ["report", "check", "r.yaml"])
    assert checked.exit_code == 0, checked.output
    render = CliRunner().invoke(main, ["report", "render", "r.yaml"]).output
    assert "<user-1>:24" not in render and "'<user-1>'" not in render
    assert "--backend sim" in render
    diagnosed = CliRunner().invoke(main, ["diagnose", "r.yaml"])
    assert diagnosed.exit_code == 0, diagnosed.output


def test_a_journal_line_the_redaction_would_garble_is_refused_not_written(monkeypatch):
    """The header was checked for placeholders in the harness's own fields; a journal line
    was not, so a trial naming `<user-1>:24` reached the file (its guards taken away
    here, as a bug would)."""
    from harness.model.errors import RedactionFault
    from harness.report.redact import Redactor
    from harness.report.redacted_writing import WriteRedaction
    monkeypatch.setattr("harness.report.redact.VOCABULARY", frozenset())
    monkeypatch.setattr("harness.report.redact.is_harness_word", lambda word, words: False)
    monkeypatch.setattr("harness.report.redact.STRUCTURED_KEYS", frozenset())
    redactor = Redactor()
    redactor.add_literal("user", "max")
    writing = WriteRedaction(redactor)
    with pytest.raises(RedactionFault, match="a trial entry's plan: '<user-1>:24'"):
        writing.line(b'- {"trial": {"plan": "max:24", "index": 0, "status": "completed"}}\n')
