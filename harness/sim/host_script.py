"""Run a host script written for the real pyxrt against the simulated stack, unchanged.

`sim exec SCRIPT ARGS` behaves as `python SCRIPT ARGS` would with the real pyxrt: the
script's folder comes first on `sys.path` (so it imports its neighbours), `sys.argv` is
the script and its arguments, `sys.exit(N)` exits N, and an exception the script does
not catch prints Python's traceback of the script's own frames and exits 1 (it is the
script's failure, not the harness's).

A program the harness starts (`capture record -- python SCRIPT`) gets the simulator the
same way through its environment (`simulated_pyxrt_environment`): a folder first on
`PYTHONPATH` whose `pyxrt` module is `harness.sim.pyxrt`, and the profile to play.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from pathlib import Path

from harness.model.errors import BadInput
from harness.sim import control, pyxrt
from harness.sim.profiles import Profile

SCRIPT_FAILED = 1          # what `python SCRIPT` exits with after an uncaught exception


def run_host_script(script: str | Path, argv: list[str], profile: Profile) -> int:
    """Execute `script` as ``__main__`` with ``import pyxrt`` bound to the simulator;
    the exit status `python` would give."""
    path = Path(script)
    if not path.is_file():
        raise BadInput(f"host script {script} does not exist")
    control.for_program(profile)
    saved_argv, saved_path = sys.argv, list(sys.path)
    saved_module = sys.modules.get("pyxrt")
    sys.modules["pyxrt"] = pyxrt
    sys.argv = [str(path), *argv]
    sys.path.insert(0, str(path.resolve().parent))
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit as done:
        return _exit_status(done.code)
    except (KeyboardInterrupt, MemoryError):
        raise
    except Exception as err:  # noqa: BLE001 - the script's own failure, told as Python would
        sys.stdout.flush()
        traceback.print_exception(type(err), err, _from_script(err.__traceback__, path))
        return SCRIPT_FAILED
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        if saved_module is None:
            sys.modules.pop("pyxrt", None)
        else:
            sys.modules["pyxrt"] = saved_module
    return 0


def _from_script(tb, path: Path):
    """The traceback as Python would show it with the real pyxrt: from the script's first
    frame (runpy's frames are not its) to the last frame before the binding (the real
    one is C++, whose frames a traceback never shows)."""
    target = str(path.resolve())
    while tb is not None and str(Path(tb.tb_frame.f_code.co_filename).resolve()) != target:
        tb = tb.tb_next
    last = tb
    frame = tb
    while frame is not None:
        if frame.tb_frame.f_globals.get("__name__", "").startswith("harness.sim"):
            last.tb_next = None
            break
        last, frame = frame, frame.tb_next
    return tb


def _exit_status(code: object) -> int:
    """sys.exit's rule: None is 0, an int is itself, anything else is printed and 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


STAND_IN = ('"""`import pyxrt` bound to the simulated stack (written by xdna-runlist-harness for '
            'a program it runs; not XRT\'s pyxrt)."""\n'
            "import sys\n\nimport harness.sim.pyxrt\n\n"
            "sys.modules[__name__] = harness.sim.pyxrt\n")


def simulated_pyxrt_environment(environ: dict[str, str], profile: Profile,
                                folder: Path) -> dict[str, str]:
    """`environ` for a Python program that is to find the simulated pyxrt, playing
    `profile`, under `import pyxrt`: `folder` (made here, holding the module that stands
    in) and the harness's own place first on PYTHONPATH."""
    from harness.sim.control import PROFILE_ENV
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pyxrt.py").write_text(STAND_IN)
    harness_root = str(Path(__file__).resolve().parents[2])
    paths = [str(folder), harness_root, *filter(None, environ.get("PYTHONPATH", "")
                                                .split(os.pathsep))]
    return {**environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)),
            PROFILE_ENV: profile.name}
