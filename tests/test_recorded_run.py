"""`capture record` leaves the engine's failing run as evidence (issue 53): OUT/report.yaml
for every run, with the kernel log and the driver's trace events from the program's start
to after its end, its error lines, how it ended, the times, the time to failure against the
driver's timer and the device afterwards; --no-capture and --attach; one report kind that
render, bundle, check and diagnose read.

Two stacks, as users run it without an NPU: a fabricated machine (tests/machines.py) whose
kernel log and trace buffer receive the staging driver's timeout lines while a stand-in for
`flm run` (tests/failing_engine.py) fails as FastFlowLM does, with the simulator standing in
for pyxrt for the check afterwards; and the simulated stack, through `sim exec`, with a
pyxrt program that times out. Under `emulate` (real XRT over the emulated driver) this
cannot run here: no XRT is installed.
"""

from __future__ import annotations

import sys
import tarfile
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from machines import engine_pack, on_the_hardware_path, strix_halo

from harness.app.cli import main
from harness.formats.xclbin_writer import flm_spec, synthesize, validate_spec
from harness.model.wedge import REBOOT_FIX, WEDGE_CLEARS, WEDGE_DOES_NOT_CLEAR
from harness.report.fileformat import load_report

TESTS = Path(__file__).resolve().parent
ENGINE = str(TESTS / "failing_engine.py")
IRON = str(TESTS / "scripts" / "iron_host.py")
STANDIN = str(TESTS / "standin_engine.py")
TDR = "aie2_tdr_detect: TDR timeout detected"
FLM_ERROR = '{"error":"runlist failed execution (ERT_CMD_STATE_TIMEOUT)"}'


def record(*args: str):
    return CliRunner().invoke(main, ["capture", "record", "--after", "0", *args])


def engine_run(folder: Path) -> dict:
    return load_report(folder / "report.yaml").sections["engine_run"]


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A Strix Halo with the staging driver, its tracefs recording the amdxdna events, and
    XRT's validate.xclbin for the check afterwards; the simulator stands in for pyxrt."""
    tree = strix_halo(tmp_path)
    base = "/sys/kernel/tracing"
    tree.write(f"{base}/events/amdxdna/xdna_job/enable", "1")
    tree.write(f"{base}/trace", "# tracer: nop\n#\n")
    tree.write(f"{base}/trace_clock", "[local] global counter uptime perf mono mono_raw boot")
    bins = tmp_path / "xrt" / "share" / "amdxdna" / "bins"
    bins.mkdir(parents=True)
    from machines import ar_archive
    (bins / "xrt_smi_strx.a").write_bytes(ar_archive(
        {"validate.xclbin": synthesize(validate_spec("recorded-run"))}))
    monkeypatch.setenv("XILINX_XRT", str(tmp_path / "xrt"))
    on_the_hardware_path(monkeypatch, tree, profile="staging")
    return tree


def test_a_failing_decode_leaves_its_lines_error_time_to_failure_and_device_state(machine,
                                                                                  tmp_path):
    """The issue's "done when": the engine fails with FastFlowLM's timeout error while the
    machine's kernel log gets the staging driver's timeout lines (STACK.md 10) and its trace
    the hung job (amd/xdna-driver 856409ca aie2_ctx.c trace_xdna_job); the job hung for the
    driver's 2 s (staging's tdr_timeout_ms, STACK.md 4)."""
    result = record("--no-capture", "--out", "run", "--", sys.executable, ENGINE,
                    str(machine.root), "--hang", "2.0", "--end", "exit")
    assert result.exit_code == 0, result.output
    run = engine_run(tmp_path / "run")
    assert run["mode"] == "command"
    assert run["command"][1:] == [ENGINE, str(machine.root), "--hang", "2.0", "--end", "exit"]
    assert run["program"]["exit_status"] == 1 and run["program"]["signal"] is None
    assert [e["carrier"] for e in run["errors"]] == ["flm-json-error"]
    assert run["errors"][0]["state"] == "TIMEOUT" and run["errors"][0]["line"] == 2
    log = run["kernel_log"]
    assert any(line.endswith(TDR) for line in log["lines"])
    assert {"tdr_timeout", "timeout_capture"} <= {e["event"] for e in log["events"]}
    assert run["trace_events"]["recording"] and run["trace_events"]["counts"] == {"xdna_job": 2}
    ttf = run["time_to_failure"]
    assert ttf["clock"] == "kernel" and ttf["class"] == "driver-timer"
    assert 2000.0 <= ttf["ms"] < 2600.0
    assert ttf["from"] == "trace: job sent (fence context 12, seqno 7)"
    assert ttf["to"] == "kernel log: tdr_timeout"
    times = run["times"]
    assert times["first_event"]["clock"] == "machine" and times["first_event"]["at_s"] >= 0.0
    assert times["first_event"]["at_s"] + 2.0 <= times["timeout"]["at_s"] + 0.05
    assert times["timeout"]["at_s"] <= times["error"]["at_s"] + 0.05
    assert times["error"]["at_s"] <= times["end"]["at_s"] <= times["window_closed"]["at_s"]
    device = run["device_after"]
    assert device["answers"] is True and device["recovery"]["status"] == "recovered"
    assert "nop.elf on XRT's validate.xclbin" in device["recovery"]["what"]
    assert set(device["xrt_smi_examine"]) == {"before", "after"}
    text = (tmp_path / "run" / "report.yaml").read_text()
    assert "porter" not in text            # the user's home folder, redacted on disk
    out = result.output
    assert f"the program reported: {FLM_ERROR}" in out
    assert "time to failure: 2.0 s on the kernel's clock, at the driver's 2 s timer" in out
    assert "device afterwards: it answered" in out
    assert "next: runlist-harness diagnose run/report.yaml" in out


