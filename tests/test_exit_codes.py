"""Every exit path goes through one map (`harness.app.exits`): one test per code, the
--json form of errors, the git-bisect convention, and the one path itself: no other
module decides a status, and a real process ends as CliRunner's does."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.app import entry, exits
from harness.app.cli import main
from harness.app.exits import GIT_BISECT, GIT_BISECT_SKIP, for_trials, translate
from harness.execution import session
from harness.model.errors import ExitCode, Terminated
from harness.model.results import TrialStatus
from harness.report.fileformat import load_report


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def fast_run(*extra: str) -> list[str]:
    return ["run", "minicpm5-2b-decode", "--no-isolate", "--trials", "1", *extra]


def test_0_every_trial_completed():
    assert invoke(*fast_run("--plan", "21+21")).exit_code == 0


def test_1_a_trial_failed_on_the_device():
    assert invoke(*fast_run("--plan", "42", "--profile", "inflight-cap:40")).exit_code == 1


@pytest.mark.parametrize("args", [["run", "no-such-case"], ["run", "--trials", "0"],
                                  ["no-such-command"], fast_run("--profile", "wobbly")])
def test_2_bad_input_usage_errors_included(args):
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1, result.output     # one line


def test_3_environment_not_ready():
    result = invoke("run", "nop-depth", "--backend", "xrt")
    assert result.exit_code == 3 and result.output.startswith("error: pyxrt does not import")


def test_4_a_harness_fault_keeps_its_traceback_in_a_log(monkeypatch):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("division by zero inside the harness")
    monkeypatch.setattr(session._Loaded, "build_runlist", broken)
    result = invoke(*fast_run())
    assert result.exit_code == 4
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("harness fault: ZeroDivisionError: division by zero inside the "
                           "harness (a bug in the harness; the traceback is in ")
    assert isinstance(result.exception, SystemExit)     # guarded, not escaped
    log = Path(re.search(r"traceback is in (\S+);", line).group(1))
    assert "Traceback (most recent call last)" in log.read_text()
    assert "build_runlist" not in result.output and "broken" in log.read_text()


def test_4_as_json_when_asked(monkeypatch):
    monkeypatch.setattr(session._Loaded, "build_runlist",
                        lambda *a: (_ for _ in ()).throw(KeyError("x")))
    result = invoke(*fast_run("--json"))
    error = json.loads(result.stdout)["error"]
    assert result.exit_code == 4 and error["kind"] == "harness fault"
    assert error["exit_code"] == 4 and "KeyError" in error["message"]
    bad = json.loads(invoke("run", "no-such-case", "--json").stdout)["error"]
    assert bad["kind"] == "error" and bad["exit_code"] == 2 and "no-such-case" in bad["message"]


@pytest.mark.parametrize("stop, code, how", [(KeyboardInterrupt, 130, "Ctrl-C"),
                                             (Terminated, 143, "SIGTERM")])
def test_130_and_143_stop_with_one_line_and_the_report_kept(monkeypatch, stop, code, how):
    monkeypatch.setattr("harness.execution.runner.run_trial",
                        lambda *a: (_ for _ in ()).throw(stop()))
    result = invoke(*fast_run("--out", "r.yaml"))
    assert result.exit_code == code
    assert result.stderr.strip() == (f"interrupted: stopped by {how}; everything so far is in "
                                     "r.yaml; continue with `runlist-harness run --resume "
                                     "r.yaml`")
    trial = load_report("r.yaml").plans[0].trials[0]
    assert trial.status is TrialStatus.INTERRUPTED and trial.error == f"interrupted by {how}"


class _CutShort:
    """A class attribute whose `__set_name__` meets the signal, as a dataclass's fields do
    when Ctrl-C lands while a module is imported mid-run."""

    def __init__(self, stop: type[BaseException]) -> None:
        self.stop = stop

    def __set_name__(self, owner: type, name: str) -> None:
        raise self.stop()


def _class_made_during(stop: type[BaseException]) -> None:
    class Record:                # noqa: B903 - made only to meet the signal
        field = _CutShort(stop)


@pytest.mark.parametrize("stop, code, how", [(KeyboardInterrupt, 130, "Ctrl-C"),
                                             (Terminated, 143, "SIGTERM")])
def test_a_stop_python_wraps_while_a_class_is_made_still_stops_the_run(monkeypatch, stop,
                                                                       code, how):
    # CPython 3.11 raises RuntimeError("Error calling __set_name__ ...") from the signal
    monkeypatch.setattr("harness.execution.runner.run_trial",
                        lambda *a: _class_made_during(stop))
    result = invoke(*fast_run("--out", "r.yaml"))
    assert result.exit_code == code, result.output
    assert result.stderr.strip().startswith(f"interrupted: stopped by {how}; everything so "
                                            "far is in r.yaml; continue with")
    trial = load_report("r.yaml").plans[0].trials[0]
    assert trial.status is TrialStatus.INTERRUPTED and trial.error == f"interrupted by {how}"


@pytest.mark.parametrize("stop, code, line", [
    (KeyboardInterrupt, 130, "interrupted: stopped by Ctrl-C"),
    (lambda: SystemExit(143), 143, "terminated: stopped by SIGTERM")])   # before stop.install
def test_the_console_script_knows_a_wrapped_stop_during_start_up(monkeypatch, capsys, stop,
                                                                 code, line):
    monkeypatch.setattr(entry, "_invoke", lambda *a: _class_made_during(stop))
    assert entry._run([], "runlist-harness") == code
    assert capsys.readouterr().err == line + "\n"


@pytest.mark.parametrize("args, code", [(["--version"], 0), (["run", "no-such-case"], 2)])
def test_the_console_script_leaves_through_its_exit_hooks_with_its_status(tmp_path, args,
                                                                          code):
    # entry._exit skips the interpreter's teardown, never the hooks (locks, fork servers)
    marker = tmp_path / "hooks-ran"
    program = ("import atexit, pathlib, sys\n"
               f"atexit.register(pathlib.Path({str(marker)!r}).write_text, 'yes')\n"
               "from harness.app.entry import main\n"
               "sys.argv = ['runlist-harness', *sys.argv[1:]]\n"
               "main()\n")
    done = subprocess.run([sys.executable, "-c", program, *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == code, done.stderr
    assert marker.read_text() == "yes"


def test_a_fault_is_not_taken_for_a_stop_and_a_cyclic_chain_ends():
    from harness.model.errors import stop_behind
    fault = ValueError("bad")
    other = RuntimeError("worse")
    fault.__context__, other.__context__ = other, fault
    assert stop_behind(fault) is None
    wrapped = RuntimeError("Error calling __set_name__")
    wrapped.__cause__ = KeyboardInterrupt()
    assert isinstance(stop_behind(wrapped), KeyboardInterrupt)


def test_validate_refuses_what_render_could_not_render(tmp_path):
    fixture = Path(__file__).parent / "fixtures" / "reports" / "v1-run.yaml"
    broken = tmp_path / "broken.yaml"
    broken.write_text(fixture.read_text().replace("  system:\n", "  system: []\n  was:\n", 1))
    result = invoke("report", "check", str(broken))
    assert result.exit_code == 2 and "environment.system: expected object" in result.output
    rendered = invoke("report", "render", str(broken))
    assert rendered.exit_code == 2 and "is not a valid report" in rendered.output


# -- the git-bisect convention -------------------------------------------------------------

@pytest.mark.parametrize("statuses, harness_code, bisect_code", [
    ([TrialStatus.COMPLETED], 0, 0),
    ([TrialStatus.COMPLETED, TrialStatus.FAILED], 1, 1),
    ([TrialStatus.DEADLINE, TrialStatus.FAILED], 4, 1),      # the failure was seen: bad
    ([TrialStatus.COMPLETED, TrialStatus.DEADLINE], 4, GIT_BISECT_SKIP),
    ([TrialStatus.CRASHED], 4, GIT_BISECT_SKIP),
])
def test_trial_statuses_map_to_both_conventions(statuses, harness_code, bisect_code):
    assert for_trials(statuses) == harness_code
    assert for_trials(statuses, GIT_BISECT) == bisect_code


def test_git_bisect_translates_errors_to_cannot_test_but_keeps_interrupts():
    assert [translate(c, GIT_BISECT) for c in (0, 1, 2, 3, 4, 130, 143)] == \
        [0, 1, 125, 125, 125, 130, 143]
    result = invoke("run", "no-such-case", "--exit-codes", "git-bisect")
    assert result.exit_code == GIT_BISECT_SKIP
    assert invoke(*fast_run("--plan", "42", "--profile", "inflight-cap:40", "--backend",
                            "sim", "--exit-codes", "git-bisect")).exit_code == 1


def test_git_bisect_run_finds_the_first_bad_commit(tmp_path):
    """A toy history: each commit names the stack to play in `profile`; from commit 11 on it
    is the failing hypothesis, and commit 8, the first git tests, is broken (bad input, so
    the harness says 125 and git skips it)."""
    import os
    import shlex
    import shutil
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "history"
    repo.mkdir()
    # the caller's environment (how it finds the harness: a venv, PYTHONPATH) without its
    # git settings; a home of the test's own, so no user configuration applies
    env = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t", HOME=str(tmp_path))

    def sh(*args: str) -> str:
        return subprocess.run([git, *args], cwd=repo, check=True, capture_output=True,
                              text=True, env=env).stdout
    sh("init", "-q")
    for number in range(1, 17):
        profile = "wobbly" if number == 8 else ("inflight-cap:40" if number >= 11 else "staging")
        (repo / "profile").write_text(profile)
        (repo / "number").write_text(str(number))
        sh("add", "profile", "number")
        sh("commit", "-q", "-m", f"commit {number}")
    first = sh("rev-list", "--max-parents=0", "HEAD").strip()
    sh("bisect", "start", "HEAD", first)
    # the harness of this interpreter, whether or not a console script is on PATH
    test = (f'{shlex.quote(sys.executable)} -m harness run minicpm5-2b-decode --plan 42 '
            '--no-isolate --trials 1 --backend sim --profile "$(cat profile)" '
            '--exit-codes git-bisect')
    out = sh("bisect", "run", "sh", "-c", test)
    assert re.search(r"is the first bad commit", out), out
    assert sh("log", "-1", "--format=%s", "refs/bisect/bad").strip() == "commit 11"
    assert "git bisect skip" in sh("bisect", "log")          # commit 8 was skipped


# -- one path ------------------------------------------------------------------------------

PACKAGE = Path(__file__).resolve().parents[1] / "harness"
DECIDES = {"harness/app/exits.py", "harness/model/errors.py"}


def test_no_module_but_exits_names_an_exit_status():
    """`ExitCode.X` (a status chosen) and `sys.exit`/`os._exit` (a status used) appear only
    where statuses are decided: exits.py, the error classes, and where a process ends (the
    console scripts' entry, a command's `main`, the worker, and `stop.leave`, which the
    console scripts and the worker leave through)."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        name = path.relative_to(PACKAGE.parent).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    node.value.id == "ExitCode" and name not in DECIDES:
                found.append(f"{name}:{node.lineno} ExitCode.{node.attr}")
            if isinstance(node, ast.Attribute) and node.attr in ("exit", "_exit") and \
                    isinstance(node.value, ast.Name) and node.value.id in ("sys", "os") and \
                    name not in {"harness/app/entry.py", "harness/app/cli/__init__.py",
                                 "harness/execution/worker.py", "harness/execution/stop.py"}:
                found.append(f"{name}:{node.lineno} {node.value.id}.{node.attr}")
    assert found == []


def test_the_console_scripts_early_numbers_are_exits_own():
    assert (entry.INTERRUPTED, entry.TERMINATED) == (ExitCode.INTERRUPTED, ExitCode.TERMINATED)
    assert exits.for_stop("SIGTERM") == 143 and exits.for_stop("SIGINT") == 130


@pytest.mark.parametrize("args, code", [
    (["run", "--trials", "0"], 2),
    (["no-such-command"], 2),
    (["run", "--trials", "0", "--exit-codes", "git-bisect"], 125),
    (["run", "--trials", "0", "--exit-codes=git-bisect"], 125),
    (["run", "no-such-case", "--exit-codes=git-bisect"], 125),
    (["run", "no-such-case", "--json"], 2),
])
def test_a_real_process_ends_as_clirunner_does(args, code):
    """One path for usage errors too: parsing fails inside the same `main` in a console
    script as under CliRunner, with the same line (no blank line click would print)."""
    done = subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True,
                          text=True, timeout=60)
    under = invoke(*args)
    assert done.returncode == code == under.exit_code, done.stderr
    assert done.stdout == under.stdout and done.stderr == under.stderr
    lines = (done.stdout if "--json" in args else done.stderr).splitlines()
    assert len(lines) == 1 and lines[0].strip(), lines
