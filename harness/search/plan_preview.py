"""The plan `investigate` prints before it starts (and alone, with `--plan-only`): each
experiment it may run, when it runs it, and what it may cost the device against the timer
in force here, the worst case being that every trial it runs hangs until the driver
notices. On the hardware path nothing can be injected, so the plan holds only what can run
on the machine: the NOOP depth test, the engine's captured frames, cuts and chunk sizes,
more trials for a rate, and the changes of the machine the user allowed (each asked again
before it is made)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.model.plan import cut_text
from harness.report.answer import plan_phrase
from harness.report.header import read_timers
from harness.report.model import source_tag
from harness.report.verdict import capture_how
from harness.search.choosing import CONFIRM_TRIALS, EXPENSIVE_S, InvestigateSettings
from harness.search.machine_change import MachineChange, longer_timeout, other_firmware

if TYPE_CHECKING:
    from harness.search.investigate import Investigation

SUBMIT = 24                      # XRT's chain (STACK.md 2): the chunk-size step's runlists


@dataclass(frozen=True)
class PlannedStep:
    """One experiment of the plan: what it runs, when, and its worst cost."""

    name: str
    runs: str
    when: str
    worst_trials: int = 0          # trials it may run; 0: runs none here
    changes: str | None = None     # the change of the machine it needs (asked first)
    per: str = ""                  # what `worst_trials` counts per (" a plan")
    hung_s: float | None = None    # a hung trial's cost in this step, where not the timer's

    def line(self, number: int, hung_s: float) -> str:
        hung_s = self.hung_s or hung_s
        cost = (f"; up to {self.worst_trials} trial" + ("s" if self.worst_trials != 1 else "")
                + f"{self.per}, at most {_seconds(self.worst_trials * hung_s)} of device time"
                f"{self.per} if each hangs" if self.worst_trials else "")
        marks = f" [changes the machine: {self.changes}; asked first]" if self.changes else ""
        return f"  {number}. {self.name}{marks}: {self.runs}; {self.when}{cost}"


def _seconds(value: float) -> str:
    return f"{value:.1f} s" if value < 120 else f"{value / 60:.1f} min"


def hung_trial_s(inv: Investigation) -> tuple[float, str]:
    """What one trial that hangs costs here (the driver's timer in force, at its latest),
    and where that timer comes from."""
    timers = read_timers(inv.report.sections.get("timers"))
    driver = timers.driver if timers else None
    if driver is not None and driver.latest_s:
        said = f"{driver.flavour} on Linux {driver.kernel}"
        return float(driver.latest_s), said
    return inv.runner.backend.driver_timeout_s(), "the driver's timer (flavour unknown: " \
        "the slowest one known)"


def planned_steps(inv: Investigation) -> list[PlannedStep]:
    settings: InvestigateSettings = inv.settings
    plans = inv.report.plans
    case_plans = [p for p in plans if not p.control]
    captured = inv.report.case.get("kind") == "capture" if isinstance(inv.report.case,
                                                                        dict) else False
    deepest = max((max(p.chunks) for p in case_plans), default=1)
    halves = []
    depth = deepest // 2
    while depth >= 1:
        halves.append(depth)
        depth //= 2
    steps = [PlannedStep(
        "three-way", ", ".join(f"{p.label} (NOOPs on XRT's validate.xclbin)" if p.control
                               else plan_phrase(p) for p in plans),
        f"first, {settings.first_trials} trial each", len(plans) * settings.first_trials)]
    if settings.stand_in:
        steps.append(PlannedStep(
            "the work, stood in", "the case's plans again with the simulator's stand-in work "
            "stream (never on a device)", "where only NOOPs ran", len(case_plans)))
    elif not captured:
        steps.append(PlannedStep(
            "the engine's own commands", "not run by investigate: "
            + capture_how(str(inv.report.case.get("engine") or "flm run MODEL")
                          if isinstance(inv.report.case, dict) else "flm run MODEL")
            + " (or investigate DIR)", "where only NOOPs ran and they complete"))
    steps.append(PlannedStep(
        "more trials, for a rate", f"a plan that fails in some trials to "
        f"{settings.mixed_trials}, one that fails rarely to {settings.rare_trials} while the "
        f"answer is open, each plan to {settings.quiet_trials} while nothing fails "
        f"({CONFIRM_TRIALS + 1} where a trial takes over {EXPENSIVE_S:g} s)",
        "cheapest first, while the answer is open", settings.rare_trials, per=" a plan"))
    if halves:
        steps.append(PlannedStep(
            "a shallower depth", "the failing commands at " + ", ".join(map(str, halves))
            + " runs in one runlist, by halves", "where no runlist of them has completed",
            len(halves)))
    if deepest > SUBMIT:
        cut = [SUBMIT] * (deepest // SUBMIT) + ([deepest % SUBMIT] if deepest % SUBMIT else [])
        steps.append(PlannedStep(
            "chunk sizes", f"the failing commands as runlists of XRT's chain size "
            f"({cut_text(cut)}): the same chains, fewer queued",
            "where one runlist fails every trial and the answer is open", 1))
    steps.append(_server_step(settings))
    steps += _machine_steps(inv)
    return steps


def _server_step(settings: InvestigateSettings) -> PlannedStep:
    if settings.serve_url:
        return PlannedStep("the server", f"one chat request to flm serve at "
                           f"{settings.serve_url} for {settings.serve_model}",
                           "once, after the three-way", 1)
    if settings.stand_in:
        return PlannedStep("the server", "the simulated stack's stand-in for flm serve, "
                           "once", "while the answer is open and no plan of the engine's "
                           "commands fails every trial", 1)
    return PlannedStep("the server", "not asked", "give --serve URL to compare flm serve "
                       "with pyxrt")


def _machine_steps(inv: Investigation) -> list[PlannedStep]:
    """The changes of the machine the user allowed, or the option that would allow each."""
    settings = inv.settings
    if settings.stand_in:
        return []
    steps = []
    if settings.longer_timeout_s:
        change = longer_timeout(inv.driver_facts, settings.longer_timeout_s)
        steps.append(_change_step("a longer driver timer", change, "where a plan fails at "
                                  "the driver's timer every trial: slow work then completes, "
                                  "a hang does not"))
    else:
        steps.append(PlannedStep("a longer driver timer", "not offered",
                                 "give --longer-timeout SECONDS to allow it"))
    if settings.firmware:
        change = other_firmware(settings.firmware, inv.firmware_now, inv.driver_facts)
        steps.append(_change_step(f"firmware {settings.firmware}", change,
                                  "where a plan fails every trial"))
    else:
        steps.append(PlannedStep("another firmware", "not offered",
                                 "give --firmware VERSION to allow it"))
    if settings.kernel:
        steps.append(PlannedStep(
            f"kernel {settings.kernel}", "not run by this investigation (a reboot brings "
            f"it): boot {settings.kernel}, run the same investigate there with --out B.yaml, "
            "then runlist-harness diagnose THIS.yaml B.yaml", "after this one"))
    return steps


def _change_step(name: str, change: MachineChange | str, when: str) -> PlannedStep:
    if isinstance(change, str):
        return PlannedStep(name, "not possible here", change)
    return PlannedStep(name, "the plans that failed again, " + str(CONFIRM_TRIALS)
                       + " trials each, after: " + " && ".join(change.commands)
                       + " (undo: " + " && ".join(change.restore) + ")", when,
                       CONFIRM_TRIALS * 2, changes=change.what, hung_s=change.timer_s)


def plan_lines(inv: Investigation) -> list[str]:
    """The plan as printed: where it runs and the timer a hung trial costs, each step, and
    the budget."""
    hung, timer = hung_trial_s(inv)
    backend = inv.report.backend
    where = f"the {source_tag(backend)} stack" if backend.get("simulated") else "this machine"
    if inv.runner.backend.hardware:
        where = "the hardware path: real experiments only, nothing injected" + (
            f"; pyxrt is a stand-in, so its answers are {source_tag(backend)}"
            if backend.get("simulated") else "")
    lines = [f"plan ({where}); device time against the timer in force, {timer}: a trial "
             f"that hangs costs up to {_seconds(hung)}"]
    lines += [step.line(i, hung) for i, step in enumerate(planned_steps(inv), 1)]
    budget = inv.settings.budget_s
    note = (f"; it is less than one hung trial costs here ({_seconds(hung)}): a failure at "
            "the timer ends it after the first" if budget < hung else "")
    lines.append(f"budget: {budget / 60:g} min of device time; no trial starts once it is "
                 f"spent, nor one its plan's trials say would pass it{note}")
    return lines
