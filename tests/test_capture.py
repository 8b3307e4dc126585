"""XRT captures (STACK.md 9) imported, shown, run, cut, bisected and swept; captures are
written by tests/captures.py to the format XRT's capture.cpp writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from captures import MAIN, OTHER, CaptureWriter, decode_capture, threaded_capture
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.app.cli import main
from harness.formats.jsonread import JsonShapeError, JsonStream
from harness.report.fileformat import load_report
from harness.sources.capture import CaptureError, load_capture
from harness.sources.capture_case import capture_case
from harness.sources.load import load_case


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
    assert invoke("report", "check", str(out)).exit_code == 0
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
        import xrt_runner
        for recipe in recipes:
            jsonschema.validate(json.loads(recipe.read_text()),
                                xrt_runner.schema_as_runner_reads(schema))


def instr_bo_capture(folder: Path) -> Path:
    """An application that calls kernels as mlir-aie does: no control code, the
    instructions in a buffer at argidx 1 and their word count at argidx 2."""
    from harness.formats.txn import nop_stream
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
    (folder / "replay.json").write_text(json.dumps(document, sort_keys=True))   # XRT's order
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
     "execution.frames[0].waits[0]: 'frame_3' comes later in the same thread"),
    (lambda d, f: d["execution"]["frames"][0].update(waits=["frame_99"]),
     "execution.frames[0].waits[0]: 'frame_99' is not a frame of the capture"),
    (lambda d, f: d["resources"]["runs"][0]["constants"][0].update(value=-1),
     "constants[0].value: expected an unsigned 64-bit integer"),
    (lambda d, f: d["execution"]["frames"][0].update(tid="1"),
     "execution.frames[0].tid: thread 1 is not one of execution.threads"),
    (lambda d, f: d.update(version="2.0"), "version: '2.0'; XRT's capture writes 1.0"),
    (lambda d, f: d["resources"]["hwctxs"][0].pop("xclbin"),
     "resources.hwctxs[0]: neither an xclbin nor programs"),
    (lambda d, f: d["resources"]["hwctxs"][0].update(xclbin=""),
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


def test_a_stopped_capture_run_resumes_on_its_frame(decode, tmp_path, ctrl_c_once):
    calls = ctrl_c_once(lambda spec, n: n == 2)
    name = imported(decode)
    out = tmp_path / "r.yaml"
    assert invoke("run", name, "--frame", "frame_2", "--trials", "2", "--no-isolate",
                  "--out", str(out)).exit_code == 130
    result = invoke("run", "--resume", str(out))
    assert result.exit_code == 0, result.output
    assert calls[-1].order is not None and len(calls[-1].order) == 42


# -- captures as XRT writes them, round 2 ----------------------------------------------------

def test_a_full_elf_context_capture_runs_in_the_full_elf_flow(tmp_path):
    writer = CaptureWriter(tmp_path / "cap")
    ctx = writer.program_hwctx()
    kernel = writer.elf_kernel(ctx)
    data = writer.buffer(64)                 # no buffers of its own size class: null below
    runs = [writer.raw_run(kernel, {0: data}, {}) for _ in range(30)]
    writer.frame(runs)
    folder = writer.save()
    document = json.loads((folder / "replay.json").read_text())
    capture = load_capture(folder)
    assert set(capture.programs) == {ctx} and capture.hwctxs == {}
    case = capture_case(capture, None, name="c", description="d", file="f", sha256="s")
    assert case.flow == "full-elf" and case.per_layer[0].kernel == "main:sequence"
    out = tmp_path / "r.yaml"
    result = invoke("run", str(folder), "--trials", "1", "--no-isolate", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert document["resources"]["hwctxs"][0]["programs"]


def test_empty_sections_are_null_and_are_read_as_empty(tmp_path):
    writer = CaptureWriter(tmp_path / "cap")
    ctx = writer.program_hwctx()
    kernel = writer.elf_kernel(ctx, "main")
    writer.frame([writer.raw_run(kernel, {}, {}) for _ in range(3)])
    folder = writer.save()
    document = json.loads((folder / "replay.json").read_text())
    assert document["resources"]["buffers"] is None
    assert load_capture(folder).buffers == {}


def test_a_wait_may_name_a_later_frame_of_another_thread(tmp_path):
    writer = CaptureWriter(tmp_path / "cap")
    ctx = writer.hwctx("layer")
    kernel = writer.kernel(ctx)
    bos = [writer.buffer() for _ in range(5)]
    writer.frame([writer.run(kernel, bos)], tid=MAIN, waits=["frame_1"])   # OTHER's, later
    writer.frame([writer.run(kernel, bos)], tid=OTHER)
    capture = load_capture(writer.save())
    assert capture.frames[0].waits == ("frame_1",)


def test_txn_instruction_buffers_are_allocated_with_their_recorded_flags(tmp_path):
    # replay.cpp create_buffer: memgrp and flags (recorded for what is not host-only) make
    # xrt::bo(device, size, flags, memgrp)
    from harness.execution.backend import choose_backend
    from harness.execution.runner import RunOptions, trial_spec
    from harness.execution.session import _Loaded
    from harness.formats.txn import nop_stream, word_count
    writer = CaptureWriter(tmp_path / "cap")
    ctx = writer.hwctx("layer")
    kernel = writer.kernel(ctx)
    writer.kernels[-1].pop("ctrlcode")                    # the TXN flow: no ELF
    stream = nop_stream(8)
    instr = writer.buffer(len(stream), flags=1 << 24, memgrp=1)          # cacheable, group 1
    data = [writer.buffer() for _ in range(5)]
    run = writer.raw_run(kernel, {1: instr, **{3 + i: b for i, b in enumerate(data)}},
                         {0: 3, 2: word_count(stream)})
    writer.frame([run] * 6, dump={instr: stream})
    folder = writer.save()
    case = capture_case(load_capture(folder), None, name="c", description="d", file="f",
                        sha256="s")
    assert case.flow == "instr-bo" and case.buffers[instr].flags == 1 << 24
    backend = choose_backend("sim")
    backend.prepare_trial(1)
    from harness.sources.packs import resolve_pack
    spec = trial_spec(case, resolve_pack(case, simulated=True), "captured", [6], 0,
                      RunOptions(trials=1))
    loaded = _Loaded(backend.xrt, spec)
    bo = loaded.named[instr]
    assert bo._flags.value == 1 << 24 and bo._group == 1
    assert loaded.named[data[0]]._flags == backend.xrt.bo.host_only
    result = invoke("run", str(folder), "--trials", "1", "--no-isolate",
                    "--out", str(tmp_path / "r.yaml"))
    assert result.exit_code == 0, result.output


def test_uint64_constants_pass_as_their_c_int_bits_or_are_refused(tmp_path):
    writer = CaptureWriter(tmp_path / "cap")
    ctx = writer.program_hwctx()
    kernel = writer.elf_kernel(ctx)
    writer.frame([writer.raw_run(kernel, {}, {0: 0xFFFFFFFF})] * 2)
    capture = load_capture(writer.save())
    case = capture_case(capture, None, name="c", description="d", file="f", sha256="s")
    assert case.per_layer[0].args == ((0, "int", -1),)      # the same 32 bits as a C int
    writer.runs[0]["constants"][0]["value"] = 2**40
    with pytest.raises(Exception, match="64-bit constant 0x10000000000; pyxrt's run.set_arg "
                                        "takes a C int"):
        capture_case(load_capture(writer.save()), None, name="c", description="d",
                     file="f", sha256="s")


# -- read a piece at a time -------------------------------------------------------------------

@settings(max_examples=150, deadline=None)
@given(document=st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
              st.text(max_size=6)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=4), inner, max_size=4)),
    max_leaves=30), chunk=st.integers(1, 40))
def test_a_streamed_document_reads_as_json_reads_it_at_any_chunk_size(tmp_path_factory,
                                                                      document, chunk):
    path = tmp_path_factory.mktemp("stream") / "d.json"
    path.write_text(json.dumps(document, indent=1))
    with JsonStream(path) as stream:
        stream.CHUNK = chunk
        if isinstance(document, dict):
            got = {key: stream.value() for key in stream.object_keys()}
        elif isinstance(document, list):
            got = [stream.value() for _ in stream.array_items()]
        else:
            got = stream.value()
        stream.end()
    assert got == document


def test_a_stream_refuses_a_key_twice_and_names_the_line_of_bad_json(tmp_path):
    path = tmp_path / "d.json"
    path.write_text('{"a": 1,\n "a": 2}')
    with JsonStream(path) as stream, pytest.raises(JsonShapeError, match="appears twice"):
        for _ in stream.object_keys():
            stream.value()
    path.write_text('{"a": [1,\n 2,\n }')
    with JsonStream(path) as stream, pytest.raises(json.JSONDecodeError) as err:
        for _ in stream.object_keys():
            stream.value()
    assert err.value.lineno == 3


def _top_order(path: Path) -> list[str]:
    return list(json.loads(path.read_text()))


def test_xrt_s_order_and_the_old_one_stream_to_the_same_capture(tmp_path, monkeypatch):
    """capture.cpp's nlohmann::json sorts every object's keys: execution (frames before
    threads), ini, resources (buffers before hwctxs), version. That file is read a run and
    a frame at a time, as is the order the tests wrote before (version, resources,
    execution); only runs before what they name sends a file to the whole read."""
    from harness.sources import capture as reader
    whole_reads = []
    whole = reader._whole
    monkeypatch.setattr(reader, "_whole", lambda *a: whole_reads.append(1) or whole(*a))
    xrt = decode_capture(tmp_path / "xrt") / "replay.json"
    assert _top_order(xrt) == ["execution", "ini", "resources", "version"]
    document = json.loads(xrt.read_text())
    assert list(document["resources"]) == ["buffers", "hwctxs", "kernels", "runs"]
    streamed = load_capture(xrt)
    xrt.write_text(json.dumps({
        "version": document["version"],
        "resources": {k: document["resources"][k] for k in ("hwctxs", "buffers", "kernels",
                                                             "runs")},
        "execution": document["execution"], "ini": document["ini"]}))
    older = load_capture(xrt)
    assert whole_reads == []                                 # neither read whole
    assert streamed.runs == older.runs and streamed.frames == older.frames
    assert streamed.ini == older.ini == {"Runtime.verbosity": "4"}
    assert streamed.sha256 != older.sha256               # each the digest of its own bytes
    # runs before the kernels they name: read whole, to the same capture and errors
    odd = {"version": "1.0", "execution": document["execution"],
           "resources": {k: document["resources"][k] for k in ("runs", "hwctxs", "buffers",
                                                                "kernels")}}
    xrt.write_text(json.dumps(odd, indent=1))
    assert load_capture(xrt).frames == streamed.frames
    assert whole_reads == [1]
    del document["resources"]["runs"][0]["kernel"]
    xrt.write_text(json.dumps(odd))
    with pytest.raises(CaptureError, match=r"resources\.runs\[0\]\.kernel: expected a "
                                           "non-empty string"):
        load_capture(xrt)


def test_a_frame_naming_what_the_resources_lack_is_named_after_both_are_read(tmp_path):
    # the frames come first in XRT's order: what they name is checked once resources are in
    folder = decode_capture(tmp_path / "c")
    document = json.loads((folder / "replay.json").read_text())
    document["execution"]["frames"][2]["runs"][1]["arguments"] = [
        {"argidx": 3, "bo": "bo_77", "fnm": "capture_0.bin"}]
    (folder / "replay.json").write_text(json.dumps(document, sort_keys=True))
    with pytest.raises(CaptureError, match=r"execution\.frames\[2\]\.runs\[1\]"
                                           r"\.arguments\[0\]\.bo: 'bo_77' is not a buffer"):
        load_capture(folder)


@pytest.mark.parametrize("xrt_order", [True, False])
def test_a_capture_is_read_in_memory_near_its_own_not_its_json(tmp_path, xrt_order):
    import tracemalloc
    writer = CaptureWriter(tmp_path / "big")
    kernel = writer.kernel(writer.hwctx("layer"))
    bos = [writer.buffer(4096) for _ in range(4)]
    runs = [writer.run(kernel, bos) for _ in range(5_000)]
    writer.frames = [{"name": f"frame_{f}", "tid": MAIN, "threads": None,
                      "runs": [{"run": r, "arguments": []} for r in runs[f * 50:f * 50 + 50]],
                      "waits": [f"frame_{f}"]} for f in range(100)]
    writer.threads = [MAIN]
    path = writer.save(xrt_order=xrt_order) / "replay.json"
    size = path.stat().st_size
    tracemalloc.start()
    try:
        capture = load_capture(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(capture.runs) == 5_000
    assert peak < 1.5 * size, (peak, size)        # parsed whole, it is several times the JSON


def test_each_context_s_cfg_and_the_ini_are_kept_shown_and_the_cfg_used(tmp_path):
    # replay.cpp makes each context with its cfg (string values) and sets the ini first;
    # pyxrt passes numeric cfg as hw_context(device, uuid, cfg_param) from the 2.23 binding
    from harness.execution.backend import choose_backend
    from harness.execution.runner import RunOptions, trial_spec
    from harness.execution.session import _Loaded
    from harness.sources.packs import resolve_pack
    writer = CaptureWriter(tmp_path / "cap")
    ctx = writer.hwctx("layer", cfg={"gops": "10", "name": "decode"})
    kernel = writer.kernel(ctx)
    bos = [writer.buffer() for _ in range(5)]
    writer.frame([writer.run(kernel, bos) for _ in range(8)])
    folder = writer.save()
    capture = load_capture(folder)
    assert capture.cfgs == {ctx: {"gops": "10", "name": "decode"}}
    assert capture.ini == {"Runtime.verbosity": "4"}
    case = load_case(str(folder))
    assert case.context_cfg == capture.cfgs and case.ini == capture.ini
    assert any("cfg gops=10, name=decode" in n and "name not" in n for n in case.notes)
    shown = invoke("capture", "show", str(folder)).output
    assert "cfg gops=10, name=decode" in shown and "(ini): Runtime.verbosity=4" in shown
    summary = json.loads(invoke("capture", "show", str(folder), "--json").output)
    assert summary["contexts"][0]["cfg"] == {"gops": "10", "name": "decode"}
    assert summary["ini"] == {"Runtime.verbosity": "4"}
    for release, made_with in (("master", {"gops": 10}), ("2.20", {})):
        backend = choose_backend("sim", f"xrt:{release}")
        backend.prepare_trial(1)
        spec = trial_spec(case, resolve_pack(case, simulated=True), "captured", [8], 0,
                          RunOptions(trials=1))
        assert spec.context_cfg == {ctx: {"gops": 10}}
        assert _Loaded(backend.xrt, spec).contexts[ctx]._cfg == made_with, release


def test_a_cfg_value_that_is_not_text_is_named(tmp_path):
    folder = mutated(tmp_path, lambda d, f: d["resources"]["hwctxs"][1].update(
        cfg={"gops": 10}))
    result = invoke("capture", "import", str(folder))
    assert result.exit_code == 2
    assert "resources.hwctxs[1].cfg.gops: expected a string, got int 10" in result.output


# -- every file of a capture stays in its folder ----------------------------------------------

def test_a_replay_json_linked_out_of_its_folder_is_refused_as_its_artefacts_are(tmp_path):
    """`error: /etc/passwd:1: not valid JSON`: replay.json was followed out of the capture
    while the same link on its artefacts was refused; a link to another capture's
    replay.json made that other folder the one its artefacts were read from."""
    elsewhere = decode_capture(tmp_path / "elsewhere")
    secret = tmp_path / "private.txt"
    secret.write_text("root:x:0:0:SECRET-CANARY\n")
    for target in (secret, elsewhere / "replay.json"):
        capture = decode_capture(tmp_path / f"linked-{target.stem}")
        (capture / "replay.json").unlink()
        (capture / "replay.json").symlink_to(target)
        with pytest.raises(CaptureError, match="replay.json is a symlink leading outside"):
            load_capture(capture)
        with pytest.raises(CaptureError, match="is a symlink leading outside"):
            load_capture(capture / "replay.json")
        done = invoke("capture", "show", str(capture))
        assert done.exit_code == 2, done.output
        assert "SECRET-CANARY" not in done.output and str(target) not in done.output
    # a link that stays inside the folder is as good as the file
    inner = decode_capture(tmp_path / "inner")
    (inner / "replay.json").rename(inner / "kept.json")
    (inner / "replay.json").symlink_to(inner / "kept.json")
    assert load_capture(inner).folder == inner.resolve()


def test_a_capture_s_mark_linked_out_or_no_file_is_refused(tmp_path):
    import os

    from harness.formats.capture_origin import ORIGIN_FILE
    capture = decode_capture(tmp_path / "c")
    mark = tmp_path / "mark.json"
    mark.write_text(json.dumps({"written_by": "SIMULATED", "profile": "staging"}))
    (capture / ORIGIN_FILE).symlink_to(mark)
    with pytest.raises(CaptureError, match=f"{ORIGIN_FILE} is a symlink leading outside"):
        load_capture(capture)
    (capture / ORIGIN_FILE).unlink()
    os.mkfifo(capture / ORIGIN_FILE)
    done = invoke("capture", "show", str(capture))          # at once, never waiting on it
    assert done.exit_code == 2 and "a FIFO (named pipe), not a file" in done.output
