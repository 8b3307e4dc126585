"""The one experiment that separates the causes the evidence leaves open, with the device
time it costs, for an `undetermined` answer.

Where no NOOP runlist ran (a user's kernel log and the engine's error, a table of the
engine's own runs) the causes of the runlist itself (depth, the work, work that outlasts
the timer, chance) cannot be told apart. Where the program's own commands are what failed
(XRT's state in its output, a table of its runs), the one experiment that separates them
all is those commands captured and run beside NOOPs at the same depth (`capture record`,
then `reproduce_ert_timeout --capture`: the frame as captured, a cut of it and the
depth-only NOOP control, three trials each; where XRT captured them beside the evidence,
`reproduce_ert_timeout --capture DIR` at once), as the maintainers of Xilinx/mlir-air#1969
and ROCm/FastFlowLM#712 put it: NOOPs alone tell depth from the rest, not a hang in the
work from work that outlasts the timer. Where nothing says what ran, the NOOP depth test
(`reproduce_ert_timeout`: the case's one runlist, its cut and the depth-only NOOP
control) does. Where NOOPs ran and every one completed and the engine's commands never
ran, capturing them decides. Otherwise the leader's own experiment does.

Where a submit was refused -EIO with no hang before it (the legacy tree's context that
could not connect to the firmware at its first job: `wedged`), nothing of the runlist ran:
the driver's own lines of that moment name the step of the connect that failed (the
firmware refusing the context, the heap's mapping, the xclbin's kernels: src/driver/amdxdna
aie2_ctx.c aie2_ctx_connect, aie2_hwctx.c aie2_hwctx_start), so where no file holds them the
experiment is the kernel log of the failing run, beside the xclbin's target against this NPU.

Device time is what those trials would take on the driver the evidence shows: every
trial of a plan that fails held until the driver's timer, at most (its latest window);
where the driver is not known, the slowest timer any flavour has (the in-tree driver's
60 s), said as such.
"""

from __future__ import annotations

from harness.model.drivers import FLAVOURS, KERNELS, LEGACY, driver_build, slowest_seconds
from harness.report.diagnosis.findings import Evidence
from harness.report.diagnosis.observed import WORK
from harness.report.diagnosis.vocabulary import is_flavour
from harness.report.diagnosis.wedged import wedge_findings, wedge_signs
from harness.report.verdict import ENGINE_DEFAULT, capture_how

TRIALS = 3                     # the shipped cases' trials per plan
PLANS = 3                      # the case's runlist, its cut, the depth-only control
RUNLIST_CAUSES = ("depth-limit", "work-hang", "slow-work", "nondeterministic")
# a program's own words that its commands failed (vocabulary.SIGNS)
PROGRAM_FAILED = ("runlist-failed", "unexpected-state")
UNKNOWN_PROGRAM = "PROGRAM ARGS"      # the failing program, where no file names it
_FLM = ("FastFlowLM",)
# what the driver prints of a context's connect that failed (the module docstring)
CONNECT_LINES = ("context-unavailable", "context-refused", "host-map-failed",
                 "wrong-columns", "xclbin-mismatch", "restart-failed", "mailbox-error",
                 "firmware-refused", "firmware-boot-failed")


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


def longer_timer(flavour: str | None, *, at_boot: bool = False,
                 module: str | None = None) -> str:
    """How this driver's timer is lengthened (from its flavour row), in a command, naming
    the module the files show by its name where they show one (the legacy tree loads as
    amdxdna up to the package's 2.21, as amdxdna_legacy from 2.25); at the next boot where
    the device is wedged (a reload does not clear a wedge)."""
    row = FLAVOURS.get(flavour or "")
    if row is None:
        return ("lengthen the driver's timer (the DKMS drivers' tdr_timeout_ms or "
                "timeout_in_sec module parameter; the in-tree driver's 60 s is fixed)")
    if row.parameter is None:
        return (f"the {row.called} driver's timer is fixed: install the DKMS driver "
                "(amd/xdna-driver) for one that can be lengthened")
    module = module or row.module or "amdxdna"
    longer = f"{row.default * 10:g}"
    if at_boot:
        return (f"`echo 'options {module} {row.parameter}={longer}' | sudo tee "
                f"/etc/modprobe.d/{module}-timer.conf` before the reboot (this changes the "
                "machine until the file is removed)")
    return (f"`sudo modprobe -r {module} && sudo modprobe {module} {row.parameter}={longer}` "
            "(this changes the machine until the module is loaded again)")


def _program_failed(ev: Evidence) -> bool:
    """Whether what failed is a program's own commands: a table's runs of the engine, or
    XRT's state in a program's output."""
    return any(a.workload == WORK for a in ev.failing) or any(
        s.kind in PROGRAM_FAILED for r in ev.reports for s in r.signs)


def program_of(ev: Evidence) -> str:
    """The command that runs the failing program: the reports' case engine, FastFlowLM's
    where its output shows (the model a table names, where it gives a tag), else a
    placeholder."""
    named = next((r.engine for r in ev.reports if r.engine), None)
    if named:
        return named
    if any(part.startswith(_FLM) for r in ev.reports for part in r.read_as) or any(
            r.stack.value("flm") for r in ev.reports):
        tags = [a.model.split()[0] for a in ev.failing if a.model and ":" in a.model]
        return f"flm run {tags[0]}" if tags else ENGINE_DEFAULT
    return UNKNOWN_PROGRAM


def _failing_depth(ev: Evidence) -> int | None:
    return min((d for a in ev.failing for d in a.failing_depths), default=None)


def _shown_depth(ev: Evidence) -> str:
    depth = _failing_depth(ev)
    return f"{depth} run{'s' if depth != 1 else ''}" if depth else "the case's depth"


