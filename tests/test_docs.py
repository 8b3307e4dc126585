"""The README and docs/ lead somewhere real: every link resolves (files, and anchors as both
GitHub and mkdocs make them), every page is in the site's navigation, and every command
example names a real command with real options and values (parsed against the click
command tree, nothing run). mkdocs is an optional extra: its build is checked only where it
is installed."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest
import yaml
from docs_examples import (
    PROJECT,
    Example,
    Link,
    anchors,
    broken,
    check,
    every_option,
    examples,
    github_slug,
    links,
    mkdocs_slug,
    option_spans,
    pages,
    python_scripts,
    split_markdown,
)

README = PROJECT / "README.md"
DOCS = PROJECT / "docs"


def all_examples() -> list[Example]:
    return [example for page in pages() for example in examples(page)]


def test_every_link_in_readme_and_docs_resolves():
    found = [link for page in pages() for link in links(page)]
    assert len(found) > 40          # the pages do link to one another
    wrong = [f"{link.page.name}:{link.line}: {link.target}: {why}"
             for link in found if (why := broken(link))]
    assert wrong == []


def test_every_command_example_names_real_commands_and_options():
    found = all_examples()
    assert len(found) > 50
    wrong = [f"{example}: {why}" for example in found if (why := check(example))]
    assert wrong == []


def test_every_script_a_page_runs_exists_and_takes_its_options():
    found = [(page, line, script, options) for page in pages()
             for line, script, options in python_scripts(page)]
    assert any(script.startswith("benchmarks/") for _, _, script, _ in found)
    missing = [f"{p.name}:{n}: {s}" for p, n, s, _ in found if not (PROJECT / s).is_file()]
    assert missing == []
    unknown = [f"{p.name}:{n}: {s} {o}" for p, n, s, options in found for o in options
               if f'"{o}"' not in (PROJECT / s).read_text()]
    assert unknown == []


def test_every_option_named_alone_is_an_option_of_a_command_or_a_benchmark():
    known = every_option()
    benchmarks = "".join(p.read_text() for p in (PROJECT / "benchmarks").glob("*.py"))
    found = [(page, line, option) for page in pages() for line, option in option_spans(page)]
    assert len(found) > 40
    assert [f"{p.name}:{n}: {o}" for p, n, o in found
            if o not in known and f'"{o}"' not in benchmarks] == []


def test_the_site_navigates_every_page_and_the_readme_points_at_each():
    config = yaml.safe_load((PROJECT / "mkdocs.yml").read_text())
    assert config["docs_dir"] == "docs"
    nav = [next(iter(entry.values())) for entry in config["nav"]]
    assert nav[0] == "index.md"
    on_disk = sorted(p.name for p in DOCS.glob("*.md"))
    assert sorted(nav) == on_disk
    for hook in config["hooks"]:
        assert (PROJECT / hook).is_file()
    front = {link.target.partition("#")[0] for link in links(README)}
    assert {f"docs/{name}" for name in on_disk if name != "index.md"} <= front
    index = {link.target for link in links(DOCS / "index.md")}
    assert {name for name in on_disk if name != "index.md"} <= index


def test_the_readme_is_a_front_page():
    text = README.read_text()
    assert len(text.split("\n")) <= 250
    prose, blocks = split_markdown(text)
    # the two set-up commands come first, exactly as the project requires them
    assert blocks[0].lines == [
        "python3 -m pip install -e . && reproduce_ert_timeout          # the main job",
        "python3 -m pip install -e '.[test]' && python3 -m pytest -q   # the tests"]
    headings = [line for _, line in prose if line.startswith("## ")]
    assert headings == ["## What it is for", "## The first five minutes without an NPU",
                        "## The first five minutes with an NPU",
                        "## What it can and cannot tell you", "## Where to read on"]
    ci = (PROJECT / ".ci" / "run").read_text()
    assert "python3 -m pip install -e '.[test]' && python3 -m pytest -q" in ci


def test_the_test_command_runs_the_tests_in_parallel():
    """`python3 -m pytest -q` (the README's and CI's command) shares the tests out among a
    worker per core: pytest-xdist is in the test extra and `-n auto` in pytest's options."""
    project = (PROJECT / "pyproject.toml").read_text()
    options = re.search(r'^addopts = "([^"]*)"', project, re.M)
    assert options is not None and "-n auto" in options[1]
    assert re.search(r'^    "pytest-xdist>=[\d.]+",', project, re.M)


def ci_run(tmp_path, failing: str | None) -> tuple[int, list[str]]:
    """.ci/run with a python3 that records each command and fails the one whose words
    hold `failing` (exit 1; "pytest" exits 5, as pytest does when it collects nothing)."""
    log = tmp_path / "ran"
    fake = tmp_path / "bin" / "python3"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(f"""#!/bin/sh
echo "$*" >> {log}
case "$*" in *"{failing or 'nothing fails'}"*) [ "{failing}" = pytest ] && exit 5; exit 1;; esac
""")
    fake.chmod(0o755)
    log.unlink(missing_ok=True)
    done = subprocess.run(["bash", str(PROJECT / ".ci" / "run")], capture_output=True,
                          env={"PATH": f"{fake.parent}:/usr/bin:/bin"}, timeout=30)
    return done.returncode, log.read_text().splitlines()


