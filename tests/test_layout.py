"""The package's shape: modules grouped in packages that import only the ones below them
(no import cycle, module or package), and the simulator absent from a process that ran
the hardware path."""

from __future__ import annotations

import ast
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

from machines import stand_in_pack, strix_halo
from test_start_up import LOADED

PACKAGE = Path(__file__).resolve().parents[1] / "harness"
# top to bottom: a package may import the ones after it, never one before it
LAYERS = ["app", "search", "serve", "emulator", "execution", "report", "sources", "sim", "probe",
          "logs", "formats", "model"]


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


@functools.cache
def imports() -> dict[str, set[str]]:
    """Each module's harness modules imported, anywhere in it (inside functions too); read
    once for the tests that only read it."""
    known = modules()
    out: dict[str, set[str]] = {}
    for name, path in known.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("harness"):
                for alias in node.names:
                    target = f"{node.module}.{alias.name}"
                    found.add(target if target in known else node.module)
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name in known}
        out[name] = found - {name}
    return out


def layer(module: str) -> str:
    parts = module.split(".")
    if module == "harness.__main__":
        return "app"
    return parts[1] if len(parts) > 2 or parts[1:] and parts[1] in LAYERS else "(root)"


def test_no_module_imports_a_package_above_its_own():
    upward = []
    for module, targets in imports().items():
        mine = layer(module)
        for target in targets:
            theirs = layer(target)
            if "(root)" in (mine, theirs) or mine == theirs:
                continue
            if LAYERS.index(theirs) < LAYERS.index(mine):
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_every_package_has_a_place_in_the_drawing():
    assert {layer(m) for m in modules()} == {*LAYERS, "(root)"}
    # the root holds only the version and the command line as typed
    assert sorted(m for m in modules() if layer(m) == "(root)") == ["harness"]


def test_no_module_import_cycle():
    graph = imports()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for target in sorted(graph.get(node, ())):
            if target == "harness":
                continue
            if state.get(target) == 1:
                cycles.append(path[path.index(target):] + [target] if target in path
                              else [node, target])
            elif target not in state:
                visit(target, path + [target])
        state[node] = 2
    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_a_hardware_path_run_never_loads_the_simulator(tmp_path):
    """A trial run on the hardware path (`--backend xrt`, an NPU node, a pyxrt that is
    not the simulator) ends with no module of the simulator in the process."""
    tree = strix_halo(tmp_path, identity=False)
    pack = stand_in_pack(tmp_path / "pack", "Layout")
    out = tmp_path / "r.yaml"
    args = ["run", "minicpm5-2b-decode", "--plan", "42", "--trials", "2", "--backend", "xrt",
            "--xclbins", str(pack), "--no-isolate", "--out", str(out)]
    env = dict(os.environ, HARNESS_PYXRT="bare_pyxrt", HARNESS_ROOT=str(tree.root),
               PYTHONPATH=os.pathsep.join([str(Path(__file__).parent),
                                           os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", LOADED, json.dumps(args)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert "backend: hardware path" in done.stdout, done.stdout + done.stderr
    assert "COMPLETED 2/2" in done.stdout, done.stdout + done.stderr
    loaded = json.loads(done.stdout.rsplit("LOADED ", 1)[1])
    assert "harness.execution.session" in loaded                    # it did run trials
    assert [m for m in loaded if m == "harness.sim" or m.startswith("harness.sim.")] == []
