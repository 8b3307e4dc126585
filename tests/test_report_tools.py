"""Reports for upstream: schema, validate, render (read as a browser would), redact, compare."""

from __future__ import annotations

import copy
import functools
import re
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from harness.app.cli import main
from harness.formats.yamlio import dump_yaml, load_yaml_text
from harness.report.compare import build
from harness.report.fileformat import read_document
from harness.report.redact import redact
from harness.report.render import MAX_BODY, REPORTER_ROOM
from harness.report.schema import check, report_schema

PROJECT = Path(__file__).resolve().parent.parent

CANARIES = {
    "hostname": "canary-host-7731",
    "user": "canaryuser",
    "machine_id": "c0ffee00c0ffee00c0ffee00c0ffee00",
    "serial": "SN-CANARY-4455",
    "mac": "de:ad:be:ef:00:42",
    "ipv4": "10.11.12.13",
    "ipv6": "fe80::dead:beef:1234:5678",
}


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def written(result) -> Path:
    return Path([x for x in result.stdout.splitlines() if x.startswith("report: ")][0][8:])


def with_deadline(folder: Path, name: str, deadline_s: float) -> Path:
    case = folder / f"{name}.yaml"
    case.write_text((PROJECT / "cases" / f"{name}.yaml").read_text()
                    + f"deadline_s: {deadline_s}\n")
    return case


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    """One report of each kind the harness writes, made on the simulated stack."""
    folder = tmp_path_factory.mktemp("reports")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        patch.setenv("XDG_CACHE_HOME", str(folder / ".cache"))
        made = {
            "documented": written(invoke("reproduce", "--no-isolate", "--trials", "2",
                                         "--backend", "sim")),
            "cap40": written(invoke("reproduce", "--no-isolate", "--trials", "2",
                                    "--profile", "staging,inflight-cap:40")),
            "bisect": written(invoke("bisect", "minicpm5-2b-decode", "--lo", "30", "--hi",
                                     "45", "--trials", "1", "--profile", "inflight-cap:37",
                                     "--no-isolate")),
            "sweep": written(invoke("sweep", "minicpm5-2b-decode", "--depths", "36..40",
                                    "--chunks", "21,42", "--trials", "1", "--profile",
                                    "inflight-cap:37", "--no-isolate")),
            # a case's own deadline, shorter than the driver's timer (--deadline refuses it)
            "deadline": written(invoke("run", str(with_deadline(folder, "nop-depth", 0.8)),
                                       "--plan", "monolithic", "--trials", "1", "--profile",
                                       "mainline,hang-at:1", "--realtime")),
        }
    return {name: folder / path for name, path in made.items()}


def data_of(path: Path) -> dict:
    return read_document(path)


def rejudged(data: dict) -> dict:
    """The verdict an edited report's trials and backend give (validate checks it)."""
    from harness.report.model import Report
    from harness.report.verdict import report_verdict
    return report_verdict(Report.from_dict(data)).to_dict()


# -- schema ---------------------------------------------------------------------------

def test_every_report_kind_validates_with_a_real_validator(reports):
    validator = jsonschema.Draft202012Validator(report_schema())
    jsonschema.Draft202012Validator.check_schema(report_schema())
    for name, path in reports.items():
        errors = sorted(validator.iter_errors(data_of(path)), key=str)
        assert not errors, f"{name}: {errors[:3]}"
        assert check(data_of(path)) == [], name


def test_an_in_flight_report_validates(reports, tmp_path):
    data = data_of(reports["documented"])
    data["plans"][0]["trials"].append({"index": 2, "status": "in-flight",
                                       "state": "in-flight", "runlists": [],
                                       "started": "2026-01-01T00:00:00Z"})
    data["finished"] = None
    jsonschema.validate(data, report_schema())
    assert check(data) == []


def mutate(data: dict, rng) -> dict:
    """Change one value somewhere in the document to something of another type."""
    data = copy.deepcopy(data)
    paths = []

    def walk(node, path):
        if isinstance(node, dict):
            for k, v in node.items():
                paths.append(path + (k,))
                walk(v, path + (k,))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                paths.append(path + (i,))
                walk(v, path + (i,))
    walk(data, ())
    target = rng.choice(paths)
    parent = data
    for part in target[:-1]:
        parent = parent[part]
    choice = rng.choice(["drop", "string", "negative", "list", "null", "extra"])
    if choice == "drop" and isinstance(parent, dict):
        del parent[target[-1]]
    elif choice == "string":
        parent[target[-1]] = "bogus"
    elif choice == "negative":
        parent[target[-1]] = -5
    elif choice == "list":
        parent[target[-1]] = [1, "x"]
    elif choice == "null":
        parent[target[-1]] = None
    elif isinstance(parent, dict):
        parent["unexpected_key"] = 1
    return data


