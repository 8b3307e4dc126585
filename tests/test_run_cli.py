"""`run` and `reproduce` as a user types them (CliRunner, trials in-process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.app.cli import main
from harness.report.fileformat import load_report
from harness.report.model import SCHEMA


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def report_of(result) -> Path:
    line = [x for x in result.stdout.splitlines() if x.startswith("report: ")][-1]
    return Path(line.split("report: ", 1)[1])


def test_reproduce_documented_profile_says_plainly_it_does_not_reproduce():
    result = invoke("reproduce", "--no-isolate", "--backend", "sim")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    # with no options: the #712 machine's documented stack (in-tree driver on Linux 7.0,
    # XRT 2.26.0)
    assert lines[0].startswith("backend: SIMULATED stack, profile mainline (documented "
                               "limits; mainline on Linux 7.0, XRT 2.26)")
    assert lines[1] == ("verdict: 42 in one runlist: COMPLETED 3/3; cut 21+21: COMPLETED 3/3 "
                        "-> not reproduced [SIMULATED]")
    assert lines[2] == ("  - not reproduced: monolithic 42: COMPLETED 3/3; halves 21+21: "
                        "COMPLETED 3/3 -> the documented limits do not produce the failure; "
                        "a hardware run is the test [SIMULATED, profile mainline]")
    assert "synthesized stand-ins" in result.output
    report = load_report(report_of(result))
    assert report.schema == SCHEMA and report.simulated
    assert report.artifacts["pack"]["stand_ins"] is True
    assert [len(p.trials) for p in report.plans] == [3, 3, 3]      # and the control
    assert report.verdict["reproduced"] is False
    assert report.verdict["control"] == "nothing fails"


def test_reproduce_inflight_cap_40_times_out_monolithic_and_completes_halves():
    result = invoke("reproduce", "--no-isolate", "--profile", "staging,inflight-cap:40")
    assert result.exit_code == 1
    # the answer first, in under 100 characters; how it follows and its caveats below
    lines = result.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("verdict: "))
    assert lines[at] == ("verdict: 42 in one runlist: TIMEOUT 3/3; cut 21+21: COMPLETED 3/3 "
                         "-> the cut avoids it [SIMULATED]")
    assert len(lines[at]) < 100
    assert lines[at + 1:at + 4] == [
        "  - SIMULATED: the outcome follows from the injected hypothesis by construction: "
        "inflight-cap:40 makes every runlist of more than 40 commands fail (the firmware "
        "wedges with more than 40 queued on one context).",
        "  - reproduced: monolithic 42: TIMEOUT 3/3; halves 21+21: COMPLETED 3/3 -> the cut "
        "avoids the failure [SIMULATED, profile staging,inflight-cap:40]",
        "  - control depth-only 42: TIMEOUT 3/3 -> depth alone fails"]
    report = load_report(report_of(result))
    monolithic, halves, control = report.plans
    assert control.control and report.verdict["control"] == "depth alone fails"
    assert {t.state for t in monolithic.trials} == {"TIMEOUT"}
    assert {t.state for t in halves.trials} == {"COMPLETED"}
    outcome = monolithic.trials[0].runlists[0]
    assert outcome.chains == [24, 18] and outcome.source == "device"
    assert outcome.failing_run == 0 and outcome.failing_chain == 0
    assert outcome.health["txn_op_idx"] == "not modelled"      # never an invented value
    assert "runlist failed execution (ERT_CMD_STATE_TIMEOUT)" in outcome.message
    assert outcome.device_ms == pytest.approx(2000.0, abs=1.0)
    assert report.backend["deviations"] == ["inflight-cap:40"]


def test_reproduce_inflight_cap_40_on_the_default_stack_times_out_at_60_s_unlogged():
    # Linux 7.0's in-tree driver (the default): drm_sched's 60 s, error_index 0, no health
    # data (25854131c04a is 7.1), nothing printed to the kernel log on a timeout
    result = invoke("reproduce", "--no-isolate", "--trials", "1", "--profile",
                    "inflight-cap:40")
    assert result.exit_code == 1
    report = load_report(report_of(result))
    outcome = report.plans[0].trials[0].runlists[0]
    assert outcome.message == "runlist failed execution (ERT_CMD_STATE_TIMEOUT)"
    assert outcome.device_ms == pytest.approx(60000.0, abs=1.0) and outcome.health is None


@pytest.mark.parametrize("release, form", [
    ("2.20", "no state in message"), ("2.21.21", "no state in message"),
    ("2.21", "state in message"), ("2.23", "state in message"), ("2.25", "state in message"),
    ("master", "state in message")])
def test_reproduce_hang_at_30_finds_run_24_chain_1_timeout_under_every_xrt(release, form):
    # NPU5: the firmware leaves error_index 0, so XRT's walk blames run 24 (chain 1); runs
    # 0-23 read NEW, 24 TIMEOUT, 25-41 ABORT. Without a state in the message (2.20) the
    # state must come from run 24, never NEW from the runs before it.
    result = invoke("reproduce", "--no-isolate", "--trials", "1", "--profile",
                    f"hang-at:30,xrt:{release}")
    assert result.exit_code == 1, result.output
    # the console names no run the device did not name: only the chain
    assert "chain 1 (runs 24-41) TIMEOUT from the simulated device; the device does not " \
           "say which run hung" in result.output
    assert "failing run 24" not in result.output
    report = load_report(report_of(result))
    outcome = report.plans[0].trials[0].runlists[0]
    assert (outcome.state, outcome.failing_run, outcome.failing_chain) == ("TIMEOUT", 24, 1)
    assert outcome.failing_run_named is False
    assert outcome.message_form == form
    assert outcome.located_by == "the first member run neither NEW nor COMPLETED"
    assert report.backend["xrt"]["release"] == release
    assert report.backend["xrt"]["message_form"] == form


def test_a_chain_left_new_is_located_on_the_run_before_the_first_abort():
    # xrt-chain:40 overflows the 4 KiB chain buffer: the driver rejects chain 0, header NEW;
    # its failing run (error_index 0) reads NEW like the runs XRT never touched
    for release in ("2.20", "master"):
        result = invoke("run", "minicpm5-2b-decode", "--no-isolate", "--trials", "1", "--plan",
                        "42", "--profile", f"xrt-chain:40,xrt:{release}")
        outcome = load_report(report_of(result)).plans[0].trials[0].runlists[0]
        assert (outcome.state, outcome.failing_run, outcome.failing_chain) == ("NEW", 0, 0)
        assert outcome.located_by.startswith("the run before the first ABORT")
        assert outcome.failing_run_named is False          # the chain never ran
        assert "chain 0 (runs 0-39) NEW from the simulated device; the driver never ran it " \
               "(left NEW)" in result.output


def test_run_plan_specs_and_skipped_chunks():
    result = invoke("run", "minicpm5-2b-decode", "--no-isolate", "--trials", "1",
                    "--profile", "hang-at:10", "--plan", "monolithic", "--plan", "max:14",
                    "--plan", "5+37")
    assert result.exit_code == 1
    report = load_report(report_of(result))
    names = [p.name for p in report.plans]
    assert names == ["monolithic", "max:14", "5+37"]       # a named spec keeps its name
    split = report.plan("5+37").trials[0].runlists
    assert [r.state for r in split] == ["COMPLETED", "TIMEOUT"]
    chunked = report.plan("max:14").trials[0].runlists
    assert [r.state for r in chunked] == ["TIMEOUT", None, None]
    assert [r.skipped for r in chunked] == [False, True, True]


def test_continue_after_failure_runs_later_chunks():
    result = invoke("run", "minicpm5-2b-decode", "--no-isolate", "--trials", "1",
                    "--profile", "hang-at:10", "--plan", "max:14", "--continue-after-failure")
    report = load_report(report_of(result))
    assert [r.state for r in report.plans[0].trials[0].runlists] == ["TIMEOUT"] * 3


def test_json_output_is_the_report():
    result = invoke("run", "qwen3-1.7b-decode", "--no-isolate", "--trials", "1", "--json",
                    "--backend", "sim")
    data = json.loads(result.stdout)
    assert data["schema"] == SCHEMA and data["backend"]["simulated"] is True
    assert data["plans"][0]["trials"][0]["runlists"][0]["chains"] == [24, 4]


def test_out_is_never_overwritten_without_force(tmp_path):
    out = tmp_path / "mine.yaml"
    out.write_text("precious\n")
    result = CliRunner().invoke(main, ["run", "nop-depth", "--no-isolate", "--trials", "1",
                                       "--out", str(out)])
    assert result.exit_code == 2 and "exists" in result.output
    assert out.read_text() == "precious\n"
    # --force replaces a report only: a file of the user's is no report, and stays
    forced = CliRunner().invoke(main, ["run", "nop-depth", "--no-isolate", "--trials", "1",
                                       "--out", str(out), "--force"])
    assert forced.exit_code == 2, forced.output
    assert f"--out {out} exists and is not a report of the harness; --force replaces only a " \
        "report of the harness" in forced.output
    assert out.read_text() == "precious\n"
    first = invoke("run", "qwen3-1.7b-decode", "--no-isolate", "--trials", "1", "--out",
                   str(tmp_path / "r.yaml"))
    assert first.exit_code == 0
    forced = invoke("run", "nop-depth", "--no-isolate", "--trials", "1", "--out",
                    str(tmp_path / "r.yaml"), "--force")
    assert forced.exit_code == 0 and load_report(tmp_path / "r.yaml").case["name"] == "nop-depth"


@pytest.mark.parametrize("args, code, words", [
    (["run", "minicpm5-2b-decode", "--plan", "21+20", "--no-isolate"], 2, "covers 41"),
    (["run", "no-such-case"], 2, "no case named"),
    (["run"], 2, "give a CASE"),
    (["run", "nop-depth", "--backend", "xrt", "--profile", "mainline"], 2,
     "simulated stack only"),
    (["run", "nop-depth", "--profile", "turbo"], 2, "unknown profile token"),
    (["run", "nop-depth", "--backend", "xrt"], 3, "pyxrt does not import"),
])
def test_bad_input_and_environment_errors(args, code, words):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == code, result.output
    assert words in result.output and len(result.output.strip().splitlines()) == 1


def test_hardware_run_lists_every_place_searched(monkeypatch, tmp_path):
    from harness.model.errors import EnvironmentNotReady
    from harness.sources.load import load_case
    from harness.sources.packs import resolve_pack
    monkeypatch.setenv("FLM_XCLBIN_PATH", str(tmp_path / "flm"))
    with pytest.raises(EnvironmentNotReady) as info:
        resolve_pack(load_case("minicpm5-2b-decode"), simulated=False)
    message = str(info.value)
    for place in (Path("xclbins") / "MiniCPM5-2B-NPU2", tmp_path / "flm" / "MiniCPM5-2B-NPU2"):
        assert str(place) in message


def test_a_missing_validate_pack_names_where_xrt_keeps_it(monkeypatch, tmp_path):
    """XRT's validate.xclbin is looked for in the install, not in pack folders: the error
    names those places rather than "nowhere"."""
    from harness.model.errors import EnvironmentNotReady
    from harness.probe.xrt import validate_files
    from harness.sources.load import load_case
    from harness.sources.packs import resolve_pack
    if validate_files(Path("/"), None):
        pytest.skip("this machine has XRT's validate artefacts in /opt/xilinx/xrt")
    monkeypatch.setenv("XILINX_XRT", str(tmp_path / "xrt"))
    with pytest.raises(EnvironmentNotReady) as info:
        resolve_pack(load_case("nop-depth"), simulated=False)
    message = str(info.value)
    assert "nowhere" not in message
    assert f"{tmp_path / 'xrt'}/share/amdxdna/bins/xrt_smi_*.a" in message
    assert "/opt/xilinx/xrt/amdxdna/bins/*/validate.xclbin" in message


def test_an_explicit_xclbins_folder_is_used_or_refused_never_replaced(tmp_path):
    from harness.formats.xclbin_writer import flm_spec, synthesize
    given = tmp_path / "given"
    given.mkdir()
    (given / "layer.xclbin").write_bytes(synthesize(flm_spec("Given/layer")))
    for backend in ("sim", "auto"):      # not even stand-ins on the simulated stack
        result = CliRunner().invoke(main, ["run", "minicpm5-2b-decode", "--no-isolate",
                                           "--backend", backend, "--xclbins", str(given)])
        assert result.exit_code == 2
        assert f"--xclbins {given} lacks attn.xclbin, mm.xclbin, dequant.xclbin" in \
            result.output
    for role in ("attn", "mm", "dequant"):
        (given / f"{role}.xclbin").write_bytes(synthesize(flm_spec(f"Given/{role}")))
    result = invoke("run", "minicpm5-2b-decode", "--no-isolate", "--trials", "1",
                    "--xclbins", str(given), "--plan", "21+21")
    assert f"xclbins: MiniCPM5-2B-NPU2 from {given}" in result.output


def test_import_refuses_a_pack_name_that_leaves_dest(tmp_path):
    from harness.formats.xclbin_writer import flm_spec, synthesize
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "layer.xclbin").write_bytes(synthesize(flm_spec("S/layer")))
    for name in ("../../escape", "..", "a/b", ".hidden"):
        result = CliRunner().invoke(main, ["xclbins", "import", str(tmp_path / "src"),
                                           "--pack", name, "--dest", str(tmp_path / "dest")])
        assert result.exit_code == 2 and "a pack name is one folder name" in result.output
    assert not (tmp_path / "escape").exists()


def test_real_pack_is_used_and_named(shared_xclbins):
    result = invoke("run", "qwen3-1.7b-decode", "--no-isolate", "--trials", "1",
                    "--xclbins", str(shared_xclbins), "--backend", "sim")
    assert result.exit_code == 0
    report = load_report(report_of(result))
    layer = [x for x in report.artifacts["xclbins"] if x["role"] == "layer"][0]
    assert layer["known_as"][0] == "Qwen3-1.7B-NPU2/layer.xclbin"
    assert layer["synthetic"] is False and not report.artifacts["pack"]["stand_ins"]
    assert "warning:" not in result.output          # its own pack's files: nothing to say


def test_another_packs_xclbins_are_named_as_that_packs(shared_xclbins, tmp_path):
    # the MiniCPM5 case given Qwen3-1.7B's folder is that pack's: refused before anything
    # runs; taken on request, it runs and says which files are not the case's
    # (tests/test_pack_identity.py holds the rule)
    out = tmp_path / "r.yaml"
    args = ["run", "minicpm5-2b-decode", "--plan", "42", "--no-isolate", "--trials", "1",
            "--xclbins", str(shared_xclbins / "Qwen3-1.7B-NPU2"), "--out", str(out)]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2 and not out.exists()
    result = invoke(*args, "--allow-other-pack")
    assert result.exit_code == 0, result.output
    [warning] = [x for x in result.output.splitlines() if x.startswith("warning:")]
    assert warning.startswith("warning: the xclbins found for MiniCPM5-2B-NPU2 (")
    assert "are Qwen3-1.7B-NPU2's pack: attn.xclbin, mm.xclbin and dequant.xclbin are " \
           "Qwen3-1.7B-NPU2's where the case expects MiniCPM5-2B-NPU2's own" in warning
    assert "layer.xclbin is Qwen3-1.7B-NPU2/layer.xclbin, as the case expects" in warning
    assert warning[len("warning: "):] in out.read_text()        # the report keeps it too


def test_too_many_buffers_for_the_kernel_is_refused_before_any_trial(tmp_path):
    from harness.sources.case import find_case
    text = find_case("nop-depth").read_text().replace("buffers: [20, 20, 20, 20, 20]",
                                                      "buffers: [1, 1, 1, 1, 1, 1]")
    assert "[1, 1, 1, 1, 1, 1]" in text
    case = tmp_path / "wide.yaml"
    case.write_text(text)
    result = CliRunner().invoke(main, ["run", str(case), "--no-isolate"])
    assert result.exit_code == 2
    assert "6 buffers, but DPU" in result.output and "takes 5" in result.output
    assert not Path("reports").exists()


def test_reproduce_ert_timeout_entry_point(tmp_path):
    # the console script's own function, in a process of its own as the script runs it
    def script(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", "from harness.app.entry import "
                               "reproduce; reproduce()", *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
    failed = script("--no-isolate", "--trials", "1", "--profile", "inflight-cap:40")
    assert failed.returncode == 1, failed.stderr
    assert "verdict: 42 in one runlist: TIMEOUT 1/1; cut 21+21: COMPLETED 1/1 -> the cut " \
        "avoids it [SIMULATED]\n  - SIMULATED: the outcome follows from the injected " \
        "hypothesis by construction: inflight-cap:40 makes" in failed.stdout
    helped = script("--help")
    assert helped.returncode == 0
    assert helped.stdout.startswith("Usage: reproduce_ert_timeout [OPTIONS] [CASE]")


@pytest.mark.parametrize("kernel, state", [("7.0", "TIMEOUT"),
                                           ("6.16,firmware:1.0.0.63", "ABORT")])
def test_reproduce_answers_as_the_mainline_kernel_does(tmp_path, kernel, state):
    # mainline: 6fb7f2988832 (6.17.y, 7.0) ends the hung job TIMEOUT; 6.16 ABORTs it (with
    # protocol-6 firmware: it refuses the device's own 1.1.2.65 at probe)
    out = tmp_path / "r.yaml"
    result = CliRunner().invoke(main, ["reproduce", "--profile",
                                       f"mainline,kernel:{kernel},hang-at:30", "--no-isolate",
                                       "--out", str(out)])
    kernel = kernel.split(",")[0]
    assert result.exit_code == 1, result.output
    report = load_report(out)
    monolithic = next(p for p in report.plans if p.name == "monolithic")
    assert {t.state for t in monolithic.trials} == {state}
    assert report.backend["driver"] == {"flavour": "mainline", "kernel": kernel,
                                        "source": report.backend["driver"]["source"]}
    assert f"mainline on Linux {kernel}" in result.output.splitlines()[0]


# -- a deadline the driver's timer cannot meet ------------------------------------------------

def test_a_deadline_shorter_than_the_drivers_timer_is_bad_input_before_any_trial(tmp_path):
    out = tmp_path / "r.yaml"
    # the simulated driver's 60 s timer, played in real time: a 1.5 s deadline would cut
    # every hang off before the driver answers (it once ran and exited 4, a harness fault)
    refused = invoke("run", "minicpm5-2b-decode", "--plan", "42", "--profile",
                     "mainline,hang-at:3", "--realtime", "--deadline", "1.5", "--out", str(out))
    assert refused.exit_code == 2
    assert "error: --deadline 1.5: shorter than the 60 s the driver may take to notice a hang" \
        in refused.output
    assert not out.exists() and "[1/" not in refused.output       # before the first trial
    # staging's 2 s timer: 20 s is enough
    done = invoke("run", "minicpm5-2b-decode", "--plan", "42", "--trials", "1", "--profile",
                  "staging", "--realtime", "--deadline", "20", "--out", str(tmp_path / "s.yaml"))
    assert done.exit_code == 0, done.output
    # on the virtual clock the timer costs no wall time: any deadline serves
    virtual = invoke("run", "minicpm5-2b-decode", "--plan", "42", "--trials", "1", "--profile",
                     "mainline,hang-at:3", "--deadline", "1.5", "--out", str(tmp_path / "v.yaml"))
    assert virtual.exit_code == 1, virtual.output


@pytest.mark.parametrize("name, form", [("rep.json", "JSON"), ("rep.md", "Markdown"),
                                        ("rep.tar.gz", "a compressed file")])
def test_a_report_named_for_another_format_is_refused_before_anything_runs(tmp_path, name,
                                                                           form):
    # a report is YAML whatever it is called: `--out rep.json` once held YAML
    out = tmp_path / name
    result = invoke("run", "nop-depth", "--plan", "42", "--out", str(out))
    assert result.exit_code == 2
    assert f"a report is written as YAML, not {form}; name it " \
           f"{out.with_suffix('.yaml')}" in result.output
    assert not out.exists() and "[1/" not in result.output
    assert invoke("run", "nop-depth", "--plan", "42", "--trials", "1", "--no-isolate",
                  "--out", str(tmp_path / "rep.yml")).exit_code == 0


@pytest.mark.parametrize("name", ["minicpm5-2b-decode", "qwen3-4b-decode", "qwen3-1.7b-decode",
                                  "nop-depth"])
def test_no_shipped_case_warns_about_itself(tmp_path, name):
    # nop-depth once gave DPU one buffer of its five and said so on every run
    result = invoke("run", name, "--plan", "monolithic", "--trials", "1", "--no-isolate",
                    "--out", str(tmp_path / "r.yaml"))
    assert result.exit_code == 0, result.output
    assert [line for line in result.output.splitlines() if line.startswith("warning:")] == []
