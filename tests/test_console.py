"""`reproduce_ert_timeout` answers as `runlist-harness` does (-h, --help, --version, errors
as JSON under --json), and a `git bisect run` test never lands on the simulated stack by
accident."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from harness import __version__
from harness.app.cli import main
from harness.app.cli.run_cmd import reproduce

STANDALONE = "reproduce_ert_timeout"


def standalone(*args: str):
    """The console script's command, on its own as the script runs it (no group above)."""
    return CliRunner().invoke(reproduce, list(args), prog_name=STANDALONE)


def test_reproduce_takes_both_help_flags():
    for flag in ("-h", "--help"):
        result = standalone(flag)
        assert result.exit_code == 0, result.output
        assert result.output.startswith(f"Usage: {STANDALONE} [OPTIONS] [CASE]")


def test_reproduce_takes_version():
    result = standalone("--version")
    assert result.exit_code == 0, result.output
    assert result.output == f"{STANDALONE}, version {__version__}\n"
    grouped = CliRunner().invoke(main, ["reproduce", "--version"])
    assert grouped.output == f"runlist-harness, version {__version__}\n"


@pytest.mark.parametrize("args, says", [
    (["--json", "--plans", "42"], "No such option '--plans'"),
    (["--json", "--plan", "42"], "--plan pick a captured frame and its cut; give --capture"),
    (["--json", "--profile", "wobbly"], "unknown profile token 'wobbly'"),
    (["--profile", "wobbly", "--json"], "unknown profile token 'wobbly'"),
])
def test_reproduce_answers_errors_in_json_under_json(args, says):
    for result in (standalone(*args), CliRunner().invoke(main, ["reproduce", *args])):
        assert result.exit_code == 2
        error = json.loads(result.stdout)["error"]
        assert says in error["message"] and error["exit_code"] == 2


FAST = ["--no-isolate", "--trials", "1"]


@pytest.mark.parametrize("command", [["run", "nop-depth", "--plan", "42"], ["reproduce",
                                                                           "nop-depth"]])
def test_git_bisect_mode_without_pyxrt_skips_instead_of_simulating(command, tmp_path):
    """pyxrt is sealed off in the tests: `auto` would take the simulator, but a bisection
    that did so would test the simulator at every commit."""
    out = tmp_path / "r.yaml"
    plain = CliRunner().invoke(main, [*command, *FAST, "--out", str(out)])
    assert plain.exit_code == 0 and out.exists()          # the ordinary convention falls back
    result = CliRunner().invoke(main, [*command, *FAST, "--exit-codes", "git-bisect",
                                       "--out", str(tmp_path / "b.yaml")])
    assert result.exit_code == 125, result.output
    assert "pyxrt does not import" in result.output
    assert not (tmp_path / "b.yaml").exists()             # nothing ran


def test_git_bisect_mode_simulates_only_when_asked_by_name(tmp_path):
    base = ["run", "nop-depth", "--plan", "42", *FAST, "--exit-codes", "git-bisect"]
    profiled = CliRunner().invoke(main, [*base, "--profile", "hang-at:1"])
    assert profiled.exit_code == 125 and "add --backend sim" in profiled.output
    asked = CliRunner().invoke(main, [*base, "--profile", "hang-at:1", "--backend", "sim",
                                      "--out", str(tmp_path / "r.yaml")])
    assert asked.exit_code == 1, asked.output             # bad: the hypothesis fails it
    documented = CliRunner().invoke(main, [*base, "--backend", "sim",
                                           "--out", str(tmp_path / "s.yaml")])
    assert documented.exit_code == 0, documented.output


def test_git_bisect_mode_standalone(tmp_path):
    result = standalone("nop-depth", *FAST, "--exit-codes", "git-bisect", "--json")
    assert result.exit_code == 125
    assert json.loads(result.stdout)["error"]["exit_code"] == 125


def test_the_backend_line_says_why_the_simulated_stack_ran(tmp_path):
    """The first console line ends with the reason as a whole clause, for either way in."""
    fallen = CliRunner().invoke(main, ["run", "nop-depth", "--plan", "42", *FAST,
                                       "--out", str(tmp_path / "a.yaml")])
    first = fallen.output.splitlines()[0]
    assert first.startswith("backend: SIMULATED stack")
    assert first.endswith("; pyxrt does not import here, so the simulated stack ran instead")
    profiled = CliRunner().invoke(main, ["run", "nop-depth", "--plan", "42", *FAST,
                                         "--profile", "staging",
                                         "--out", str(tmp_path / "b.yaml")])
    assert profiled.output.splitlines()[0].endswith("; chosen because a profile was given")
