"""Bad input a new user types is told what is wrong and the form that is right: a known
profile token without its parameter, a capture folder without replay.json, a mistyped
command at any level of the command line."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from harness.app.cli import main
from harness.model.errors import BadInput
from harness.sim.profiles import HYPOTHESES, catalogue, parse_profile


def error_of(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 2, result.output
    [line] = [x for x in result.output.splitlines() if x.startswith("error: ")]
    return line


def refusal(profile: str) -> str:
    with pytest.raises(BadInput) as raised:
        parse_profile(profile)
    return str(raised.value)


def test_a_known_token_without_its_parameter_is_named_with_its_form():
    said = refusal("hang-at")
    assert said.startswith("profile token 'hang-at' lacks its :K; give hang-at:K, e.g. "
                           "hang-at:3")
    assert "unknown" not in said
    # every hypothesis, as its entry gives its parameter (one added later included)
    for head, entry in HYPOTHESES.items():
        assert f"lacks its :{entry.param}; give {head}:{entry.param}" in refusal(head)
        assert f"lacks its :{entry.param}" in refusal(f"staging,{head}:")
    # a token of the stack with a value it does not take names the values it does
    said = refusal("device:npu9")
    assert "device does not take 'npu9'; give device:npu1|npu4|npu5|npu6" in said
    assert "give kernel:RELEASE, RELEASE a series of " in refusal("kernel:5.4")
    assert refusal("realtime:1").endswith("realtime takes no parameter; give realtime alone")


def test_an_unknown_token_keeps_the_list_and_gains_the_close_name():
    said = refusal("hangat:3")
    assert said.startswith("unknown profile token 'hangat:3' in 'hangat:3'; did you mean "
                           "hang-at:K? allowed: ")
    assert all(doc.syntax in said for doc in catalogue())
    assert "did you mean" not in refusal("wobbly")


def test_a_count_says_which_whole_numbers_it_takes():
    # inflight-cap counts from 1, hang-at is a position from 0
    assert "inflight-cap takes a whole number of 1 or more, e.g. inflight-cap:3" in \
        refusal("inflight-cap:-5")
    assert "hang-at takes a whole number of 0 or more" in refusal("hang-at:-1")
    line = error_of("run", "nop-depth", "--profile", "hang-at")
    assert "lacks its :K; give hang-at:K" in line


def test_a_capture_folder_without_replay_json_is_told_so(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    line = error_of("reproduce", "--capture", str(empty))
    assert f"{empty} is a folder without replay.json, so not an XRT capture: it is empty" \
        in line
    assert "does not exist" not in line
    # a capture cut short by its program's end: its artefacts and no replay.json (STACK.md 9:
    # replay.json is written only when the process exits normally)
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "bo_0.bin").write_bytes(b"\0" * 16)
    line = error_of("reproduce", "--capture", str(cut))
    assert "XRT writes replay.json only when the captured program exits normally" in line
    assert "record it again" in line
    # `run` of a folder is told the same
    assert "is a folder without replay.json" in error_of("run", str(empty), "--no-isolate")
    # and a folder that is not there is named as one
    line = error_of("reproduce", "--capture", str(tmp_path / "gone"))
    assert line.startswith(f"error: --capture {tmp_path / 'gone'}: no such folder, nor a "
                           "case of that name")


@pytest.mark.parametrize(("typed", "meant"), [
    (["bisct"], "runlist-harness bisect"),
    (["report", "rendr"], "runlist-harness report render"),
    (["sim", "profils"], "runlist-harness sim profiles"),
    (["serve_probe"], "runlist-harness serve-probe"),
])
def test_a_mistyped_command_is_offered_the_one_meant(typed, meant):
    line = error_of(*typed)
    assert line.startswith(f"error: No such command {typed[-1]!r}; did you mean `{meant}`?")


def test_every_group_answers_a_mistyped_command():
    # each group of the command line, those added later too
    pending: list[tuple[list[str], click.Group]] = [([], main)]
    seen = 0
    while pending:
        path, group = pending.pop()
        names = group.list_commands(click.Context(group))
        for name in names:
            command = group.get_command(click.Context(group), name)
            if isinstance(command, click.Group):
                pending.append(([*path, name], command))
        typo = names[0][:-1] + "q"
        line = error_of(*path, typo)
        assert f"No such command {typo!r}; did you mean" in line, (path, line)
        # a word like none of them lists what the group has
        line = error_of(*path, "zzzzzz")
        assert f"has: {', '.join(names)}" in line
        seen += 1
    assert seen > 5


def test_the_console_script_answers_a_mistyped_command(tmp_path):
    done = subprocess.run([sys.executable, "-m", "harness", "bisct"], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == ("error: No such command 'bisct'; did you mean `runlist-harness "
                           "bisect`? (see `runlist-harness --help`)\n")
