"""Time to failure: how long each failing trial's answer took, beside the timers its stack
has, and which of them it matches.

Which timer fired is the first thing a maintainer asks of a failure: the driver's
(amdxdna's 2 s, the out-of-tree check's 4-6 s, drm_sched's 60 s: STACK.md 4, one row per
flavour in `harness.model.drivers`), XRT's wait deadline (none: the harness waits on a
runlist without one), the harness's own deadline on an isolated trial; or none, because
the stack failed at once. A report records the timers once (`timers`, from the driver
build that answered: the simulated profile's, or the probed flavour on the machine's
kernel with its timeout setting) and, per failing trial, `time_to_failure`: from the
submit to the answer, on the device clock on the simulated stack and in wall time on
hardware and under emulation, with its class.
"""

from __future__ import annotations

from typing import Any

from harness.model.drivers import driver_build, probed_build, shortest_seconds
from harness.model.results import COMPLETED_STATE, TrialResult
from harness.report.failing import answering_driver
from harness.report.header import DriverTimer, Timers, read_header
from harness.report.model import is_emulated, is_simulated

DEVICE, WALL = "device", "wall"
AT_TIMER = "driver-timer"
AT_ONCE = "at-once"
BEFORE_TIMER = "before-timer"
PAST_TIMER = "past-timer"
AT_DEADLINE = "harness-deadline"
CLASS_TEXT = {
    AT_TIMER: "at the driver's timer: a hang its detection caught",
    AT_ONCE: "well before any timer: refused or failed at once",
    BEFORE_TIMER: "before the driver's timer, yet not at once",
    PAST_TIMER: "after the driver's timer: more than one timeout in turn, or work that "
                "ran before the hang",
    AT_DEADLINE: "at the harness's deadline: no answer",
}
# "At once" is under a tenth of the soonest timer, and under a second whatever the timer
# (a refusal takes milliseconds; a 60 s timer's tenth would call 5 s "at once").
AT_ONCE_FRACTION = 0.1
AT_ONCE_CAP_S = 1.0
# "At the timer" allows 10% either side of the timer's window, and a second more for what
# ran before the hang and what XRT did around it.
TIMER_SLACK = 0.1
TIMER_SLACK_S = 1.0
NO_XRT_WAIT = ("none: the harness waits on each runlist with runlist.wait() and no timeout, "
               "so XRT waits until the device answers")


def stack_timers(data: dict[str, Any]) -> dict[str, Any]:
    """The report's `timers`: the driver's (from the build that answered), XRT's wait
    deadline, the harness's deadline, and which clock a time to failure is read on."""
    header = read_header(data)
    backend, settings = header.backend, header.settings
    flavour, kernel = answering_driver(header)
    build = None
    if backend.modelled and flavour:
        try:
            build = driver_build(flavour, str(kernel))
        except ValueError:
            build = None
        source = "the driver build the " + ("emulated" if is_emulated(backend.raw)
                                            else "simulated") + " stack plays"
    else:
        build = probed_build(header.environment.driver.facts,
                             header.environment.system.kernel)
        source = "the probed driver on this machine's kernel, with its timeout setting"
    driver: dict[str, Any]
    if build is None:
        driver = {"flavour": flavour, "kernel": kernel, "seconds": None,
                  "source": "unknown: the driver flavour or its kernel is not one the harness "
                            "knows, so only \"at once\" can be told (under "
                            f"{_at_once_s(None):g} s)"}
    else:
        driver = {"flavour": build.flavour, "kernel": build.kernel,
                  "detection": str(build.detection), "seconds": build.period_s,
                  "earliest_s": build.earliest_seconds, "latest_s": build.worst_seconds,
                  "source": f"{source}: {build.source}"}
    isolated = bool(settings.isolate) and backend.isolation
    deadline = settings.deadline_s
    return {
        "clock": DEVICE if is_simulated(backend.raw) and not is_emulated(backend.raw)
        and not backend.stand_in else WALL,
        "driver": driver,
        "xrt_wait_s": None, "xrt_wait": NO_XRT_WAIT,
        "harness_deadline_s": deadline if isolated else None,
        "harness_deadline": ("per trial, as each trial's deadline_s says (--deadline, else "
                             "the case's, else derived from the driver's timeout)"
                             if isolated and deadline is None else
                             "--deadline" if isolated else
                             "none: trials ran in process (--no-isolate)"),
    }


def _at_once_s(driver: DriverTimer | None) -> float:
    earliest = (driver.earliest_s if driver else None) or shortest_seconds()
    return min(AT_ONCE_FRACTION * float(earliest), AT_ONCE_CAP_S)


def classify(ms: float, timers: Timers) -> str:
    """Which timer a failure's time matches (a trial with no answer is AT_DEADLINE: see
    `time_to_failure`)."""
    seconds = ms / 1000.0
    if seconds < _at_once_s(timers.driver):
        return AT_ONCE
    window = timers.driver.window
    if window is None:
        return BEFORE_TIMER
    earliest, latest = window
    if seconds < (1 - TIMER_SLACK) * earliest:
        return BEFORE_TIMER
    if seconds <= (1 + TIMER_SLACK) * latest + TIMER_SLACK_S:
        return AT_TIMER
    return PAST_TIMER


