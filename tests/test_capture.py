"""XRT captures (STACK.md 9) imported, shown, run, cut, bisected and swept; captures are
written by tests/captures.py to the format XRT's capture.cpp writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from captures import MAIN, OTHER, CaptureWriter, decode_capture, threaded_capture
from click.testing import CliRunner

from harness.capture import load_capture
from harness.case import load_case
from harness.cli import main
from harness.report import load_report


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def decode(tmp_path) -> Path:
    return decode_capture(tmp_path / "flm-capture")


def imported(decode: Path, name: str = "minicpm5-capture") -> str:
    result = invoke("capture", "import", str(decode), "--name", name)
    assert result.exit_code == 0, result.output
    return name


def test_a_42_run_runlist_capture_imports_as_a_case(decode, tmp_path):
    name = imported(decode)
    case = load_case(name)
    assert case.kind == "capture" and case.frame == "frame_2" and case.layers == 42
    assert case.runlist_context == "hwctx_2" and len(case.xclbins) == 4    # all four contexts
    assert case.flow == "elf" and case.per_layer[0].args[:3] == ((0, "int", 3), (1, "int", 0),
                                                                 (2, "int", 0))
    assert (tmp_path / "cases" / f"{name}.yaml").is_file()


def test_show_reports_depths_and_chains(decode):
    name = imported(decode)
    result = invoke("capture", "show", name)
    assert result.exit_code == 0, result.output
    assert "frame_2" in result.output and "runlist of 42 runs, chains 24+18" in result.output
    assert "depths (runs per frame: frames): 1: 3, 42: 1" in result.output
    assert "deepest runlist: frame_2, 42 runs in hwctx_2; XRT submits it as chains 24+18" \
        in result.output
    info = json.loads(invoke("capture", "show", "--json", str(decode)).output)
    assert info["runlist_frames"] == ["frame_2"] and info["deepest"]["chains"] == [24, 18]
    assert [k["instance"] for k in info["kernels"]] == ["MLIR_AIE"] * 4
    assert all(k["columns"] == 8 for k in info["kernels"])


def test_run_frame_reproduces_the_hypothesis_and_its_cut_completes(decode, tmp_path):
    name = imported(decode)
    out = tmp_path / "r.yaml"
    result = invoke("run", name, "--frame", "frame_2", "--plan", "42", "--plan", "21+21",
                    "--trials", "2", "--no-isolate", "--profile", "inflight-cap:40", "--out",
                    str(out))
    assert result.exit_code == 1, result.output
    whole, halves = load_report(out).plans
    assert {t.state for t in whole.trials} == {"TIMEOUT"}
    assert {t.state for t in halves.trials} == {"COMPLETED"}
    assert load_report(out).case["frame"] == "frame_2"


def test_a_frame_runs_isolated_too(decode, tmp_path):
    out = tmp_path / "iso.yaml"
    result = invoke("run", str(decode), "--plan", "even:2", "--trials", "1", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert [r.runs for r in load_report(out).plans[0].trials[0].runlists] == [21, 21]


def test_bisect_on_the_captured_frame_finds_the_boundary(decode, tmp_path):
    name = imported(decode)
    out = tmp_path / "b.yaml"
    result = invoke("bisect", name, "--frame", "2", "--trials", "2", "--no-isolate",
                    "--profile", "inflight-cap:40", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "first failing depth 41 (40: COMPLETED 4/4; 41: TIMEOUT 4/4)" in result.output
    assert invoke("bisect", name, "--hi", "50", "--lo", "1").exit_code == 2


def test_sweep_over_frames_and_chunk_sizes(decode, tmp_path):
    name = imported(decode)
    out = tmp_path / "s.yaml"
    result = invoke("sweep", name, "--frames", "all", "--chunks", "21,42", "--trials", "1",
                    "--no-isolate", "--profile", "inflight-cap:40", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "every answered trial failed in some cell of frame_2" in result.output
    report = load_report(out)
    assert report.sections["sweep"]["frames"] == ["frame_0", "frame_1", "frame_2", "frame_3"]
    assert {p.frame for p in report.plans} == {"frame_0", "frame_1", "frame_2", "frame_3"}
    assert invoke("report", "validate", str(out)).exit_code == 0
    md = invoke("report", "render", str(out)).output
    assert "| frame \\\\ chunk | 21 | 42 |" in md and "| frame_2 | COMPLETED 1/1 | TIMEOUT 1/1 |" \
        in md


def test_a_threaded_capture_with_cross_frame_waits(tmp_path):
    folder = threaded_capture(tmp_path / "threads")
    capture = load_capture(folder)
    assert capture.threads == (MAIN, OTHER)
    assert [f.depth for f in capture.frames] == [8, 30, 1]
    assert capture.frames[1].waits == ("frame_0",)
    shown = invoke("capture", "show", str(folder)).output
    assert f"thread {OTHER}: runlist of 30 runs, chains 24+6" in shown
    assert "waits on frame_1" in shown
    result = invoke("run", str(folder), "--frame", "frame_0", "--plan", "8", "--trials", "1",
                    "--no-isolate")
    assert result.exit_code == 0, result.output


def test_show_collapses_consecutive_frames_alike(tmp_path):
    writer = CaptureWriter(tmp_path / "singles")
    kernel = writer.kernel(writer.hwctx("layer"))
    bos = [writer.buffer()]
    for _ in range(5):
        writer.frame([writer.run(kernel, bos)])
    writer.frame([writer.run(kernel, bos) for _ in range(3)])
    shown = invoke("capture", "show", str(writer.save())).output
    assert f"frame_0..frame_4       thread {MAIN}: 5 frames, each one run (MLIR_AIE)" in shown
    assert "frame_5" in shown and "runlist of 3 runs, chains 3" in shown


def test_each_frame_runs_with_the_data_its_buffers_held(decode):
    capture = load_capture(decode)
    first, _, runlist, last = capture.frames
    assert set(capture.data_for(first)) == {"bo_0"}
    held = capture.data_for(runlist)
    assert set(held) == {"bo_0", "bo_1"}                  # bo_0 from frame_0, still valid
    assert Path(held["bo_1"]).read_bytes() == b"\x02" * 4096
    case = load_case(str(decode))
    assert case.buffers["bo_1"].data == held["bo_1"] and case.buffers["bo_2"].data is None


def test_a_cut_of_a_captured_frame_exports_as_recipes(decode, tmp_path):
    from conftest import SHARED_REFERENCE
    folder = tmp_path / "export"
    result = invoke("export", str(decode), "--plan", "21+21", str(folder))
    assert result.exit_code == 0, result.output
    recipes = sorted(folder.glob("recipe_*.json"))
    assert len(recipes) == 2 and (folder / "ctrl_0.elf").is_file()
    assert len(json.loads(recipes[0].read_text())["execution"]["runs"]) == 21
    schema = SHARED_REFERENCE / "xrt" / "recipe.schema.json"
    if schema.is_file():
        import jsonschema
        for recipe in recipes:
            jsonschema.validate(json.loads(recipe.read_text()), json.loads(schema.read_text()))


def instr_bo_capture(folder: Path) -> Path:
    """An application that calls kernels as mlir-aie does: no control code, the
    instructions in a buffer at argidx 1 and their word count at argidx 2."""
    from harness.txn import nop_stream
    writer = CaptureWriter(folder)
    ctx = writer.hwctx("layer")
    writer.kernels.append({"name": "kernel_0", "instance": "MLIR_AIE", "hwctx": ctx})
    instr = writer.buffer(20)
    data = writer.buffer()
    runs = []
    for _ in range(30):
        name = f"run_{len(writer.runs)}"
        writer.runs.append({"name": name, "kernel": "kernel_0",
                            "arguments": [{"bo": instr, "argidx": 1, "type": "inout"},
                                          {"bo": data, "argidx": 3, "type": "inout"}],
                            "constants": [{"value": 3, "argidx": 0, "type": "int"},
                                          {"value": 5, "argidx": 2, "type": "int"}]})
        runs.append(name)
    writer.frame(runs, dump={instr: nop_stream(8)})
    return writer.save()


def test_an_instruction_buffer_capture_runs_its_own_way(tmp_path):
    folder = instr_bo_capture(tmp_path / "ibo")
    case = load_case(str(folder))
    assert case.flow == "instr-bo" and case.per_layer[0].elf is None
    out = tmp_path / "r.yaml"
    result = invoke("run", str(folder), "--trials", "1", "--no-isolate", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert load_report(out).plans[0].trials[0].state == "COMPLETED"


def mutated(tmp_path: Path, change) -> Path:
    folder = decode_capture(tmp_path / "bad")
    document = json.loads((folder / "replay.json").read_text())
    change(document, folder)
    (folder / "replay.json").write_text(json.dumps(document))
    return folder


@pytest.mark.parametrize("change, words", [
    (lambda d, f: (f / "capture_6.bin").unlink(),
     "resources.kernels[2].ctrlcode: capture_6.bin is not in"),
    (lambda d, f: (f / "capture_2.bin").unlink(),
     "resources.hwctxs[2].xclbin: capture_2.bin is not in"),
    (lambda d, f: d["resources"]["runs"][0].update(kernel="kernel_9"),
     "resources.runs[0].kernel: 'kernel_9' is not a kernel of resources.kernels"),
    (lambda d, f: d["resources"]["kernels"][0].update(hwctx="hwctx_9"),
     "resources.kernels[0].hwctx: 'hwctx_9' is not a context of resources.hwctxs"),
    (lambda d, f: d["resources"]["runs"][0]["arguments"][0].update(bo="bo_99"),
     "resources.runs[0].arguments[0].bo: 'bo_99' is not a buffer of resources.buffers"),
    (lambda d, f: d["execution"]["frames"][2]["runs"][5].update(run="run_999"),
     "execution.frames[2].runs[5].run: 'run_999' is not a run of resources.runs"),
    (lambda d, f: d["execution"]["frames"][0].update(waits=["frame_3"]),
     "execution.frames[0].waits[0]: 'frame_3' is neither this frame nor one before it"),
    (lambda d, f: d["execution"]["frames"][0].update(tid="1"),
     "execution.frames[0].tid: thread 1 is not one of execution.threads"),
    (lambda d, f: d.update(version="2.0"), "version: '2.0'; XRT's capture writes 1.0"),
    (lambda d, f: d["resources"]["hwctxs"][0].pop("xclbin"),
     "resources.hwctxs[0].xclbin: expected a non-empty string"),
    (lambda d, f: d["resources"]["hwctxs"].append(dict(d["resources"]["hwctxs"][0])),
     "resources.hwctxs[4].name: 'hwctx_0' is named twice"),
    (lambda d, f: d["execution"].update(frames=[]), "execution.frames: no frames"),
])
def test_a_malformed_capture_is_one_line_exit_2_and_nothing_is_written(tmp_path, change,
                                                                       words):
    folder = mutated(tmp_path, change)
    result = invoke("capture", "import", str(folder))
    assert result.exit_code == 2, result.output
    assert words in result.output and "replay.json" in result.output
    assert result.output.count("\n") == 1, result.output
    assert not (tmp_path / "cases").exists()


def test_a_truncated_replay_json_is_named(tmp_path):
    folder = decode_capture(tmp_path / "cut")
    text = (folder / "replay.json").read_text()
    (folder / "replay.json").write_text(text[: len(text) // 2])
    result = invoke("capture", "import", str(folder))
    assert result.exit_code == 2 and "not valid JSON" in result.output
    assert "capture cut short?" in result.output


def test_import_never_overwrites_a_case(decode, tmp_path):
    imported(decode, "taken")
    before = (tmp_path / "cases" / "taken.yaml").read_bytes()
    again = invoke("capture", "import", str(decode), "--name", "taken")
    assert again.exit_code == 2 and "exists" in again.output
    assert (tmp_path / "cases" / "taken.yaml").read_bytes() == before
    assert invoke("capture", "import", str(decode), "--name", "taken", "--force").exit_code == 0


def test_a_stopped_capture_run_resumes_on_its_frame(decode, tmp_path, monkeypatch):
    import harness.runner
    real, calls = harness.runner.run_trial, []

    def stopped(spec, backend):
        calls.append(spec)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(spec, backend)
    monkeypatch.setattr(harness.runner, "run_trial", stopped)
    name = imported(decode)
    out = tmp_path / "r.yaml"
    assert invoke("run", name, "--frame", "frame_2", "--trials", "2", "--no-isolate",
                  "--out", str(out)).exit_code == 130
    result = invoke("run", "--resume", str(out), "--no-isolate")
    assert result.exit_code == 0, result.output
    assert calls[-1].order is not None and len(calls[-1].order) == 42
