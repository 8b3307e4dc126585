"""A run's settings have one mapping to and from the report (`RunOptions.to_settings`,
`from_settings`), used by new runs and continued ones alike, and what a continued report
refuses is derived from it; the command line hands a run everything in one object
(`RunRequest`) to one helper (`start_run`). So a new run setting lands in at most three
files: its field in `RunOptions` (harness/execution/settings.py: recorded, read back, kept on
resume; the commands' options are made from it), its use, and the docs; the schema takes
any setting, and what the setting changes in a trial is that change's own."""

from __future__ import annotations

from dataclasses import field, fields, make_dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from harness.app.cli import main
from harness.app.cli.options import RunRequest, declared_settings, kept_on_resume, start_run
from harness.app.cli.run_cmd import reproduce, run
from harness.app.cli.search_cmd import bisect, sweep
from harness.execution.settings import RunOptions, Setting
from harness.report.fileformat import load_report
from harness.sources.load import load_case

options = st.builds(
    RunOptions, trials=st.integers(1, 1000), isolate=st.booleans(),
    deadline_s=st.none() | st.floats(0.1, 1e6), continue_after_failure=st.booleans(),
    seed=st.integers(0, 2**63), flow=st.sampled_from(["elf", "instr-bo", "full-elf"]),
    xrt_smi_control=st.booleans(), redact=st.booleans())


@given(options)
def test_settings_read_back_as_they_were_recorded(ran):
    settings = ran.to_settings(ran.flow, "fork server" if ran.isolate else None)
    assert list(settings)[:3] == ["trials", "isolate", "worker_start"]
    assert RunOptions.from_settings(settings) == ran


def test_a_report_older_than_a_setting_takes_its_default_or_what_it_ran_with():
    """A setting says what reports older than it ran with where that is not its default:
    a report written before reports were redacted goes on unredacted, as it began."""
    assert RunOptions.from_settings({"trials": 2, "isolate": False}) == \
        RunOptions(trials=2, isolate=False, redact=False)
    assert RunOptions(trials=1).redact