@pytest.fixture(scope="module")
def cap40_document(reports) -> dict:
    """The inflight-cap:40 report's document, read once (`mutate` changes a deep copy)."""
    return data_of(reports["cap40"])


@settings(max_examples=300, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture])
@given(st.randoms(use_true_random=False))
def test_the_built_in_checker_agrees_with_jsonschema(cap40_document, rng):
    broken = mutate(cap40_document, rng)
    valid_here = not check(broken)
    valid_there = _real_validator().is_valid(broken)
    assert valid_here == valid_there


@functools.cache
def _real_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(report_schema())


# -- report validate --------------------------------------------------------------------

def test_validate_good_reports(reports):
    result = invoke("report", "check", *map(str, reports.values()))
    assert result.exit_code == 0
    assert result.stdout.count(": valid") == len(reports)


def _line_of(text: str, needle: str) -> int:
    return text[:text.index(needle)].count("\n") + 1


@pytest.mark.parametrize("edit, words", [
    # the trial's journal entry is named by its own line
    (lambda t: t.replace('"status": "failed"', '"status": "exploded"', 1),
     r"line {0}: plans\[0\]\.trials\[0\]\.status: 'exploded' is not one of"),
    (lambda t: t.replace('"runs": 42', '"runs": "forty-two"', 1),
     r"line {0}: plans\[0\]\.trials\[0\]\.runlists\[0\]\.runs: expected integer"),
    (lambda t: re.sub(r"^run_id: .*\n", "", t, flags=re.M), r"missing required key 'run_id'"),
    (lambda t: t.replace("schema: xdna-runlist-harness/report/v4", "schema: other/v3"),
     "unknown report schema 'other/v3'"),
    (lambda t: t.replace("\njournal:\n", "\n  : [broken\njournal:\n"), "not valid YAML"),
    (lambda t: t.rstrip("\n") + "\n- {not json, nor: [yaml\n", r"line \d+: not a journal entry"),
])
def test_validate_names_what_is_wrong_where(reports, tmp_path, edit, words):
    broken = tmp_path / "broken.yaml"
    text = edit(reports["cap40"].read_text())
    broken.write_text(text)
    entry = ('"exploded"' if "exploded" in text else '"forty-two"' if "forty-two" in text
             else None)
    pattern = words.format(_line_of(text, entry)) if entry else words
    result = CliRunner().invoke(main, ["report", "check", str(broken)])
    assert result.exit_code == 2
    assert re.search(pattern, result.stdout), result.stdout


@pytest.mark.parametrize("command", ["render", "compare"])
def test_render_and_compare_refuse_broken_reports(reports, tmp_path, command):
    broken = tmp_path / "broken.yaml"
    broken.write_text("schema: xdna-runlist-harness/report/v1\nrun_id: x\n")
    args = ["report", command, str(broken)] + ([str(reports["cap40"])]
                                               if command == "compare" else [])
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert "is not a valid report" in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output


# -- render, read as a browser would ---------------------------------------------------