def test_ci_runs_the_tests_ruff_and_mypy_and_fails_with_any_of_them(tmp_path):
    """CI is the README's test command, then ruff, then mypy; a failure of any one fails
    it (a run that collected no tests among them), and only a run of all three passes."""
    code, ran = ci_run(tmp_path, None)
    assert code == 0 and ran == ["-m pip install -e .[test]", "-m pytest -q",
                                 "-m ruff check .", "-m mypy harness"]
    for failing, stops_after in [("pip", 1), ("pytest", 2), ("ruff", 3), ("mypy", 4)]:
        code, ran = ci_run(tmp_path, failing)
        assert code != 0 and len(ran) == stops_after, (failing, code, ran)


# -- the checks themselves find what is wrong -----------------------------------------------

def test_the_command_check_finds_a_wrong_command_option_or_value(tmp_path):
    def wrong(line: str) -> str | None:
        page = tmp_path / "p.md"
        page.write_text(f"```sh\n{line}\n```\n")
        (example,) = list(examples(page))
        return check(example)

    assert wrong("runlist-harness run nop-depth --plan 42 --trials 3") is None
    assert "no command" in wrong("runlist-harness bisekt minicpm5-2b-decode")
    assert "no option --chunk-at" in wrong("runlist-harness bisect c --chunk-at 42")
    assert "flaky-as" in wrong("runlist-harness bisect c --flaky-as maybe")
    assert "--trials" in wrong("runlist-harness run c --trials three")
    assert "--chunks" in wrong("runlist-harness sweep c --depths 1..8 --chunks 1-8")
    assert "--depths" in wrong("runlist-harness sweep c --depths 1:8 --chunks 1,8")
    assert "--profile inflight:40" in wrong("reproduce_ert_timeout --profile inflight:40")
    assert "takes 1 argument" in wrong("runlist-harness xclbins where A B")
    # after `--`, emulate's program is checked when it is the harness
    assert "no option --nope" in wrong("runlist-harness emulate -- reproduce_ert_timeout --nope")
    assert wrong("runlist-harness emulate -- xrt-smi examine --nope") is None


def test_examples_are_found_in_blocks_spans_scripts_and_transcripts(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("Run `runlist-harness probe --json` first.\n\n"
                    "```sh\ncd X && exec runlist-harness run c \\\n  --plan 42 > out.md\n"
                    "git bisect run sh -c 'make || exit 125\n  runlist-harness sweep c'\n```\n"
                    "```text\n$ reproduce_ert_timeout --trials 1\nverdict: ...\n```\n")
    found = [example.words for example in examples(page)]
    assert found == [["runlist-harness", "run", "c", "--plan", "42"],
                     ["runlist-harness", "sweep", "c"],
                     ["reproduce_ert_timeout", "--trials", "1"],
                     ["runlist-harness", "probe", "--json"]]


def test_the_link_check_finds_a_missing_file_or_anchor():
    page = DOCS / "hardware.md"
    assert broken(Link(page, 1, "simulated-stack.md#profiles")) is None
    assert "does not exist" in broken(Link(page, 1, "simulated.md"))
    assert "no heading" in broken(Link(page, 1, "simulated-stack.md#profile"))
    assert "does not exist" in broken(Link(page, 1, "../../outside.md"))
    assert "https" in broken(Link(page, 1, "http://example.com"))


@pytest.mark.parametrize("heading, github, mkdocs", [
    ("XRT's own deep-runlist test as a control", "xrts-own-deep-runlist-test-as-a-control",
     "xrts-own-deep-runlist-test-as-a-control"),
    ("Real XRT -- without", "real-xrt----without", "real-xrt-without"),
    ("What `emulate` runs", "what-emulate-runs", "what-emulate-runs"),
])
def test_anchors_are_made_as_github_and_mkdocs_make_them(heading, github, mkdocs):
    text = heading.replace("`", "")
    assert github_slug(text) == github and mkdocs_slug(text) == mkdocs


def test_a_repeated_heading_gets_a_numbered_anchor(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# A\n\n## Notes\n\n```sh\n# not a heading\n```\n\n## Notes\n")
    assert anchors(page)["github"] == {"a", "notes", "notes-1"}


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None,
                    reason="mkdocs is not installed (pip install -e '.[docs]')")
def test_the_site_builds_strictly(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                           "-f", str(PROJECT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    home = (tmp_path / "site" / "index.html").read_text()
    assert "The first five minutes without an NPU" in home
    assert 'href="hardware/"' in home and "docs/hardware.md" not in home
    assert not (tmp_path / "site" / "_site").exists()

