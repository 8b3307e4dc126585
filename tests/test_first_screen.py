"""The first screen of a render says what ran, what stack answered and where each fact
came from: each plan's control code, buffers and xclbins; what a NOOP case tests and how
to run the engine's own commands; what the depth-only control changes against the case;
a failing run named only where the device named one; the machine's facts apart from a
modelled stack's, each table titled for what it is."""

from __future__ import annotations

import copy
import re
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from machines import Tree

from harness.app.cli import main
from harness.probe.fingerprint import probe
from harness.probe.readers import Identity
from harness.report.digest import Digest
from harness.report.failing import chain_text, run_cells, unnamed, why_unnamed
from harness.report.fileformat import load_report, read_document
from harness.report.render import render_markdown
from harness.sources.case import NOP
from harness.sources.load import load_case
from harness.sources.workload import buffers_text, describe

FIRST_SCREEN = 40


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("first") / "r.yaml"
    result = invoke("reproduce", "--no-isolate", "--trials", "1", "--profile",
                    "staging,kernel:6.16,hang-at:30", "--out", str(out))
    assert result.exit_code == 1, result.output
    return out


def first_screen(path: Path) -> list[str]:
    return invoke("report", "render", str(path)).stdout.splitlines()[:FIRST_SCREEN]


def rows_under(lines: list[str], heading: str) -> list[list[str]]:
    """The body rows of the first table under a heading."""
    start = next(i for i, line in enumerate(lines) if line.startswith(f"### {heading}"))
    table = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("|"))
    rows = []
    for line in lines[table + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


# -- what ran ------------------------------------------------------------------------------

def test_the_first_screen_says_what_each_plan_ran(reproduced):
    lines = first_screen(reproduced)
    ran = rows_under(lines, "What ran")
    assert ran[0][0] == "monolithic 42, halves 21+21"
    assert ran[0][1].startswith("the one-NOOP TXN stream")
    assert ran[0][1].endswith("wrapped in a control-code ELF per kernel")
    # the session makes the five once and sets them on every run: never "five per run"
    assert ran[0][2] == ("five 4 KiB buffers shared by all 42 runs, never written "
                         "(zero-filled as allocated)")
    assert ran[0][3].startswith("synthesized stand-ins for MiniCPM5-2B-NPU2 (4;")
    assert ran[1][0] == "depth-only 42"
    assert ran[1][2].startswith("five 20-byte buffers shared by all 42 runs")
    assert ran[1][3].startswith("synthesized stand-ins for xrt-validate (1;")
    text = "\n".join(lines)
    # a NOOP case says what it tests, and how to run the engine's own commands
    assert ("**What this tests:** Every run of the case carried only the one-NOOP TXN "
            "stream: this tests how deep a runlist the stack takes (submission depth), not "
            "the decode's work.") in text
    assert ("`runlist-harness capture record --frames 200 --out DIR -- flm run "
            "minicpm5:2b`, then `reproduce_ert_timeout --capture DIR`") in text
    # a cut plan says its runlists run in turn
    assert ("Halves 21+21: a trial runs its runlists one after another, in one process on "
            "one hardware context with the same buffers: execute, wait, then the next.") \
        in text
    # the call shape, said as a shape and not as the engine's own commands
    assert "the call shape FastFlowLM's engine uses" in text
    assert "as FastFlowLM calls it" not in text
    # what the depth-only control changes against the case: the xclbin it ran, a stand-in
    # here as the table says, never passed for XRT's own
    assert ("against the case: the same depth in one runlist; the same one-NOOP control "
            "code; but another xclbin: a synthesized stand-in for XRT's validate.xclbin "
            "(kernel DPU) instead of "
            "layer.xclbin (MLIR_AIE); five 20-byte buffers shared by all 42 runs instead "
            "of five 4 KiB buffers shared by all 42 runs") in text
    report = load_report(reproduced)
    assert report.case["workload"]["nop_only"] is True
    assert report.artifacts["control"]["workload"]["buffers"].startswith("five 20-byte")


def test_the_console_says_what_each_run_carried(tmp_path):
    result = invoke("run", "minicpm5-2b-decode", "--plan", "42", "--trials", "1",
                    "--no-isolate", "--out", str(tmp_path / "r.yaml"))
    lines = result.stdout.splitlines()
    carried = next(x for x in lines if x.startswith("each run carried: "))
    assert carried.endswith("five 4 KiB buffers shared by all 42 runs, never written "
                            "(zero-filled as allocated)")
    assert any("NOOP runs test submission depth, not the decode's work" in x for x in lines)
    assert any(x.startswith("submitted as: elf: ") for x in lines)


def test_a_case_with_its_own_instructions_is_not_called_a_noop_case(tmp_path):
    insts = tmp_path / "insts.bin"
    insts.write_bytes(b"\0" * 16)
    case = load_case("minicpm5-2b-decode")
    own = replace(case, per_layer=(replace(case.per_layer[0], instructions=str(insts)),
                                   replace(case.per_layer[0], instructions=NOP,
                                           buffers=(4096, 20))))
    workload = describe(own, "instr-bo")
    assert not workload.nop_only
    assert workload.control_code == ("the case's own instruction streams (insts.bin) and the "
                                     "one-NOOP TXN stream, as an instruction buffer")
    assert workload.buffers == ("MLIR_AIE: five 4 KiB buffers shared by its 42 runs; "
                                "MLIR_AIE: one 4 KiB and one 20-byte buffers shared by its 42 "
                                "runs, never written (zero-filled as allocated)")


@pytest.mark.parametrize("sizes, text", [
    ((4096,) * 5, "five 4 KiB buffers"), ((20,), "one 20-byte buffer"), ((), "no buffers"),
    ((1 << 20, 1 << 20, 3000), "two 1 MiB and one 3000-byte buffers"),
    ((4096,) * 13, "13 4 KiB buffers")])
def test_buffers_in_words(sizes, text):
    assert buffers_text(sizes) == text


def test_a_recipe_says_whose_control_code_ran():
    # without XRT's validate archive here, the recipe's nop.elf is a stand-in
    recipe = describe(load_case("xrt-validate:cmd_chain_latency"), None)
    assert recipe.control_code == ("a NOP stand-in where the recipe's control code is not "
                                   "here or not named")
    assert not recipe.nop_only and recipe.buffers == "no buffers"


# -- which run failed ----------------------------------------------------------------------

def test_a_run_is_named_only_where_the_device_named_it(reproduced):
    lines = first_screen(reproduced) + invoke("report", "render",
                                              str(reproduced)).stdout.splitlines()
    failing = rows_under(lines, "Failing runs")
    assert failing[0][4:6] == ["not said (XRT: 24, the chain's first)", "1 (runs 24-41)"]
    why = next(x for x in lines if x.startswith('Where a row says "not said"'))
    assert why == ('Where a row says "not said", the device does not say which run hung: '
                   "staging on Linux 6.16 reports the firmware's run_list_id as error_index, "
                   "and the firmware leaves the chain's read index at 0 on a timeout "
                   "(amd/xdna-driver test/shim_test/io_test.cpp), so XRT's failing run is "
                   "the first run of the chain.")
    outcome = read_document(reproduced)["plans"][0]["trials"][0]["runlists"][0]
    assert outcome["failing_run_named"] is False


def test_a_firmware_error_names_its_failing_run(tmp_path):
    # npu1 (Phoenix, AIE2) refuses the AIE2P NOP stream: the firmware's ERROR names the
    # failing sub-command, so the run is named even at index 0
    out = tmp_path / "r.yaml"
    result = invoke("run", "nop-depth", "--plan", "42", "--trials", "1", "--no-isolate",
                    "--profile", "device:npu1", "--out", str(out))
    assert "failing run 0 (chain 0) ERROR from the simulated device" in result.stdout
    outcome = load_report(out).plans[0].trials[0].runlists[0]
    assert outcome.failing_run == 0 and outcome.failing_run_named is True
    md = invoke("report", "render", str(out)).stdout
    assert "| 0 | 0 | ERROR | simulated device |" in md and "not said" not in md


@pytest.mark.parametrize("flavour, kernel, says", [
    ("mainline", "7.0", "mainline on Linux 7.0 ends a timed-out chain with error_index 0"),
    ("mainline", "6.16", "mainline on Linux 6.16 ends the hung job ABORT without writing "
                         "error_index"),
    ("oot", "7.0", "oot on Linux 7.0 reports the firmware's run_list_id as error_index"),
    (None, None, "this driver: the firmware leaves the chain's read index at 0"),
])
def test_why_no_run_was_named_depends_on_the_flavour_and_kernel(flavour, kernel, says):
    assert why_unnamed(flavour, kernel).startswith(says)


def test_an_older_report_s_outcomes_are_judged_by_state_and_index():
    old = {"state": "TIMEOUT", "failing_run": 24, "failing_chain": 1, "chains": [24, 18]}
    assert unnamed(old) and chain_text(old) == "chain 1 (runs 24-41)"
    assert run_cells(old) == ("not said (XRT: 24, the chain's first)", "1 (runs 24-41)")
    inside = dict(old, failing_run=30)
    assert not unnamed(inside) and run_cells(inside) == ("30", "1")
    error = dict(old, state="ERROR")
    assert not unnamed(error)                     # a firmware error names its sub-command
    single = {"state": "TIMEOUT", "failing_run": 0, "failing_chain": 0, "chains": [18]}
    assert unnamed(single) and chain_text(single) == "chain 0 (runs 0-17)"


# -- what answered -------------------------------------------------------------------------

def test_the_machine_and_the_simulated_stack_stand_apart(reproduced):
    lines = first_screen(reproduced)
    text = "\n".join(lines)
    assert "### The stack that answered: SIMULATED (the simulated stack, in process)" in text
    assert "### This machine: where the harness ran (it answered no trial)" in text
    modelled = rows_under(lines, "The stack that answered")
    assert [row[0] for row in modelled] == ["profile", "XRT and pyxrt (modelled)",
                                            "driver (modelled)", "NPU and firmware (modelled)"]
    assert modelled[1][2] == "rules and binding read from Xilinx/XRT at 49612fa3 (2.26.0)"
    assert modelled[2][1] == "staging on Linux 6.16"
    # the firmware whose features the model plays (harness.model.firmware), not an image
    assert modelled[3][1] == ("NPU5 Strix Halo, 8 columns; the features of firmware 1.1.2.65, "
                              "protocol 7.2 (reports app health); no firmware image runs")
    machine = rows_under(lines, "This machine")
    assert [row[0] for row in machine][:4] == ["NPU", "driver", "kernel", "XRT"]
    assert machine[0][1] == "none: no /dev/accel/accel* node"
    whole = invoke("report", "render", str(reproduced)).stdout
    assert "XRT that answered" not in whole          # no hash passes for an XRT that ran
    shown = whole.split("<summary>Full report (YAML)</summary>")[0]
    assert shown.count("49612fa3") == 1                # only as where the rules were read


ME = Identity(uid=0, gids=(0,), user="root", emulate=True)
COMMIT = "0123456789abcdef0123456789abcdef01234567"
MAPS = ("7f0-7f1 r-xp 0 0:0 7 /opt/xilinx/xrt/lib/libxrt_coreutil.so.2.21.0\n"
        "7f1-7f2 r-xp 0 0:0 8 /opt/xilinx/xrt/lib/libxrt_driver_xdna.so.2.21.0\n")


def hardware_report(reproduced: Path, tmp_path: Path) -> dict:
    """A hardware report as the renderer reads it: the run's document with this
    fabricated Strix Halo's fingerprint, answered by its own stack."""
    tree = Tree(tmp_path)
    tree.npu()
    tree.identity()
    tree.module({"tdr_timeout_ms": "2000"}, version=f"2.21.0_20260101,{COMMIT}")
    tree.write("/sys/module/amdxdna/srcversion", "A1B2C3D4E5F6A7B8C9D0E1F")
    tree.xrt("2.21.0")
    tree.maps = MAPS
    data = copy.deepcopy(read_document(reproduced))
    data["environment"] = probe(tree.sources(ME))
    data["environment"]["root"] = "/"                   # as a live machine reads
    data["backend"] = {"kind": "xrt", "simulated": False, "pyxrt": "/opt/pyxrt.so",
                       "xrt": {"release": "2.21.0", "message_form": "state in message"}}
    return data


def test_on_hardware_the_block_maintainers_ask_for_is_in_the_first_40_lines(reproduced,
                                                                            tmp_path):
    body = render_markdown(Digest.of_document(hardware_report(reproduced, tmp_path)).view(
        False))
    lines = body.splitlines()[:FIRST_SCREEN]
    assert lines[0] == "## xdna-runlist-harness: minicpm5-2b-decode: hardware NPU " \
                       "(NPU5 Strix Halo)"
    facts = {row[0]: row[1] for row in rows_under(lines, "The stack that answered: this "
                                                          "machine's")}
    fw = "07f7ab476bc3a83fad639d34a012cb4a5f859441f0d24c11627ca96696839012"
    assert facts["NPU"] == "NPU5 Strix Halo, PCI 0x1022:0x17f0 rev 0x11 at 0000:c7:00.1"
    assert facts["firmware"] == f"1.1.2.65; file amdnpu/17f0_11/npu_7.sbin sha256 {fw}"
    assert facts["driver"] == (f"amdxdna 2.21.0_20260101,{COMMIT}, flavour staging, "
                               f"srcversion A1B2C3D4E5F6A7B8C9D0E1F, commit {COMMIT}")
    assert facts["kernel"] == "7.0.0-31-generic"
    assert facts["XRT"] == "2.21.0; XDNA shim plugin libxrt_driver_xdna 2.21.0"
    assert facts["FastFlowLM"] == "no flm on PATH"
    assert facts["IOMMU"] == "group type DMA-FQ; boot flags iommu=pt"
    assert facts["power mode"].startswith("unknown")
    assert facts["other NPU or /dev/kfd users"] == "4242 ollama-rocm (/dev/kfd)"
    assert "driver trace events" in facts
    ran = rows_under(lines, "What ran")
    assert "sha256" in ran[0][3] or "stand-ins" in ran[0][3]      # the pack, by hash
    assert not any(line.startswith("### The stack that answered: SIMULATED") for line in lines)
    assert not any("This machine: where the harness ran" in line for line in lines)
    for row in rows_under(lines, "The stack that answered"):
        assert row[2] and row[2] != "-", row                      # every fact says its source


def test_an_emulated_stack_would_split_the_layers(reproduced, tmp_path):
    data = hardware_report(reproduced, tmp_path)
    data["backend"] = dict(data["backend"], kind="emulated", simulated=False,
                           driver={"flavour": "staging", "kernel": "7.0", "source": "model"})
    lines = render_markdown(Digest.of_document(data).view(False)).splitlines()
    titles = [x for x in lines if x.startswith("### The stack") or x.startswith("### This")]
    assert titles[0].startswith("### The stack that answered: SIMULATED")
    assert titles[1].startswith("### This machine: its XRT and pyxrt answered; the driver")


def test_a_report_without_the_new_records_still_renders(reproduced):
    data = read_document(reproduced)
    del data["case"]["workload"]
    del data["artifacts"]["control"]["workload"]
    for plan in data["plans"]:
        for trial in plan["trials"]:
            for outcome in trial["runlists"]:
                outcome.pop("failing_run_named", None)
    body = render_markdown(Digest.of_document(data).view(False))
    assert "not said (XRT: 24, the chain's first)" in body       # judged by state and index
    assert re.search(r"\| depth-only 42 \| NOP runs \(nop\.elf\) \|", body)