def html_of(markdown: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(markdown)


def test_markdown_renders_the_tables_and_the_yaml(reports):
    md = invoke("report", "render", str(reports["cap40"])).stdout
    html = html_of(md)
    assert re.search(r"<h2>[^<]*SIMULATED stack, profile staging,inflight-cap:40", html)
    # the answer first, the reasons in a list below it
    assert "<p><strong>Verdict:</strong> 42 in one runlist: TIMEOUT 2/2; cut 21+21: " \
           "COMPLETED 2/2 -&gt; the cut avoids it [SIMULATED]</p>\n<ul>\n<li>SIMULATED: " \
           "the outcome follows from the injected hypothesis by construction: " \
           "inflight-cap:40 makes every runlist of more than 40 commands fail (the firmware " \
           "wedges with more than 40 queued on one context).</li>\n<li>reproduced: " \
           "monolithic 42: TIMEOUT 2/2" in html
    plans = re.search(r"<h3>Plans</h3>\s*<table>(.*?)</table>", html, re.S).group(1)
    headers = re.findall(r"<th>(.*?)</th>", plans)
    assert headers == ["plan", "trials", "outcome", "expected", "time to failure"]
    rows = [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>",
                                                                      plans, re.S)[1:]]
    timer = "after 2.0 s, at the driver's 2 s timer"
    assert rows == [["monolithic 42", "2", "TIMEOUT 2/2", "TIMEOUT", timer],
                    ["halves 21+21", "2", "COMPLETED 2/2", "COMPLETED", "-"],
                    ["depth-only 42", "2", "TIMEOUT 2/2", "(control)", timer]]
    failing = re.search(r"<h3>Failing runs</h3>\s*<table>(.*?)</table>", html, re.S).group(1)
    assert "<td>42 (24+18)</td>" in failing and "<td>TIMEOUT</td>" in failing
    # a report this long is not padded into the body: the bundle carries it, and the body
    # leaves its reporter room (its YAML once took three quarters of the body)
    assert "Full report (YAML)" not in md
    assert "*The full report (YAML, every trial) is in the report file and its bundle, not " \
           "here: this body carries what a maintainer reads first, and leaves room for " \
           "yours.*" in md
    assert len(md) <= MAX_BODY - REPORTER_ROOM


def test_a_short_reports_yaml_is_embedded_whole(tmp_path):
    out = tmp_path / "short.yaml"
    assert invoke("run", "nop-depth", "--plan", "42", "--trials", "1", "--no-isolate",
                  "--out", str(out)).exit_code == 0
    html = html_of(invoke("report", "render", str(out)).stdout)
    summaries = re.findall(r"<details>\s*<summary>(.*?)</summary>", html)
    assert summaries[-1] == "Full report (YAML)"
    details = re.findall(r"<details>(.*?)</details>", html, re.S)[-1]
    code = re.search(r'<code class="language-yaml">(.*?)</code>', details, re.S).group(1)
    assert "schema: xdna-runlist-harness/report/v4" in code
    assert load_yaml_text(code.replace("&lt;", "<").replace("&gt;", ">")
                          .replace("&quot;", '"').replace("&amp;", "&"))["run_id"]


def test_bisect_and_sweep_render_their_own_sections(reports):
    bisect = html_of(invoke("report", "render", str(reports["bisect"])).stdout)
    assert "<strong>Answer:</strong> first failing depth 38" in bisect
    sweep = html_of(invoke("report", "render", str(reports["sweep"])).stdout)
    table = re.search(r"<h3>Sweep</h3>\s*<table>(.*?)</table>", sweep, re.S).group(1)
    assert re.findall(r"<th>(.*?)</th>", table) == ["depth \\ chunk", "21", "42"]
    assert "<td>TIMEOUT 1/1</td>" in table


def test_an_in_flight_trial_renders_as_in_flight_not_untested(reports, tmp_path):
    data = data_of(reports["documented"])
    data["plans"][0]["trials"].append({"index": 2, "status": "in-flight",
                                       "state": "in-flight", "runlists": [],
                                       "started": "2026-01-01T00:00:00Z"})
    data["finished"], data["verdict"] = None, None
    data["settings"]["trials"] = 3           # the third trial was running when it stopped
    path = tmp_path / "killed.yaml"
    path.write_text(dump_yaml(data))
    md = invoke("report", "render", str(path)).stdout
    assert "in flight when the harness stopped" in md and "untested" not in md
    assert "no verdict (the run did not finish)" in md


def test_the_bisect_render_puts_the_boundary_first_and_collapses_alike_rows(reports):
    data = data_of(reports["bisect"])
    md = invoke("report", "render", str(reports["bisect"])).stdout
    assert md.index("**Command:** `runlist-harness bisect minicpm5-2b-decode --lo 30") < \
        md.index("### Bisect")
    assert "xdna-runlist-harness 0.1.0" in md.split("### Bisect")[0]
    failing = re.search(r"<h3>Failing runs</h3>\s*<table>(.*?)</table>",
                        html_of(md), re.S).group(1)
    rows = [re.findall(r"<td>(.*?)</td>", row) for row in
            re.findall(r"<tr>(.*?)</tr>", failing, re.S)[1:]]
    assert rows[0][0] == "38"              # the boundary's failing depth leads
    labels = [row[0] for row in rows]
    assert len(labels) == len(set(labels))  # one row per distinct failure of a plan
    tested = [e["x"] for e in data["bisect"]["log"] if e["class"] == "bad"]
    assert sorted(int(label) for label in labels) == sorted(set(tested))


