"""The observations of several reports together, and what a cause's row asks of them.

`Findings` are what one cause makes of the observations: each for it, against it, or
contradicting it, with its weight and the fields it was read from. Weights are small
integers a reader can follow: 3 a separating observation (NOOPs complete where the
engine's commands fail; a run named by a firmware error), 2 a supporting one (the time
to failure matches the timer the cause needs), 1 one that many causes share.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.report.diagnosis.observed import NOOP, WORK, Arm, Cite, Observed
from harness.report.header import Timers

FOR, AGAINST, CONTRADICTS = "for", "against", "contradicts"
STRONG, SUPPORT, WEAK = 3, 2, 1
MIN_TRIALS_FOR_A_RATE = 5      # a plan all alike over fewer says little about a probability
# "fails every time" rests on two failures at least (each may cost a driver's timer);
# "completes every time" on three completions (cheap); a rate under RARE over
# MIN_TRIALS_FOR_A_RATE trials or more is a rare failure (noise), not a coin toss
CONSISTENT_FAILURES = 2
CONSISTENT_COMPLETIONS = 3
RARE = 0.2


def fails_consistently(arm: Arm) -> bool:
    return arm.failed >= CONSISTENT_FAILURES and arm.completed == 0


def completes_consistently(arm: Arm) -> bool:
    """Completed in three trials or more, and failed in none, or rarely over many."""
    if arm.completed < CONSISTENT_COMPLETIONS or arm.setup_failed:
        return False
    failures = arm.failed + arm.no_answer
    return failures == 0 or (arm.answered >= MIN_TRIALS_FOR_A_RATE
                             and failures / (arm.answered + arm.no_answer) < RARE)


def coin_toss(arm: Arm) -> bool:
    """Failed in some trials and completed in others, not only rarely failed: a fixed cause
    with noise beside it fails where it would complete, never the other way, so any
    completion among mostly failures counts, and failures count unless rare (under RARE
    over MIN_TRIALS_FOR_A_RATE trials or more)."""
    if not arm.mixed:
        return False
    return arm.answered < MIN_TRIALS_FOR_A_RATE or (arm.rate or 0.0) >= RARE


def rarely_fails(arm: Arm) -> bool:
    return arm.mixed and not coin_toss(arm)


@dataclass(frozen=True)
class Finding:
    """One observation read for, against or as contradicting a cause."""

    kind: str
    weight: int
    text: str
    cites: tuple[Cite, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"weight": self.weight, "text": self.text,
                "cites": [str(c) for c in self.cites]}


@dataclass
class Findings:
    """What one cause made of the observations."""

    items: list[Finding] = field(default_factory=list)
    untested: str | None = None        # why the observations cannot speak to it at all

    def add(self, kind: str, weight: int, text: str, *cites: Cite) -> None:
        self.items.append(Finding(kind, weight, text, tuple(cites)))

    def of(self, kind: str) -> list[Finding]:
        return [f for f in self.items if f.kind == kind]

    @property
    def score(self) -> int:
        return sum(f.weight for f in self.of(FOR)) - sum(f.weight for f in self.of(AGAINST))

    @property
    def supported(self) -> bool:
        return bool(self.of(FOR))

    @property
    def contradicted(self) -> bool:
        return bool(self.of(CONTRADICTS))


class Evidence:
    """Every report's observations, and the questions the causes ask of them."""

    def __init__(self, reports: list[Observed]) -> None:
        self.reports = reports
        every = [arm for report in reports for arm in report.arms]
        # a plan run after the machine was changed (a longer timer, another firmware) is
        # another stack: it is read only beside the plan it repeats (`changed`)
        self.arms = [arm for arm in every if not arm.changed]
        self.changed = [arm for arm in every if arm.changed]
        self._by_file = {report.file: report for report in reports}

    def report_of(self, arm: Arm) -> Observed:
        return self._by_file[arm.file]

    def timers_of(self, arm: Arm) -> Timers:
        return arm.timers or self.report_of(arm).timers

    def timer_s(self, arm: Arm) -> tuple[float, float] | None:
        return self.timers_of(arm).driver.window

    @property
    def failing(self) -> list[Arm]:
        """Plans the device failed in (set-up refusals are not among them)."""
        return [a for a in self.arms if a.failed or a.no_answer]

    @property
    def anything_failed(self) -> bool:
        return any(report.failures for report in self.reports)

    def noop(self) -> list[Arm]:
        return [a for a in self.arms if a.workload == NOOP]

    def work(self) -> list[Arm]:
        return [a for a in self.arms if a.workload == WORK]

    def timed(self, arms: list[Arm], *kinds: str) -> list[Arm]:
        """Arms whose failures all took a time of one of `kinds` (and that have some)."""
        return [a for a in arms if a.ttf and all(kind in kinds for _, kind in a.ttf)]

    def under_longer_timers(self) -> list[tuple[Arm, Arm]]:
        """(failing, completing) runs of the same commands that failed in every trial
        under one driver timer and completed in every trial under a longer one (a table's
        timer column): what outlasts a timer completes under a longer one, and a hang
        completes under none."""
        pairs = []
        for failing in self.arms:
            if failing.timer_s is None or failing.timer_longer or not failing.always_fails:
                continue
            for done in self.arms:
                if done.group == failing.group and done.never_fails and \
                        done.timer_s is not None and (done.timer_s > failing.timer_s or (
                            done.timer_longer and done.timer_s >= failing.timer_s)):
                    pairs.append((failing, done))
        return pairs

    def faster(self, arm: Arm) -> float | None:
        """The per-run time of the completed runlists of `arm`'s commands (its group)."""
        found = self.run_time(arm)
        return None if found is None else found[0]

    def run_time(self, arm: Arm) -> tuple[float, Cite] | None:
        """The median per-run time of the completed runlists of `arm`'s commands (its
        group), and where it was read."""
        measured = [a for a in self.arms if a.group == arm.group and a.run_ms]
        times = sorted(ms for a in measured for ms in a.run_ms)
        if not times:
            return None
        median = times[len(times) // 2]
        where = ", ".join(a.label for a in measured)
        return median, measured[0].cite(
            "trials[*].runlists[*]", f"completed runlists of these commands ({where}): "
            f"{median:.3f} ms per run")


def ttf_cite(arm: Arm) -> Cite:
    classes = arm.ttf_classes()
    times = sorted(ms for ms, _ in arm.ttf)
    shown = ", ".join(f"{kind} x{n}" for kind, n in classes.items())
    span = f"{times[0]:.1f}" if times[0] == times[-1] else f"{times[0]:.1f}-{times[-1]:.1f}"
    return arm.cite("trials[*].time_to_failure", f"{shown} ({span} ms)")


def rate_cite(arm: Arm) -> Cite:
    return arm.cite("summary.by_state", ", ".join(f"{state} {n}"
                                                  for state, n in arm.states.items()))
