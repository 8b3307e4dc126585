"""Hostile and mistaken inputs: each gets one line and its documented exit code, nothing is
overwritten or silently substituted, and what the harness says is exactly what happened."""

from __future__ import annotations

import hashlib
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import harness
from harness.app.cli import main
from harness.report.fileformat import load_report
from harness.search.sweep import Cell, Row, cell_plan

HARNESS = [sys.executable, "-m", "harness"]
BOMB = "".join(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9 if i else ["x"] * 9) + "]\n"
               for i in range(9))


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def bounded(*args: str, memory_mb: int = 1024, seconds: float = 30) -> subprocess.CompletedProcess:
    """The harness in a process that may use `memory_mb` and `seconds`, no more."""
    def limits():
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
    return subprocess.run([*HARNESS, *args], capture_output=True, text=True, timeout=seconds,
                          preexec_fn=limits)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- alias bombs ------------------------------------------------------------------------------

def test_an_alias_bomb_case_is_refused_in_bounded_time_and_memory(tmp_path):
    case = tmp_path / "cases" / "bomb.yaml"
    case.parent.mkdir()
    case.write_text(BOMB + "case: bomb\n")
    for args in (["cases", "check", str(case)], ["cases", "list"]):
        done = bounded(*args, **{} if args[1] == "check" else {})
        assert "aliases are not allowed" in done.stdout + done.stderr, done
    assert bounded("cases", "check", str(case)).returncode == 2


def test_an_alias_bomb_report_is_refused_by_validate_and_render(tmp_path):
    report = tmp_path / "bomb.yaml"
    report.write_text("schema: xdna-runlist-harness/report/v2\n" + BOMB)
    for args in (["report", "check", str(report)], ["report", "render", str(report)]):
        done = bounded(*args)
        assert done.returncode == 2, done.stderr
        assert "aliases are not allowed" in done.stdout + done.stderr


# -- resume and replay on the wrong report --------------------------------------------------

@pytest.fixture
def finished(tmp_path) -> Path:
    out = tmp_path / "done.yaml"
    invoke("run", "minicpm5-2b-decode", "--no-isolate", "--trials", "1", "--out", str(out))
    return out


def test_resume_of_a_finished_report_is_refused_and_the_file_untouched(finished):
    before = digest(finished)
    result = invoke("run", "--resume", str(finished))
    assert result.exit_code == 2 and "already finished (at " in result.output
    assert digest(finished) == before


def test_resume_and_replay_name_the_command_a_report_needs(tmp_path):
    bisect = tmp_path / "b.yaml"
    invoke("bisect", "minicpm5-2b-decode", "--lo", "30", "--hi", "44", "--trials", "1",
           "--no-isolate", "--profile", "inflight-cap:37", "--max-trials", "1", "--out",
           str(bisect))
    before = digest(bisect)
    result = invoke("run", "--resume", str(bisect))
    assert result.exit_code == 2 and f"a bisect report: continue it with `runlist-harness " \
        f"bisect --replay {bisect}`" in result.output
    sweep = invoke("sweep", "--replay", str(bisect))
    assert sweep.exit_code == 2 and "bisect --replay" in sweep.output
    assert digest(bisect) == before


def test_a_stopped_sweep_goes_on_with_replay(tmp_path):
    out = tmp_path / "s.yaml"
    first = invoke("sweep", "minicpm5-2b-decode", "--depths", "36..44:4", "--chunks", "21,42",
                   "--trials", "1", "--no-isolate", "--profile", "inflight-cap:40",
                   "--max-trials", "2", "--out", str(out))
    assert first.exit_code == 5           # stopped: not a finished search
    assert f"continue with `runlist-harness sweep --replay {out}`" in first.output
    stopped = load_report(out)
    assert stopped.finished is None and stopped.sections["sweep"]["depths"] == [36, 40, 44]
    again = invoke("sweep", "--replay", str(out))
    assert again.exit_code == 0, again.output
    done = load_report(out)
    assert done.finished and done.sections["sweep"]["complete"] is True
    # 3 depths x 2 chunks are 6 distinct plans: 2 kept, 4 more, none run again
    assert sorted(len(p.trials) for p in done.plans) == [1] * 6
    assert "sweep: 3/~6 trials" in again.output
    assert "every answered trial failed in some cell from depth 44" in again.output


# -- evidence integrity ------------------------------------------------------------------------

