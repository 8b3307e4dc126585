"""Scenario families the classifier was not tuned on, for benchmarks/diagnose_accuracy.py:
each draws simulated hypotheses at the edges of what the tuned scenarios cover, and says
which answers are right for it (`accept`). Each is built from what the stack does, not
from what the diagnosis answers:

- two causes at once: two hypotheses of different causes in one profile; either cause is
  right (both are there), anything else is wrong;
- a work hang every cut holds: work-hang:N with N of 2..21, so the cut's runlists of 21
  still hold the Nth run of the work (the tuned draw takes N up to 42);
- rates of 3-30%: flaky:P with the failing share of a trial of the case's 42-run plans
  (two jobs: 1 - (1 - P)^2) drawn between 3% and 30%;
- slow work at the timer: a chain of 24 runs taking 0.9-1.0x the soonest the flavour
  notices a hang (nothing fails: `nothing-fails` is right) or 1.0-1.1x the latest
  (`slow-work`); between the two, where the device-wide checks' phase decides, is left
  out, as the simulator plays one phase of them;
- refusals at the first and the last run: reject-at:0 and reject-at:41;
- a budget too small for one hung trial: a hang (a depth limit, a hang in the work) with
  a budget of 0.3-0.9 of the flavour's timer; the cause or `undetermined` is right, and an
  undetermined answer must name the resume with a larger budget (`needs`).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from harness.model.drivers import driver_build

UNDETERMINED = "undetermined"
CHAIN = 24                          # XRT's chain (STACK.md 2): the slow work's unit


@dataclass(frozen=True)
class Drawn:
    """A held-out scenario's hypotheses, what is right for it, and its own budget."""

    family: str
    cause: str                      # the cause drawn (the first of two)
    tokens: tuple[str, ...]
    accept: tuple[str, ...]
    budget_min: float | None = None
    needs: str | None = None        # what an undetermined answer's verdict must name


def two_causes(flavour: str, kernel: str, rng: random.Random) -> Drawn:
    pairs = (
        (("depth-limit", f"inflight-cap:{rng.randint(10, 41)}"),
         ("refused", f"reject-at:{rng.randint(1, 41)}")),
        (("work-hang", f"work-hang:{rng.randint(2, 42)}"),
         ("refused", f"reject-at:{rng.randint(1, 41)}")),
        (("depth-limit", f"inflight-cap:{rng.randint(10, 41)}"),
         ("work-hang", f"work-hang:{rng.randint(2, 42)}")),
        (("refused", f"reject-at:{rng.randint(1, 41)}"),
         ("nondeterministic", f"flaky:{rng.uniform(0.15, 0.4):.3f}")),
    )
    first, second = rng.choice(pairs)
    return Drawn("two causes at once", first[0], (first[1], second[1]),
                 (first[0], second[0]))


def every_cut_holds_it(flavour: str, kernel: str, rng: random.Random) -> Drawn:
    return Drawn("a work hang every cut holds", "work-hang",
                 (f"work-hang:{rng.randint(2, 21)}",), ("work-hang",))


def low_rates(flavour: str, kernel: str, rng: random.Random) -> Drawn:
    rate = rng.uniform(0.03, 0.30)
    per_job = 1 - math.sqrt(1 - rate)
    return Drawn("rates of 3-30%", "nondeterministic", (f"flaky:{per_job:.4f}",),
                 ("nondeterministic",))


def slow_at_the_timer(flavour: str, kernel: str, rng: random.Random) -> Drawn:
    build = driver_build(flavour, kernel)
    if rng.random() < 0.5:
        chain = rng.uniform(0.9, 1.0) * build.earliest_seconds
        cause = "nothing-fails"
    else:
        chain = rng.uniform(1.0, 1.1) * build.worst_seconds
        cause = "slow-work"
    return Drawn("slow work at the timer", cause,
                 (f"slow:layer:{round(chain * 1e6 / CHAIN)}",), (cause,))


def refused_at_the_ends(flavour: str, kernel: str, rng: random.Random) -> Drawn:
    return Drawn("refusals at the first and last run", "refused",
                 (f"reject-at:{rng.choice((0, 41))}",), ("refused",))


def budget_below_a_hang(flavour: str, kernel: str, rng: random.Random) -> Drawn:
    cause, token = rng.choice((("depth-limit", f"inflight-cap:{rng.randint(10, 41)}"),
                               ("work-hang", f"work-hang:{rng.randint(2, 42)}")))
    budget = rng.uniform(0.3, 0.9) * driver_build(flavour, kernel).worst_seconds / 60
    return Drawn("a budget below one hung trial", cause, (token,), (cause, UNDETERMINED),
                 budget_min=budget, needs="investigate --resume")


FAMILIES = (two_causes, every_cut_holds_it, low_rates, slow_at_the_timer,
            refused_at_the_ends, budget_below_a_hang)
NAMES = ("two causes at once", "a work hang every cut holds", "rates of 3-30%",
         "slow work at the timer", "refusals at the first and last run",
         "a budget below one hung trial")
