"""Run a host script written for the real pyxrt against the simulated stack, unchanged."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

from harness.errors import BadInput
from harness.sim import control, pyxrt
from harness.sim.profiles import Profile


def run_host_script(script: str | Path, argv: list[str], profile: Profile) -> None:
    """Execute `script` as ``__main__`` with ``import pyxrt`` bound to the simulator."""
    path = Path(script)
    if not path.is_file():
        raise BadInput(f"host script {script} does not exist")
    control.configure(profile)
    saved_argv, saved_module = sys.argv, sys.modules.get("pyxrt")
    sys.modules["pyxrt"] = pyxrt
    sys.argv = [str(path), *argv]
    try:
        runpy.run_path(str(path), run_name="__main__")
    finally:
        sys.argv = saved_argv
        if saved_module is None:
            sys.modules.pop("pyxrt", None)
        else:
            sys.modules["pyxrt"] = saved_module