def time_to_failure(trial: TrialResult | dict[str, Any], timers: Timers
                    ) -> dict[str, Any] | None:
    """A failing trial's time to failure: its first failing runlist's, from submit to the
    answer, on the report's clock; a trial the deadline ended, the time it was given.
    None for a trial that completed, crashed, was stopped, or failed before any runlist
    (a set-up refused: its error says so)."""
    data = trial.to_json() if isinstance(trial, TrialResult) else trial
    status = data.get("status")
    if status == "deadline":
        given = data.get("deadline_s")
        ms = data.get("wall_ms") or (given * 1000.0 if isinstance(given, (int, float))
                                     else None)
        return None if ms is None else {"ms": round(float(ms), 3), "clock": WALL,
                                        "class": AT_DEADLINE}
    if status != "failed":
        return None
    clock = timers.clock
    for position, outcome in enumerate(data.get("runlists") or []):
        if not isinstance(outcome, dict) or outcome.get("state") in (None, COMPLETED_STATE):
            continue
        ms = outcome.get("device_ms") if clock == DEVICE else outcome.get("wall_ms")
        if not isinstance(ms, (int, float)):
            return None
        return {"ms": round(float(ms), 3), "clock": clock, "runlist": position,
                "class": classify(float(ms), timers)}
    return None


def duration_text(ms: float) -> str:
    """``60.0 s``, ``1.5 ms``: a time as a person reads it."""
    return f"{ms / 1000.0:.1f} s" if ms >= 1000.0 else f"{ms:.1f} ms"


def clock_text(clock: str, backend: dict[str, Any] | None = None) -> str:
    if clock == DEVICE:
        return "simulated device time"
    return "wall time" + (" (emulated device)" if backend and is_emulated(backend) else "")


def _window_text(window: tuple[float, float]) -> str:
    earliest, latest = window
    return f"{earliest:g} s" if earliest == latest else f"{earliest:g}-{latest:g} s"


def timer_text(timers: Timers) -> str:
    """The driver's timer in a few words: ``the driver's 60 s timer (mainline on Linux
    7.0)``, or that it is not known."""
    driver = timers.driver
    if driver.window is None:
        return "the driver's timer (not known for this driver)"
    return (f"the driver's {_window_text(driver.window)} timer ({driver.flavour} on Linux "
            f"{driver.kernel})")


def waits_on(timers: Timers, deadline_s: float | None) -> str:
    """What a trial under way waits on, for its progress line: the driver's timer, then the
    harness's deadline on an isolated trial (None: in process, nothing cuts it off)."""
    text = timer_text(timers)
    return text + (f", then the harness's {deadline_s:g} s deadline" if deadline_s else "")


def class_words(kind: str, timers: Timers | None = None) -> str:
    """A class in a few words: ``at the driver's 60 s timer`` (with the timers),
    ``well before any timer``."""
    if kind == AT_TIMER and timers and timers.driver.window is not None:
        return f"at the driver's {_window_text(timers.driver.window)} timer"
    return CLASS_TEXT.get(kind, kind).split(":")[0]


def ttf_text(ttf: dict[str, Any], timers: Timers | None = None) -> str:
    """``after 60.0 s of simulated device time, at the driver's 60 s timer``."""
    return (f"after {duration_text(float(ttf['ms']))} of {clock_text(str(ttf.get('clock')))}"
            f", {class_words(str(ttf.get('class')), timers)}")


def trials_ttf_text(ttfs: list[dict[str, Any]], timers: Timers | None = None) -> str:
    """Failing trials' times to failure in one phrase: ``after 60.0 s, at the driver's 60 s
    timer`` when alike, else the range and each class with its count; "" for none."""
    if not ttfs:
        return ""
    times = sorted(float(t["ms"]) for t in ttfs)
    kinds: dict[str, int] = {}
    for ttf in ttfs:
        kinds[str(ttf.get("class"))] = kinds.get(str(ttf.get("class")), 0) + 1
    span = duration_text(times[0]) if duration_text(times[0]) == duration_text(times[-1]) \
        else f"{duration_text(times[0])} to {duration_text(times[-1])}"
    if len(kinds) == 1:
        return f"after {span}, {class_words(next(iter(kinds)), timers)}"
    return f"after {span} (" + ", ".join(f"{class_words(kind, timers)}: {n}"
                                         for kind, n in kinds.items()) + ")"


def timers_lines(timers: Timers) -> list[str]:
    """The timers as a render lists them, each with where it comes from."""
    deadline = timers.harness_deadline_s
    return [f"driver: {timer_text(timers)}; {timers.driver.source}",
            f"XRT's wait deadline: {timers.xrt_wait or NO_XRT_WAIT}",
            "harness deadline: " + (f"{deadline:g} s per trial" if deadline
                                    else str(timers.harness_deadline)),
            f"times to failure: {clock_text(timers.clock)}, from each runlist's "
            "submit to its answer"]
