"""Conformance of the simulated binding with real XRT.

What real XRT answered (its pyxrt, runlist code and XDNA shim, over the emulated driver
of `runlist-harness emulate`) to tests/scripts/conformance_host.py is kept, per XRT commit,
in tests/fixtures/xrt-conformance/: the states, the failing run, XRT's message text and
the binding's surface, under a profile. CI has no XRT: there the simulated binding must
answer the recorded host program, under the same profile, as real XRT did. Where XRT is
installed (XILINX_XRT, or /opt/xilinx/xrt, with pyxrt and the XDNA shim), real XRT runs
the program again under the emulator and must still answer as recorded.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from harness.model.firmware import NOT_MODELLED, NOT_MODELLED_WORD
from harness.sim.driver_log import BDF
from harness.sim.host_script import run_host_script
from harness.sim.profiles import parse_profile

HERE = Path(__file__).parent
HOST = HERE / "scripts" / "conformance_host.py"
RECORDS = sorted((HERE / "fixtures" / "xrt-conformance").glob("xrt-*.json"))
# read before the tests' own fixtures clear it from the environment
XRT_ROOT = next((Path(p) for p in (os.environ.get("XILINX_XRT"), "/opt/xilinx/xrt")
                 if p and list((Path(p) / "lib").glob("libxrt_driver_xdna.so*"))
                 and list((Path(p) / "python").glob("pyxrt*.so"))), None)


def scenarios() -> list:
    out = []
    for path in RECORDS:
        record = json.loads(path.read_text())
        for scenario in record["scenarios"]:
            out.append(pytest.param(record, scenario, id=f"{path.stem}-{scenario['name']}"))
    return out


def xclbin_for(tmp_path: Path, record: dict) -> Path:
    """The xclbin the record was made with: the harness's synthesized FastFlowLM-shaped
    one (the same bytes every time), so that CI needs no shared files."""
    from harness.formats.xclbin_writer import flm_spec, synthesize
    path = tmp_path / "layer.xclbin"
    path.write_bytes(synthesize(flm_spec(record["xclbin"])))
    return path


def played(text: str) -> str:
    """The recorded profile as the simulator now plays it. Records made before it modelled
    kernel.org mainline < 7.0 refusing protocol-7 firmware at probe (f1eac46fe5f7) ran
    those kernels' driver rules with the device's own firmware; what XRT answered does
    not depend on the firmware's protocol, so the same rules are played with firmware the
    kernel takes (protocol 6, 1.0.0.63)."""
    if parse_profile(text).probe_refusal:
        return f"{text},firmware:1.0.0.63"
    return text


@pytest.mark.parametrize("record, scenario", scenarios())
def test_the_simulated_binding_answers_as_real_xrt_did(tmp_path, record, scenario):
    profile = parse_profile(f"{played(scenario['profile'])},xrt:{record['simulated_as']}")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = run_host_script(HOST, [str(xclbin_for(tmp_path, record)),
                                        *map(str, scenario["depths"])], profile)
    assert status == 0
    assert as_the_emulated_device_writes(printed.getvalue()) == scenario["answered"]


def as_the_emulated_device_writes(answered: str) -> object:
    """The simulated binding's answer with each health word the model does not know
    (printed "not modelled") as the emulated device must write it into the payload, and
    so as real XRT prints it (``= 0x%08X``): harness.emulator.packets.NOT_MODELLED_WORD."""
    word = f"= 0x{NOT_MODELLED_WORD:08X}"
    return json.loads(answered.replace(f"= {NOT_MODELLED}", word))


def test_there_is_a_record_of_real_xrt():
    assert RECORDS, "no recording of real XRT in tests/fixtures/xrt-conformance"
    for path in RECORDS:
        record = json.loads(path.read_text())
        assert path.stem == f"xrt-{record['xrt_commit'][:12]}"
        assert record["scenarios"]


needs_xrt = pytest.mark.skipif(
    XRT_ROOT is None or shutil.which("cc") is None,
    reason="no XRT with pyxrt and the XDNA shim (XILINX_XRT, /opt/xilinx/xrt)"
    if XRT_ROOT is None else "no C compiler for the emulator")


def emulate(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`runlist-harness emulate ARGS` with the XRT found on the environment (as its
    setup.sh would set it) and pyxrt not sealed off."""
    env = dict(os.environ, XILINX_XRT=str(XRT_ROOT), PYTHONPATH=str(XRT_ROOT / "python"),
               LD_LIBRARY_PATH=str(XRT_ROOT / "lib"),
               PATH=f"{XRT_ROOT / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("HARNESS_PYXRT", None)
    return subprocess.run([sys.executable, "-m", "harness", "emulate", *args],
                          capture_output=True, text=True, timeout=300, env=env, cwd=cwd)


@needs_xrt
@pytest.mark.parametrize("record, scenario", scenarios())
def test_real_xrt_over_the_emulator_still_answers_as_recorded(tmp_path, record, scenario):
    done = emulate("--profile", played(scenario["profile"]), "--clock-rate",
                   str(scenario["clock_rate"]), "--", sys.executable, str(HOST),
                   str(xclbin_for(tmp_path, record)), *map(str, scenario["depths"]))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == scenario["answered"]


def _pack(folder: Path) -> Path:
    from harness.formats.xclbin_writer import flm_spec, synthesize
    folder.mkdir()
    for role in ("attn", "mm", "layer", "dequant"):
        (folder / f"{role}.xclbin").write_bytes(synthesize(flm_spec(f"Conformance/{role}")))
    return folder


def _outcomes(report: Path) -> dict:
    from harness.report.fileformat import load_report
    loaded = load_report(report)
    word = f"= 0x{NOT_MODELLED_WORD:08X}"        # as_the_emulated_device_writes
    return {plan.name: [[(r.chains, r.state, r.failing_run,
                          (r.message or "").replace(f"= {NOT_MODELLED}", word), r.health)
                         for r in t.runlists] for t in plan.trials] for plan in loaded.plans}


@needs_xrt
def test_reproduce_through_real_xrt_ends_as_on_the_simulated_stack(tmp_path):
    """The harness's hardware path, through real pyxrt and XRT over the emulated driver,
    and the simulated stack: the same plans under the same profile end the same way (the
    states, the chains, the failing run, XRT's message), and only the first says EMULATED."""
    pack = _pack(tmp_path / "pack")
    profile = "staging,hang-at:30"
    done = emulate("--profile", profile, "--clock-rate", "10", "--", "reproduce_ert_timeout",
                   "--backend", "xrt", "--xclbins", str(pack), "--trials", "1", "--out",
                   str(tmp_path / "emulated.yaml"), "--no-control", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith("backend: EMULATED NPU, profile staging,hang-at:30: the real "
                                  "pyxrt")
    assert "[EMULATED, profile staging,hang-at:30]" in done.stdout
    simulated = subprocess.run(
        [sys.executable, "-m", "harness", "reproduce", "--profile", profile, "--xclbins",
         str(pack), "--trials", "1", "--out", str(tmp_path / "simulated.yaml"),
         "--no-control"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert simulated.returncode == 1, simulated.stdout + simulated.stderr
    assert _outcomes(tmp_path / "emulated.yaml") == _outcomes(tmp_path / "simulated.yaml")


@needs_xrt
def test_xrt_s_own_tools_run_on_the_emulated_npu(tmp_path):
    examine = emulate("--", "xrt-smi", "examine")
    assert examine.returncode == 0, examine.stderr
    assert f"[{BDF}]  |RyzenAI-npu5" in examine.stdout      # the simulated NPU's own BDF
    assert "NPU Firmware Version : 1.1.2.65" in examine.stdout
    pack = _pack(tmp_path / "pack")
    out = tmp_path / "out"
    exported = subprocess.run(
        [sys.executable, "-m", "harness", "export", "minicpm5-2b-decode", "--plan", "halves",
         "--plan", "monolithic", "--xclbins", str(pack), str(out)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    # run_PLAN.sh replays the plan in one process (replay.cpp); its report names the frames
    halves = emulate("--", "sh", str(out / "run_halves.sh"))
    assert halves.returncode == 0, halves.stderr
    assert '"frames": 2' in halves.stdout
    # a failed runlist ends the replay by its exception leaving the replay's thread
    hung = emulate("--profile", "staging,hang-at:30", "--clock-rate", "10", "--", "sh",
                   str(out / "run_monolithic.sh"))
    assert hung.returncode != 0
    assert "runlist failed execution (ERT_CMD_STATE_TIMEOUT)" in hung.stderr


@needs_xrt
@pytest.mark.parametrize("isolation", [["--no-isolate"], []])
def test_real_xrt_captures_the_harness(tmp_path, isolation):
    """Issue 37 point 5 with XRT's own capture: `xrt-capture -- reproduce_ert_timeout
    --backend xrt` writes replay.json, in process and in its workers. In one process XRT
    2.26's capture, which keys its records by address, took a new trial's buffers for the
    freed ones of the trial before and died of a segfault (status 139, no replay.json)."""
    from harness.sources.capture import load_capture
    pack = _pack(tmp_path / "pack")
    done = emulate("--", str(XRT_ROOT / "bin" / "xrt-capture"), "--frames", "50",
                   "--output-dir", str(tmp_path / "cap"), "--", "reproduce_ert_timeout",
                   "--backend", "xrt", "--xclbins", str(pack), "--trials", "2",
                   "--no-control", "--no-xrt-smi-validate", "--out",
                   str(tmp_path / "r.yaml"), *isolation, cwd=tmp_path)
    assert "Application exited with code 0" in done.stdout, done.stdout + done.stderr
    depths = [frame.depth for frame in load_capture(tmp_path / "cap").frames]
    # in process every runlist of the run, in order; isolated the last worker's
    assert depths == ([42, 42, 21, 21, 21, 21] if isolation else [21, 21])
    # real XRT wrote it over the emulated device: `emulate` marks the folder so
    origin = load_capture(tmp_path / "cap").origin
    assert (origin.stack, origin.profile) == ("EMULATED", "mainline")
    assert "over the EMULATED device; marked it so" in done.stderr


def _emulated_waiter(tmp_path: Path) -> subprocess.Popen:
    """tests/scripts/waiting_host.py with the real pyxrt under `emulate`, waiting on a
    runlist whose run 30 never completes under mainline (its 60 s timer), once it says so."""
    env = dict(os.environ, XILINX_XRT=str(XRT_ROOT), PYTHONPATH=str(XRT_ROOT / "python"),
               LD_LIBRARY_PATH=str(XRT_ROOT / "lib"))
    env.pop("HARNESS_PYXRT", None)
    xclbin = xclbin_for(tmp_path, {"xclbin": "Conformance/layer"})
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "emulate", "--profile", "mainline,hang-at:30", "--",
         sys.executable, str(HERE / "scripts" / "waiting_host.py"), str(xclbin), "42"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None and proc.stdout.readline() == "waiting\n"
    return proc


def _started(proc: subprocess.Popen, what: str) -> psutil.Process:
    found = [p for p in psutil.Process(proc.pid).children() if what in " ".join(p.cmdline())]
    assert len(found) == 1, found
    return found[0]


@needs_xrt
def test_a_real_xrt_program_waiting_in_the_emulated_driver_gets_ctrl_c(tmp_path):
    """Issue 40 with real XRT: Ctrl-C reaches a program waiting in the wait ioctl (the
    driver's waits are interruptible), well before mainline's 60 s timer: XRT 2.26 then
    fails the wait, `runlist failed execution (ERT_CMD_STATE_NEW)`."""
    import time
    proc = _emulated_waiter(tmp_path)
    host = _started(proc, "waiting_host.py")
    time.sleep(0.5)
    started = time.monotonic()
    host.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - started < 10
    assert "runlist failed execution (ERT_CMD_STATE_NEW)" in out + err


@needs_xrt
def test_a_real_xrt_program_fails_at_once_when_the_model_dies_and_emulate_says_so(tmp_path):
    import time
    proc = _emulated_waiter(tmp_path)
    model = _started(proc, "harness.emulator.server")
    started = time.monotonic()
    model.kill()
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - started < 10
    assert proc.returncode == 4, err
    assert "failed: runlist failed execution" in out
    assert "the emulated NPU's model process ended while" in err


@needs_xrt
def test_capture_record_under_emulate_marks_the_capture_emulated(tmp_path):
    """Real XRT writes the capture over the emulated device: `capture record`, run under
    `emulate`, marks it so, and says so."""
    from harness.sources.capture import load_capture
    xclbin = xclbin_for(tmp_path, {"xclbin": "Conformance/layer"})
    done = emulate("--profile", "staging", "--clock-rate", "10", "--", sys.executable, "-m",
                   "harness", "capture", "record", "--frames", "5", "--out",
                   str(tmp_path / "cap"), "--", sys.executable,
                   str(HERE / "scripts" / "iron_host.py"), str(xclbin), "42")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "written by: real XRT over the EMULATED device (profile staging" in done.stdout
    origin = load_capture(tmp_path / "cap").origin
    assert (origin.stack, origin.profile) == ("EMULATED", "staging")


@needs_xrt
def test_slow_plays_under_emulate_where_the_xclbins_name_the_pdis(tmp_path):
    """slow:layer:90000 through real XRT: the emulated driver names each command's kernel
    by its context's PDI (compared with the xclbin given), so 24 commands of 90 ms pass
    staging's 2 s timer (TIMEOUT at 42 runs) and 21 do not (the cut completes)."""
    folder = tmp_path / "pack"
    folder.mkdir()
    xclbin = folder / "layer.xclbin"
    xclbin.write_bytes(xclbin_for(tmp_path, {"xclbin": "Host/layer"}).read_bytes())
    ends = {}
    for depth in ("42", "21"):
        done = emulate("--profile", "staging,slow:layer:90000", "--clock-rate", "10",
                       "--xclbins", str(folder), "--", sys.executable,
                       str(HERE / "scripts" / "iron_host.py"), str(xclbin), depth)
        assert "is not played" not in done.stderr
        ends[depth] = done.stdout.strip().splitlines()[-1]
    assert ends == {"42": "runlist of 42 failed: runlist failed execution "
                          "(ERT_CMD_STATE_TIMEOUT)",
                    "21": "runlist of 21 completed; read back 16 bytes"}
