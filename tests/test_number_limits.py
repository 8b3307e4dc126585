"""Numbers past what the harness can use are bad input, exit 2 in one line, wherever they
are written: an option, a plan, a profile, a sweep range, a case, a recipe, a capture, a
report. Python reads no integer of 4,300 digits (its guard against slow conversions), so
each place must refuse such a number before it reaches int() or str(); and a kernel-log
line with absurd numbers is kept as text and never stops a run."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from captures import decode_capture
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.app.cli import main
from harness.logs.driver_lines import events, trial_entry
from harness.logs.kernel_log import LogRecord, Reading
from harness.model.errors import HarnessError
from harness.model.plan import parse_plan
from harness.sim.profiles import parse_profile

PROJECT = Path(__file__).resolve().parents[1]
HUGE = "9" * 5000                 # past Python's 4,300-digit limit
LONG = "1" + "0" * 40             # converts, but past anything the harness counts
CASE = (PROJECT / "cases" / "minicpm5-2b-decode.yaml").read_text()


def one_line_exit_2(result) -> None:
    assert result.exit_code == 2, result.output[-600:]
    text = result.output.strip()
    assert "\n" not in text and len(text) < 400, text[:600]
    assert "harness fault" not in text


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


# (each place, a number it took for one before: 5,000 digits, or one it could read but never
# use: 41 digits; places that refused both already are not repeated here)
OPTIONS = [
    (["run", "minicpm5-2b-decode", "--plan", "{n}"], HUGE),
    (["run", "minicpm5-2b-decode", "--plan", "21+{n}"], HUGE),
    (["run", "minicpm5-2b-decode", "--plan", "even:{n}"], HUGE),
    (["run", "minicpm5-2b-decode", "--plan", "max:{n}"], HUGE),
    (["run", "minicpm5-2b-decode", "--profile", "hang-at:{n}"], HUGE),
    (["run", "minicpm5-2b-decode", "--profile", "seed:{n}"], HUGE),
    (["run", "minicpm5-2b-decode", "--profile", "inflight-cap:{n}"], HUGE),
    (["run", "minicpm5-2b-decode", "--profile", "xrt-chain:{n}"], HUGE),
    (["sweep", "minicpm5-2b-decode", "--depths", "1..{n}", "--chunks", "1"], HUGE),
    (["sweep", "minicpm5-2b-decode", "--depths", "{n}..{n}", "--chunks", "1"], HUGE),
    (["sweep", "minicpm5-2b-decode", "--depths", "1..4:{n}", "--chunks", "1"], HUGE),
    (["bisect", "minicpm5-2b-decode", "--lo", "1", "--hi", "8", "--max-trials", "{n}"], LONG),
    (["serve-probe", "--url", "http://127.0.0.1:9", "--model", "x", "--model-bytes", "{n}"],
     LONG),
    (["serve-probe", "--url", "http://127.0.0.1:9", "--model", "x", "--timeout", "{n}"], LONG),
]


@pytest.mark.parametrize("args, number", OPTIONS,
                         ids=lambda a: " ".join(a[2:]).replace("{n}", "N")
                         if isinstance(a, list) else f"{len(a)}-digits")
def test_a_number_past_use_in_an_option_is_one_line_exit_2(args, number, tmp_path):
    given = [a.replace("{n}", number) for a in args]
    if args[0] != "serve-probe":
        given += ["--no-isolate", "--out", str(tmp_path / "r.yaml")]
    one_line_exit_2(invoke(*given))


CASE_EDITS = {
    "layers": ("layers: 42", "layers: {n}"),
    "trials": ("trials: 3", "trials: {n}"),
    "a buffer": ("[4096, 4096", "[{n}, 4096"),
    "a plan": ('"21+21"', '"21+{n}"'),
    "a plan given as a number": ('"42"', "{n}"),
    "latency": ("      buffers:", "      latency_us: {n}\n      buffers:"),
    "a hex number": ("layers: 42", "layers: 0x{n}"),
}


@pytest.mark.parametrize("field", CASE_EDITS)
def test_a_number_past_use_in_a_case_is_one_line_exit_2(field, tmp_path):
    # `cases check` reads a case as every command does (harness.sources.load)
    number = HUGE
    old, new = CASE_EDITS[field]
    assert old in CASE
    path = tmp_path / "case.yaml"
    path.write_text(CASE.replace(old, new.replace("{n}", number), 1))
    one_line_exit_2(invoke("cases", "check", str(path)))


def test_a_mapping_key_that_is_a_list_is_one_line_exit_2(tmp_path):
    for key in ("? [a, b]\n: 1\n", "? {a: 1}\n: 1\n", "[a, b]: 1\n"):
        path = tmp_path / "case.yaml"
        path.write_text(CASE + key)
        one_line_exit_2(invoke("cases", "check", str(path)))


CAPTURE_EDITS = {"a buffer size": ('"size": 4096', '"size": {n}'),
                 "an argidx": ('"argidx": 3', '"argidx": {n}'),
                 "a constant": ('"value": 3', '"value": {n}')}


@pytest.fixture(scope="module")
def capture(tmp_path_factory) -> Path:
    return decode_capture(tmp_path_factory.mktemp("capture") / "cap", 4)


@pytest.mark.parametrize("field, number", [(field, HUGE) for field in CAPTURE_EDITS]
                         + [("an argidx", LONG)])
def test_a_number_past_use_in_a_capture_is_one_line_exit_2(capture, field, number, tmp_path):
    old, new = CAPTURE_EDITS[field]
    folder = tmp_path / "cap"
    shutil.copytree(capture, folder)
    text = (folder / "replay.json").read_text()
    assert old in text
    (folder / "replay.json").write_text(text.replace(old, new.replace("{n}", number), 1))
    one_line_exit_2(invoke("capture", "show", str(folder)))


def recipe(folder: Path, argidx: str = "3", size: str = "20", iterations: str = "1") -> Path:
    from harness.formats.elf_writer import control_code_elf
    from harness.formats.txn import nop_stream
    from harness.formats.xclbin_writer import flm_spec, synthesize
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "validate.xclbin").write_bytes(synthesize(flm_spec("Recipe/validate")))
    (folder / "nop.elf").write_bytes(control_code_elf(nop_stream(8)))
    (folder / "recipe.json").write_text(
        '{"version": "1.0", "header": {"xclbin": "validate.xclbin"}, "resources": '
        '{"buffers": [{"name": "a", "type": "internal", "size": ' + size + '}], "kernels": '
        '[{"name": "k", "instance": "MLIR_AIE", "ctrlcode": "nop.elf"}]}, "execution": '
        '{"runs": [{"kernel": "k", "arguments": [{"name": "a", "argidx": ' + argidx + '}], '
        '"constants": [{"value": 3, "type": "int", "argidx": 0}]}]}}')
    (folder / "profile.json").write_text('{"version": "1.0", "execution": {"iterations": '
                                         + iterations + '}}')
    return folder


@pytest.mark.parametrize("field, number", [("argidx", HUGE), ("size", HUGE),
                                           ("iterations", HUGE), ("iterations", LONG)])
def test_a_number_past_use_in_a_recipe_is_one_line_exit_2(field, number, tmp_path):
    folder = recipe(tmp_path / "r", **{field: number})
    one_line_exit_2(invoke("run", str(folder / "recipe.json"), "--recipe-profile",
                           str(folder / "profile.json"), "--no-isolate", "--out",
                           str(tmp_path / "o.yaml")))


@pytest.fixture(scope="module")
def report_text(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("report")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HARNESS_PYXRT", "none")
        patch.setenv("XDG_CACHE_HOME", str(folder / ".cache"))
        out = folder / "r.yaml"
        done = invoke("run", "minicpm5-2b-decode", "--plan", "42", "--trials", "1",
                      "--no-isolate", "--out", str(out))
        assert done.exit_code == 0, done.output
    return out.read_text()


@pytest.mark.parametrize("number", [HUGE, LONG], ids=["5000-digits", "41-digits"])
@pytest.mark.parametrize("where", ["trial index", "settings.trials", "a chunk"])
def test_a_number_past_use_in_a_report_is_refused_in_one_line(report_text, where, number,
                                                              tmp_path):
    text = report_text.replace("finished: '", "finished: null\nwas_finished: '", 1)
    text = re.sub(r"(?m)^was_finished: .*\n", "", text)
    edits = {"trial index": (', "index": 0, ', f', "index": {number}, '),
             "settings.trials": ("  trials: 1\n", f"  trials: {number}\n"),
             "a chunk": ("  chunks:\n  - 42\n", f"  chunks:\n  - {number}\n")}
    old, new = edits[where]
    assert old in text, where
    path = tmp_path / "r.yaml"
    path.write_text(text.replace(old, new))
    checked = invoke("report", "check", str(path))
    assert checked.exit_code == 2, checked.output[-500:]
    assert "harness fault" not in checked.output and len(checked.output) < 3000
    for args in (["report", "render", str(path)], ["run", "--resume", str(path)]):
        one_line_exit_2(invoke(*args))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(digits=st.integers(min_value=19, max_value=6000), form=st.sampled_from(
    ["{n}", "21+{n}", "{n}+21", "even:{n}", "max:{n}", "1+1+{n}"]))
def test_plans_of_any_length_are_a_plan_error(digits, form):
    with pytest.raises(HarnessError):
        parse_plan(form.replace("{n}", "9" * digits), 42)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(digits=st.integers(min_value=21, max_value=6000), head=st.sampled_from(
    ["hang-at", "seed", "inflight-cap", "xrt-chain"]))
def test_profile_numbers_of_any_length_are_bad_input(digits, head):
    with pytest.raises(HarnessError):
        parse_profile(f"staging,{head}:{'9' * digits}")


def kernel_records(number: str) -> list[LogRecord]:
    bdf = "amdxdna 0000:c7:00.1:"
    return [LogRecord(3, 1, f"{bdf} aie2_dump_ctx: JOB[{number}]:"),
            LogRecord(3, 2, f"{bdf} aie2_dump_ctx: \tseq: {number}"),
            LogRecord(4, 3, f"aie2_sched_job_timedout: {number} callbacks suppressed"),
            LogRecord(3, 4, f"{bdf} [drm] *ERROR* aie_send_mgmt_msg_wait: command opcode "
                            f"0x{'f' * 4000} failed, status 0x2000003"),
            LogRecord(3, 5, f"{bdf} [drm] *ERROR* aie2_set_cmd_timeout: Firmware timeout "
                            "state capture:"),
            LogRecord(3, 6, f"{bdf} [drm] *ERROR* aie2_set_cmd_timeout: \tContext ID: "
                            f"0x{'f' * 4000}"),
            LogRecord(3, 7, f"{bdf} [drm] *ERROR* aie2_set_cmd_timeout: \tDPU PC: {number}")]


@pytest.mark.parametrize("number", [HUGE, LONG], ids=["5000-digits", "41-digits"])
def test_kernel_log_lines_with_absurd_numbers_are_kept_as_text(number):
    records = kernel_records(number)
    found = events(records)
    json.dumps(found)                       # every field can be written and shown
    assert all(len(str(v)) < 100 or isinstance(v, str) for e in found for v in e.values())
    reading = Reading("/dev/kmsg")
    reading.records = records
    entry = trial_entry(reading, "staging", True)
    assert len(entry["lines"]) == len(records)
    assert any(number in line for line in entry["lines"])
