"""What a render and a bundle say, and only that: trials numbered from 1, stopped trials
never shown or counted as failures, a command line that pastes as it is, a sweep's
identical rows folded, a bundle named only once it exists, and a bundle README that names
the harness's version and commit and how to rerun with `xrt-runner`."""

from __future__ import annotations

import copy
import re
import shlex
import shutil
import subprocess
import tarfile
from html import unescape
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

import harness
from harness.app.cli import main
from harness.formats.git_head import harness_commit, head_commit
from harness.report.digest import Digest
from harness.report.fileformat import read_document
from harness.report.render import (
    code_span,
    command_line,
    fold_rows,
    render_markdown,
    render_text,
)

# the folder the harness under test is imported from: this checkout (editable, or run from
# it), or an installed package's site-packages, which is no checkout
SOURCE = Path(harness.__file__).resolve().parents[1]


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def hang(tmp_path_factory) -> Path:
    """A small simulated run whose deep plan fails in every trial."""
    folder = tmp_path_factory.mktemp("hang")
    out = folder / "r.yaml"
    result = invoke("run", "minicpm5-2b-decode", "--plan", "42", "--plan", "21+21",
                    "--trials", "2", "--no-isolate", "--profile", "hang-at:30",
                    "--out", str(out))
    assert result.exit_code == 1, result.output
    return out


def html_of(markdown: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(markdown)


def table(html: str, title: str) -> list[list[str]]:
    body = re.search(rf"<h3>{title}</h3>\s*<table>(.*?)</table>", html, re.S).group(1)
    return [re.findall(r"<t[dh]>(.*?)</t[dh]>", row) for row in
            re.findall(r"<tr>(.*?)</tr>", body, re.S)]


# -- trials ------------------------------------------------------------------------------

def test_trials_are_numbered_from_1_as_the_console_counts_them(hang):
    html = html_of(invoke("report", "render", str(hang)).stdout)
    failing = table(html, "Failing runs")
    assert failing[1][:2] == ["42", "1-2"]                  # was 0-1: the YAML's index
    text = invoke("report", "render", "--format", "text", str(hang)).stdout
    assert "42 trials 1-2 runlist 0" in text


def with_stopped_trials(path: Path) -> dict:
    """The report with a third trial of each plan stopped: one interrupted (Ctrl-C), one
    in flight when the harness died."""
    data = read_document(path)
    for plan, status in zip(data["plans"], ("interrupted", "in-flight"), strict=True):
        stopped = copy.deepcopy(plan["trials"][0])
        stopped.update(index=2, status=status, state=status, runlists=[],
                       error=f"{status} by the test")
        stopped.pop("kernel_log", None)
        plan["trials"].append(stopped)
    return data


def test_stopped_trials_are_neither_shown_nor_counted_as_failures(hang):
    view = Digest.of_document(with_stopped_trials(hang)).view(True)
    html = html_of(render_markdown(view))
    plans = table(html, "Plans")
    assert plans[1][:3] == ["42", "2", "TIMEOUT 2/2"]        # two answered trials, not three
    assert plans[2][:3] == ["21+21", "2", "COMPLETED 2/2"]
    failing = table(html, "Failing runs")
    assert [row[0] for row in failing[1:]] == ["42"]          # no row for a stopped trial
    assert not any("interrupted" in cell or "in flight" in cell
                   for row in failing for cell in row)
    assert "trial(s) in all" in html and "(failed; 2 failed trial(s) in all)" in html
    assert ("Not counted (no answer from the stack, and not a failure): 42 trial 3 "
            "(interrupted); 21+21 trial 3 (in flight when the harness stopped).") in html
    text = render_text(view)
    assert "Not counted (no answer from the stack, and not a failure): 42 trial 3" in text
    assert "interrupted" not in text.split("failing runs:")[1]


# -- the command line ----------------------------------------------------------------------

ARGS = st.lists(st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=10),
                max_size=6)


@given(ARGS)
def test_the_command_line_pastes_into_a_shell_as_it_ran(args):
    data = {"harness": {"argv": ["/usr/bin/runlist-harness", *args]}}
    assert shlex.split(command_line(data)) == ["runlist-harness", *args]


@given(ARGS)
def test_the_command_line_is_one_code_span_whatever_it_holds(args):
    command = command_line({"harness": {"argv": ["reproduce_ert_timeout", *args]}})
    html = MarkdownIt("commonmark").render(f"**Command:** {code_span(command)} (version)")
    spans = re.findall(r"<code>(.*?)</code>", html, re.S)
    assert [unescape(s) for s in spans] == [command]


def test_a_command_with_a_line_break_is_a_fenced_block(hang):
    data = read_document(hang)
    data["harness"]["argv"] = ["runlist-harness", "run", "two\nlines"]
    html = html_of(render_markdown(Digest.of_document(data).view(False)))
    block = re.search(r'<code class="language-sh">(.*?)</code>', html, re.S).group(1)
    assert shlex.split(unescape(block)) == ["runlist-harness", "run", "two\nlines"]


