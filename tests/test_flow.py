"""The two ways runs get their control code (STACK.md 3, 7, 8): FastFlowLM's ELF flow
(TXN -> ELF -> module -> ext.kernel, called (3, 0, 0, bo...), ERT_START_NPU commands) and
the instruction-buffer flow of mlir-aie and IRON ((3, instr bo, ninstr, bo...),
ERT_START_CU commands)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.app.cli import main
from harness.execution.backend import choose_backend
from harness.execution.runner import RunOptions, trial_spec
from harness.execution.session import run_trial
from harness.formats.elf_writer import control_code_elf
from harness.formats.txn import nop_stream
from harness.model.errors import CaseError
from harness.model.results import ELF_FLOW, INSTR_BO
from harness.report.fileformat import load_report
from harness.sim import control
from harness.sim.stack import START_CU, START_NPU
from harness.sources.load import load_case, parse_case
from harness.sources.packs import resolve_pack


def run_case(flow: str | None, profile: str = "staging"):
    case = load_case("minicpm5-2b-decode")
    backend = choose_backend("sim", profile)
    pack = resolve_pack(case, simulated=True)
    spec = trial_spec(case, pack, "42", [42], 0, RunOptions(trials=1, flow=flow))
    result = run_trial(spec, backend)
    return spec, result, list(control.current().jobs)


def test_the_fastflowlm_cases_run_the_engines_flow_by_default():
    for name in ("minicpm5-2b-decode", "qwen3-1.7b-decode", "qwen3-4b-decode", "nop-depth"):
        assert load_case(name).flow == ELF_FLOW
    spec, result, jobs = run_case(None)
    assert spec.per_layer[0].flow == ELF_FLOW
    assert result.status == "completed"
    # aie2_cmdlist_fill_slot: an ELF-flow chain is ERT_START_NPU, every sub-command alike
    assert [j.count for j in jobs] == [24, 18]
    assert {op for j in jobs for op in j.opcodes} == {START_NPU}


def test_the_instruction_buffer_flow_sends_start_cu():
    spec, result, jobs = run_case(INSTR_BO)
    assert spec.per_layer[0].flow == INSTR_BO and result.status == "completed"
    assert {op for j in jobs for op in j.opcodes} == {START_CU}


def test_the_elf_flow_loads_the_nop_elf_the_engine_would_build(tmp_path):
    run_case(None)
    made = list((tmp_path / ".cache" / "xdna-runlist-harness" / "control-code").glob("*.elf"))
    assert [p.read_bytes() for p in made] == [control_code_elf(nop_stream(8))]


def test_the_hypothesis_reproduces_on_either_flow():
    for flow in (ELF_FLOW, INSTR_BO):
        _, result, _ = run_case(flow, "inflight-cap:40")
        assert result.state == "TIMEOUT"


def test_flow_is_overridden_recorded_and_rendered(tmp_path):
    out = tmp_path / "r.yaml"
    result = CliRunner().invoke(main, ["run", "minicpm5-2b-decode", "--plan", "42",
                                       "--trials", "1", "--no-isolate", "--flow", "instr-bo",
                                       "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "submitted as: instr-bo:" in result.output and "ERT_START_CU" in result.output
    report = load_report(out)
    assert report.case["flow"] == ELF_FLOW and report.settings["flow"] == INSTR_BO
    rendered = CliRunner().invoke(main, ["report", "render", str(out)])
    assert "Submitted as instr-bo:" in rendered.output


def test_a_case_names_a_known_flow(tmp_path):
    text = Path(load_case("minicpm5-2b-decode").file).read_text()
    with pytest.raises(CaseError, match=r"x.yaml:\d+: flow: 'fast' is not a flow; use elf"):
        parse_case(text.replace("flow: elf", "flow: fast").encode(), "x.yaml")
    plain = parse_case("\n".join(line for line in text.splitlines()
                                 if not line.startswith("flow:")).encode(), "y.yaml")
    assert plain.flow == INSTR_BO          # a case that says nothing: mlir-aie's call


def test_a_bad_control_code_elf_fails_on_the_device_not_in_the_harness(tmp_path):
    case = load_case("minicpm5-2b-decode")
    backend = choose_backend("sim", "staging")
    pack = resolve_pack(case, simulated=True)
    spec = trial_spec(case, pack, "42", [42], 0, RunOptions(trials=1))
    wide = tmp_path / "wide.elf"
    wide.write_bytes(control_code_elf(nop_stream(16)))      # 16 columns: the partition has 8
    spec.per_layer[0].elf = str(wide)
    result = run_trial(spec, backend)
    assert result.status == "failed" and result.state == "ERROR"
