"""Sweeps: every row x chunk-size cell, K trials each, as a grid (text, and a heatmap).

A row is a depth (of a case's layers, or of a recipe's runs) or a captured frame (its
whole depth). A cell (row of depth d, chunk c) runs plan ``max:c`` over d: runlists of
c, the remainder last; c >= d is one runlist, measured once and shared by every such
cell of the row.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

from harness.execution.runner import Runner
from harness.model.errors import BadInput, EnvironmentNotReady
from harness.model.plan import MAX_LAYERS, Plan, plan_for_depth
from harness.model.results import NO_ANSWER
from harness.report.model import source_label
from harness.report.verdict import search_verdict, verdict_lines
from harness.search.measure import BudgetReached, Measurer, Say

ABBREVIATIONS = {"COMPLETED": "ok", "TIMEOUT": "TO", "ABORT": "AB", "ERROR": "ER",
                 "NEW": "NEW", "deadline": "DL", "crashed": "CR", "interrupted": "INT"}


DEPTH_FORMS = "A..B (e.g. 1..64), A..B:STEP (1..128:8), or numbers separated by commas (1,8,21)"


def parse_depths(text: str) -> list[int]:
    """``A..B`` or ``A..B:STEP`` (inclusive), or a comma list."""
    match = re.fullmatch(r"\s*([0-9]+)\s*\.\.\s*([0-9]+)\s*(?::\s*([0-9]+))?\s*", text,
                         re.ASCII)
    if match:
        for number in match.groups():
            if number is not None and len(number) > 18:
                # before int(): it refuses 4,300 digits, and no such depth is a depth
                raise BadInput(f"--depths {text[:40]!r}...: a number of {len(number):,} "
                               f"digits is past the {MAX_LAYERS:,} layers a plan may have")
        lo, hi, step = int(match.group(1)), int(match.group(2)), int(match.group(3) or 1)
        if lo < 1 or hi < lo or step < 1:
            raise BadInput(f"--depths {text!r}: need 1 <= A <= B and STEP >= 1")
        _within(hi, text, "--depths")       # before the list exists: 1..10**9 is no list
        return list(range(lo, hi + 1, step))
    return parse_list(text, "--depths", DEPTH_FORMS)


def _within(value: int, text: str, option: str) -> None:
    if value > MAX_LAYERS:
        raise BadInput(f"{option} {text[:60]!r}: {value:,} is past the {MAX_LAYERS:,} layers a "
                       "plan may have")


COMMA_FORMS = "numbers separated by commas, e.g. 1,8,21,24,42"


def parse_list(text: str, option: str, forms: str = COMMA_FORMS) -> list[int]:
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not all(re.fullmatch(r"[0-9]{1,12}", part, re.ASCII) for part in parts):
        dashed = re.fullmatch(r"\s*([0-9]{1,12})\s*-\s*([0-9]{1,12})\s*", text, re.ASCII)
        meant = ""
        if dashed and forms is DEPTH_FORMS:      # 1-64 written for the range 1..64
            meant = f"; for the depths from {dashed[1]} to {dashed[2]}: {dashed[1]}..{dashed[2]}"
        raise BadInput(f"{option} {text[:60]!r}: use {forms}{meant}")
    values = [int(part) for part in parts]
    for value in values:
        _within(value, text, option)
    if not values or min(values) < 1:
        raise BadInput(f"{option} {text!r}: every value must be >= 1")
    return sorted(set(values))


@dataclass(frozen=True)
class Row:
    label: str                   # "42", or a frame's name
    depth: int
    frame: str | None = None


def depth_rows(depths: list[int]) -> list[Row]:
    return [Row(str(d), d) for d in depths]


@dataclass
class Cell:
    row: Row
    chunk: int
    plan: Plan
    counts: dict[str, int]

    @property
    def depth(self) -> int:
        return self.row.depth

    @property
    def answered(self) -> int:
        """Trials of this cell the stack answered (not a deadline, a crash or a stop)."""
        return sum(n for state, n in self.counts.items() if state not in NO_ANSWER)

    @property
    def completed_share(self) -> float | None:
        total = sum(self.counts.values())
        return self.counts.get("COMPLETED", 0) / total if total else None

    def code(self) -> str:
        if not self.counts:
            return "-"
        if len(self.counts) == 1:
            return ABBREVIATIONS.get(next(iter(self.counts)), next(iter(self.counts)))
        return " ".join(f"{ABBREVIATIONS.get(state, state)}{n}"
                        for state, n in sorted(self.counts.items(), key=lambda kv: -kv[1]))


def cell_plan(row: Row, chunk: int) -> Plan:
    plan = plan_for_depth(row.depth, min(chunk, row.depth))
    if row.frame is None:
        return plan
    return Plan(f"{row.frame} {plan.name}", plan.spec, plan.chunks, row.frame)


def distinct_cells(rows: list[Row], chunks: list[int]) -> set[tuple[str | None, int, int]]:
    """(frame, depth, chunk) of each distinct plan: a chunk at or above the depth is one
    runlist."""
    return {(r.frame, r.depth, min(c, r.depth)) for r in rows for c in chunks}


# Past any of these a sweep needs --yes: it would run for hours or fill the disk.
MAX_CELLS = 1_000_000
LIMITS = {"trials": 20_000, "simulated commands": 50_000_000, "report bytes": 500_000_000}
TRIAL_BYTES, RUNLIST_BYTES = 400, 130       # what a trial and a runlist outcome take on disk


@dataclass
class Estimate:
    trials: int
    commands: int
    report_bytes: int

    def over(self) -> list[str]:
        values = {"trials": self.trials, "simulated commands": self.commands,
                  "report bytes": self.report_bytes}
        return [f"{values[k]:,} {k} (limit {limit:,})" for k, limit in LIMITS.items()
                if values[k] > limit]

    def text(self) -> str:
        return (f"{self.trials:,} trials, {self.commands:,} commands, a report of about "
                f"{self.report_bytes / 1e6:,.1f} MB")


def estimate(rows: list[Row], chunks: list[int], trials: int, runs_per_layer: int) -> Estimate:
    """What a sweep will cost, counted without building its plans."""
    if len(rows) * len(chunks) > MAX_CELLS:
        raise BadInput(f"--depths x --chunks is {len(rows) * len(chunks):,} cells; a sweep "
                       f"takes at most {MAX_CELLS:,}: narrow them or use a STEP (A..B:STEP)")
    cells = distinct_cells(rows, chunks)
    runlists = sum(-(-d // c) for _, d, c in cells)
    return Estimate(len(cells) * trials, sum(d for _, d, _ in cells) * runs_per_layer * trials,
                    len(cells) * trials * TRIAL_BYTES + runlists * trials * RUNLIST_BYTES)


Key = tuple[str | None, int, int]      # a distinct plan: (frame, depth, chunk at most depth)


def cell_key(row: Row, chunk: int) -> Key:
    """The distinct plan a cell runs (a chunk at or above the depth is one runlist)."""
    return (row.frame, row.depth, min(chunk, row.depth))


class Grid(Sequence[Cell]):
    """Every row x chunk cell of a sweep, row by row, each made when it is asked for from
    the counts of its distinct plan: what a sweep keeps while it runs is those counts, one
    shared mapping for each distinct outcome, not a cell, a plan and its name per cell (a
    1..1024 sweep has 5,120 cells, and a 1024 x 1 plan's name is 2,047 characters)."""

    def __init__(self, rows: list[Row], chunks: list[int],
                 measured: dict[Key, dict[str, int]]) -> None:
        self.rows, self.chunks, self.measured = rows, chunks, measured

    def __len__(self) -> int:
        return len(self.rows) * len(self.chunks)

    @overload
    def __getitem__(self, index: int) -> Cell: ...

    @overload
    def __getitem__(self, index: slice) -> list[Cell]: ...

    def __getitem__(self, index: int | slice) -> Cell | list[Cell]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if not -len(self) <= index < len(self):
            raise IndexError("grid cell index out of range")
        row, chunk = divmod(index % len(self), len(self.chunks))
        return self._cell(self.rows[row], self.chunks[chunk])

    def __iter__(self) -> Iterator[Cell]:
        for row in self.rows:
            for chunk in self.chunks:
                yield self._cell(row, chunk)

    def _cell(self, row: Row, chunk: int) -> Cell:
        return Cell(row, chunk, cell_plan(row, chunk), self.measured.get(cell_key(row, chunk), {}))


def run_sweep(measurer: Measurer, rows: list[Row], chunks: list[int], say: Say
              ) -> tuple[Grid, bool]:
    """Measure every cell (sharing identical plans); False when the budget ran out. Each
    plan's record is let go once it is measured (`Measurer.release`): the report file
    holds its trials, the grid its counts."""
    measured: dict[Key, dict[str, int]] = {}
    alike: dict[tuple[tuple[str, int], ...], dict[str, int]] = {}
    complete = True
    for row in rows:
        for chunk in chunks:
            key = cell_key(row, chunk)
            if key in measured or not complete:
                continue
            plan = cell_plan(row, chunk)
            try:
                counts = measurer.measure(plan)[0]
            except BudgetReached:
                complete = False
                say(f"stopped: the budget of {measurer.budget} trials is spent")
                continue
            measurer.release(plan)
            measured[key] = alike.setdefault(tuple(sorted(counts.items())), counts)
    return Grid(rows, chunks, measured), complete


def grid_text(cells: Sequence[Cell], rows: list[Row], chunks: list[int]) -> str:
    table = {(c.row.label, c.chunk): c.code() for c in cells}
    width = max([len(v) for v in table.values()] + [len(str(c)) for c in chunks] + [4])
    head = "frame" if any(r.frame for r in rows) else "depth"
    left = max([len(r.label) for r in rows] + [len(head) + 8])
    lines = [f"{head} \\ chunk".rjust(left) + " " + " ".join(f"{c:>{width}}" for c in chunks)]
    for row in rows:
        lines.append(f"{row.label:>{left}} " + " ".join(
            f"{table.get((row.label, c), '-'):>{width}}" for c in chunks))
    used = sorted({state for c in cells for state in c.counts})
    legend = ", ".join(f"{ABBREVIATIONS.get(s, s)} = {s}" for s in used)
    lines.append(f"({legend}; a number after a code counts trials when outcomes are mixed)")
    return "\n".join(lines)


def sweep_section(rows: list[Row], chunks: list[int], complete: bool) -> dict[str, Any]:
    """What the header says of a sweep: its rows and chunks, and whether it finished. Its
    cells are journal entries (`write_cells`), as a bisect's steps are."""
    frames = [r.frame for r in rows if r.frame]
    section: dict[str, Any] = {"frames": frames} if frames else {
        "depths": [r.depth for r in rows]}
    section.update({"chunks": chunks, "complete": complete})
    return section


def cell_entry(cell: Cell) -> dict[str, Any]:
    return {"depth": cell.depth, "chunk": cell.chunk, "plan": cell.plan.name,
            "counts": cell.counts, **({"frame": cell.row.frame} if cell.row.frame else {})}


def write_cells(runner: Runner, cells: Iterable[Cell]) -> None:
    """Every cell of the grid as a journal entry, a line each (a later entry for a cell
    replaces an earlier one: a stopped sweep writes its grid so far, and its replay the
    whole grid)."""
    for cell in cells:
        runner.handle.append("cell", cell_entry(cell))


def finish_sweep(runner: Runner, case_name: str, cells: Grid, rows: list[Row],
                 chunks: list[int], complete: bool, trials: int) -> str:
    """Keep the grid in the report, give it its verdict (the answer first), and save it
    finished; the verdict's lines as the console shows them. `trials`: how many the
    report holds."""
    report = runner.report
    report.sections["sweep"] = sweep_section(rows, chunks, complete)
    write_cells(runner, cells)
    failing = [c.row for c in cells if c.answered and c.counts.get("COMPLETED", 0) == 0]
    silent = sum(1 for c in cells if c.counts and not c.answered)
    noun = "frames" if any(r.frame for r in rows) else "depths"
    names: list[str] = []
    if not failing:
        answer = "no cell failed every answered trial"
    elif noun == "frames":
        names = sorted({r.label for r in failing}, key=[r.label for r in rows].index)
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        answer = f"every answered trial failed in some cell of {shown}"
    else:
        answer = (f"every answered trial failed in some cell from depth "
                  f"{min(r.depth for r in failing)}")
    summary = (f"sweep of {case_name}: {len(rows)} {noun} x {len(chunks)} "
               f"chunk size{'s' if len(chunks) != 1 else ''}, {trials} trials"
               + ("" if complete else " (stopped by the budget)")
               + (f"; {silent} cell{'s' if silent != 1 else ''} got no answer from the stack "
                  "(deadline or crash)" if silent else ""))
    if len(names) > 3:
        summary += f"; failing frames: {', '.join(names)}"
    report.verdict = search_verdict(answer, report.backend, [summary])
    if complete:
        runner.handle.finish()
    else:                                 # stopped: `sweep --replay` goes on
        runner.handle.rewrite()
    return "\n".join(verdict_lines(report.verdict))


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise EnvironmentNotReady("--plot needs matplotlib: pip install "
                                  "'xdna-runlist-harness[plot]'") from None


def plot_title(case_name: str, backend: dict[str, Any]) -> str:
    """The plot's title, with the label every model's results carry (`source_label`)."""
    return f"{case_name}: share of trials completed ({source_label(backend) or 'hardware'})"


def plot_grid(cells: Sequence[Cell], rows: list[Row], chunks: list[int], path: str,
              title: str) -> None:
    """A heatmap of the share of trials that completed, one cell per depth x chunk."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from harness.formats.yamlio import write_atomic

    labels = [r.label for r in rows]
    grid = np.full((len(rows), len(chunks)), np.nan)
    for cell in cells:
        share = cell.completed_share
        if share is not None:
            grid[labels.index(cell.row.label), chunks.index(cell.chunk)] = share
    fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(chunks) + 2.5),
                                    max(4.0, 0.12 * len(rows) + 2.0)))
    image = ax.imshow(grid, aspect="auto", origin="lower", cmap="RdYlGn", vmin=0.0,
                      vmax=1.0, interpolation="nearest")
    ax.set_xticks(range(len(chunks)), [str(c) for c in chunks])
    step = max(1, len(rows) // 16)
    ax.set_yticks(range(0, len(rows), step), labels[::step])
    ax.set_xlabel("chunk size (layers per runlist)")
    ax.set_ylabel("captured frame" if rows and rows[0].frame else "depth (layers in the decode)")
    ax.set_title(title, fontsize=9)
    bar = fig.colorbar(image, ax=ax)
    bar.set_label("share of trials that completed (green: all, red: none)")
    fig.tight_layout()
    image_bytes = io.BytesIO()
    fig.savefig(image_bytes, format="png", dpi=110)
    plt.close(fig)
    write_atomic(path, image_bytes.getvalue())