def test_the_command_names_the_harness_version_and_commit_beside_it(hang):
    md = invoke("report", "render", str(hang)).stdout
    line = next(x for x in md.splitlines() if x.startswith("**Command:**"))
    command = re.search(r"`([^`]+)`", line).group(1)
    assert command.startswith("runlist-harness run minicpm5-2b-decode --plan 42 --plan 21+21")
    assert "xdna-runlist-harness" not in command          # no trailing words in the span
    commit = read_document(hang)["harness"]["commit"]
    assert commit == head_commit(SOURCE)
    assert (f"source commit {commit}" if commit else "source commit unknown") in line


# -- a sweep's folded rows -----------------------------------------------------------------

ROWS = st.lists(st.sampled_from(["COMPLETED 1/1", "TIMEOUT 1/1"]), min_size=1, max_size=40)


@given(ROWS, ROWS)
def test_folded_rows_expand_back_to_the_grid(first, second):
    length = min(len(first), len(second))
    rows = [[str(depth + 1), a, b] for depth, (a, b) in
            enumerate(zip(first[:length], second[:length], strict=True))]
    folded = fold_rows(rows)
    expanded = []
    for label, *cells in folded:
        low, _, high = label.partition("-")
        expanded += [[str(depth), *cells] for depth in range(int(low), int(high or low) + 1)]
    assert expanded == rows
    assert all(a[1:] != b[1:] for a, b in zip(folded, folded[1:], strict=False))  # maximal


def test_bands_over_untested_depths_say_how_many_were_tested():
    assert fold_rows([["1", "x"], ["8", "x"], ["42", "x"], ["43", "y"]]) == \
        [["1-42 (3 tested)", "x"], ["43", "y"]]


def test_a_sweep_render_folds_runs_of_identical_rows(tmp_path):
    out = tmp_path / "s.yaml"
    result = invoke("sweep", "minicpm5-2b-decode", "--depths", "1..12", "--chunks", "4,12",
                    "--trials", "1", "--profile", "inflight-cap:8", "--no-isolate",
                    "--out", str(out))
    assert result.exit_code == 0, result.output
    html = html_of(invoke("report", "render", str(out)).stdout)
    rows = table(html, "Sweep")
    assert rows[0][0] == "depth \\ chunk"
    assert [row[0] for row in rows[1:]] == ["1-8", "9-12"]
    assert rows[1][1:] == ["COMPLETED 1/1", "COMPLETED 1/1"]
    assert rows[2][1:] == ["COMPLETED 1/1", "TIMEOUT 1/1"]


# -- the bundle --------------------------------------------------------------------------

def test_the_render_names_a_bundle_only_once_one_exists(hang):
    before = invoke("report", "render", str(hang)).stdout
    assert "Attached:" not in before and "r.bundle.tar.gz" in before
    assert "`runlist-harness report bundle r.yaml` writes `r.bundle.tar.gz`" in before
    made = invoke("report", "bundle", str(hang), "--force")
    assert made.exit_code == 0, made.output
    try:
        after = invoke("report", "render", str(hang)).stdout
        assert "No bundle attached yet" not in after
        assert after.rstrip().endswith("`README.md`, `report.md`, `r.yaml`, "
                                       "`kernel-log.txt`, `recipes/`.")
        with tarfile.open(hang.with_name("r.bundle.tar.gz")) as tar:
            assert tar.extractfile("r.bundle/report.md").read().decode() == after
            readme = tar.extractfile("r.bundle/README.md").read().decode()
            names = tar.getnames()
    finally:
        hang.with_name("r.bundle.tar.gz").unlink()
    assert "pip install xdna-runlist-harness" not in readme
    assert "not on a package index" in readme
    commit = read_document(hang)["harness"]["commit"]
    assert (f"source commit {commit}" if commit else "source commit unknown") in readme
    assert "xdna-runlist-harness 0.1.0" in readme
    runner = readme.split("## Reproduce without Python: XRT's own runner")[1]
    assert "xrt-runner --recipe R --profile P" in runner
    scripts = re.findall(r"^sh (run_\S+\.sh)$", runner, re.M)
    assert sorted(scripts) == sorted(Path(name).name for name in names
                                     if re.match(r"r\.bundle/recipes/run_.*\.sh$", name))
    assert len(scripts) == 2                                  # one per plan
    # the run had no pack: its layer.xclbin was a stand-in, whose hash no real file has;
    # the README says so and where the real one comes from (it once asked for that hash)
    layer = next(x["sha256"] for x in read_document(hang)["artifacts"]["xclbins"]
                 if x["role"] == "layer")
    assert layer not in runner
    assert "`layer.xclbin`: the run used a synthesized stand-in (the kernel's signature, not " \
           "the real kernel), so there is no file to copy by its hash; take " \
           "MiniCPM5-2B-NPU2's own `layer.xclbin` from FastFlowLM (its xclbins folder for " \
           "the model: `$FLM_XCLBIN_PATH`, `xclbins/MiniCPM5-2B-NPU2/` beside the `flm` " \
           "binary, or `share/flm/xclbins/MiniCPM5-2B-NPU2/`)" in runner


