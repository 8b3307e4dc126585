"""What `pip install -e .` runs beyond setuptools' own editable install (pyproject.toml
names it under `[tool.setuptools.cmdclass]`): the package's bytecode compiled in place.

A regular install (`pip install .`) leaves every module compiled; an editable one leaves
the sources only, and where Python may not write bytecode (PYTHONDONTWRITEBYTECODE, a
read-only checkout) every start then compiles each module it loads again, about twice
what the command takes with the bytecode there (benchmarks/start_up.py). Python reads
bytecode that is there even where it may not write any, and compiles again a module
edited since. Imported by setuptools at install time only, never by the harness.
"""

from __future__ import annotations

import compileall
from pathlib import Path

from setuptools.command.editable_wheel import editable_wheel

PACKAGE = Path(__file__).resolve().parents[1]


class CompiledEditableWheel(editable_wheel):  # type: ignore[misc]  # an untyped base
    """setuptools' editable wheel, then the package compiled where it lies, if the folder
    lets us write (an install never fails for it)."""

    def run(self) -> None:
        super().run()
        compile_package(PACKAGE)


def compile_package(folder: Path) -> bool:
    """Every module under `folder` compiled beside its source (`__pycache__`), as Python
    itself would write it; False where some could not be (a folder we may not write: the
    sources still run, compiled at each start)."""
    if not folder.is_dir():
        return False
    try:
        return bool(compileall.compile_dir(str(folder), quiet=2))
    except OSError:
        return False
