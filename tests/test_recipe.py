"""XRT run recipes as cases (STACK.md 8): each recipe XRT's validate suite ships runs on
the simulated stack, plans cut its runs, and what cannot be read is one line, exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from machines import ar_archive

from harness.app.cli import main
from harness.report.fileformat import load_report
from harness.sources.load import load_case
from harness.sources.recipe import load_recipe

RECIPES = {"latency": 1, "throughput": 9, "cmd_chain_latency": 1000,
           "cmd_chain_throughput": 1000, "gemm": 1}


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def recipe_args(folder: Path, name: str) -> list[str]:
    return [str(folder / f"recipe_{name}_strx.json"), "--recipe-profile",
            str(folder / f"profile_{name}_strx.json")]


@pytest.mark.parametrize("name, runs", sorted(RECIPES.items()))
def test_each_shipped_recipe_runs_on_the_simulated_stack(validate_artefacts, tmp_path, name,
                                                         runs):
    out = tmp_path / "r.yaml"
    result = invoke("run", *recipe_args(validate_artefacts, name), "--trials", "1",
                    "--no-isolate", "--out", str(out))
    assert result.exit_code == 0, result.output
    report = load_report(out)
    [plan] = report.plans
    assert plan.name == "recipe" and plan.chunks == [runs]
    [trial] = plan.trials
    assert trial.state == "COMPLETED"
    full, rest = divmod(runs, 24)
    assert trial.runlists[0].chains == [24] * full + ([rest] if rest else [])
    assert report.case["kind"] == "recipe" and report.settings["flow"] == "elf"
    assert report.artifacts["pack"]["stand_ins"] is False      # the real validate xclbins


def test_the_1000_run_runlist_is_41_chains_of_24_and_one_of_16(validate_artefacts):
    case = load_recipe(*[str(a) for a in recipe_args(validate_artefacts, "cmd_chain_latency")
                         if a != "--recipe-profile"])
    assert case.layers == 1000 and len(case.per_layer) == 1 and case.runs_per_layer == 1
    result = invoke("run", *recipe_args(validate_artefacts, "cmd_chain_latency"), "--trials",
                    "1", "--no-isolate")
    assert "chains 41 x 24 + 16" in result.output


def test_plans_cut_a_recipes_runs(validate_artefacts, tmp_path):
    out = tmp_path / "cut.yaml"
    result = invoke("run", *recipe_args(validate_artefacts, "cmd_chain_latency"), "--plan",
                    "500+500", "--plan", "max:400", "--trials", "1", "--no-isolate", "--out",
                    str(out))
    assert result.exit_code == 0, result.output
    halves, capped = load_report(out).plans
    assert [r.runs for r in halves.trials[0].runlists] == [500, 500]
    assert [r.runs for r in capped.trials[0].runlists] == [400, 400, 200]
    assert halves.trials[0].runlists[0].chains == [24] * 20 + [20]


def test_the_hypothetical_cap_would_fail_xrts_own_runlist_test(validate_artefacts, tmp_path):
    """inflight-cap:40 makes the 1000-run runlist time out; XRT's runlist-latency passes on
    real machines (STACK.md 8), which is what the depth-only control weighs."""
    result = invoke("run", *recipe_args(validate_artefacts, "cmd_chain_latency"), "--plan",
                    "1000", "--plan", "max:24", "--trials", "1", "--no-isolate", "--profile",
                    "inflight-cap:40", "--out", str(tmp_path / "cap.yaml"))
    whole, chunked = load_report(tmp_path / "cap.yaml").plans
    assert whole.trials[0].state == "TIMEOUT" and chunked.trials[0].state == "COMPLETED"
    assert result.exit_code == 1


def test_xrt_validate_name_reads_the_archive_of_the_xrt_install(validate_artefacts, tmp_path,
                                                                monkeypatch):
    bins = tmp_path / "xrt" / "share" / "amdxdna" / "bins"
    bins.mkdir(parents=True)
    recipe = json.loads((validate_artefacts / "recipe_cmd_chain_latency_strx.json").read_text())
    recipe["header"]["xclbin"] = "validate.xclbin"     # the archive's own names
    (bins / "xrt_smi_strx.a").write_bytes(ar_archive({
        "recipe_cmd_chain_latency.json": json.dumps(recipe).encode(),
        "profile_cmd_chain_latency.json":
            (validate_artefacts / "profile_cmd_chain_latency_strx.json").read_bytes(),
        "validate.xclbin": (validate_artefacts / "validate_strx.xclbin").read_bytes(),
        "nop.elf": (validate_artefacts / "nop.elf").read_bytes()}))
    monkeypatch.setenv("XILINX_XRT", str(tmp_path / "xrt"))
    case = load_case("xrt-validate:cmd_chain_latency")
    assert case.absent == () and case.layers == 1000
    assert any("recipe from" in note and "xrt_smi_strx.a" in note for note in case.notes)
    out = tmp_path / "v.yaml"
    result = invoke("run", "xrt-validate:cmd_chain_latency", "--trials", "1", "--no-isolate",
                    "--out", str(out))
    assert result.exit_code == 0, result.output
    report = load_report(out)
    assert report.artifacts["pack"]["stand_ins"] is False
    assert report.case["reference"] == "xrt-validate:cmd_chain_latency"


def test_without_xrt_the_shipped_shape_is_rebuilt_with_stand_ins(tmp_path):
    result = invoke("run", "xrt-validate:cmd_chain_latency", "--trials", "1", "--no-isolate",
                    "--out", str(tmp_path / "s.yaml"))
    assert result.exit_code == 0, result.output
    assert "rebuilt from the shape XRT ships" in result.output
    assert "nop.elf is absent: a stand-in takes its place" in result.output
    report = load_report(tmp_path / "s.yaml")
    assert report.plans[0].trials[0].runlists[0].chains == [24] * 41 + [16]
    assert report.artifacts["pack"]["stand_ins"] is True
    assert invoke("run", "xrt-validate:nosuch").exit_code == 2


def test_the_hardware_path_refuses_absent_artefacts(tmp_path, monkeypatch):
    from machines import Tree
    tree = Tree(tmp_path / "machine")
    tree.npu()
    monkeypatch.setenv("HARNESS_PYXRT", "harness.sim.pyxrt")
    monkeypatch.setenv("HARNESS_ROOT", str(tree.root))
    result = invoke("run", "xrt-validate:cmd_chain_latency", "--backend", "xrt", "--trials",
                    "1")
    assert result.exit_code == 3
    assert "which is not there; the hardware path runs only real artefacts" in result.output


def broken(folder: Path, tmp_path: Path, change) -> Path:
    recipe = json.loads((folder / "recipe_latency_strx.json").read_text())
    change(recipe)
    for name in ("validate_strx.xclbin", "nop.elf"):
        shutil.copy(folder / name, tmp_path / name)
    path = tmp_path / "recipe.json"
    path.write_text(json.dumps(recipe))
    return path


@pytest.mark.parametrize("change, words", [
    (lambda r: r["execution"]["runs"][0].update(name="k9"),
     "execution.runs[0].name: 'k9' is not a kernel of resources.kernels (k1)"),
    (lambda r: r["execution"]["runs"][0]["arguments"][0].update(name="nope"),
     "execution.runs[0].arguments[0].name: 'nope' is not a buffer"),
    (lambda r: r.update(header={"program": "x.elf"}), "header.program: "),
    (lambda r: r["execution"]["runs"][0]["constants"][0].update(value="3", type="string"),
     "execution.runs[0].constants[0]: only int constants (a C int) are supported"),
    # runner.cpp reads a constant with get<int>(), a static_cast in the nlohmann::json
    # 3.11.3 XRT bundles (get_arithmetic_value): xrt-runner wraps it silently; the harness
    # refuses it, naming the run, the argument and what the runner would run with
    (lambda r: r["execution"]["runs"][0]["constants"][0].update(value=2**31),
     "execution.runs[0].constants[0]: the run of kernel 'k1' sets argument 0 to 2147483648, "
     "past a C int: xrt-runner would run it as -2147483648, without a word"),
    (lambda r: r["execution"]["runs"][0]["constants"][0].update(value=2**32 + 7),
     "sets argument 0 to 4294967303, past a C int: xrt-runner would run it as 7"),
    (lambda r: r["execution"]["runs"][0]["constants"][0].update(value=2**70),
     "xrt-runner would read it as a double and convert it with undefined behaviour"),
    (lambda r: r["resources"]["kernels"][0].update(hwctx="other"),
     "resources.kernels[0].hwctx: 'other' is not a context of the recipe (header)"),
    (lambda r: r["execution"]["runs"][0]["arguments"][0].update(size=4, offset=0),
     "sub-buffer arguments (size/offset) are not supported"),
    (lambda r: r["execution"]["runs"][0]["constants"].append(
        {"value": 1, "type": "int", "argidx": 0}), "an argument index is set twice"),
    (lambda r: (r["resources"]["buffers"][0].update(type="internal"),
                r["resources"]["buffers"][0].pop("size")),
     "resources.buffers[0]: an internal buffer needs a size"),
    (lambda r: r["resources"]["buffers"][0].update(type="scratch"),
     "resources.buffers[0].type: the string 'scratch'; XRT's runner knows debug,"),
    (lambda r: r.update(version="2.0"), "version: '2.0'; XRT's runner reads version 1.0"),
    (lambda r: r["execution"].update(runs=[]), "execution.runs: no runs"),
    (lambda r: r["execution"]["runs"][0]["constants"][0].update(argidx=9),
     "a run sets argument 9 of DPU, which takes 8"),
])
def test_a_recipe_the_harness_cannot_run_is_one_line_exit_2(validate_artefacts, tmp_path,
                                                            change, words):
    path = broken(validate_artefacts, tmp_path, change)
    result = invoke("run", str(path), "--no-isolate", "--trials", "1")
    assert result.exit_code == 2, result.output
    assert words in result.output and result.output.count("\n") == 1, result.output


def test_a_truncated_recipe_and_a_missing_profile_file(validate_artefacts, tmp_path):
    path = tmp_path / "cut.json"
    path.write_text((validate_artefacts / "recipe_latency_strx.json").read_text()[:200])
    result = invoke("run", str(path))
    assert result.exit_code == 2 and f"{path}:" in result.output and "not valid JSON" in \
        result.output
    profile = tmp_path / "p.json"
    profile.write_text(json.dumps({"bindings": [{"name": "arg0", "init": {"file": "no.bin"}}]}))
    result = invoke("run", str(validate_artefacts / "recipe_latency_strx.json"),
                    "--recipe-profile", str(profile))
    assert result.exit_code == 2 and "bindings[0].init.file:" in result.output


def test_a_profile_binding_fills_a_buffer_from_its_file(validate_artefacts, tmp_path):
    data = tmp_path / "arg0.bin"
    data.write_bytes(bytes(range(20)))
    profile = tmp_path / "p.json"
    # runner.cpp bindings::init_buffer_file copies [begin, end) = [0, size): with a size
    profile.write_text(json.dumps({"version": "1.0", "bindings": [
        {"name": "arg0", "size": 20, "init": {"file": "arg0.bin"}}],
        "execution": {"iterations": 1}}))
    case = load_recipe(str(validate_artefacts / "recipe_latency_strx.json"), str(profile))
    assert case.buffers["arg0"].size == 20 and case.buffers["arg0"].data == str(data)
    assert (0, "int", 3) in case.per_layer[0].args and (3, "bo", "arg0") in case.per_layer[0].args
    # ... and without one the range is empty: the buffer has the file's size and stays zero
    profile.write_text(json.dumps({"version": "1.0", "bindings": [
        {"name": "arg0", "init": {"file": "arg0.bin"}}]}))
    case = load_recipe(str(validate_artefacts / "recipe_latency_strx.json"), str(profile))
    assert case.buffers["arg0"].size == 20 and case.buffers["arg0"].data is None
    assert any("copies nothing" in note for note in case.notes)
    # unbound external buffers are never created, their arguments never set
    assert [a[0] for a in case.per_layer[0].args] == [0, 3]


def test_flow_is_the_recipes_own(validate_artefacts):
    result = invoke("run", *recipe_args(validate_artefacts, "latency"), "--flow", "instr-bo")
    assert result.exit_code == 2 and "drop --flow" in result.output


def test_a_stopped_recipe_run_resumes(validate_artefacts, tmp_path, ctrl_c_once):
    ctrl_c_once(lambda spec, n: n == 2)
    out = tmp_path / "r.yaml"
    first = invoke("run", *recipe_args(validate_artefacts, "throughput"), "--trials", "2",
                   "--no-isolate", "--out", str(out))
    assert first.exit_code == 130
    assert [t.status for t in load_report(out).plans[0].trials] == ["completed", "interrupted"]
    result = invoke("run", "--resume", str(out))
    assert result.exit_code == 0, result.output
    assert [t.state for t in load_report(out).plans[0].trials] == ["COMPLETED", "COMPLETED"]


def test_xrts_aie_reconfig_nop_recipe_completes(validate_artefacts, tmp_path):
    # TestAIEReconfigOverhead.cpp's second run: recipe_aie_reconfig_nop.json (amd/xdna-driver
    # tools/bins/Runner/aie_reconfig_overhead at 3af6ca94): kernel DPU with no control code,
    # constant 3 at arg 0, three external buffers the runner never creates (no bindings),
    # so arguments 1 and 2 (the instruction buffer) stay 0 and the command completes
    shutil.copy(validate_artefacts / "validate_strx.xclbin", tmp_path / "validate_strx.xclbin")
    recipe = {"version": "1.0", "header": {"xclbin": "validate_strx.xclbin"},
              "resources": {"buffers": [
                  {"name": "bo_ifm", "type": "input", "size": 134217728},
                  {"name": "bo_ofm", "type": "output", "size": 134217728},
                  {"name": "bo_inter", "type": "input", "size": 1048576}],
                  "kernels": [{"name": "k1", "instance": "DPU"}]},
              "execution": {"runs": [{"name": "k1", "arguments": [
                  {"name": "bo_ifm", "argidx": 3}, {"name": "bo_ofm", "argidx": 5},
                  {"name": "bo_inter", "argidx": 6}],
                  "constants": [{"value": 3, "type": "int", "argidx": 0}]}]}}
    path = tmp_path / "recipe_aie_reconfig_nop_strx.json"
    path.write_text(json.dumps(recipe))
    (tmp_path / "profile.json").write_text(json.dumps(
        {"version": "1.0", "execution": {"iterations": 1000, "verbose": False}}))
    out = tmp_path / "r.yaml"
    result = invoke("run", str(path), "--recipe-profile", str(tmp_path / "profile.json"),
                    "--trials", "2", "--no-isolate", "--out", str(out))
    assert result.exit_code == 0, result.output
    trials = load_report(out).plans[0].trials
    assert [t.state for t in trials] == ["COMPLETED", "COMPLETED"]
    assert all(r.runs == 1 for t in trials for r in t.runlists)
    # the rebuilt shape runs the same
    assert invoke("run", "xrt-validate:aie_reconfig_nop", "--trials", "1",
                  "--no-isolate", "--out", str(tmp_path / "v.yaml")).exit_code == 0


def test_kernel_names_the_kernel_over_name_and_program_contexts(tmp_path):
    # runner.cpp create_kernel_run: "kernel" takes precedence over the legacy "name";
    # resources.hwctxs[].programs makes a context from full ELFs (the full-elf flow)
    from harness.formats.elf_writer import full_elf
    from harness.formats.txn import nop_stream
    (tmp_path / "aie.elf").write_bytes(full_elf(nop_stream(4), 4))
    recipe = {"version": "1.0", "resources": {
        "hwctxs": [{"name": "ctx", "programs": ["aie.elf"]}],
        "buffers": [{"name": "a", "type": "internal", "size": 64}],
        "kernels": [{"name": "main", "instance": "main:sequence", "hwctx": "ctx"}]},
        "execution": {"runs": [{"name": "label-only", "kernel": "main",
                                "arguments": [{"name": "a", "argidx": 0}]}] * 8}}
    path = tmp_path / "full.json"
    path.write_text(json.dumps(recipe))
    case = load_recipe(str(path))
    assert case.flow == "full-elf" and case.programs == {"ctx": (str(tmp_path / "aie.elf"),)}
    assert case.per_layer[0].kernel == "main:sequence"
    out = tmp_path / "r.yaml"
    result = invoke("run", str(path), "--trials", "1", "--no-isolate", "--out", str(out),
                    "--profile", "hang-at:5")
    assert result.exit_code == 1, result.output
    report = load_report(out)
    assert report.artifacts["programs"][0]["kernels"] == ["main(void*, void*, void*)"]
    assert report.plans[0].trials[0].runlists[0].state == "TIMEOUT"
