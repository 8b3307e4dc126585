"""The one experiment that separates the causes the evidence leaves open, with the device
time it costs, for an `undetermined` answer.

Where no NOOP runlist ran (a user's kernel log and the engine's error, a table of the
engine's own runs) the causes of the runlist itself (depth, the work, work that outlasts
the timer, chance) cannot be told apart: the NOOP depth test beside the case's cut
decides between them (`reproduce_ert_timeout`: the case's one runlist, its cut and the
depth-only NOOP control, three trials each), on the engine's own commands where XRT
captured them beside the evidence (`reproduce_ert_timeout --capture DIR`). Where NOOPs ran
and every one completed and the engine's commands never ran, capturing them decides.
Otherwise the leader's own experiment does.

Device time is what those trials would take on the driver the evidence shows: every
trial of a plan that fails held until the driver's timer, at most (its latest window);
where the driver is not known, the slowest timer any flavour has (the in-tree driver's
60 s), said as such.
"""

from __future__ import annotations

from harness.model.drivers import FLAVOURS, KERNELS, driver_build, slowest_seconds
from harness.report.diagnosis.findings import Evidence
from harness.report.verdict import capture_how

TRIALS = 3                     # the shipped cases' trials per plan
PLANS = 3                      # the case's runlist, its cut, the depth-only control
RUNLIST_CAUSES = ("depth-limit", "work-hang", "slow-work", "nondeterministic")


def device_time(ev: Evidence, trials: int = TRIALS * PLANS) -> str:
    """`trials` that may each be held until the driver's timer, in words."""
    windows = [r.timers.driver.window for r in ev.reports if r.timers.driver.window]
    flavour = next((r.stack.flavour for r in ev.reports if r.stack.flavour), None)
    if windows:
        latest = max(w[1] for w in windows)
        driver = next(r.timers.driver for r in ev.reports if r.timers.driver.window)
        timer = f"the {driver.flavour} driver's {latest:g} s timer on Linux {driver.kernel}"
    elif flavour in FLAVOURS:
        latest = max(driver_build(flavour, k).worst_seconds for k in KERNELS)
        timer = f"the {FLAVOURS[flavour].called} driver's {latest:g} s timer (its slowest)"
    else:
        latest = slowest_seconds()
        timer = (f"the slowest driver timer, {latest:g} s (the driver these files show is "
                 "not known)")
    total = trials * latest
    shown = f"{total / 60:.1f} min" if total >= 60 else f"{total:.0f} s"
    return f"at most {shown} of device time: {trials} trials, each held at most until {timer}"


def longer_timer(flavour: str | None) -> str:
    """How this driver's timer is lengthened (from its flavour row), in a command."""
    row = FLAVOURS.get(flavour or "")
    if row is None:
        return ("lengthen the driver's timer (the DKMS drivers' tdr_timeout_ms or "
                "timeout_in_sec module parameter; the in-tree driver's 60 s is fixed)")
    if row.parameter is None:
        return (f"the {row.called} driver's timer is fixed: install the DKMS driver "
                "(amd/xdna-driver) for one that can be lengthened")
    module = row.module or "amdxdna"
    longer = f"{row.default * 10:g}"
    return (f"`sudo modprobe -r {module} && sudo modprobe {module} {row.parameter}={longer}` "
            "(this changes the machine until the module is loaded again)")


def deciding_experiment(ev: Evidence, leaders: list[str], fallback: str) -> str:
    """The experiment that separates `leaders` (cause ids; none: nothing fits yet)."""
    open_runlist = not leaders or any(cause in RUNLIST_CAUSES for cause in leaders)
    captured = next((r.capture for r in ev.reports if r.capture), None)
    if open_runlist and not ev.noop() and captured:
        return (f"reproduce_ert_timeout --capture {captured} (the engine's own commands as "
                "captured: its deepest runlist, its cut and the depth-only NOOP control at "
                "the same depth, three trials each; it separates depth from the work and "
                "tells which timer fires), " + device_time(ev))
    if open_runlist and not ev.noop():
        depth = min((d for a in ev.failing for d in a.failing_depths), default=None)
        shown = f"{depth} runs" if depth else "the case's depth"
        timed = [s for r in ev.reports for s in r.signs if s.kind == "driver-timeout"]
        flavour = next((r.stack.flavour for r in ev.reports if r.stack.flavour), None)
        then = (f"; where only the engine's commands fail at the driver's timer, a longer "
                f"timer tells work that outlasts it from a hang: {longer_timer(flavour)}"
                if timed else "")
        return (f"reproduce_ert_timeout on the machine (the NOOP depth test: one runlist of "
                f"{shown}, its cut and the depth-only NOOP control, three trials each; it "
                "separates depth from the work and tells which timer fires), "
                + device_time(ev) + then)
    noops = ev.noop()
    if open_runlist and noops and all(a.never_fails for a in noops) and not ev.work():
        engine = next((r.engine for r in ev.reports if r.engine), None) or "flm run MODEL"
        return (capture_how(engine) + " (the engine's own commands where NOOPs complete), "
                + device_time(ev))
    return fallback
