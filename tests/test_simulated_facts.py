"""Simulated facts that cannot be mistaken for a machine's: every kernel-log line the
simulated driver printed is marked SIMULATED (with an address and a clock no machine has)
in the report's YAML, the render and the bundle's kernel-log.txt; and a verdict whose
outcome an injected hypothesis made opens with SIMULATED and says so."""

from __future__ import annotations

import re
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from machines import on_the_hardware_path, stand_in_pack, strix_halo

from harness.app.cli import main
from harness.logs.kernel_log import SIMULATED_MARK
from harness.report.digest import Digest
from harness.report.fileformat import load_report, read_document
from harness.report.render import render_markdown
from harness.sim import driver_log as sim_log
from harness.sim.profiles import parse_profile

YEAR_S = 365.25 * 24 * 3600
LINE = re.compile(r"^SIMULATED \[ *(\d+)\.\d{6}\] (.*)$")


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def simulated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sim") / "r.yaml"
    result = invoke("run", "minicpm5-2b-decode", "--plan", "42", "--trials", "2",
                    "--no-isolate", "--profile", "staging,kernel:6.16,hang-at:30",
                    "--out", str(out))
    assert result.exit_code == 1, result.output
    return out


def impossible(line: str) -> bool:
    """Marked, and from an address and a clock no real machine has."""
    match = LINE.match(line)
    if match is None:
        return False
    uptime, text = int(match.group(1)), match.group(2)
    function = re.match(r"amdxdna [0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.(\d+): ", text)
    return uptime > 100 * YEAR_S and (function is None or int(function.group(1)) > 7)


def test_the_simulated_npu_has_an_address_and_clock_no_machine_has():
    """Linux names a PCI function "%04x:%02x:%02x.%d" with PCI_FUNC(devfn), three bits
    (drivers/pci/probe.c pci_setup_device, include/uapi/linux/pci.h); no machine has been
    up for centuries. The rule is listed by `sim profiles`."""
    assert int(sim_log.BDF.rsplit(".", 1)[1]) > 7
    assert sim_log.BOOT_US / 1e6 > 100 * YEAR_S
    listed = invoke("sim", "profiles").output
    assert "(0000:00:00.9) and clock (9e9 s of uptime) are ones no" in " ".join(listed.split())


def test_every_simulated_line_is_marked_in_the_yaml_the_render_and_the_bundle(simulated):
    trials = load_report(simulated).plans[0].trials
    for trial in trials:
        log = trial.kernel_log
        assert log["simulated"] is True and len(log["lines"]) == 15
        assert all(impossible(line) for line in log["lines"]), log["lines"]
        assert log["lines"][0].startswith("SIMULATED [9000000006.000000] amdxdna "
                                          "0000:00:00.9: [drm] *ERROR* aie2_legacy_tdr_detect")
    md = invoke("report", "render", str(simulated)).stdout
    assert "Firmware's account of the timeout (SIMULATED: as the simulated driver and XRT " \
           "wrote it):" in md
    assert "Driver events (SIMULATED):" in md
    block = md.split("<summary>Kernel log of this trial")[1].split("```text\n")[1]
    shown = block.split("\n```")[0].splitlines()
    assert len(shown) == 15 and all(impossible(line) for line in shown)
    made = invoke("report", "bundle", str(simulated))
    assert made.exit_code == 0, made.output
    with tarfile.open(simulated.with_name("r.bundle.tar.gz")) as tar:
        text = tar.extractfile("r.bundle/kernel-log.txt").read().decode()
        yaml = tar.extractfile("r.bundle/r.yaml").read().decode()
    shipped = simulated.with_name("shipped.yaml")
    shipped.write_text(yaml)
    quoted = [line for trial in load_report(shipped).plans[0].trials
              for line in trial.kernel_log["lines"]]
    assert quoted and all(q.startswith(SIMULATED_MARK + " [") for q in quoted)
    lines = text.splitlines()
    assert lines[0].startswith("# SIMULATED: every line below was printed by the harness's "
                               "simulated driver")
    body = [x for x in lines[1:] if x and not x.startswith(("== ", "-- "))]
    # the failed trials' trace events follow their kernel logs, marked as well
    traced = [x for x in body if " xdna_job: " in x]
    assert traced and all(x.startswith("SIMULATED simulated-") for x in traced)
    body = [x for x in body if x not in traced]
    assert len(body) == 30 and all(impossible(line) for line in body)


