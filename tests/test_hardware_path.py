"""The hardware code path, end to end, without hardware.

`HARNESS_PYXRT=harness.sim.pyxrt` makes the simulated module stand in as the real pyxrt and
`HARNESS_ROOT` points /dev, /sys and /proc at a fabricated Strix Halo, so `--backend xrt`
takes exactly the path it takes on an NPU: choose_backend's hardware return, the probe
opening the device, the deadline derived from the probed driver timeout, isolated workers,
hardware teardown. The results stay labelled SIMULATED: the module is the simulator.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from machines import stand_in_pack, strix_halo

from harness.report.fileformat import load_report


@pytest.fixture
def machine(tmp_path: Path) -> dict[str, str]:
    tree = strix_halo(tmp_path, identity=False)
    pack = stand_in_pack(tmp_path / "pack", "Path")
    env = dict(os.environ, HARNESS_PYXRT="harness.sim.pyxrt", HARNESS_ROOT=str(tree.root),
               HARNESS_SIM_PROFILE="inflight-cap:40")
    return {"pack": str(pack), **{f"env:{k}": v for k, v in env.items()}}


def harness(machine: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    env = {k[4:]: v for k, v in machine.items() if k.startswith("env:")}
    return subprocess.run([sys.executable, "-m", "harness", *args], env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("command", [["run", "minicpm5-2b-decode", "--plan", "42"],
                                     ["reproduce"]])
def test_backend_xrt_runs_the_hardware_path_isolated(machine, tmp_path, command):
    out = tmp_path / "report.yaml"
    done = harness(machine, *command, "--backend", "xrt", "--xclbins", machine["pack"],
                   "--trials", "1", "--out", str(out))
    assert done.returncode == 1, done.stderr                       # inflight-cap:40: TIMEOUT
    first = done.stdout.splitlines()[0]
    assert first.startswith("backend: hardware path, but pyxrt is the SIMULATED stand-in")
    report = load_report(out)
    assert report.backend["kind"] == "xrt" and report.backend["stand_in"] is True
    assert report.simulated                                 # never presented as hardware
    env = report.environment
    assert env["npu"]["generation"] == "NPU5 Strix Halo"
    assert env["driver"]["flavour"] == "staging"
    assert env["xrt"]["device_opened"] is True              # the probe opened the device
    trial = report.plans[0].trials[0]
    assert trial.state == "TIMEOUT" and trial.runlists[0].failing_run == 0
    # the probed 0.5 s driver timeout, not the 2 s default: 15 + 0.5 x 1.5 + 2 + commands
    assert trial.deadline_s == pytest.approx(17.8, abs=0.05)
    assert trial.worker["pid"] != os.getpid() and "xrt_libraries" in trial.worker
    assert report.artifacts["pack"]["stand_ins"] is False   # the hardware path takes real files


def test_no_isolate_on_the_hardware_path_warns(machine, tmp_path):
    done = harness(machine, "run", "minicpm5-2b-decode", "--plan", "21+21", "--backend", "xrt",
                   "--xclbins", machine["pack"], "--trials", "1", "--no-isolate", "--out",
                   str(tmp_path / "r.yaml"))
    assert done.returncode == 0, done.stderr
    assert "warning: --no-isolate on the hardware path" in done.stderr
    trial = load_report(tmp_path / "r.yaml").plans[0].trials[0]
    assert trial.deadline_s is None and trial.worker["in_process"] is True


def test_without_the_stand_in_the_hardware_path_needs_pyxrt(machine):
    machine = dict(machine, **{"env:HARNESS_PYXRT": "none"})
    done = harness(machine, "run", "nop-depth", "--backend", "xrt")
    assert done.returncode == 3 and "pyxrt does not import" in done.stderr


def test_resume_on_another_machine_is_refused_unless_allowed(machine, tmp_path):
    out = tmp_path / "r.yaml"
    first = harness(machine, "run", "minicpm5-2b-decode", "--plan", "21+21", "--backend", "xrt",
                    "--xclbins", machine["pack"], "--trials", "1", "--out", str(out))
    assert first.returncode == 0, first.stderr
    # as if stopped after one of two trials
    data = out.read_text().replace("trials: 1\n", "trials: 2\n", 1)
    out.write_text(re.sub(r"\nfinished: .*\n", "\nfinished: null\n", data, count=1))
    root = Path(machine["env:HARNESS_ROOT"])
    (root / "sys/class/accel/accel0/device/fw_version").write_text("1.1.2.70")   # new firmware
    refused = harness(machine, "run", "--resume", str(out))
    assert refused.returncode == 2
    assert "this machine is not the one that wrote" in refused.stderr
    assert "firmware 1.1.2.65 -> 1.1.2.70" in refused.stderr
    allowed = harness(machine, "run", "--resume", str(out), "--allow-different-machine")
    assert allowed.returncode == 0, allowed.stderr
    report = load_report(out)
    assert len(report.plans[0].trials) == 2
    assert report.sections["resumed_elsewhere"][0]["differences"] == \
        ["firmware 1.1.2.65 -> 1.1.2.70"]
    assert harness(machine, "report", "check", str(out)).returncode == 0


MARKING_PYXRT = '''
import os, sys
with open(os.environ["PYXRT_IMPORTS"], "a") as marks:
    marks.write(f"{os.getpid()}\\n")
import harness.sim.pyxrt
sys.modules[__name__] = harness.sim.pyxrt      # still the stand-in, labelled simulated
'''


def test_the_fork_server_never_loads_pyxrt(machine, tmp_path):
    """A forked worker must start as clean as a spawned one: only the harness (its probe)
    and each trial's own worker import pyxrt, never the server the workers fork from."""
    (tmp_path / "marking_pyxrt.py").write_text(MARKING_PYXRT)
    marks = tmp_path / "imports.txt"
    machine = dict(machine, **{"env:HARNESS_PYXRT": "marking_pyxrt",
                               "env:PYTHONPATH": str(tmp_path),
                               "env:PYXRT_IMPORTS": str(marks),
                               "env:HARNESS_WORKER_START": "fork-server"})
    out = tmp_path / "report.yaml"
    done = harness(machine, "run", "minicpm5-2b-decode", "--plan", "21+21", "--backend", "xrt",
                   "--xclbins", machine["pack"], "--trials", "3", "--out", str(out))
    assert done.returncode == 0, done.stderr
    report = load_report(out)
    assert report.simulated and report.settings["worker_start"] == "fork-server"
    workers = {t.worker["pid"] for t in report.plans[0].trials}
    assert {t.worker["start"] for t in report.plans[0].trials} == {"fork-server"}
    importers = {int(line) for line in marks.read_text().split()}
    assert len(workers) == 3 and workers <= importers
    assert len(importers - workers) == 1                    # the harness itself, no server
