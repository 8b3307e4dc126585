"""The hints an error gives lead where the user meant to go: a range of depths written with
a dash is shown as A..B, a plan of another depth says how to run that depth, an option of
another command names that command (not a close spelling), and --no-check is offered only
where it exists and can help."""

from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner

from harness.app.cli import main


def error_of(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 2, result.output
    [line] = [x for x in result.output.splitlines() if x.startswith("error: ")]
    return line


def test_a_dashed_range_of_depths_is_shown_as_a_range():
    line = error_of("sweep", "minicpm5-2b-decode", "--depths", "1-64", "--chunks", "21")
    assert "use A..B (e.g. 1..64), A..B:STEP (1..128:8), or numbers separated by commas" in line
    assert line.endswith("for the depths from 1 to 64: 1..64")
    # --chunks has no ranges: it is not offered one
    line = error_of("sweep", "minicpm5-2b-decode", "--depths", "1..64", "--chunks", "1-4")
    assert line.endswith("use numbers separated by commas, e.g. 1,8,21,24,42")


def test_a_plan_of_another_depth_says_how_to_run_that_depth():
    line = error_of("run", "minicpm5-2b-decode", "--plan", "41")
    assert line.endswith("A plan cuts the case's 42 layers; to run depth 41 in one runlist, "
                         "sweep it: runlist-harness sweep minicpm5-2b-decode --depths 41 "
                         "--chunks 41")
    line = error_of("run", "minicpm5-2b-decode", "--plan", "20+21")
    assert "to run depth 41 in runlists of at most 21, sweep it: runlist-harness sweep " \
           "minicpm5-2b-decode --depths 41 --chunks 21" in line
    assert "sweep" not in error_of("run", "minicpm5-2b-decode", "--plan", "21+x")


def test_an_option_of_another_command_names_that_command():
    line = error_of("reproduce", "--resume", "r.yaml")
    assert line == ("error: No such option '--resume' here; `runlist-harness investigate`, "
                    "`runlist-harness run` take it (see `runlist-harness reproduce --help`)")
    assert "--realtime" not in line
    # the console script, in a process of its own, answers the same
    done = subprocess.run([sys.executable, "-c", "from harness.app.entry import reproduce; "
                           "reproduce()", "--resume", "r.yaml"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("error: No such option '--resume' here; "
                                  "`runlist-harness investigate`, `runlist-harness run` take "
                                  "it (see `reproduce_ert_timeout --help`)")
    # an option no command has keeps click's own suggestion
    assert "Did you mean '--replay'?" in error_of("bisect", "c", "--replay-it")


def test_no_check_is_offered_only_where_it_exists_and_can_help(tmp_path):
    missing = str(tmp_path / "nope.yaml")
    for command in ("render", "bundle"):
        assert error_of("report", command, missing) == (
            f"error: {missing} does not exist; give a report file (reports/*.yaml)")
    bad = tmp_path / "bad.yaml"
    bad.write_text("x: 1\n")
    assert error_of("report", "render", str(bad)).endswith("; --no-check renders it anyway")
    assert error_of("report", "bundle", str(bad)).endswith("; --no-check bundles it anyway")
    line = error_of("report", "compare", str(bad), str(bad))
    assert "--no-check" not in line and line.endswith("lists every problem")
    assert "--no-check" not in error_of("report", "compare", missing, str(bad))
    line = error_of("report", "compare", "--no-check", str(bad), str(bad))
    assert line.startswith("error: No such option '--no-check' here; `runlist-harness report "
                           "bundle`, `runlist-harness report render` take it (see "
                           "`runlist-harness report compare --help`)")