@pytest.mark.parametrize("argv0, program", [
    ("/usr/local/bin/reproduce_ert_timeout", "reproduce_ert_timeout"),
    ("/usr/local/bin/runlist-harness", "runlist-harness"),
    ("/src/harness/__main__.py", "runlist-harness")])
def test_the_command_line_is_shown_as_the_user_typed_it(reports, argv0, program):
    from harness.report.render import command_line
    data = data_of(reports["documented"])
    data["harness"]["argv"] = [argv0, "--no-isolate"]
    assert command_line(data) == f"{program} --no-isolate"


def test_text_render(reports):
    text = invoke("report", "render", "--format", "text", str(reports["deadline"])).stdout
    assert text.startswith("nop-depth: SIMULATED stack")
    assert "deadline" in text and "this machine in full:" in text
    assert "The stack that answered: SIMULATED (the simulated stack, in process):" in text
    assert "ran (monolithic 42): the one-NOOP TXN stream" in text
    assert "what this tests: Every run of the case carried only the one-NOOP TXN" in text


def test_hardware_title_has_no_simulated(reports, tmp_path):
    data = data_of(reports["documented"])
    data["backend"] = {"kind": "xrt", "simulated": False, "pyxrt": "/opt/xilinx/pyxrt.so"}
    data["environment"]["npu"] = {"present": True, "generation": "NPU5 Strix Halo",
                                  "nodes": []}
    # a machine records its own tracefs state (a simulated run, its driver's own events)
    data["environment"]["trace_events"] = {"recording": False, "why": "tracefs is not "
                                           "mounted here", "fix": "mount it"}
    data["verdict"] = rejudged(data)
    path = tmp_path / "hw.yaml"
    path.write_text(dump_yaml(data))
    md = invoke("report", "render", str(path)).stdout
    assert md.splitlines()[0] == "## xdna-runlist-harness: minicpm5-2b-decode: hardware NPU " \
                                 "(NPU5 Strix Halo)"
    assert "SIMULATED" not in md.split("<details>")[0]


# -- redaction --------------------------------------------------------------------------

def planted(path: Path, tmp_path: Path) -> Path:
    data = data_of(path)
    c = CANARIES
    system = data["environment"]["system"]
    system.update({"hostname": c["hostname"], "user": c["user"], "machine_id": c["machine_id"]})
    data["environment"]["npu"]["sysfs"] = {"serial_number": c["serial"], "fw_version": "1.1.2.65"}
    data["environment"]["xrt"]["LD_LIBRARY_PATH"] = f"/home/{c['user']}/xrt/lib:/opt/x"
    data["harness"]["argv"] = ["runlist-harness", "--xclbins",
                               f"/home/{c['user']}/packs", f"--host={c['hostname']}"]
    trial = data["plans"][0]["trials"][0]
    trial["runlists"][0]["message"] = (f"runlist failed on {c['hostname']} "
                                       f"({c['ipv4']}, {c['ipv6']}, nic {c['mac']}) "
                                       f"machine {c['machine_id']} board {c['serial']}")
    data["case"]["file"] = f"/home/{c['user']}/cases/x.yaml"
    out = tmp_path / "planted.yaml"
    out.write_text(dump_yaml(data))
    return out


def test_no_canary_survives_redaction(reports, tmp_path):
    path = planted(reports["cap40"], tmp_path)
    md = invoke("report", "render", str(path)).stdout
    for name, value in CANARIES.items():
        assert value not in md, name
        assert value.upper() not in md, name
    assert "&lt;hostname>" in md                                  # a table's form
    assert "1.1.2.65" in md                                       # versions are not IPs
    sha256 = data_of(path)["artifacts"]["xclbins"][0]["sha256"]
    assert sha256 in md                                           # identities stay
    plain = invoke("report", "render", "--no-redact", str(path)).stdout
    assert CANARIES["hostname"] in plain and CANARIES["ipv4"] in plain