def test_a_run_records_what_resume_reads(tmp_path):
    out = tmp_path / "r.yaml"
    result = CliRunner().invoke(main, [
        "run", "minicpm5-2b-decode", "--plan", "21+21", "--trials", "2", "--no-isolate",
        "--seed", "7", "--continue-after-failure", "--flow", "instr-bo",
        "--no-xrt-smi-validate", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert RunOptions.from_settings(load_report(out).settings) == RunOptions(
        trials=2, isolate=False, continue_after_failure=True, seed=7, flow="instr-bo",
        xrt_smi_control=False)


def test_every_setting_an_option_sets_is_kept_on_resume_by_that_option():
    kept = kept_on_resume()
    for command in (run, bisect, sweep):
        options = {param.name: param.opts for param in command.params}
        for param, (option, _) in RunOptions.kept_on_resume().items():
            assert option in options[param] and param in kept
    assert set(kept) == {"trials", "no_isolate", "deadline", "continue_after_failure", "seed",
                         "flow", "profile", "backend_kind", "realtime", "xclbins_dir", "out",
                         "force", "no_redact", "allow_other_pack"}
    # and the report's value is named as the refusal shows it
    assert kept["no_isolate"][1](SimpleNamespace(settings={"isolate": False})) == "in-process"
    assert kept["deadline"][1](SimpleNamespace(settings={"deadline_s": None})) == "the default"


def test_a_new_setting_is_one_field():
    """A throw-away setting, added as a field alone, is recorded, read back and kept."""
    with_new = make_dataclass("WithNew", [("window", int, field(
        default=0, metadata={"setting": Setting("--window", "window")}))],
        bases=(RunOptions,))
    ran = with_new(trials=1, flow="elf", window=5)
    settings = ran.to_settings("elf", None)
    assert settings["window"] == 5
    assert with_new.from_settings(settings) == ran
    option, shown = with_new.kept_on_resume()["window"]
    assert option == "--window" and shown(settings) == 5


def test_every_command_that_runs_trials_takes_the_whole_request():
    request = {f.name for f in fields(RunRequest) if f.name != "settings"} | {
        setting.param for setting in declared_settings()}
    for command in (run, reproduce, bisect, sweep):
        assert request <= {p.name for p in command.params}


def test_one_helper_opens_a_run_from_the_request(tmp_path):
    out = tmp_path / "r.yaml"
    request = RunRequest(profile="inflight-cap:40", xrt_smi_validate=False, out=str(out),
                         settings={"seed": 3, "trials": 1, "no_isolate": True})
    case = load_case("minicpm5-2b-decode")
    runner = start_run(request, case, case.plans_for(["42"]), "run")
    assert runner.backend.profile.name == "mainline,inflight-cap:40"
    assert runner.options == RunOptions(trials=1, isolate=False, seed=3, xrt_smi_control=False)
    runner.run()
    report = load_report(out)
    assert report.command == "run" and [p.name for p in report.plans] == ["42"]
    assert report.settings["seed"] == 3 and report.settings["xrt_smi_control"] is False


def test_leaving_the_folder_is_allowed_per_load_not_per_process(tmp_path):
    from harness.formats.txn import nop_stream
    from harness.model.errors import CaseError
    insts = tmp_path / "elsewhere" / "insts.bin"
    insts.parent.mkdir()
    insts.write_bytes(nop_stream(4))
    folder = tmp_path / "mine"
    folder.mkdir()
    text = (Path(__file__).parent.parent / "cases" / "nop-depth.yaml").read_text()
    case = folder / "case.yaml"
    case.write_text(text.replace("instructions: nop", f"instructions: {insts}"))
    assert load_case(case, allow_outside_paths=True).per_layer[0].instructions == str(insts)
    with pytest.raises(CaseError, match="--allow-outside-paths"):
        load_case(case)


# A throw-away setting declared as one field, before the commands are built (they make their
# options from `RunOptions` when imported, so this runs in a process of its own): offered by
# the commands that name it, recorded, read back on resume and refused when given again.
_WITH_WARMUP = """
import json, re, sys
from dataclasses import dataclass
from pathlib import Path
from click.testing import CliRunner
import harness.execution.settings as running

@dataclass
class WithWarmup(running.RunOptions):
    warmup: int = running.run_setting(
        "--warmup", "warmup", kind=int, low=0, high=9, option_default=0, default=0,
        help="Decode steps run before the trials (throw-away).",
        commands=frozenset({"run", "bisect"}))

running.RunOptions = WithWarmup
from harness.app.cli import main
import harness.execution.resume as resume
from harness.report.fileformat import load_report

resumed = []
class Spy(resume.Runner):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        resumed.append(self.options)
resume.Runner = Spy

out = Path(sys.argv[1])
cli = CliRunner()
helps = {name: cli.invoke(main, [name, "--help"]).output for name in ("run", "bisect", "sweep")}
ran = cli.invoke(main, ["run", "minicpm5-2b-decode", "--plan", "42", "--trials", "1",
                        "--no-isolate", "--warmup", "3", "--out", str(out)])
recorded = load_report(out).settings
# stopped after one of its two trials
data = out.read_text().replace("trials: 1\\n", "trials: 2\\n", 1)
out.write_text(re.sub(r"\\nfinished: .*\\n", "\\nfinished: null\\n", data, count=1))
bad = cli.invoke(main, ["run", "minicpm5-2b-decode", "--warmup", "10"])
again = cli.invoke(main, ["run", "--resume", str(out), "--warmup", "5"])
same = cli.invoke(main, ["run", "--resume", str(out)])
print(json.dumps({"offered": {name: "--warmup" in text for name, text in helps.items()},
                  "help": "Decode steps run before the trials" in helps["run"],
                  "ran": [ran.exit_code, ran.output], "recorded": recorded["warmup"],
                  "bad": [bad.exit_code, bad.output], "again": [again.exit_code, again.output],
                  "same": [same.exit_code, same.output],
                  "resumed": [options.warmup for options in resumed]}))
"""


def test_a_throw_away_setting_is_offered_recorded_read_back_and_kept(tmp_path):
    import json
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", _WITH_WARMUP, str(tmp_path / "r.yaml")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["offered"] == {"run": True, "bisect": True, "sweep": False} and seen["help"]
    assert seen["ran"][0] == 0, seen["ran"][1]
    assert seen["recorded"] == 3
    assert seen["bad"][0] == 2 and "--warmup" in seen["bad"][1]
    assert seen["again"][0] == 2
    assert "--warmup (the report's: 3)" in seen["again"][1]
    assert seen["same"][0] == 0, seen["same"][1]
    assert seen["resumed"] == [3]