def test_the_report_is_one_kind_render_bundle_check_and_diagnose_read(machine, tmp_path):
    assert record("--no-capture", "--out", "run", "--", sys.executable, ENGINE,
                  str(machine.root), "--end", "zero").exit_code == 0
    runner = CliRunner()
    checked = runner.invoke(main, ["report", "check", "run/report.yaml"])
    assert checked.exit_code == 0, checked.output
    rendered = runner.invoke(main, ["report", "render", "run/report.yaml"])
    assert rendered.exit_code == 0, rendered.output
    body = rendered.output
    assert "### The run the harness recorded" in body and TDR in body
    assert "Submitted as" not in body          # the program's submissions are its own
    assert "| the driver's timeout | +" in body
    text = runner.invoke(main, ["report", "render", "--format", "text", "run/report.yaml"])
    assert "the run the harness recorded:" in text.output and "\nplans:" not in text.output
    assert "  the driver's timeout: +" in text.output
    bundled = runner.invoke(main, ["report", "bundle", "run/report.yaml"])
    assert bundled.exit_code == 0, bundled.output
    with tarfile.open(tmp_path / "run" / "report.bundle.tar.gz") as tar:
        names = {Path(m.name).name for m in tar.getmembers()}
        kernel_log = tar.extractfile(next(m for m in tar.getmembers()
                                          if m.name.endswith("kernel-log.txt"))).read()
    assert {"report.md", "report.yaml", "kernel-log.txt", "trace-events.txt",
            "output.txt"} <= names
    assert TDR.encode() in kernel_log and b"porter" not in kernel_log
    diagnosed = runner.invoke(main, ["diagnose", "run/report.yaml"])
    assert diagnosed.exit_code == 0, diagnosed.output
    said = diagnosed.output
    # the engine's own commands failed and XRT captured none: which runlist cause is not
    # separated without them captured and run beside NOOPs at the same depth
    assert "diagnosis: undetermined" in said
    assert "next: the failing program's own commands beside NOOPs at the same depth: " \
        "runlist-harness capture record" in said
    assert "then reproduce_ert_timeout --capture DIR" in said
    from harness.report.diagnosis import diagnose
    observed = diagnose(["run/report.yaml"]).reports[0]
    signs = {(s.kind, s.cite.field) for s in observed.signs}
    assert ("runlist-failed", "engine_run.errors[0]") in signs
    assert ("driver-timeout", "engine_run.kernel_log.events") in signs
    assert [(a.label, a.failed, dict(a.states)) for a in observed.arms] == \
        [("the engine's run", 1, {"TIMEOUT": 1})]


