"""A driver flavour is one row of `harness.model.drivers.FLAVOURS`: a throw-away flavour
added as a row alone is probed, simulated, logged and listed, with no other file knowing
its name. A real one would be added in at most three files: its row and build function in
`harness/model/drivers.py`, the README, and a test that pins it."""

from __future__ import annotations

from dataclasses import replace

import pytest
from click.testing import CliRunner
from machines import Tree
from test_probe import ROOT, CannedDrm

from harness.app.cli import main
from harness.model.drivers import FLAVOURS, LEGACY, driver_build, timeout_seconds
from harness.probe.fingerprint import probe
from harness.report.failing import why_unnamed
from harness.report.fileformat import load_report
from harness.sim.profiles import parse_profile

# Built as the out-of-tree driver builds (its device check, dump and stop), but under a
# module, parameter, chain cap and context names of its own.
VENDOR = replace(
    FLAVOURS["oot"], name="vendor", title="vendor amdxdna_vendor.ko", called="vendor",
    rule="a vendor's watchdog: every chain in flight ends TIMEOUT",
    parameter="vendor_timeout_s", default=3.0,
    played="vendor: a device check every vendor_timeout_s; chains capped at 16",
    source="a vendor's tree (throw-away)", module="amdxdna_vendor", chain_cap=16,
    context_prefix="vctx")


@pytest.fixture
def vendor(monkeypatch) -> None:
    monkeypatch.setitem(FLAVOURS, "vendor", VENDOR)


def test_probed_by_its_module(vendor, tmp_path):
    tree = Tree(tmp_path)
    tree.npu()
    tree.module({"vendor_timeout_s": "5"}, name="amdxdna_vendor", version="9.9.9")
    driver = probe(tree.sources(ROOT, CannedDrm()))["driver"]
    assert driver["flavour"] == "vendor" and driver["module"] == "amdxdna_vendor"
    assert driver["evidence"] == ["module amdxdna_vendor"]
    assert driver["timeout_rule"] == VENDOR.rule
    assert driver["timeout_setting"] == "5"
    # its unit: two silent checks after one, and a check more for each other context the
    # device keeps connected (the out-of-tree rows' idle-context skips, up to 15)
    assert timeout_seconds(driver) == 5 * (3 + 15)


def test_probed_by_its_parameter_under_the_shared_name(vendor, tmp_path):
    tree = Tree(tmp_path)
    tree.npu()
    tree.module({"vendor_timeout_s": "5"})
    driver = probe(tree.sources(ROOT, CannedDrm()))["driver"]
    assert driver["flavour"] == "vendor"
    assert driver["evidence"] == ["parameter vendor_timeout_s (the vendor driver's)"]


def test_simulated_and_logged(vendor, tmp_path):
    out = tmp_path / "r.yaml"
    result = CliRunner().invoke(main, [
        "run", "minicpm5-2b-decode", "--profile", "vendor,hang-at:3", "--plan", "max:16",
        "--plan", "42", "--trials", "1", "--no-isolate", "--out", str(out)])
    assert result.exit_code == 1, result.output
    assert "profile vendor,hang-at:3" in result.output and "vendor on Linux 7.0" in result.output
    report = load_report(out)
    assert report.backend["driver"]["flavour"] == "vendor"
    sixteen, deep = report.plans
    # its own chain cap: 42 runs are chains of 24 + 18, each past 16, refused in run_job
    assert [r.state for r in deep.trials[0].runlists] == ["NEW"]
    # a hang: its build's device check dumps the connected contexts (the runlist's, the
    # third of four made), named as it names them
    hung = sixteen.trials[0]
    assert hung.runlists[0].state == "TIMEOUT"
    log = hung.kernel_log
    assert log["tree"] == LEGACY and "as the vendor driver prints" in log["tree_note"]
    dumped = [line for line in log["lines"] if "aie2_dump_ctx: Dumping ctx" in line]
    assert len(dumped) == 1 and "Dumping ctx vctx.4242.3, hwctx 3" in dumped[0]


def test_listed(vendor):
    listed = " ".join(CliRunner().invoke(main, ["sim", "profiles"]).output.split())
    assert "vendor documented vendor amdxdna_vendor.ko: a vendor's watchdog: every chain " \
           "in flight ends TIMEOUT; chains capped at 16 commands" in listed
    assert "vendor: a device check every vendor_timeout_s; chains capped at 16 [source: a " \
           "vendor's tree (throw-away)]" in listed
    assert parse_profile("vendor,kernel:6.18").name == "vendor,kernel:6.18"
    build = driver_build("vendor", "6.18")
    assert build.name == "vendor on Linux 6.18" and build.dumps_contexts
    assert why_unnamed("vendor", "7.0").startswith(
        "vendor on Linux 7.0 reports the firmware's run_list_id as error_index")


def test_no_flavour_is_known_by_name_outside_its_row():
    """Only the table names a flavour: the probe, the simulator, the log reader, the
    profiles and the rules ask the row what it says."""
    from pathlib import Path
    package = Path(__file__).resolve().parents[1] / "harness"
    named = []
    for path in package.rglob("*.py"):
        if path.name == "drivers.py" and path.parent.name == "model":
            continue
        text = path.read_text()
        for name in FLAVOURS:
            for spelt in (f'flavour == "{name}"', f"flavour == '{name}'",
                          f'"{name}": ', f'== "{name}"', f'in ("{name}"'):
                if spelt in text:
                    named.append(f"{path.relative_to(package)}: {spelt}")
    assert named == []


@pytest.mark.parametrize("kernel, why", [
    ("6.16", "ends the hung job ABORT without writing error_index (before 6fb7f2988832)"),
    ("6.18", "ends the hung job ABORT without writing error_index (before 6fb7f2988832)"),
    ("6.19", "ends a timed-out chain without writing error_index (before 89ff45359abb)"),
    ("7.0", "ends a timed-out chain with error_index 0 (drm_sched's timeout"),
    ("7.1", "reports the firmware's run_list_id as error_index, and the firmware leaves"),
])
def test_why_no_run_is_named_follows_the_build(kernel, why):
    """The note comes from the build the row makes for the kernel, as the simulator plays
    it: mainline 6.18.0 still ABORTs, 7.1 takes the firmware's run_list_id."""
    build = driver_build("mainline", kernel)
    assert why_unnamed("mainline", kernel).startswith(f"mainline on Linux {kernel} {why}")
    assert (build.timeout_index == "run_list_id") == (kernel == "7.1")
