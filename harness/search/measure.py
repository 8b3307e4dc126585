"""Measuring a plan: K trials of it through a Runner, within a budget of trials, reusing
finished trials no earlier measurement used. Bisect and sweep measure every plan so."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.execution.runner import Runner
from harness.model.plan import Plan
from harness.model.results import count_states
from harness.report.model import PlanRecord

Say = Callable[[str], None]      # a search telling what it does


class BudgetReached(Exception):
    """The --max-trials budget is spent; everything so far is kept."""


class Measurer:
    """Runs K trials of a plan through a Runner, within a budget of trials.

    Finished trials of a plan that no earlier measurement used (those of a step a kill
    cut short, or of a stopped sweep) are used first, so continuing a stopped search
    repeats nothing and its log accounts for every trial."""

    def __init__(self, runner: Runner, trials: int, budget: int | None,
                 used: dict[str, set[int]] | None = None) -> None:
        self.runner = runner
        self.trials = trials
        self.budget = budget
        self.spent = 0
        self.used = used if used is not None else {}
        self._by_name: dict[str, PlanRecord] = {}
        self.released = 0          # trials of the records let go (`release`)
        self._let_go: set[int] = set()     # their names' hashes (a name may be long)

    def record_for(self, plan: Plan) -> PlanRecord:
        plans = self.runner.report.plans
        if len(self._by_name) != len(plans):
            # by name, not by a walk of the list per plan: a sweep has thousands
            self._by_name = {record.name: record for record in reversed(plans)}
        record = self._by_name.get(plan.name)
        if record is not None:
            return record
        if hash(plan.name) in self._let_go:
            # its journal already declares it, and its trials from 0
            raise ValueError(f"plan {plan.name[:60]} was let go once measured; a search "
                             "that measures a plan again keeps its record")
        # the plan's own chunks, not a copy: a sweep's plans hold as many as their depth
        record = PlanRecord(plan.name, plan.spec, plan.chunks, frame=plan.frame)
        self.runner.handle.add_plan(record)
        self._by_name[record.name] = record
        return record

    def measure(self, plan: Plan) -> tuple[dict[str, int], list[int]]:
        """K trials of `plan` (reused where finished and unused, else run): their counts and
        their indices."""
        record = self.record_for(plan)
        used = self.used.setdefault(plan.name, set())
        chosen = [t for t in record.finished() if t.index not in used][:self.trials]
        while len(chosen) < self.trials:
            if self.budget is not None and self.spent >= self.budget:
                raise BudgetReached
            self.spent += 1
            result = self.runner.trial(record, self.spent, self.budget or 0)
            if result.status.finished:
                chosen.append(result)
        used.update(t.index for t in chosen)
        return count_states(chosen), [t.index for t in chosen]

    def release(self, plan: Plan) -> None:
        """Let go of a measured plan's record and its trials, which the report file holds:
        a search that measures each plan once (a sweep) then keeps no trial in memory. Only
        for a plan that is not measured again (`record_for` refuses it)."""
        record = self._by_name.pop(plan.name, None)
        if record is None:
            return
        plans = self.runner.report.plans
        if plans and plans[-1] is record:
            plans.pop()
        else:
            plans.remove(record)
        self.used.pop(plan.name, None)
        self._let_go.add(hash(plan.name))
        self.released += len(record.trials)

    def trials_held(self) -> int:
        """How many trials the report holds: those of the records in memory and of those
        let go."""
        return self.released + sum(len(plan.trials) for plan in self.runner.report.plans)


def used_trials(log: list[dict[str, Any]], plans: list[PlanRecord]) -> dict[str, set[int]]:
    """Which trials a bisect log's steps used. Logs that name no trial indices (written by
    0.1) used every finished trial of their plans."""
    used: dict[str, set[int]] = {}
    by_name = {p.name: p for p in plans}
    for entry in log:
        indices = entry.get("trials")
        if indices is None and entry.get("plan") in by_name:
            indices = [t.index for t in by_name[entry["plan"]].finished()]
        used.setdefault(str(entry.get("plan")), set()).update(indices or [])
    return used