def test_a_killed_engine_without_trace_events_is_named_and_its_time_is_not_guessed(
        tmp_path, monkeypatch):
    """Killed (SIGKILL, as a crash ends it), on a machine whose tracefs is not mounted: the
    report says the signal, and that the time to failure needs the driver's trace events,
    with how to record them (harness.probe.trace_access)."""
    tree = strix_halo(tmp_path)
    on_the_hardware_path(monkeypatch, tree, profile="staging")
    result = record("--no-capture", "--no-recovery-check", "--out", "run", "--",
                    sys.executable, ENGINE, str(tree.root), "--no-trace", "--end", "kill")
    assert result.exit_code == 0, result.output
    run = engine_run(tmp_path / "run")
    assert run["program"]["signal"] == "SIGKILL" and run["program"]["exit_status"] is None
    assert run["errors"][0]["state"] == "TIMEOUT"
    assert run["trace_events"] == {
        "recording": False, "why": "tracefs is not mounted here",
        "fix": "mount it: `sudo mount -t tracefs nodev /sys/kernel/tracing`"}
    ttf = run["time_to_failure"]
    assert "ms" not in ttf and ttf["timeout"] == "kernel log: tdr_timeout"
    assert ttf["not_measured"].startswith("the driver's trace events were not recorded, so "
                                          "the submit of the job that hung is not seen "
                                          "(tracefs is not mounted here)")
    assert run["device_after"] == {"answers": None, "not_checked": "--no-recovery-check: "
                                                                   "the device was not asked",
                                   "xrt_smi_examine": run["device_after"]["xrt_smi_examine"]}
    load = load_report(tmp_path / "run" / "report.yaml")
    assert load.verdict["answer"] == ("the program failed: runlist failed execution "
                                      "(ERT_CMD_STATE_TIMEOUT)")
    assert "it ended by SIGKILL" in load.verdict["text"]


def test_without_a_capture_written_the_report_is_written_all_the_same(machine, tmp_path):
    """The capture asked for, a program that maps no XRT: no replay.json (exit 3, as before),
    and the run's evidence is still in the report."""
    result = record("--out", "run", "--", sys.executable, ENGINE, str(machine.root),
                    "--end", "exit")
    assert result.exit_code == 3, result.output
    assert "the run's evidence is in run/report.yaml" in result.output
    run = engine_run(tmp_path / "run")
    assert run["capture"]["asked"] and not run["capture"]["written"]
    assert run["capture"]["why_not"].startswith("no replay.json and nothing captured")
    assert any(line.endswith(TDR) for line in run["kernel_log"]["lines"])


def test_kernel_log_unreadable_is_said_with_the_permission_advice(tmp_path, monkeypatch):
    tree = strix_halo(tmp_path, identity=False)            # no /dev/kmsg, no journalctl
    on_the_hardware_path(monkeypatch, tree, profile="staging")
    monkeypatch.setenv("PATH", "/nonexistent")
    result = record("--no-capture", "--no-recovery-check", "--out", "run", "--",
                    sys.executable, "-c", "print('hello')")
    assert result.exit_code == 0, result.output
    log = engine_run(tmp_path / "run")["kernel_log"]
    assert log["unreadable"] == "/dev/kmsg is absent; journalctl is not installed"
    assert "journalctl -k" in log["fix"] and "dmesg_restrict" in log["fix"]
    assert "kernel log: not readable (/dev/kmsg is absent" in result.output


# -- the simulated stack through `sim exec` ----------------------------------------------------

@pytest.fixture
def xclbin(tmp_path) -> Path:
    path = tmp_path / "layer.xclbin"
    path.write_bytes(synthesize(flm_spec("Recorded/layer")))
    return path


def sim_exec(xclbin: Path, depth: int = 42) -> list[str]:
    return [sys.executable, "-m", "harness", "sim", "exec", IRON, str(xclbin), str(depth)]


def test_a_pyxrt_program_timing_out_on_the_simulated_stack(xclbin, tmp_path):
    """staging's 2 s timer (STACK.md 4) on the simulated device's clock: the hung chain's
    "job run" (its trace_xdna_job) to "TDR timeout detected"; every line marked SIMULATED."""
    result = record("--no-capture", "--profile", "staging,hang-at:30", "--out", "run", "--",
                    *sim_exec(xclbin))
    assert result.exit_code == 0, result.output
    run = engine_run(tmp_path / "run")
    assert run["evidence_from"].startswith("the SIMULATED stack")
    assert run["program"]["exit_status"] == 1
    error = run["errors"][0]
    assert error["carrier"] == "xrt-text" and error["state"] == "TIMEOUT"
    assert error["message"] == "runlist of 42 failed: runlist failed execution " \
                               "(ERT_CMD_STATE_TIMEOUT)"
    assert all(line.startswith("SIMULATED ") for line in run["kernel_log"]["lines"])
    assert all(line.startswith("SIMULATED ") for line in run["trace_events"]["lines"])
    ttf = run["time_to_failure"]
    assert ttf["clock"] == "simulated device" and ttf["class"] == "driver-timer"
    assert 2000.0 <= ttf["ms"] <= 2010.0
    assert run["times"]["timeout"]["clock"] == "simulated device"
    assert run["device_after"]["answers"] is True
    diagnosed = CliRunner().invoke(main, ["diagnose", "run/report.yaml"])
    assert "next: the failing program's own commands beside NOOPs at the same depth: " \
        "runlist-harness capture record" in diagnosed.output


