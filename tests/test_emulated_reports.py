"""Reports of runs under `runlist-harness emulate`: labelled EMULATED (real XRT over the
harness's emulated driver), never hardware evidence, and `report check` refuses one that
claims otherwise.

Without XRT, the hardware path runs here on a fabricated machine with a pyxrt that does
not say it stands in, and the process is told it runs under the emulator as
`harness.probe.emulation` would tell it (the variable set and the library mapped); the
emulator itself is tested in tests/test_emulator.py.
"""

from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner
from machines import Tree, stand_in_pack

from harness.app.cli import main
from harness.execution.backend import EmulatedBackend, HardwareBackend
from harness.model.firmware import NOT_MODELLED, NOT_MODELLED_WORD
from harness.report.fileformat import load_report
from harness.sim.profiles import parse_profile

FACTS = {"profile": "staging,hang-at:30", "preload": "libxdna-emulator-0123456789abcdef.so",
         "xrt_libraries": ["/opt/xilinx/xrt/lib/libxrt_coreutil.so.2.21.0"]}


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def emulated_report(tmp_path, monkeypatch):
    """A finished run on the hardware path of an emulated NPU."""
    tree = Tree(tmp_path)
    tree.npu()
    tree.module({"tdr_timeout_ms": "2000"}, version="0.1")
    pack = stand_in_pack(tmp_path / "pack", "Emulated")
    # a pyxrt that does not stand in: what the emulator's XRT is to the harness
    (tmp_path / "xrt_of_the_machine.py").write_text("from bare_pyxrt import *  # noqa\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("HARNESS_PYXRT", "xrt_of_the_machine")
    monkeypatch.setenv("HARNESS_ROOT", str(tree.root))
    monkeypatch.setattr("harness.execution.backend.emulation", lambda: dict(FACTS))
    monkeypatch.setattr("harness.probe.fingerprint.emulation", lambda: dict(FACTS))
    out = tmp_path / "r.yaml"
    result = invoke("run", "minicpm5-2b-decode", "--plan", "42", "--trials", "1",
                    "--backend", "xrt", "--xclbins", str(pack), "--no-isolate", "--out",
                    str(out))
    assert result.exit_code == 0, result.output
    assert "\nbackend: EMULATED NPU, profile staging,hang-at:30: the real pyxrt" in \
        result.output
    sys.modules.pop("xrt_of_the_machine", None)
    return out


def test_an_emulated_run_is_labelled_and_never_hardware_evidence(emulated_report):
    report = load_report(emulated_report)
    backend = report.backend
    assert backend["kind"] == "xrt" and backend["simulated"] is True
    assert backend["emulated"]["profile"] == "staging,hang-at:30"
    assert backend["emulated"]["preload"] == FACTS["preload"]
    assert backend["profile"] == "staging,hang-at:30"
    assert backend["driver"]["flavour"] == "staging"
    assert report.verdict["text"].endswith("[EMULATED, profile staging,hang-at:30]")
    assert report.verdict["text"].startswith("EMULATED: the outcome follows from the injected "
                                             "hypothesis by construction: hang-at:30 makes")
    assert emulated_report.read_text().startswith(
        "# xdna-runlist-harness report: EMULATED stack, not hardware evidence")
    assert invoke("report", "check", str(emulated_report)).exit_code == 0
    rendered = invoke("report", "render", str(emulated_report)).output
    assert "minicpm5-2b-decode: EMULATED NPU (XRT " in rendered
    assert "> **EMULATED.** XRT's own libraries answered, over the harness's emulated " \
           "driver" in rendered
    # the modelled layers and this machine's stand apart, each titled for what it is
    assert "### The stack that answered: EMULATED (the harness's driver and firmware model, " \
           "under this machine's real XRT)" in rendered
    assert "| profile | staging,hang-at:30 (hypothesis hang-at:30) | runlist-harness emulate " \
           "--profile |" in rendered
    assert "| driver (modelled) | staging on Linux 7.0 |" in rendered
    assert "### This machine: its XRT and pyxrt answered; the driver, firmware and NPU below " \
           "did not (they were emulated)" in rendered
    assert "SIMULATED (" not in rendered.split("### Plans")[0]


def test_report_check_refuses_an_emulated_report_that_claims_hardware(emulated_report,
                                                                      tmp_path):
    text = emulated_report.read_text()
    forged = tmp_path / "forged.yaml"
    forged.write_text(text.replace("  simulated: true\n", "  simulated: false\n", 1))
    result = invoke("report", "check", str(forged))
    assert result.exit_code == 2
    assert "backend.simulated: False contradicts backend.kind 'xrt' over the emulated " \
           "driver: results of the emulated driver are never hardware evidence" in result.output
    start = text.index("  emulated:\n")
    end = text.index("\n  ", text.index("    xrt_version:", start)) + 1
    hidden = tmp_path / "hidden.yaml"
    hidden.write_text((text[:start] + text[end:]).replace("  simulated: true\n",
                                                          "  simulated: false\n", 1))
    refused = invoke("report", "check", str(hidden))
    assert refused.exit_code == 2
    assert "backend does not say 'emulated', but the run's environment does " \
           "(environment.emulator: profile staging,hang-at:30)" in refused.output


def test_the_backend_of_an_emulated_run_says_so():
    import bare_pyxrt
    backend = EmulatedBackend(bare_pyxrt, parse_profile("staging,hang-at:30"),
                              emulated=dict(FACTS))
    backend.hardware_xrt_version = "2.21.0"
    assert backend.hardware and backend.simulated
    assert backend.describe().startswith("backend: EMULATED NPU, profile staging,hang-at:30: "
                                         "the real pyxrt (")
    assert "XRT 2.21.0) and XRT over the harness's emulated driver" in backend.describe()
    out = backend.as_report()
    assert out["simulated"] is True and out["emulated"]["xrt_version"] == "2.21.0"
    assert (out["profile"], out["driver"]["flavour"]) == ("staging,hang-at:30", "staging")
    assert HardwareBackend(bare_pyxrt).simulated is False
    # what XRT's message gave of the health data: the emulated device's word for a value
    # the model does not know is recorded as such
    health = {"txn_op_idx": NOT_MODELLED_WORD, "ctx_pc": NOT_MODELLED_WORD, "version": 1}
    assert backend.recorded_health(health) == {"txn_op_idx": NOT_MODELLED,
                                               "ctx_pc": NOT_MODELLED, "version": 1}
    assert HardwareBackend(bare_pyxrt).recorded_health(health) == health


def test_a_worker_on_an_emulated_npu_is_not_handed_the_emulator_s_profile():
    """A worker finds the emulation itself; a profile with the hardware path is bad input."""
    from harness.execution.isolation import worker_command
    emulated = {"kind": "xrt", "simulated": True, "profile": "staging,hang-at:30",
                "emulated": dict(FACTS)}
    assert "--profile" not in worker_command(emulated)
    simulated = worker_command({"kind": "sim", "simulated": True, "profile": "staging"})
    assert simulated[-2:] == ["--profile", "staging"]


def test_an_emulated_answer_says_so_wherever_it_is_copied():
    from harness.report.failing import where_text
    from harness.report.model import model_word
    backend = {"kind": "xrt", "simulated": True, "emulated": dict(FACTS)}
    assert model_word(backend) == "emulated"
    assert model_word({"kind": "sim", "simulated": True}) == "simulated"
    assert model_word({"kind": "xrt", "simulated": False}) == ""
    outcome = {"state": "TIMEOUT", "failing_run": 24, "failing_chain": 1, "chains": [24, 18],
               "source": "device"}
    assert where_text(outcome, model_word(backend)).startswith(
        "chain 1 (runs 24-41) TIMEOUT from the emulated device; the device does not say")


def test_compare_and_a_sweeps_plot_keep_the_emulated_label(emulated_report, tmp_path):
    # labels come from one place (`source_label`): two emulated reports that share a
    # profile keep EMULATED in compare's columns, and an emulated sweep's plot is titled
    # EMULATED (it once said SIMULATED for any model run)
    from test_report_tools import assert_labelled, two_alike

    from harness.report.model import source_label
    from harness.search.sweep import plot_title
    backend = load_report(emulated_report).backend
    assert source_label(backend) == "EMULATED, profile staging,hang-at:30"
    assert plot_title("c", backend) == ("c: share of trials completed (EMULATED, profile "
                                        "staging,hang-at:30)")
    assert plot_title("c", {"kind": "xrt", "simulated": False}) == \
        "c: share of trials completed (hardware)"
    folder = tmp_path / "two"
    folder.mkdir()
    assert_labelled(two_alike(emulated_report, folder), "EMULATED, profile staging,hang-at:30")
