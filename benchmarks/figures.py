"""How every benchmark measures and prints a figure: the measured side and its baseline
alternate, round after round (a busy spell of a shared machine hits both, not one), at
least three rounds, and each figure is printed as min / median / max over them, with its
target beside its ratio."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

MIN_ROUNDS = 3


def spread(values: Sequence[float], fmt: str = ".2f") -> str:
    """``min / median / max`` of `values`, each formatted with `fmt`."""
    ordered = sorted(values)
    return " / ".join(format(v, fmt) for v in (ordered[0], statistics.median(ordered),
                                               ordered[-1]))


def alternate(sides: Sequence[Callable[[], float]], rounds: int) -> list[list[float]]:
    """Each side's figure from `rounds` rounds (at least `MIN_ROUNDS`), each round running
    every side once, in turn."""
    figures: list[list[float]] = [[] for _ in sides]
    for _ in range(max(MIN_ROUNDS, rounds)):
        for figure, side in zip(figures, sides, strict=True):
            figure.append(side())
    return figures


def ratios(measured: Sequence[float], baseline: Sequence[float]) -> list[float]:
    """The ratio of each round's measured figure to the same round's baseline."""
    return [m / b for m, b in zip(measured, baseline, strict=True)]
