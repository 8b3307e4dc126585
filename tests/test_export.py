"""Recipes out (STACK.md 8): every plan of every case as XRT run recipes that XRT's own
schema accepts and that read back as the same runs."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import xrt_replay
import xrt_runner
from click.testing import CliRunner
from conftest import SHARED_REFERENCE

from harness.app.cli import main
from harness.formats.elf import read_elf
from harness.formats.txn import nop_stream
from harness.report.fileformat import load_report
from harness.sources.case import shipped_cases
from harness.sources.recipe import load_recipe
from harness.sources.replay_export import CACHEABLE


@pytest.fixture(scope="module")
def schema() -> dict:
    """XRT's recipe schema (963c58ee) with the one key runner.cpp reads that it does not
    list: a run names its kernel with `kernel` (create_kernel_run; recipe.md's examples),
    `name` being the deprecated spelling the schema still has."""
    path = SHARED_REFERENCE / "xrt" / "recipe.schema.json"
    if not path.is_file():
        pytest.skip(f"XRT's recipe schema not present at {path}")
    return xrt_runner.schema_as_runner_reads(path)


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("case", [p.stem for p in shipped_cases()])
def test_every_plan_of_every_shipped_case_exports_valid_recipes(case, tmp_path, schema):
    folder = tmp_path / "out"
    result = invoke("export", case, str(folder))
    assert result.exit_code == 0, result.output
    recipes = sorted(folder.glob("recipe_*.json"))
    assert recipes
    for recipe in recipes:
        jsonschema.validate(json.loads(recipe.read_text()), schema)
    assert (folder / "profile.json").is_file() and (folder / "README.md").is_file()
    assert all(script.stat().st_mode & 0o111 for script in folder.glob("run_*.sh"))


def test_a_cut_is_one_recipe_per_runlist_and_reads_back_as_the_same_runs(tmp_path, schema):
    folder = tmp_path / "halves"
    invoke("export", "minicpm5-2b-decode", "--plan", "halves", str(folder))
    first, second = sorted(folder.glob("recipe_halves_*.json"))
    assert (first.name, second.name) == ("recipe_halves_1of2.json", "recipe_halves_2of2.json")
    assert "recipe_halves_1of2.json --profile profile.json" in \
        (folder / "run_halves.sh").read_text()
    case = load_recipe(str(first), str(folder / "profile.json"))
    assert case.layers == 21 and case.flow == "elf"
    [run] = case.per_layer
    assert run.kernel == "MLIR_AIE" and run.args[0] == (0, "int", 3)
    assert [a[0] for a in run.args] == [0, 3, 4, 5, 6, 7]        # (3, 0, 0, bo...)
    # the ELF is the one FastFlowLM's aiebu step would build for the 8-column partition
    assert read_elf(folder / "ctrl_0.elf").control_code == nop_stream(8)
    out = tmp_path / "back.yaml"
    result = invoke("run", str(first), "--recipe-profile", str(folder / "profile.json"),
                    "--trials", "1", "--no-isolate", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert load_report(out).plans[0].trials[0].runlists[0].chains == [21]


def test_the_instruction_buffer_flow_runs_as_xrt_s_replay_never_as_a_recipe(tmp_path):
    folder = tmp_path / "ibo"
    result = invoke("export", "minicpm5-2b-decode", "--plan", "42", "--flow", "instr-bo",
                    str(folder))
    assert result.exit_code == 0, result.output
    assert not list(folder.glob("recipe_*.json"))
    assert (folder / "instr_0.bin").read_bytes() == nop_stream(8)    # the partition's width
    # what XRT's runner did with the recipe this flow used to be exported as (the stream
    # bound from a file on argument 1): every recipe buffer is host-only, argument 1 is
    # connected to the instruction group, and the copy into it fails
    recipe = {"version": "1.0", "header": {"xclbin": "layer.xclbin"},
              "resources": {"buffers": [{"name": "instr", "type": "input", "size": 20}],
                            "kernels": [{"name": "k0", "instance": "MLIR_AIE"}]},
              "execution": {"runs": [{"kernel": "k0", "arguments": [{"name": "instr",
                                                                      "argidx": 1}]}]}}
    (folder / "old.json").write_text(json.dumps(recipe))
    (folder / "old_profile.json").write_text(json.dumps({"bindings": [
        {"name": "instr", "size": 20, "init": {"file": "instr_0.bin"}}]}))
    with pytest.raises(xrt_runner.RunnerError, match="No host side buffer in destination"):
        xrt_runner.read(folder / "old.json", folder / "old_profile.json")
    # the run script replays the plan, as XRT's replay reads it: the instruction buffer
    # allocated cacheable in argument 1's group (as XRT's capture writer records it) and
    # filled with the stream before the runlist starts
    script = (folder / "run_42.sh").read_text()
    assert "exec xrt-runner --replay replay_42.json --dir . --report -" in script
    assert "the instruction-buffer flow cannot run as recipes" in script
    (folder / "layer.xclbin").write_bytes(b"")          # the pack's, copied in by the user
    replay = xrt_replay.read(folder / "replay_42.json")
    [step] = replay.steps
    assert step.runlist and len(step.runs) == 42
    assert replay.buffers["c0_instr"] == xrt_replay.Buffer(20, CACHEABLE, 1)
    assert step.restored == {"c0_instr": nop_stream(8)}
    first = replay.runs[step.runs[0]]
    assert first["ctrlcode"] is None and first["args"][0] == 3 and first["args"][2] == 5
    assert first["args"][1] == ("bo", "c0_instr")
    assert "No host side buffer in destination buffer" in (folder / "README.md").read_text()


def test_run_plan_sh_is_the_harness_s_trial_one_process_its_runlists_in_turn(tmp_path):
    # replay.cpp runs a thread's frames in the order their names sort: eleven runlists must
    # not run frame_10 before frame_2
    folder = tmp_path / "out"
    assert invoke("export", "minicpm5-2b-decode", "--plan", "max:4", "--plan", "halves",
                  str(folder)).exit_code == 0
    (folder / "layer.xclbin").write_bytes(b"")
    replay = xrt_replay.read(folder / "replay_max_4.json")
    assert [len(step.runs) for step in replay.steps] == [4] * 10 + [2]
    assert [step.frame for step in replay.steps] == sorted(step.frame for step in replay.steps)
    assert all(step.waits == [step.frame] for step in replay.steps)     # execute, wait, next
    assert len({step.thread for step in replay.steps}) == 1 and len(replay.hwctxs) == 1
    halves = xrt_replay.read(folder / "replay_halves.json")
    assert [len(step.runs) for step in halves.steps] == [21, 21]
    # the same buffers for every run of both runlists, as the harness's trial has them
    buffers = {tuple(v for v in run["args"].values() if isinstance(v, tuple))
               for run in halves.runs.values()}
    assert len(buffers) == 1
    script = (folder / "run_halves.sh").read_text()
    assert "exec xrt-runner --replay replay_halves.json --dir . --report -" in script
    # an XRT whose runner has no --replay gets the recipes, and is told how that differs
    assert "each recipe runs in its own xrt-runner process" in script
    assert script.index("--replay") < script.index("recipe_halves_1of2.json")
    readme = (folder / "README.md").read_text()
    assert "a frame of one run is started as a run, not as a runlist of one" in readme


def test_short_runlists_stay_runlists_under_xrts_threshold(tmp_path):
    # runner.cpp npu_runlist: fewer than runlist_threshold (6) runs are started one by one;
    # the export lowers the threshold so a plan's short runlist is still one runlist
    folder = tmp_path / "short"
    assert invoke("export", "minicpm5-2b-decode", "--plan", "max:4", str(folder)).exit_code == 0
    recipes = sorted(folder.glob("recipe_max_4_*.json"))
    assert len(recipes) == 11
    for recipe in recipes:
        done = xrt_runner.read(recipe, folder / "profile.json")
        assert done.as_runlist and len(done.runs) in (4, 2)
    profile = json.loads((folder / "profile.json").read_text())
    assert profile["execution"]["runlist_threshold"] == 2


def test_a_recipe_cut_exports_with_its_own_artefacts(validate_artefacts, tmp_path, schema):
    folder = tmp_path / "chain"
    result = invoke("export", str(validate_artefacts / "recipe_cmd_chain_latency_strx.json"),
                    "--plan", "500+500", str(folder))
    assert result.exit_code == 0, result.output
    for name in ("validate_strx.xclbin", "ctrl_0.elf"):
        assert (folder / name).is_file()
    assert (folder / "ctrl_0.elf").read_bytes() == (validate_artefacts / "nop.elf").read_bytes()
    for recipe in folder.glob("recipe_*.json"):
        data = json.loads(recipe.read_text())
        jsonschema.validate(data, schema)
        assert len(data["execution"]["runs"]) == 500


def test_export_never_writes_into_an_existing_folder(tmp_path):
    folder = tmp_path / "taken"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    result = invoke("export", "minicpm5-2b-decode", str(folder))
    assert result.exit_code == 2 and "exists" in result.output
    assert [p.name for p in folder.iterdir()] == ["keep.txt"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".taken.")]


def test_export_says_which_script_runs_each_plan(tmp_path):
    folder = tmp_path / "out"
    result = invoke("export", "minicpm5-2b-decode", "--plan", "42", "--plan", "halves",
                    f"{folder}/")
    assert result.exit_code == 0, result.output
    runs = [line for line in result.output.splitlines() if line.startswith("run: ")]
    assert runs == [f"run: cd {folder} && sh {script}   (see {folder / 'README.md'})"
                    for script in ("run_42.sh", "run_halves.sh")]
    assert all((folder / script).is_file() for script in ("run_42.sh",
                                                          "run_halves.sh"))


def test_a_missing_xclbin_is_named_not_invented(tmp_path):
    folder = tmp_path / "nopack"
    result = invoke("export", "minicpm5-2b-decode", str(folder))
    assert "not found here, copy into" in result.output and "layer.xclbin" in result.output
    assert not (folder / "layer.xclbin").exists()
    assert "`layer.xclbin`: **not included**" in (folder / "README.md").read_text()


def test_a_real_pack_is_copied(shared_xclbins, tmp_path):
    folder = tmp_path / "real"
    result = invoke("export", "minicpm5-2b-decode", "--plan", "halves", "--xclbins",
                    str(shared_xclbins / "Qwen3-1.7B-NPU2"), str(folder))
    assert result.exit_code == 0, result.output
    assert (folder / "layer.xclbin").read_bytes() == \
        (shared_xclbins / "Qwen3-1.7B-NPU2" / "layer.xclbin").read_bytes()


def test_a_full_elf_case_exports_its_programs_as_a_context(tmp_path):
    from harness.formats.elf_writer import full_elf
    (tmp_path / "aie.elf").write_bytes(full_elf(nop_stream(4), 4))
    recipe = {"version": "1.0", "resources": {
        "hwctxs": [{"name": "ctx", "programs": ["aie.elf"]}],
        "buffers": [{"name": "a", "type": "internal", "size": 64}],
        "kernels": [{"name": "main", "instance": "main:sequence", "hwctx": "ctx"}]},
        "execution": {"runs": [{"kernel": "main", "arguments": [{"name": "a", "argidx": 0}]}]
                      * 12}}
    (tmp_path / "full.json").write_text(json.dumps(recipe))
    folder = tmp_path / "out"
    result = invoke("export", str(tmp_path / "full.json"), "--plan", "6+6", str(folder))
    assert result.exit_code == 0, result.output
    done = xrt_runner.read(folder / "recipe_6_6_1of2.json", folder / "profile.json")
    assert done.hwctxs == {"ctx": {"programs": ["program_0.elf"]}}
    assert (folder / "program_0.elf").read_bytes() == (tmp_path / "aie.elf").read_bytes()
    assert done.as_runlist and [r.instance for r in done.runs] == ["main:sequence"] * 6
    assert done.runs[0].hwctx == "ctx" and done.runs[0].args == {0: bytes(64)}
    # a decode case's full-ELF stand-in is the simulator's, never exported
    refused = invoke("export", "minicpm5-2b-decode", "--flow", "full-elf",
                     str(tmp_path / "no"))
    assert refused.exit_code == 2 and "stand-in is not exported" in refused.output


def test_exported_runs_name_their_kernel_with_kernel(tmp_path):
    # runner.cpp create_kernel_run: "kernel" names the kernel; "name" is the deprecated
    # spelling it falls back on
    folder = tmp_path / "out"
    assert invoke("export", "minicpm5-2b-decode", "--plan", "42", str(folder)).exit_code == 0
    runs = json.loads((folder / "recipe_42_1of1.json").read_text())["execution"]["runs"]
    assert {tuple(sorted(run)) for run in runs} == {("arguments", "constants", "kernel")}
    assert xrt_runner.read(folder / "recipe_42_1of1.json",
                           folder / "profile.json").runs[0].instance == "MLIR_AIE"


def test_an_instr_bo_export_keeps_the_flags_and_memory_group_xrt_s_writer_records(tmp_path):
    # capture.cpp replay_resource_buffer records memgrp and flags for what has a memory
    # group and is not host-only; replay.cpp create_buffer allocates it so. The recipe
    # format cannot (runner.cpp creates every buffer host-only): each plan is also a replay
    from harness.sources.capture_case import folder_case
    from harness.sources.replay_export import CACHEABLE
    folder = tmp_path / "ibo"
    result = invoke("export", "minicpm5-2b-decode", "--plan", "halves", "--flow", "instr-bo",
                    str(folder))
    assert result.exit_code == 0, result.output
    text = (folder / "replay_halves.json").read_text()
    replay = json.loads(text)
    assert list(replay) == ["execution", "resources", "version"]      # nlohmann's order
    assert text.startswith('{\n  "execution": {\n    "frames": [')     # setw(2)
    buffers = {b["name"]: b for b in replay["resources"]["buffers"]}
    assert buffers["c0_instr"] == {"name": "c0_instr", "size": 20, "type": "inout",
                                   "memgrp": 1, "flags": CACHEABLE}
    assert "memgrp" not in buffers["c0_b0"] and "flags" not in buffers["c0_b0"]
    frames = replay["execution"]["frames"]
    assert [len(f["runs"]) for f in frames] == [21, 21]
    assert frames[0]["runs"][0]["arguments"] == [{"argidx": 1, "bo": "c0_instr",
                                                  "fnm": "instr_0.bin"}]
    assert "xrt-runner --replay replay_halves.json" in (folder / "run_halves.sh").read_text()
    assert "replay_PLAN.json" in (folder / "README.md").read_text()
    # read back as a capture (with the partition's xclbin beside it): the same flow, the
    # same allocation
    from harness.formats.xclbin_writer import flm_spec, synthesize
    (folder / "layer.xclbin").write_bytes(synthesize(flm_spec("MiniCPM5-2B-NPU2/layer")))
    (folder / "replay.json").write_text(text)
    case = folder_case(folder)
    assert case.flow == "instr-bo" and case.layers == 21
    assert (case.buffers["c0_instr"].flags, case.buffers["c0_instr"].memgrp) == (CACHEABLE, 1)
    # an ELF-flow export has its replay and, beside it, a recipe per runlist
    elf = tmp_path / "elf"
    assert invoke("export", "minicpm5-2b-decode", "--plan", "42", str(elf)).exit_code == 0
    assert [p.name for p in elf.glob("replay_*.json")] == ["replay_42.json"]
    assert [p.name for p in elf.glob("recipe_*.json")] == ["recipe_42_1of1.json"]


def test_a_constant_that_does_not_fit_a_c_int_is_refused_on_export(tmp_path):
    # xrt-runner reads a constant with get<int>(): opcode 2**31 cannot be written
    shipped = next(p for p in shipped_cases() if p.stem == "nop-depth")
    case = shipped.read_text().replace(
        "    - kernel: DPU\n", "    - kernel: DPU\n      opcode: 2147483648\n")
    (tmp_path / "wide.yaml").write_text(case.replace("case: nop-depth", "case: wide"))
    result = invoke("export", str(tmp_path / "wide.yaml"), "--plan", "42",
                    str(tmp_path / "out"))
    assert result.exit_code == 2, result.output
    assert "a run of kernel k0 (DPU) sets argument 0 to 2147483648, past a C int: " \
        "xrt-runner would run it as -2147483648" in result.output
    assert not (tmp_path / "out").exists()


def test_a_captured_instruction_buffer_flow_exports_as_a_replay_xrt_runs(tmp_path,
                                                                         synth_xclbin):
    # an IRON-style program (instruction buffer in argument 1) captured by the simulated
    # XRT, then cut: XRT's runner could not run it as recipes, its replay keeps the flags
    import os
    import subprocess
    import sys
    host = Path(__file__).resolve().parent / "scripts" / "iron_host.py"
    env = {**os.environ, "Runtime.capture_frames": "2",
           "Runtime.capture_output_dir": str(tmp_path / "cap")}
    done = subprocess.run([sys.executable, "-m", "harness", "sim", "exec", str(host),
                           str(synth_xclbin()), "42"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "out"
    result = invoke("export", str(tmp_path / "cap"), "--plan", "21+21", str(folder))
    assert result.exit_code == 0, result.output
    assert not list(folder.glob("recipe_*.json"))
    replay = xrt_replay.read(folder / "replay_21_21.json")   # the capture's xclbin copied
    assert [len(step.runs) for step in replay.steps] == [21, 21]
    instr = [b for b in replay.buffers.values() if b.flags == CACHEABLE]
    assert len(instr) == 1 and instr[0].memgrp == 1 and instr[0].size == 20
