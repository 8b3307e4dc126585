"""What starting the harness costs: the commands load only what they use.

`--help` and `report render` must not load numpy or the simulator; a worker must not
load click, yaml or the command line. Checked by the modules a real process ends up
with, never by a wall time."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner
from click.utils import make_default_short_help

from harness.app.cli import COMMANDS, main

HEAVY = ("numpy", "harness.sim", "harness.execution.backend", "harness.execution.runner")
# The console script leaves through its exit hooks (entry._exit): the list is printed by one.
LOADED = """
import atexit, json, sys
atexit.register(lambda: print("\\nLOADED " + json.dumps(sorted(sys.modules)), flush=True))
from harness.app.entry import main
sys.argv = ["runlist-harness", *json.loads(sys.argv[1])]
main()
"""


def modules_after(*args: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", LOADED, json.dumps(list(args))],
                          capture_output=True, text=True, timeout=60)
    return set(json.loads(done.stdout.rsplit("LOADED ", 1)[1]))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_summary_is_its_commands_own_help(name):
    command = main.get_command(None, name)
    for width in (40, 60, 200):
        assert make_default_short_help(COMMANDS[name].summary, width) == \
            command.get_short_help_str(width)


def test_help_lists_every_command_without_loading_them():
    listed = CliRunner().invoke(main, ["--help"]).output
    assert all(f"  {name} " in listed for name in COMMANDS)
    assert heavy(modules_after("--help")) == []


@pytest.mark.parametrize("command", ["run", "reproduce", "sweep", "bisect"])
def test_a_run_command_s_help_loads_nothing_that_runs_trials(command):
    """Its options are made from the settings' declarations (harness.execution.settings):
    neither the runner, the backends, the report's writer nor the cases' YAML reader loads
    to print them."""
    loaded = modules_after(command, "--help")
    assert heavy(loaded) == []
    assert not {"harness.report.journal", "harness.sources.case", "yaml"} & loaded


def test_report_render_loads_neither_numpy_nor_the_simulator():
    from pathlib import Path
    fixture = Path(__file__).parent / "fixtures" / "reports" / "v1-run.yaml"
    assert heavy(modules_after("report", "render", str(fixture))) == []


def test_a_run_does_load_the_simulator():
    """The check above can fail: a command that needs the simulator loads it."""
    assert "harness.sim.pyxrt" in modules_after("sim", "profiles")


def test_a_worker_loads_no_command_line():
    code = ("import sys, harness.execution.worker, harness.execution.backend\n"
            "import harness.execution.session\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('click', 'yaml', 'numpy') or m.startswith('harness.app.cli')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == "[]", done.stdout


def test_an_in_process_run_loads_neither_psutil_nor_the_web_stack(tmp_path):
    """psutil (only for isolated trials) and xml.sax's urllib.request/http/email chain
    cost a third of an in-process run's start-up, for nothing it uses."""
    loaded = modules_after("reproduce", "--no-isolate", "--trials", "1",
                           "--out", str(tmp_path / "r.yaml"))
    assert "harness.execution.runner" in loaded                  # it did run
    unwanted = {"psutil", "harness.execution.isolation", "urllib.request", "http.client",
                "email", "ssl", "xml.sax"}
    assert not unwanted & loaded, sorted(unwanted & loaded)


def test_an_in_process_simulated_run_loads_nothing_only_hardware_runs(tmp_path):
    """Running programs (journalctl, flm, xrt-smi) and reading the firmware's health are
    the hardware path's: the simulated stack starts without them."""
    loaded = modules_after("reproduce", "--no-isolate", "--trials", "1", "--no-control",
                           "--out", str(tmp_path / "r.yaml"))
    assert "harness.sim.pyxrt" in loaded                         # it did run, simulated
    hardware_only = {"harness.formats.capped_run", "harness.probe.xrt_smi",
                     "harness.probe.firmware_health", "subprocess", "selectors"}
    assert not hardware_only & loaded, sorted(hardware_only & loaded)


HARDWARE_PATH = """
import json, sys, types
import harness.probe.xrt_loader as loader
fake = types.ModuleType("pyxrt")
fake.__file__ = "/opt/xilinx/xrt/python/pyxrt.so"
loader.load_pyxrt = lambda: (fake, None)
loader.npu_nodes = lambda: ["/dev/accel/accel0"]
import harness.execution.backend as backends
import harness.execution.runner, harness.execution.session, harness.app.cli.run_cmd
import harness.app.cli.search_cmd, harness.execution.worker, harness.probe.fingerprint
import harness.report.bundle
backends.load_pyxrt, backends.npu_nodes = loader.load_pyxrt, loader.npu_nodes
backend = backends.choose_backend("auto")
backend.prepare_trial(1)
print(json.dumps([backend.kind, backend.simulated_kernel_log(False),
                  sorted(m for m in sys.modules if m.startswith("harness.sim"))]))
"""


def test_the_hardware_path_never_loads_the_simulator():
    done = subprocess.run([sys.executable, "-c", HARDWARE_PATH], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    kind, log, simulator = json.loads(done.stdout)
    assert kind == "xrt" and log is None and simulator == []


def test_loading_a_command_pauses_the_collector_and_turns_it_back_on():
    """The modules a command loads are frozen out of later collections, and the collector
    runs again afterwards (on as it was found; off stays off)."""
    code = ("import gc, sys\n"
            "from harness.app import entry\n"
            "if sys.argv[1] == 'off':\n"
            "    gc.disable()\n"
            "entry.load_command('reproduce')\n"
            "print(gc.isenabled(), gc.get_freeze_count() > 0)")
    for state, expected in (("on", "True True"), ("off", "False True")):
        done = subprocess.run([sys.executable, "-c", code, state], capture_output=True,
                              text=True, timeout=60)
        assert done.stdout.strip() == expected, done.stderr