def test_the_bundle_readme_names_a_real_packs_xclbin_by_its_hash(shared_xclbins, tmp_path):
    out = tmp_path / "q.yaml"
    ran = invoke("run", "qwen3-1.7b-decode", "--plan", "monolithic", "--trials", "1",
                 "--no-isolate", "--xclbins", str(shared_xclbins), "--out", str(out))
    assert ran.exit_code == 0, ran.output
    assert invoke("report", "bundle", str(out)).exit_code == 0
    with tarfile.open(tmp_path / "q.bundle.tar.gz") as tar:
        readme = tar.extractfile("q.bundle/README.md").read().decode()
    layer = next(x["sha256"] for x in read_document(out)["artifacts"]["xclbins"]
                 if x["role"] == "layer")
    assert f"`layer.xclbin` (sha256 {layer})" in readme       # which file to copy in
    assert "stand-in" not in readme


# -- the harness's own commit ----------------------------------------------------------------

def fake_repo(base: Path, head: str) -> Path:
    (base / ".git" / "refs" / "heads").mkdir(parents=True)
    (base / ".git" / "HEAD").write_text(head)
    return base / ".git"


def test_head_commit_reads_git_s_own_layout(tmp_path):
    one, two = "1" * 40, "2" * 40
    loose = tmp_path / "loose"
    git = fake_repo(loose, "ref: refs/heads/main\n")
    (git / "refs" / "heads" / "main").write_text(one + "\n")
    assert head_commit(loose) == one
    packed = tmp_path / "packed"
    git = fake_repo(packed, "ref: refs/heads/topic\n")
    (git / "packed-refs").write_text(f"# pack-refs with: peeled\n{one} refs/heads/main\n"
                                     f"{two} refs/heads/topic\n")
    assert head_commit(packed) == two
    detached = tmp_path / "detached"
    fake_repo(detached, two + "\n")
    assert head_commit(detached) == two
    worktree = tmp_path / "worktree"
    private = loose / ".git" / "worktrees" / "wt"
    private.mkdir(parents=True)
    (private / "HEAD").write_text("ref: refs/heads/main\n")
    (private / "commondir").write_text("../..\n")
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {private}\n")
    assert head_commit(worktree) == one
    unborn = tmp_path / "unborn"
    fake_repo(unborn, "ref: refs/heads/main\n")
    assert head_commit(unborn) is None                         # never guessed
    assert head_commit(tmp_path / "nothing") is None
    escape = tmp_path / "escape"
    fake_repo(escape, "ref: refs/heads/../../../outside\n")
    assert head_commit(escape) is None


def test_the_harness_knows_its_own_commit_as_git_does():
    if not (SOURCE / ".git").exists():
        assert harness_commit() is None          # installed: no checkout, no commit claimed
        return
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    done = subprocess.run([git, "-C", str(SOURCE), "rev-parse", "HEAD"], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"git cannot read this checkout: {done.stderr.strip()}")
    assert harness_commit() == done.stdout.strip()


def test_a_bundle_written_elsewhere_names_itself(hang, tmp_path):
    target = tmp_path / "for-upstream.tar.gz"
    made = invoke("report", "bundle", str(hang), "--out", str(target))
    assert made.exit_code == 0, made.output
    with tarfile.open(target) as tar:
        body = tar.extractfile("for-upstream/report.md").read().decode()
    assert "Attached: `for-upstream.tar.gz`" in body and "r.bundle.tar.gz" not in body


def test_a_bundle_of_a_report_that_did_not_finish_says_it_is_partial(tmp_path):
    # a run stopped after one of its two trials; bundling it once gave no word of that
    out = tmp_path / "r.yaml"
    assert invoke("run", "minicpm5-2b-decode", "--plan", "42", "--trials", "1",
                  "--no-isolate", "--out", str(out)).exit_code == 0
    text = out.read_text().replace("trials: 1\n", "trials: 2\n", 1)
    out.write_text(re.sub(r"\nfinished: .*\n", "\nfinished: null\n", text, count=1))
    made = invoke("report", "bundle", str(out))
    assert made.exit_code == 0, made.output
    assert f"warning: {out} did not finish: the bundle is partial, and its README says so; " \
           f"`runlist-harness run --resume {out}` finishes it; bundle it again then." \
        in made.output
    with tarfile.open(tmp_path / "r.bundle.tar.gz") as tar:
        readme = tar.extractfile("r.bundle/README.md").read().decode()
    assert readme.split("\n")[2] == (
        "**Partial:** this run did not finish (it was stopped, or was still running when this "
        "was made): the report holds only the trials it had, and no verdict. "
        "`runlist-harness run --resume r.yaml` finishes it; bundle it again then.")
    # a finished report's bundle says nothing of the kind
    done = tmp_path / "done.yaml"
    assert invoke("run", "nop-depth", "--plan", "42", "--trials", "1", "--no-isolate",
                  "--out", str(done)).exit_code == 0
    made = invoke("report", "bundle", str(done))
    assert "warning" not in made.output and "partial" not in made.output