def test_a_simulated_report_that_claims_hardware_is_invalid(finished, tmp_path):
    forged = tmp_path / "forged.yaml"
    forged.write_text(finished.read_text().replace("simulated: true", "simulated: false", 1))
    result = invoke("report", "check", str(forged))
    assert result.exit_code == 2
    assert "backend.simulated: False contradicts backend.kind 'sim'" in result.output
    assert invoke("report", "render", str(forged)).exit_code == 2
    assert load_report(forged).simulated                  # one place decides: the kind


# -- numbers, sizes, checks --------------------------------------------------------------------

@pytest.mark.parametrize("args, words", [
    (["run", "minicpm5-2b-decode", "--deadline", "nan"], "is not a finite number"),
    (["run", "minicpm5-2b-decode", "--deadline", "inf"], "is not a finite number"),
    (["run", "minicpm5-2b-decode", "--no-isolate", "--deadline", "5"],
     "--deadline bounds a trial's worker"),
    (["run", "minicpm5-2b-decode", "--profile", "slow:layer:nan"], "slow:KERNEL:US with US"),
    (["bisect", "minicpm5-2b-decode", "--chunks-at", "42", "--lo", "50", "--hi", "60"],
     "a chunk size above the depth is one runlist"),
])
def test_bad_numbers_are_one_line_exit_2(args, words):
    result = invoke(*args)
    assert result.exit_code == 2 and words in result.output, result.output
    assert result.output.count("\n") == 1


def test_a_huge_sweep_is_estimated_and_refused_before_it_starts(tmp_path):
    done = bounded("sweep", "minicpm5-2b-decode", "--depths", "1..100000", "--chunks", "1",
                   "--no-isolate", memory_mb=700, seconds=30)
    assert done.returncode == 2, done.stderr
    assert "past 300,000 trials (limit 20,000)" in done.stderr and "--yes" in done.stderr
    assert not Path("reports").exists()


def test_what_a_case_or_profile_probably_did_not_mean_is_warned_about(tmp_path):
    case = tmp_path / "few.yaml"
    case.write_text(Path("cases/minicpm5-2b-decode.yaml").read_text()
                    if Path("cases").exists() else
                    (Path(__file__).parent.parent / "cases" / "minicpm5-2b-decode.yaml")
                    .read_text().replace("buffers: [4096, 4096, 4096, 4096, 4096]",
                                         "buffers: [4096, 4096]"))
    result = invoke("run", str(case), "--no-isolate", "--trials", "1", "--plan", "21+21",
                    "--profile", "slow:nosuchkernel:1000")
    assert result.exit_code == 0
    assert "gives 2 buffers, MLIR_AIE takes 5: arguments 5..7 stay 0" in result.stderr
    assert "slow:nosuchkernel:... names no kernel or xclbin" in result.stderr
    notes = load_report(next(Path("reports").glob("*.yaml"))).notes
    assert len([n for n in notes if n["note"].startswith("warning: ")]) == 2


# -- words -------------------------------------------------------------------------------------

def test_a_cell_that_only_hit_deadlines_is_not_called_a_failure():
    row = Row("36", 36)
    assert Cell(row, 21, cell_plan(row, 21), {"deadline": 3}).answered == 0
    assert Cell(row, 21, cell_plan(row, 21), {"TIMEOUT": 2, "deadline": 1}).answered == 2


def test_help_and_listings_say_what_is_true(monkeypatch):
    assert "default: 5 per tested depth" in invoke("bisect", "--help").output
    assert "default: 3 per cell" in invoke("sweep", "--help").output
    # $HARNESS_CASES naming the shipped folder again (the checkout's cases/ for an editable
    # install, the package's copy for an installed one) is not a second copy of each case
    package = Path(harness.__file__).resolve().parent
    shipped = next(f for f in (package.parent / "cases", package / "cases") if f.is_dir())
    monkeypatch.setenv("HARNESS_CASES", str(shipped))
    listing = invoke("cases", "list").output
    assert "[shipped]" in listing and "shadowed" not in listing


def test_a_closed_pipe_ends_quietly():
    done = subprocess.run(f"{sys.executable} -m harness sim profiles | head -1", shell=True,
                          capture_output=True, text=True, timeout=30,
                          executable="/bin/bash")
    assert done.stdout.startswith("default profile: mainline") and done.stderr == ""
    assert done.stdout.count("\n") == 1
    piped = subprocess.run(["bash", "-o", "pipefail", "-c",
                            f"{sys.executable} -m harness sim profiles | head -1"],
                           capture_output=True, text=True, timeout=30)
    assert piped.returncode == 0