def single_run_experiment(ev: Evidence, flavour: str | None, module: str | None) -> str:
    """What decides a failure of one run alone (a runlist of one, or a run): no cut and no
    depth to test, so the same run under a longer driver timer, which work that outlasts
    the timer completes and a hang does not (amd/xdna-driver#1083, Xilinx/mlir-air#1969)."""
    row = FLAVOURS.get(flavour or "")
    if row is not None and row.parameter is not None:
        seconds = row.seconds(row.default * 10)       # its silent checks included
        cost = (f"at most {TRIALS * seconds:g} s of device time: {TRIALS} trials, each held "
                f"at most until the longer timer, {seconds:g} s")
    else:
        cost = device_time(ev, TRIALS)
    return ("the failing run alone under a longer driver timer (one run: no cut and no depth "
            "to test): " + longer_timer(flavour, at_boot=bool(wedge_findings(ev)),
                                        module=module)
            + f", then {program_of(ev)} again, three times: work that outlasts the timer "
            "completes under the longer one, a hang does not; " + cost)


def noop_test(ev: Evidence, *, timed: bool = True) -> str:
    """The NOOP depth test at the failing depth, with its device time (`timed`)."""
    return (f"reproduce_ert_timeout on the machine (the NOOP depth test: one runlist of "
            f"{_shown_depth(ev)}, its cut and the depth-only NOOP control, three trials each; "
            "it separates depth from the work and tells which timer fires)"
            + (", " + device_time(ev) if timed else ""))


def _not_connected(ev: Evidence) -> bool:
    """A submit refused -EIO that is no wedge's (no hang before it), with no driver line
    in any file saying which step of connecting the context failed."""
    dead = [s for r in ev.reports for s in r.signs
            if s.kind == "context-dead" and s not in wedge_signs(r)]
    return bool(dead) and not any(s.kind in CONNECT_LINES for r in ev.reports for s in r.signs)


def connect_experiment(ev: Evidence) -> str:
    """The kernel log of a run whose context the legacy driver could not connect (said so
    where the files show another driver: only the legacy tree refuses a submit -EIO)."""
    flavour = next((r.stack.flavour for r in ev.reports if r.stack.flavour), None)
    other = "" if flavour is None or is_flavour(flavour, dkms=True, tree=LEGACY) else (
        f"only the legacy tree refuses a submit -EIO, and these files show the "
        f"{FLAVOURS[flavour].called if flavour in FLAVOURS else flavour} driver: ")
    return (other + "the driver's kernel log of the failing run: runlist-harness capture record "
            f"--no-capture --out DIR -- {program_of(ev)} (it keeps the kernel log over the "
            "run), or `sudo dmesg` right after it: the legacy driver names the step of "
            "connecting the context that failed ('Alloc hw resource failed': the firmware "
            "refused the context; 'Map host buffer failed'; 'Config cu failed': the xclbin's "
            "kernels), then '... connect failed, err N'; beside it runlist-harness xclbin "
            "inspect XCLBIN and runlist-harness probe (the NPU generation the xclbin was built "
            "for, against this one's)")


def deciding_experiment(ev: Evidence, leaders: list[str], fallback: str) -> str:
    """The experiment that separates `leaders` (cause ids; none: nothing fits yet)."""
    if _not_connected(ev) and not ev.arms:
        return connect_experiment(ev)
    if "wrong-binary" in leaders and {"resources", "contention"} & set(leaders):
        # a refused context: the device's generation and its other holders, both the probe's
        return ("runlist-harness probe (this NPU's generation and columns, and who else holds "
                "it) beside runlist-harness xclbin inspect XCLBIN (the NPU its partition was "
                "built for): a binary for another generation, or contexts others hold")
    open_runlist = not leaders or any(cause in RUNLIST_CAUSES for cause in leaders)
    captured = next((r.capture for r in ev.reports if r.capture), None)
    if open_runlist and not ev.noop() and captured:
        return (f"reproduce_ert_timeout --capture {captured} (the engine's own commands as "
                "captured: its deepest runlist, its cut and the depth-only NOOP control at "
                "the same depth, three trials each; it separates depth from the work and "
                "tells which timer fires), " + device_time(ev))
    if open_runlist and not ev.noop():
        shown = _shown_depth(ev)
        timed = [s for r in ev.reports for s in r.signs if s.kind == "driver-timeout"]
        flavour = next((r.stack.flavour for r in ev.reports if r.stack.flavour), None)
        module = next((r.stack.module for r in ev.reports if r.stack.module
                       and r.stack.flavour == flavour), None)
        then = (f"; where only the engine's commands fail at the driver's timer, a longer "
                f"timer tells work that outlasts it from a hang: "
                f"{longer_timer(flavour, at_boot=bool(wedge_findings(ev)), module=module)}"
                if timed else "")
        if _failing_depth(ev) == 1 and _program_failed(ev):
            return single_run_experiment(ev, flavour, module)
        if not _program_failed(ev):
            return noop_test(ev) + then
        return ("the failing program's own commands beside NOOPs at the same depth: "
                + capture_how(program_of(ev)) + f" (its frame as captured at {shown}, a cut "
                "of it and the depth-only NOOP control, three trials each: it separates "
                "depth, a hang in the work and work that outlasts the timer, and tells which "
                "timer fires), " + device_time(ev) + then + "; where it cannot be captured, "
                + noop_test(ev, timed=False) + " separates depth alone")
    noops = ev.noop()
    if open_runlist and noops and all(a.never_fails for a in noops) and not ev.work():
        engine = next((r.engine for r in ev.reports if r.engine), None) or "flm run MODEL"
        return (capture_how(engine) + " (the engine's own commands where NOOPs complete), "
                + device_time(ev))
    return fallback