def test_redaction_is_stable(reports, tmp_path):
    data = redact(data_of(planted(reports["cap40"], tmp_path)))
    text = dump_yaml(data)
    host = data["environment"]["system"]["hostname"]
    assert text.count(host) >= 3        # system.hostname, argv, the message: one placeholder
    assert re.findall(r"<ip-\d+>", text)


# -- compare -----------------------------------------------------------------------------

def test_compare_labels_columns_by_what_differs(reports, tmp_path):
    hardware = data_of(reports["cap40"])
    hardware["backend"] = {"kind": "xrt", "simulated": False}
    hardware["environment"]["npu"] = {"present": True, "ioctl": {"firmware": "1.1.2.65"}}
    hardware["verdict"] = rejudged(hardware)
    hw = tmp_path / "hw.yaml"
    hw.write_text(dump_yaml(hardware))
    result = invoke("report", "compare", str(reports["documented"]), str(reports["cap40"]),
                    str(hw))
    assert result.exit_code == 0
    out = result.stdout
    assert out.startswith("compare 3 reports; columns differ by: profile, firmware")
    row = [line for line in out.splitlines() if line.startswith("monolithic 42")][0]
    cells = re.split(r"\s{2,}", row.strip())
    assert cells[1:] == ["COMPLETED 2/2", "TIMEOUT 2/2 *", "TIMEOUT 2/2 *"]
    assert "SIMULATED, profile staging,inflight-cap:40" in out
    assert "hardware, firmware 1.1.2.65" in out


def test_compare_markdown_as_html(reports):
    md = invoke("report", "compare", "--format", "md", str(reports["documented"]),
                str(reports["cap40"])).stdout
    html = html_of(md)
    headers = re.findall(r"<th>(.*?)</th>", html)
    assert headers == ["plan", "SIMULATED, profile mainline",
                       "SIMULATED, profile staging,inflight-cap:40"]
    assert "<td><strong>TIMEOUT 2/2</strong> ≠</td>" in html


def two_alike(source: Path, folder: Path) -> list[Path]:
    """Two copies of one report, told apart only by their run ids."""
    paths = []
    for name in ("a", "b"):
        data = data_of(source)
        data["run_id"] = f"{name}1b2c3d4e5"
        paths.append(folder / f"{name}.yaml")
        paths[-1].write_text(dump_yaml(data))
    return paths


def test_compare_never_drops_the_label_of_reports_that_share_a_profile(reports, tmp_path):
    # two model runs alike in every recorded way: their columns still say where the
    # results came from, in text and Markdown (they once read `run 66794d` alone)
    assert_labelled(two_alike(reports["documented"], tmp_path), "SIMULATED, profile mainline")


def assert_labelled(paths: list[Path], label: str) -> None:
    text = invoke("report", "compare", *map(str, paths)).stdout
    assert f"[A] {label}, run a1b2c3  (" in text and f"[B] {label}, run b1b2c3  (" in text
    md = invoke("report", "compare", "--format", "md", *map(str, paths)).stdout
    headers = re.findall(r"<th>(.*?)</th>", html_of(md))
    assert headers == ["plan", f"{label}, run a1b2c3", f"{label}, run b1b2c3"]
    # and when the two differ by something else, the label stays beside it
    other = data_of(paths[1])
    other["environment"].setdefault("system", {})["hostname"] = "elsewhere"
    paths[1].write_text(dump_yaml(other))
    text = invoke("report", "compare", *map(str, paths)).stdout
    assert f"[B] {label}, elsewhere  (" in text


def test_compare_sweeps_by_cell(reports):
    matrix = build([(str(p), data_of(p)) for p in (reports["sweep"], reports["sweep"])])
    assert [r[0] for r in matrix.rows][:2] == ["depth 36 chunk 21", "depth 36 chunk 42"]
    assert not any(any(marks) for _, _, marks in matrix.rows)


def test_compare_needs_two_reports(reports):
    result = CliRunner().invoke(main, ["report", "compare", str(reports["cap40"])])
    assert result.exit_code == 2 and "at least two" in result.output


def test_render_out_never_overwrites(reports, tmp_path):
    out = tmp_path / "issue.md"
    out.write_text("mine")
    result = CliRunner().invoke(main, ["report", "render", str(reports["cap40"]), "--out",
                                       str(out)])
    assert result.exit_code == 2 and out.read_text() == "mine"