def test_an_older_report_s_lines_are_marked_when_shown(simulated):
    """A simulated report written before lines were stored marked: every output marks them."""
    data = read_document(simulated)
    for trial in data["plans"][0]["trials"]:
        log = trial["kernel_log"]
        log["lines"] = [line.removeprefix("SIMULATED ") for line in log["lines"]]
        del log["simulated"]
    digest = Digest.of_document(data, kernel_log=True)
    md = render_markdown(digest.view(False))
    block = md.split("```text\n")[1].split("\n```")[0].splitlines()
    assert block and all(line.startswith("SIMULATED [") for line in block)
    logged = [x for x in "".join(digest.kernel_log_lines(False)).splitlines()
              if x and not x.startswith(("== ", "# ", "-- ")) and " xdna_job: " not in x]
    assert logged and all(line.startswith("SIMULATED [") for line in logged)
    digest.close()


@pytest.mark.parametrize("profile, sentence", [
    ("hang-at:30", "hang-at:30 makes every runlist deeper than 30 fail (its run 30, 0-based, "
                   "never completes)"),
    ("inflight-cap:40", "inflight-cap:40 makes every runlist of more than 40 commands fail "
                        "(the firmware wedges with more than 40 queued on one context)"),
    ("slow:layer:3000000", "slow:layer:3000000 makes each layer command take 3000000 us, so a "
                           "chain that runs past the driver's timeout fails"),
    ("flaky:0.25", "flaky:0.25 makes each job hang with probability 0.25"),
    ("xrt-chain:12", "xrt-chain:12 makes XRT cut runlists into chains of 12 instead of 24"),
    ("mainline,kernel:6.16", None),
])
def test_each_hypothesis_says_what_it_makes_happen(profile, sentence):
    assert parse_profile(profile).by_construction == ([sentence] if sentence else [])


def test_a_verdict_made_by_a_hypothesis_says_so_first_below_its_answer(simulated):
    verdict = load_report(simulated).verdict
    assert verdict["answer"] == "42 in one runlist: TIMEOUT 2/2 -> no cut was run [SIMULATED]"
    assert verdict["text"].startswith(
        "SIMULATED: the outcome follows from the injected hypothesis by construction: "
        "hang-at:30 makes every runlist deeper than 30 fail (its run 30, 0-based, never "
        "completes).\nfailures: 42: TIMEOUT 2/2")
    md = invoke("report", "render", str(simulated)).stdout
    assert "**Verdict:** 42 in one runlist: TIMEOUT 2/2 -> no cut was run [SIMULATED]\n\n" \
        "- SIMULATED: the outcome follows" in md
    assert "| TIMEOUT | simulated device |" in md            # a failing row copied alone
    documented = invoke("run", "nop-depth", "--plan", "42", "--trials", "1", "--no-isolate",
                        "--backend", "sim", "--out", str(simulated.with_name("d.yaml")))
    assert "verdict: 42 in one runlist: COMPLETED 1/1 -> all completed [SIMULATED]\n" \
        "  - all plans completed" in documented.stdout       # nothing injected


def test_the_hardware_path_stand_in_names_what_it_played_and_marks_its_lines(tmp_path,
                                                                             monkeypatch):
    pack = stand_in_pack(tmp_path / "pack", "Mark")
    on_the_hardware_path(monkeypatch, strix_halo(tmp_path))
    out = tmp_path / "r.yaml"
    result = invoke("run", "minicpm5-2b-decode", "--plan", "42", "--backend", "xrt",
                    "--xclbins", str(pack), "--trials", "1", "--no-isolate", "--out", str(out))
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines()[0].endswith(
        "profile staging,hang-at:30; hypothesis hang-at:30); not hardware evidence")
    report = load_report(out)
    assert report.backend["stand_in_profile"] == "staging,hang-at:30"
    assert "profile" not in report.backend           # what --resume would take as --profile
    assert report.verdict["text"].startswith("SIMULATED: the outcome follows")
    assert report.verdict["answer"].endswith(" [SIMULATED]")
    log = report.plans[0].trials[0].kernel_log
    assert log["source"] == "/dev/kmsg" and log["simulated"] is True
    assert log["lines"] and all(impossible(line) for line in log["lines"])
    md = invoke("report", "render", str(out)).stdout
    assert md.startswith("## xdna-runlist-harness: minicpm5-2b-decode: SIMULATED stack, "
                         "profile staging,hang-at:30 (not hardware evidence)")
    assert "amdxdna/IOMMU lines from /dev/kmsg, SIMULATED: printed by the simulated driver" \
        in md
