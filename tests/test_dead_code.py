"""No dead code: every function, class and module-level name the package defines is used
by the package, or is one of the few kinds something else calls (a command, the pyxrt
surface of the simulated binding, a hook of the library it overrides) or a name the
tests and benchmarks use, each said here with the reason."""

from __future__ import annotations

import ast
import collections
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "harness"

# what a public pyxrt program calls, or the kernel's uapi header mirrors: not the package's
# own calls decide what these hold
CALLED_FROM_OUTSIDE = {"harness/sim/binding.py", "harness/sim/pybind.py",
                       "harness/emulator/uapi.py"}
# methods the library they override calls
HOOKS = {"_missing_": "enum.Enum's lookup of a value it does not hold",
         "ignore_aliases": "yaml's Dumper, asked before each node",
         "format_commands": "click's Group, writing the commands of --help",
         "handle_error": "socketserver's server, on an exception in a handler",
         "log_message": "http.server's handler, logging each request",
         "do_GET": "http.server's handler, for a GET",
         "do_POST": "http.server's handler, for a POST"}
# names the package keeps for the tests and benchmarks, and where they are used
KEPT_FOR = {"run_chunk": "benchmarks/harness_overhead.py",
            "of_document": "tests/test_first_screen.py",
            "STAGING_TDR_US": "tests/test_sim_scenarios.py",
            "MAINLINE_TIMEOUT_US": "tests/test_sim_scenarios.py",
            "CompiledEditableWheel": "pyproject.toml"}          # setuptools runs it


def definitions(tree: ast.Module) -> list[tuple[str, int, bool]]:
    """(name, line, decorated) of each function, class and module-level assignment."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append((node.name, node.lineno, bool(node.decorator_list)))
    for node in tree.body:
        if isinstance(node, ast.Assign):
            found += [(t.id, node.lineno, False) for t in node.targets
                      if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.append((node.target.id, node.lineno, False))
    return found


def unused() -> list[str]:
    texts = {path: path.read_text() for path in PACKAGE.rglob("*.py")}
    words = collections.Counter(w for text in texts.values() for w in re.findall(r"\w+", text))
    out = []
    for path, text in sorted(texts.items()):
        where = path.relative_to(ROOT).as_posix()
        if where in CALLED_FROM_OUTSIDE:
            continue
        for name, line, decorated in definitions(ast.parse(text)):
            if words[name] > 1 or decorated or name in HOOKS or name in KEPT_FOR or \
                    (name.startswith("__") and name.endswith("__")):
                continue
            out.append(f"{where}:{line} {name}")
    return out


def test_every_name_the_package_defines_is_used():
    """Fails with a dead function kept back in (e.g. `state_from_int` in model/ert.py, or
    `known_count` in formats/known.py, which only a test called)."""
    assert unused() == []


def test_each_name_kept_for_the_tests_is_used_where_it_says():
    for name, where in KEPT_FOR.items():
        assert re.search(rf"\b{name}\b", (ROOT / where).read_text()), (name, where)
