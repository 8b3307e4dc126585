"""Sweeps: every depth x chunk-size cell, K trials each, as a grid (text, and a heatmap).

A cell (depth d, chunk c) runs plan ``max:c`` at depth d: runlists of c
layers, the remainder last; c >= d is one runlist, measured once and shared
by every such cell.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Any

from harness.errors import BadInput, EnvironmentNotReady
from harness.plan import Plan, plan_for_depth
from harness.results import NO_ANSWER
from harness.runner import Runner
from harness.search import BudgetReached, Prober, Say

ABBREVIATIONS = {"COMPLETED": "ok", "TIMEOUT": "TO", "ABORT": "AB", "ERROR": "ER",
                 "NEW": "NEW", "deadline": "DL", "crashed": "CR", "interrupted": "INT"}


def parse_depths(text: str) -> list[int]:
    """``A..B`` or ``A..B:STEP`` (inclusive), or a comma list."""
    match = re.fullmatch(r"\s*(\d+)\s*\.\.\s*(\d+)\s*(?::\s*(\d+))?\s*", text)
    if match:
        lo, hi, step = int(match.group(1)), int(match.group(2)), int(match.group(3) or 1)
        if lo < 1 or hi < lo or step < 1:
            raise BadInput(f"--depths {text!r}: need 1 <= A <= B and STEP >= 1")
        return list(range(lo, hi + 1, step))
    return parse_list(text, "--depths")


def parse_list(text: str, option: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise BadInput(f"{option} {text!r}: use numbers separated by commas, e.g. "
                       "1,8,21,24,42") from None
    if not values or min(values) < 1:
        raise BadInput(f"{option} {text!r}: every value must be >= 1")
    return sorted(set(values))


@dataclass
class Cell:
    depth: int
    chunk: int
    plan: Plan
    counts: dict[str, int]

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


def cell_plan(depth: int, chunk: int) -> Plan:
    return plan_for_depth(depth, min(chunk, depth))


def distinct_cells(depths: list[int], chunks: list[int]) -> set[tuple[int, int]]:
    """(depth, chunk) of each distinct plan: a chunk at or above the depth is one runlist."""
    return {(d, min(c, d)) for d in depths for c in chunks}


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


def estimate(depths: list[int], chunks: list[int], trials: int, runs_per_layer: int) -> Estimate:
    """What a sweep will cost, counted without building its plans."""
    if len(depths) * len(chunks) > MAX_CELLS:
        raise BadInput(f"--depths x --chunks is {len(depths) * len(chunks):,} cells; a sweep "
                       f"takes at most {MAX_CELLS:,}: narrow them or use a STEP (A..B:STEP)")
    cells = distinct_cells(depths, chunks)
    runlists = sum(-(-d // c) for d, c in cells)
    return Estimate(len(cells) * trials, sum(d for d, _ in cells) * runs_per_layer * trials,
                    len(cells) * trials * TRIAL_BYTES + runlists * trials * RUNLIST_BYTES)


def run_sweep(prober: Prober, depths: list[int], chunks: list[int], say: Say
              ) -> tuple[list[Cell], bool]:
    """Measure every cell (sharing identical plans); False when the budget ran out."""
    measured: dict[tuple[int, ...], dict[str, int]] = {}
    cells: list[Cell] = []
    complete = True
    for depth in depths:
        for chunk in chunks:
            plan = cell_plan(depth, chunk)
            key = plan.chunks
            if key not in measured and complete:
                try:
                    measured[key] = prober.measure(plan)[0]
                except BudgetReached:
                    complete = False
                    say(f"stopped: the budget of {prober.budget} trials is spent")
            cells.append(Cell(depth, chunk, plan, measured.get(key, {})))
    return cells, complete


def grid_text(cells: list[Cell], depths: list[int], chunks: list[int]) -> str:
    table = {(c.depth, c.chunk): c.code() for c in cells}
    width = max([len(v) for v in table.values()] + [len(str(c)) for c in chunks] + [4])
    lines = ["depth \\ chunk " + " ".join(f"{c:>{width}}" for c in chunks)]
    for depth in depths:
        lines.append(f"{depth:>13} " + " ".join(f"{table.get((depth, c), '-'):>{width}}"
                                                for c in chunks))
    used = sorted({state for c in cells for state in c.counts})
    legend = ", ".join(f"{ABBREVIATIONS.get(s, s)} = {s}" for s in used)
    lines.append(f"({legend}; a number after a code counts trials when outcomes are mixed)")
    return "\n".join(lines)


def sweep_section(cells: list[Cell], depths: list[int], chunks: list[int],
                  complete: bool) -> dict[str, Any]:
    return {"depths": depths, "chunks": chunks, "complete": complete,
            "cells": [{"depth": c.depth, "chunk": c.chunk, "plan": c.plan.name,
                       "counts": c.counts} for c in cells]}


def finish_sweep(runner: Runner, case_name: str, cells: list[Cell], depths: list[int],
                 chunks: list[int], complete: bool) -> str:
    """Keep the grid in the report, give it its one-line verdict, and save it finished."""
    report = runner.report
    report.sections["sweep"] = sweep_section(cells, depths, chunks, complete)
    failing = sorted({c.depth for c in cells if c.answered and c.counts.get("COMPLETED", 0) == 0})
    silent = sum(1 for c in cells if c.counts and not c.answered)
    summary = (f"sweep of {case_name}: {len(depths)} depths x {len(chunks)} "
               f"chunk size{'s' if len(chunks) != 1 else ''}, "
               f"{sum(len(p.trials) for p in report.plans)} trials"
               + ("" if complete else " (stopped by the budget)")
               + (f"; every answered trial failed in some cell from depth {failing[0]}"
                  if failing else "; no cell failed every answered trial")
               + (f"; {silent} cell{'s' if silent != 1 else ''} got no answer from the stack "
                  "(deadline or crash)" if silent else ""))
    report.verdict = {"reproduced": None, "text": summary}
    if complete:
        runner.handle.finish()
    else:                                 # stopped: `sweep --replay` goes on
        runner.handle.rewrite()
    return summary


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise EnvironmentNotReady("--plot needs matplotlib: pip install "
                                  "'xdna-runlist-harness[plot]'") from None


def plot_grid(cells: list[Cell], depths: list[int], chunks: list[int], path: str,
              title: str) -> None:
    """A heatmap of the share of trials that completed, one cell per depth x chunk."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from harness.yamlio import write_atomic

    grid = np.full((len(depths), len(chunks)), np.nan)
    for cell in cells:
        share = cell.completed_share
        if share is not None:
            grid[depths.index(cell.depth), chunks.index(cell.chunk)] = share
    fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(chunks) + 2.5),
                                    max(4.0, 0.12 * len(depths) + 2.0)))
    image = ax.imshow(grid, aspect="auto", origin="lower", cmap="RdYlGn", vmin=0.0,
                      vmax=1.0, interpolation="nearest")
    ax.set_xticks(range(len(chunks)), [str(c) for c in chunks])
    step = max(1, len(depths) // 16)
    ax.set_yticks(range(0, len(depths), step), [str(d) for d in depths[::step]])
    ax.set_xlabel("chunk size (layers per runlist)")
    ax.set_ylabel("depth (layers in the decode)")
    ax.set_title(title, fontsize=9)
    bar = fig.colorbar(image, ax=ax)
    bar.set_label("share of trials that completed (green: all, red: none)")
    fig.tight_layout()
    image_bytes = io.BytesIO()
    fig.savefig(image_bytes, format="png", dpi=110)
    plt.close(fig)
    write_atomic(path, image_bytes.getvalue())