def test_a_device_left_wedged_is_named_with_what_clears_it(xclbin, tmp_path):
    """wedge:1: the firmware refuses every context after the first timeout (amd/xdna-driver
    PR #1585); the program's device is the one the check afterwards finds
    (harness.sim.machine_folder), and what clears it is what public reports say
    (harness.model.wedge)."""
    result = record("--no-capture", "--profile", "staging,hang-at:30,wedge:1", "--out", "run",
                    "--", *sim_exec(xclbin))
    assert result.exit_code == 3, result.output
    device = engine_run(tmp_path / "run")["device_after"]
    assert device["answers"] is False and device["wedged"] is True
    assert device["state"].startswith("wedged, or every context taken")
    assert device["clears"].startswith("a reboot")
    assert "1bit-MONSTER/1bit-MONSTER#1920" in device["does_not_clear"]
    assert "error: the NPU did not answer after the run: it is wedged" in result.output
    assert "Cleared by: a reboot" in result.output
    # one account (harness.model.wedge): what cleared a wedge in one report (a PCI rescan,
    # amd/xdna-driver#1645) is never also said to have failed, and #1257/#1193 (a cold
    # boot's probe failure) are not cited for a reload on a wedged device
    assert device["clears"] == WEDGE_CLEARS and device["does_not_clear"] == WEDGE_DOES_NOT_CLEAR
    assert REBOOT_FIX in result.output
    for told in (result.output, device["clears"], device["does_not_clear"], REBOOT_FIX):
        assert "#1257" not in told and "#1193" not in told and "smu cmd 4" not in told
        assert "saw neither clear it" not in told
    assert "rescan" not in device["does_not_clear"] and "rescan" in device["clears"]


def test_with_a_capture_the_next_experiment_replays_it_and_the_bundle_ships_it(tmp_path):
    pack = engine_pack(tmp_path / "pack", "recorded")
    result = record("--frames", "8", "--profile", "staging,hang-at:30", "--out", "cap", "--",
                    sys.executable, STANDIN, str(pack))
    assert result.exit_code == 0, result.output
    run = engine_run(tmp_path / "cap")
    assert run["capture"]["written"] and run["capture"]["deepest"] == {"frame": "frame_1",
                                                                        "runs": 42}
    diagnosed = CliRunner().invoke(main, ["diagnose", "cap/report.yaml"])
    assert "next: reproduce_ert_timeout --capture cap (the engine's own commands as " \
        "captured" in diagnosed.output
    bundled = CliRunner().invoke(main, ["report", "bundle", "cap/report.yaml"])
    assert bundled.exit_code == 0, bundled.output
    with tarfile.open(tmp_path / "cap" / "report.bundle.tar.gz") as tar:
        names = [m.name.split("/", 1)[1] for m in tar.getmembers()]
    assert "capture/replay.json" in names and "capture/harness-origin.json" in names
    # the xclbins are FastFlowLM's binaries: named with their sha256, not shipped
    assert "an xclbin, not shipped (sha256" in bundled.output


def test_a_capture_replaced_under_the_report_is_not_shipped(tmp_path):
    pack = engine_pack(tmp_path / "pack", "recorded-swap")
    assert record("--frames", "8", "--profile", "staging,hang-at:30", "--out", "cap", "--",
                  sys.executable, STANDIN, str(pack)).exit_code == 0
    (tmp_path / "cap" / "replay.json").write_text("{}")
    bundled = CliRunner().invoke(main, ["report", "bundle", "cap/report.yaml"])
    assert bundled.exit_code == 0, bundled.output
    assert "capture: the report's folder holds no replay.json whose sha256 is the one the " \
        "report recorded" in bundled.output


# -- --attach ------------------------------------------------------------------------------

