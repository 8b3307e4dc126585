"""Bisection over an integer (runlist depth, or chunk size at a fixed depth).

Find the smallest x in (lo, hi] at which the runlist fails, assuming lo
completes and hi fails, as `git bisect` does with a good and a bad commit.
Each tested x is classified from its trials:

- good: every trial completed; bad: every trial failed on the device;
- flaky: both. A flaky x has shown that it *can* complete, so by default it
  counts as good: the boundary sought is the first x that never completes.
  ``flaky_as="bad"`` seeks the first x that ever fails instead, and
  ``flaky_as="skip"`` treats it like git bisect's skip;
- skip: no answer from the stack (deadline, crash). Like `git bisect skip`,
  the search then picks among the untested x by git's seeded, square-root biased
  choice, not the nearest to the middle; when only skipped x are left between
  the last good and the first bad, the answer is a range.

Once the interval closes, both neighbours of the boundary are re-tested (the
assumed endpoints are tested then for the first time), and the answer is
given over all trials at each x. This is pure logic; `harness.search.bisect` runs
the trials.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from harness.model.results import NO_ANSWER, counts_text
from harness.model.text_enum import TextEnum


class Classification(TextEnum):
    """What a tested x showed, from its trials."""

    GOOD = "good"            # every trial completed
    BAD = "bad"              # every trial failed on the device
    FLAKY = "flaky"          # both
    SKIP = "skip"            # no answer from the stack (deadline, crash)


GOOD, BAD, FLAKY, SKIP = Classification
FLAKY_CHOICES = (GOOD, BAD, SKIP)


class AnswerKind(TextEnum):
    EXACT = "exact"                  # the first failing x
    RANGE = "range"                  # in low..high, skipped x between
    NONE = "none"                    # nothing fails up to hi
    AT_OR_BELOW = "at-or-below"      # lo already fails
    INCOMPLETE = "incomplete"        # stopped by the budget


def classify(counts: dict[str, int]) -> Classification:
    completed = counts.get("COMPLETED", 0)
    answered = sum(n for state, n in counts.items() if state not in NO_ANSWER)
    if answered == 0:
        return SKIP
    if completed == answered:
        return GOOD
    return BAD if completed == 0 else FLAKY


@dataclass
class Answer:
    kind: AnswerKind
    low: int                       # the first failing x lies in low..high
    high: int
    text: str
    notes: list[str] = field(default_factory=list)
    evidence: str = ""             # the counts that bound it, as the text gives them

    @property
    def first(self) -> int | None:
        return self.low if self.kind is AnswerKind.EXACT else None


@dataclass
class Bisection:
    lo: int
    hi: int
    flaky_as: Classification = GOOD
    noun: str = "depth"
    counts: dict[int, dict[str, int]] = field(default_factory=dict)
    confirmed: set[int] = field(default_factory=set)
    order: list[int] = field(default_factory=list)
    seed: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.lo < self.hi:
            raise ValueError(f"need 1 <= lo < hi, got lo={self.lo}, hi={self.hi}")
        if self.flaky_as not in FLAKY_CHOICES:
            raise ValueError(f"flaky_as must be one of {', '.join(FLAKY_CHOICES)}")
        self.flaky_as = Classification(self.flaky_as)       # as a report's log gives it

    # -- what is known ----------------------------------------------------------

    def side(self, x: int) -> Classification | None:
        if x not in self.counts:
            return None
        cls = classify(self.counts[x])
        return self.flaky_as if cls == FLAKY else cls

    def bounds(self) -> tuple[int, int]:
        """(last good, first bad): tested values where known, else the assumed lo / hi."""
        bad = min((x for x in self.counts if self.side(x) == BAD), default=self.hi)
        good = max((x for x in self.counts if self.side(x) == GOOD and x < bad),
                   default=min(self.lo, bad - 1))
        return good, bad

    def _open(self) -> list[int]:
        good, bad = self.bounds()
        return [x for x in range(good + 1, bad) if x not in self.counts]

    # -- what to test next -------------------------------------------------------

    def next_x(self) -> int | None:
        candidates = self._open()
        if candidates:
            good, bad = self.bounds()
            middle = (good + bad) / 2
            ranked = sorted(candidates, key=lambda x: (abs(x - middle), x))
            if any(self.side(x) == SKIP for x in range(good + 1, bad)):
                return ranked[self._skip_away(len(ranked))]
            return ranked[0]
        good, bad = self.bounds()
        for x in (bad, good):
            if x >= 1 and x not in self.confirmed and self.side(x) != SKIP and \
                    not self._beyond(x):
                return x
        return None

    def _skip_away(self, count: int) -> int:
        """git bisect's skip_away (bisect.c): once untestable points sit in the interval, the
        next pick is pseudo-random, square-root biased towards the best: index = count x
        u^1.5. Probing the neighbours of a skipped point one by one would walk a whole
        untestable stretch; a biased jump leaves it in a few steps. Seeded by the run's seed
        and how much is known, so a replay picks the same points."""
        u = random.Random(f"{self.seed}/{len(self.counts)}").random()
        return min(count - 1, int(count * u ** 1.5))

    def _beyond(self, x: int) -> bool:
        # The assumed hi is a real value to confirm only if no failure was found below it;
        # nothing outside lo..hi is ever tested.
        return not self.lo <= x <= self.hi

    def steps_left(self) -> tuple[int, int]:
        """(values left to test after the next one, roughly how many steps), git-style."""
        left = max(0, len(self._open()) - 1)
        return left, (math.ceil(math.log2(left + 1)) if left else 0) + 2

    def record(self, x: int, counts: dict[str, int], *, confirmation: bool = False) -> None:
        merged = dict(self.counts.get(x, {}))
        for state, n in counts.items():
            merged[state] = merged.get(state, 0) + n
        self.counts[x] = merged
        self.order.append(x)
        if confirmation:
            self.confirmed.add(x)

    @property
    def confirming(self) -> bool:
        """The interval is closed: what `next_x` returns now re-tests a neighbour."""
        return not self._open()

    # -- the answer ---------------------------------------------------------------

    def answer(self, *, complete: bool = True) -> Answer:
        good, bad = self.bounds()
        noun = self.noun
        notes = [f"{noun} {x} completed above the first failing {noun} {bad} "
                 f"({counts_text(self.counts[x])}): not monotone"
                 for x in sorted(self.counts) if x > bad and self.side(x) == GOOD]
        flaky = [x for x in sorted(self.counts) if classify(self.counts[x]) == FLAKY]
        if flaky:
            notes.append(f"flaky (mixed outcomes, counted as {self.flaky_as}): "
                         + ", ".join(f"{x} ({counts_text(self.counts[x])})" for x in flaky))

        def shown(x: int) -> str:
            return f"{x}: {counts_text(self.counts[x])}" if x in self.counts else \
                f"{x}: untested"

        bounds = f"{shown(good)}; {shown(bad)}"
        if not complete:
            return Answer(AnswerKind.INCOMPLETE, good + 1, bad,
                          f"stopped early: first failing {noun} in {good + 1}..{bad} so far "
                          f"({bounds})", notes, bounds)
        verdict = self.side(bad)
        if verdict == GOOD:
            return Answer(AnswerKind.NONE, self.hi + 1, self.hi,
                          f"no failing {noun} in {self.lo}..{self.hi} ({shown(self.hi)})",
                          notes, shown(self.hi))
        if verdict != BAD:
            return Answer(AnswerKind.RANGE, good + 1, bad,
                          f"no failure found below {bad}, and {bad} gave no answer from the "
                          f"stack ({bounds})", notes, bounds)
        if good < self.lo:
            return Answer(AnswerKind.AT_OR_BELOW, self.lo, bad,
                          f"{noun} {bad} already fails ({shown(bad)}): the boundary is at "
                          f"or below {bad}", notes, shown(bad))
        skipped = [x for x in range(good + 1, bad) if self.side(x) == SKIP]
        if skipped:
            between = (f"{shown(good)}; {', '.join(map(str, skipped))} skipped, no answer "
                       f"from the stack; {shown(bad)}")
            return Answer(AnswerKind.RANGE, good + 1, bad,
                          f"first failing {noun} in {good + 1}..{bad} ({between})", notes,
                          between)
        return Answer(AnswerKind.EXACT, bad, bad, f"first failing {noun} {bad} ({bounds})",
                      notes, bounds)
