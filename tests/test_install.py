"""What an install leaves: an editable install (setuptools' editable wheel, and the hook
pyproject.toml gives it) compiles the package's bytecode in place, as a regular one does,
so an environment that writes none (PYTHONDONTWRITEBYTECODE) still starts from it."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]


def test_pyproject_gives_the_editable_install_the_compiling_hook():
    pytest.importorskip("setuptools.command.editable_wheel")
    from setuptools.command.editable_wheel import editable_wheel

    from harness.app import install
    named = re.search(r'^\[tool\.setuptools\.cmdclass\]\neditable_wheel = "([\w.]+)"',
                      (PROJECT / "pyproject.toml").read_text(), re.M)
    assert named is not None
    module, _, name = named[1].rpartition(".")
    assert module == install.__name__ and issubclass(getattr(install, name), editable_wheel)


def test_the_package_compiled_in_place_is_what_a_process_that_writes_none_loads(tmp_path):
    pytest.importorskip("setuptools.command.editable_wheel")
    from harness.app.install import compile_package

    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "mod.py").write_text("VALUE = 42\n")
    assert compile_package(package)
    cached = Path(importlib.util.cache_from_source(str(package / "mod.py")))
    assert cached.is_file()
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(tmp_path)}
    env.pop("PYTHONPYCACHEPREFIX", None)
    # the source edited behind Python's back (same size and time): only the compiled
    # module answers 42
    source = package / "mod.py"
    stamp = source.stat().st_mtime_ns
    source.write_text("VALUE = 43\n")
    os.utime(source, ns=(stamp, stamp))
    done = subprocess.run([sys.executable, "-c", "import pkg.mod, sys; "
                           "print(pkg.mod.VALUE, pkg.mod.__cached__, sys.dont_write_bytecode)"],
                          capture_output=True, text=True, env=env, check=True)
    assert done.stdout.split()[0] == "42" and done.stdout.split()[2] == "True"


def test_a_folder_that_cannot_be_written_fails_nothing(tmp_path):
    pytest.importorskip("setuptools.command.editable_wheel")
    from harness.app.install import compile_package
    assert compile_package(tmp_path / "absent") is False
