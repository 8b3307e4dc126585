"""What README.md, docs/, `sim profiles` and the --profile help say about the driver
flavours' timers and the kernel releases modelled is read from the flavour rows
(`harness.model.drivers.FLAVOURS`, `KERNELS`, `DEFAULT_KERNEL`): each statement below is
found in the prose and checked against the row it restates, so a row that changes without
its prose (or prose that drifts from its row) fails here. Sources of the facts: the rows'
own `source` fields (drm_sched's 60 s timer in the in-tree aie2_ctx.c; staging's
tdr_timeout_ms default 2000; the out-of-tree timeout_in_sec default 2, fired after two
silent periods)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from harness.model import drivers
from harness.model.drivers import FLAVOURS

ROOT = Path(__file__).parent.parent


def _period(name: str) -> float:
    row = FLAVOURS[name]
    return row.default * row.unit_s


def _hang_window(name: str) -> tuple[float, float]:
    # a check that fires after silent periods, a hang alone on the device: from
    # (checks - 1) whole periods to `checks` (idle connected contexts add checks to it)
    row = FLAVOURS[name]
    return (row.silent_checks - 1) * _period(name), row.silent_checks * _period(name)


def _number(text: str) -> float:
    return float(text)


# a statement's pattern, and the value the rows give for its groups
STATEMENTS: tuple[tuple[str, Callable[[], tuple[object, ...]]], ...] = (
    (r"(?:drm_sched's|mainline's|in-tree driver's) (\d+) s",
     lambda: (FLAVOURS["mainline"].seconds(),)),
    (r"(\d+) s drm_sched timer", lambda: (FLAVOURS["mainline"].seconds(),)),
    (r"staging driver's (\d+) s", lambda: (_period("staging"),)),
    (r"`tdr_timeout_ms`, (\d+) s", lambda: (_period("staging"),)),
    (r"tdr_timeout_ms \(default (\d+) ms\)", lambda: (FLAVOURS["staging"].default,)),
    (r"context's (\d+) s timer", lambda: (_period("staging"),)),
    (r"device check every (\d+) s that fires after two silent", lambda: (_period("staging"),)),
    (r"device check every (\d+) s that fires when no job", lambda: (_period("oot"),)),
    (r"(?:out-of-tree check's|times out) (\d+)-(\d+) s", lambda: _hang_window("oot")),
    (r"series of ([\d.]+) to ([\d.]+)", lambda: (drivers.KERNELS[0], drivers.KERNELS[-1])),
    (r"first release; default ([\d.]+), the #712", lambda: (drivers.DEFAULT_KERNEL,)),
    (r"on Linux ([\d.]+); npu5", lambda: (drivers.DEFAULT_KERNEL,)),
    (r"documented: Linux ([\d.]+) with its in-tree", lambda: (drivers.DEFAULT_KERNEL,)),
)


def _texts() -> dict[str, str]:
    from click.testing import CliRunner

    from harness.app.cli import main
    texts = {str(path.relative_to(ROOT)): path.read_text()
             for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]}
    texts["sim profiles"] = CliRunner().invoke(main, ["sim", "profiles"]).output
    texts["run --help"] = CliRunner().invoke(main, ["run", "--help"]).output
    # prose wraps: a statement may cross a line
    return {name: re.sub(r"\s+", " ", text) for name, text in texts.items()}


def drift(texts: dict[str, str]) -> tuple[list[str], set[str]]:
    """The statements that disagree with the rows, and the patterns found anywhere."""
    wrong, found = [], set()
    for pattern, expected in STATEMENTS:
        for name, text in texts.items():
            for match in re.finditer(pattern, text):
                found.add(pattern)
                said = match.groups()
                want = expected()
                same = all((_number(s) == float(w)) if isinstance(w, float) else s == w
                           for s, w in zip(said, want, strict=True))
                if not same:
                    wrong.append(f"{name}: {match.group(0)!r} (the rows: {want})")
    return wrong, found


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    return _texts()


def test_the_docs_state_the_rows_timers_and_kernels(texts):
    wrong, found = drift(texts)
    assert wrong == []
    # every statement is still there to check (prose that rewords one is added here)
    assert found == {pattern for pattern, _ in STATEMENTS}


@pytest.mark.parametrize("row, change", [
    ("mainline", {"default": 30.0}),
    ("staging", {"default": 5000.0}),
    ("oot", {"silent_checks": 4}),
])
def test_a_row_changed_without_its_prose_is_caught(texts, monkeypatch, row, change):
    monkeypatch.setitem(FLAVOURS, row, replace(FLAVOURS[row], **change))
    assert drift(texts)[0]


def test_a_kernel_series_changed_without_its_prose_is_caught(texts, monkeypatch):
    monkeypatch.setattr(drivers, "KERNELS", (*drivers.KERNELS, "7.2"))
    assert any("series of" in line for line in drift(texts)[0])
