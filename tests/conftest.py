"""Shared fixtures: real FastFlowLM xclbins (when present) and synthesized ones."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.formats.xclbin_writer import flm_spec, synthesize

# help and listings wrap at the terminal's width; a test reads them at one width whether
# pytest runs it in its own process or in a worker (pytest-xdist), whose output is no tty
os.environ["COLUMNS"] = "100"

PROJECT = Path(__file__).resolve().parent.parent
SHARED_XCLBINS = Path(os.environ.get("HARNESS_SHARED_XCLBINS",
                                     PROJECT.parent / "shared" / "xclbins"))
SHARED_REFERENCE = Path(os.environ.get("HARNESS_SHARED_REFERENCE",
                                       PROJECT.parent / "shared" / "reference"))


@pytest.fixture(scope="session")
def shared_xclbins() -> Path:
    """The real FastFlowLM xclbins beside the project; tests skip cleanly without them."""
    if not (SHARED_XCLBINS / "Qwen3-1.7B-NPU2" / "layer.xclbin").is_file():
        pytest.skip(f"real FastFlowLM xclbins not present at {SHARED_XCLBINS}")
    return SHARED_XCLBINS


@pytest.fixture(scope="session")
def validate_artefacts() -> Path:
    """XRT's validate suite for Strix (reference/xrt-validate-strx): xclbins, ELFs, recipes;
    tests skip cleanly without it."""
    folder = SHARED_REFERENCE / "xrt-validate-strx"
    if not (folder / "nop.elf").is_file():
        pytest.skip(f"XRT's validate artefacts not present at {folder}")
    return folder


@pytest.fixture(scope="session", autouse=True)
def _bytecode_for_child_processes(tmp_path_factory: pytest.TempPathFactory):
    """The Python processes the tests start (the harness as a user runs it, its workers,
    the benchmarks) keep compiled bytecode in this session's temp folder, so each does not
    compile the harness again from source: with PYTHONDONTWRITEBYTECODE set, as some
    machines set it, that was a third of every such process's start-up. Nothing is
    written beside the sources."""
    # one folder for every parallel worker (pytest-xdist gives each a temp folder of its
    # own, under one base): Python writes each cache file whole, under a name of its own
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    cache = shared / "pycache"
    cache.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPYCACHEPREFIX", str(cache))
        patch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
        yield


@pytest.fixture(scope="session")
def preload(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The emulator's library, compiled once with -Werror where the command line looks for
    it under its own XDG_CACHE_HOME (tests/emulation_kit.py); skipped without a compiler."""
    import shutil

    from emulation_kit import compile_preload
    if shutil.which("cc") is None:
        pytest.skip("no C compiler: the emulator's library cannot be built")
    return compile_preload(tmp_path_factory.mktemp("xdg") / "xdna-runlist-harness" /
                           "emulator")


@pytest.fixture
def synth_xclbin(tmp_path: Path):
    """Write a synthesized FastFlowLM-shaped xclbin and return its path."""
    def make(name: str = "Synthetic-NPU2/layer", filename: str = "layer.xclbin") -> Path:
        path = tmp_path / filename
        path.write_bytes(synthesize(flm_spec(name)))
        return path
    return make


@pytest.fixture
def ctrl_c_once(monkeypatch: pytest.MonkeyPatch):
    """Arms one Ctrl-C, pressed as the first trial that `stop(spec, n)` picks starts (`n`
    counts the trials started, from 1), in-process runs only. Returns the list of every
    trial spec started from then on, the resumed run's too."""
    import harness.execution.runner as runner

    def arm(stop: Callable[[Any, int], bool]) -> list:
        real, started, pressed = runner.run_trial, [], []

        def run_trial(spec, backend):
            started.append(spec)
            if not pressed and stop(spec, len(started)):
                pressed.append(spec)
                raise KeyboardInterrupt
            return real(spec, backend)
        monkeypatch.setattr(runner, "run_trial", run_trial)
        return started
    return arm


@pytest.fixture(autouse=True)
def _isolated_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                  request: pytest.FixtureRequest) -> None:
    """Run every test from its own folder, with its own cache, and without the caller's
    XRT/FastFlowLM settings, so nothing lands in the checkout or leaks in from the machine.
    Unless a test is marked `npu`, pyxrt counts as not importable (in the test and in every
    process it starts), so a machine's real NPU is never driven by the simulated tests."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HARNESS_CASES", str(PROJECT / "cases"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / ".cache"))
    for name in ("FLM_XCLBIN_PATH", "XILINX_XRT", "HARNESS_SIM_PROFILE", "HARNESS_ROOT",
                 "Runtime.capture_frames", "Runtime.capture_output_dir", "XRT_INI_PATH"):
        monkeypatch.delenv(name, raising=False)
    if "npu" not in request.keywords:
        monkeypatch.setenv("HARNESS_PYXRT", "none")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `npu` need real hardware: the real pyxrt that imports and an NPU node."""
    if not any("npu" in item.keywords for item in items):
        return
    import importlib

    from harness.probe.xrt_loader import npu_nodes
    try:
        importlib.import_module("pyxrt")
        why = ""
    except Exception as err:
        why = f"{type(err).__name__}: {err}"
    if not why and npu_nodes():
        return
    reason = f"needs an XDNA NPU and pyxrt ({why or 'no /dev/accel/accel* node'})"
    for item in items:
        if "npu" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=reason))