def test_attach_watches_a_window_and_names_the_server_and_its_version(machine, tmp_path):
    """A `flm serve` the harness did not start: its process (/proc/PID/comm and cmdline, and
    the NPU it holds) and its version (its /api/version); the driver's timeout lines that
    reach the kernel log during the window are kept."""
    from fakeflm import FakeFlm
    machine.write("/proc/5151/comm", "flm")
    machine.write("/proc/5151/cmdline", "flm\0serve\0minicpm5:2b\0")
    fd = machine.root / "proc" / "5151" / "fd"
    fd.mkdir()
    (fd / "7").symlink_to("/dev/accel/accel0")

    def driver() -> None:
        time.sleep(0.3)
        with open(machine.root / "dev" / "kmsg", "a") as log:
            log.write(f"3,200,{int(time.monotonic() * 1e6)},-;amdxdna 0000:c7:00.1: [drm] "
                      f"*ERROR* {TDR}\n")
    writer = threading.Thread(target=driver)
    with FakeFlm() as server:
        writer.start()
        result = record("--attach", "--seconds", "1", "--url", server.url, "--out", "watch")
        writer.join()
    assert result.exit_code == 0, result.output
    run = engine_run(tmp_path / "watch")
    assert run["mode"] == "attach" and "command" not in run
    served = run["server"]
    assert served["processes"] == [{"pid": 5151, "command": "flm",
                                    "args": ["serve", "minicpm5:2b"], "serves": True}]
    assert served["version"] == "1.0.6" and "/api/version" in served["version_from"]
    # what holds the NPU (and the GPU's compute node: the machine's ROCm process, 4242)
    assert {u["pid"]: u["devices"] for u in served["npu_holders"]} == {
        4242: ["/dev/kfd"], 5151: ["/dev/accel/accel0"]}
    assert any(line.endswith(TDR) for line in run["kernel_log"]["lines"])
    assert run["program"] == {"window": "after --seconds 1"}
    assert load_report(tmp_path / "watch" / "report.yaml").verdict["answer"] == \
        "the driver timed out during the run (kernel log: tdr_timeout)"
    assert "server: pid 5151 flm serve minicpm5:2b" in result.output


def test_attach_refuses_a_command_and_the_simulated_stack(tmp_path):
    refused = record("--attach", "--", "flm", "serve")
    assert refused.exit_code == 2
    assert "--attach records beside a program already running, so it runs none" in \
        refused.output
    simulated = record("--attach", "--profile", "staging", "--seconds", "1")
    assert simulated.exit_code == 2
    assert "the simulated stack runs nothing beside the harness" in simulated.output
    seconds = record("--seconds", "1", "--", sys.executable, "-c", "pass")
    assert seconds.exit_code == 2 and "--seconds and --url go with --attach" in seconds.output


def test_check_refuses_a_recorded_run_whose_lines_class_or_verdict_were_changed(tmp_path):
    """What a schema cannot see (harness.report.engine_run_check): a simulated line without
    its mark, a class its time does not make against the report's timer, a verdict that
    does not say what the run shows."""
    from harness.formats.yamlio import dump_yaml
    from harness.report.check import check_report_file
    xclbin = tmp_path / "layer.xclbin"
    xclbin.write_bytes(synthesize(flm_spec("Checked/layer")))
    assert record("--no-capture", "--no-recovery-check", "--profile", "staging,hang-at:30",
                  "--out", "run", "--", *sim_exec(xclbin)).exit_code == 0
    whole = load_report(tmp_path / "run" / "report.yaml").to_dict()
    assert check_report_file(str(tmp_path / "run" / "report.yaml")).valid
    run = whole["engine_run"]
    run["kernel_log"]["lines"][0] = run["kernel_log"]["lines"][0].removeprefix("SIMULATED ")
    run["time_to_failure"]["class"] = "at-once"
    whole["verdict"]["reproduced"] = False
    edited = tmp_path / "edited.yaml"
    edited.write_text(dump_yaml(whole))
    problems = check_report_file(str(edited)).problems
    assert any(p.startswith("engine_run.kernel_log.lines: 1 line(s) of a simulated run "
                            "without the SIMULATED mark") for p in problems), problems
    assert any("time_to_failure.class: 'at-once', but" in p and "'driver-timer'" in p
               for p in problems), problems
    assert "verdict.reproduced: False, but the run's section shows a failure" in problems


def test_attach_ends_its_window_at_ctrl_c_and_writes_the_report(machine, tmp_path):
    """Until Ctrl-C (no --seconds): the user's Ctrl-C is how the window ends; the report is
    written, then the command exits 130 as every command does after a Ctrl-C. Run as a
    real process, as a user presses it."""
    import os
    import signal
    import subprocess
    proc = subprocess.Popen([sys.executable, "-m", "harness", "capture", "record", "--attach",
                             "--no-recovery-check", "--out", str(tmp_path / "watch")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ))
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.startswith("watching: "):
            break
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, "".join(seen) + out + err
    run = engine_run(tmp_path / "watch")
    assert run["program"]["window"].startswith("at your Ctrl-C after ")
    assert "window closed at your Ctrl-C" in out and "the evidence is in" in err
