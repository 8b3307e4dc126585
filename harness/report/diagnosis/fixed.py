"""What the causes that fail the same way every time have in common, and what speaks
against them all: a depth limit, a hang at the Nth run, work that outlasts the timer and
a refusal fail every trial of a runlist they fail, so a runlist that completes where
another failed (itself in its other trials, or one as deep or deeper, of the same
commands) is evidence against them; and a driver timer made longer tells the work that
ran long from the hang that never ends. The judges (`judges.py`) read these."""

from __future__ import annotations

from harness.report.diagnosis.findings import (
    AGAINST,
    CONTRADICTS,
    FOR,
    STRONG,
    SUPPORT,
    WEAK,
    Evidence,
    Findings,
    coin_toss,
    completes_consistently,
    fails_consistently,
    rate_cite,
)
from harness.report.diagnosis.observed import (
    NOOP,
    Arm,
)
from harness.report.timing import AT_TIMER, PAST_TIMER

CAUGHT = (AT_TIMER, PAST_TIMER)           # a hang the driver's detection caught
MOSTLY = 0.5                              # a plan failing this share of its trials or more
# slow work: the commands of the failing chain must take at least this share of the
# timer to outlast it, and under the lower share they cannot
OUTLASTS, CANNOT = 0.9, 0.5


def same_stack(a: Arm, b: Arm, ev: Evidence) -> bool:
    one, other = ev.report_of(a), ev.report_of(b)
    return (one.source, one.profile, one.timers.driver.flavour) == \
        (other.source, other.profile, other.timers.driver.flavour)


def failing_depth(arm: Arm) -> int:
    return min(arm.failing_depths or [arm.deepest])


def complete_at_or_past(failing: Arm, ev: Evidence, workload: str | None, *,
                        mostly: bool = False) -> list[Arm]:
    """Arms of the same stack, of `workload` (any: None), whose runlists are as deep as the
    failing one's or deeper and that complete consistently (`mostly`: in most of their
    trials, two at least: a fixed depth limit lets no runlist past it complete, ever)."""
    def completing(arm: Arm) -> bool:
        if mostly:
            return arm.completed >= 2 and arm.completed >= arm.answered / 2
        return completes_consistently(arm)
    return [a for a in ev.arms if a is not failing and same_stack(a, failing, ev)
            and (workload is None or a.workload == workload) and completing(a)
            and a.deepest >= max(failing.failing_depths or [0])]


def mostly_completes(arm: Arm) -> bool:
    """Completed in most of its trials, two at least."""
    return arm.completed >= 2 and arm.completed >= arm.answered / 2


def completes_where_it_fails(failing: Arm, ev: Evidence, same: str) -> Arm | None:
    """The plan whose runlists complete, mostly, where `failing`'s failed: itself (its own
    runlists, in its other trials), or one of the same stack at its depth or deeper, of
    NOOPs (`same` NOOP) or of the same commands (`same` "commands"). A cause that fails
    every trial of a runlist it fails (a depth limit, a hang at the Nth run, work that
    outlasts the timer) cannot explain `failing`'s failures then; None where it may."""
    if same == NOOP:
        past = complete_at_or_past(failing, ev, NOOP, mostly=True)
    else:
        past = [a for a in complete_at_or_past(failing, ev, None, mostly=True)
                if a.group == failing.group]
    if past:                     # another plan, deeper: what a reader checks first
        return max(past, key=lambda a: (a.deepest, a.completed))
    return failing if mostly_completes(failing) else None


def unexplained(arms: list[Arm], ev: Evidence, same: str) -> list[Arm]:
    """The failing arms a fixed cause may explain (see `completes_where_it_fails`)."""
    return [a for a in arms if completes_where_it_fails(a, ev, same) is None]


def contradict_fixed(out: Findings, arms: list[Arm], ev: Evidence, same: str,
                     what: str) -> None:
    """Where every failing arm of `arms` completes, mostly, at its depth or deeper: the
    fixed cause `what` contradicted, by the first of them."""
    if not arms or unexplained(arms, ev, same):
        return
    arm = arms[0]
    done = completes_where_it_fails(arm, ev, same)
    assert done is not None
    where = (f"and completed the other {done.completed}" if done is arm else
             f"while {done.label} completes {done.completed} of {done.answered} trials at "
             f"{done.deepest} runs")
    out.add(CONTRADICTS, STRONG, f"{arm.label} failed {arm.failed} of {arm.answered} trials "
            f"at {depth_text(arm)} {where}: {what} fails every runlist that deep",
            rate_cite(arm), *([] if done is arm else [rate_cite(done)]))


def shallower_complete(failing: Arm, ev: Evidence) -> list[Arm]:
    return [a for a in ev.arms if same_stack(a, failing, ev) and completes_consistently(a)
            and a.deepest < failing_depth(failing)]


def depth_text(arm: Arm) -> str:
    return f"runlists of {failing_depth(arm)} runs"


def coin_tosses(ev: Evidence, near: Arm | None = None) -> list[Arm]:
    return [a for a in ev.arms if coin_toss(a) and (near is None or same_stack(a, near, ev))]


def against_a_fixed_cause(out: Findings, ev: Evidence, what: str) -> None:
    """A cause that fails the same way each time, against plans that fail at random: more
    against one that mostly fails yet completes at times (a fixed cause never lets a run
    complete), less against one that mostly completes (noise beside a fixed cause)."""
    tosses = sorted(coin_tosses(ev), key=lambda a: -(a.rate or 0.0))
    if tosses:
        arm = tosses[0]
        out.add(AGAINST, SUPPORT if (arm.rate or 0.0) >= MOSTLY else WEAK,
                f"{arm.label} fails in some trials and completes in others, the same "
                f"runlists each time: {what} fails the same way every time", rate_cite(arm))


def with_longer_timer(ev: Evidence) -> list[tuple[Arm, Arm, float]]:
    """Plans run again after the user gave the driver a longer timer, each beside the plan
    it repeats, which failed at the timer every time, and a table's runs of the same
    commands under a longer timer beside those that failed under a shorter one: (the
    repeat, the original, the timer then in seconds)."""
    out = []
    for again in ev.changed:
        changed = again.changed or {}
        timer = changed.get("timer_s")
        if changed.get("kind") != "timer" or not isinstance(timer, (int, float)):
            continue
        original = next((a for a in ev.arms if a.file == again.file
                         and a.name == changed.get("of")), None)
        if original is not None and fails_consistently(original) and \
                ev.timed([original], *CAUGHT) and again.answered:
            out.append((again, original, float(timer)))
    # ... and the same commands a table shows under two timers (its timer column)
    for slow, done in ev.under_longer_timers():
        if done.timer_s is not None:
            out.append((done, slow, float(done.timer_s)))
    return out


def longer_timer_findings(out: Findings, ev: Evidence, *, outlasts: bool) -> None:
    """What a longer driver timer showed, for a cause that outlasts the timer (`outlasts`:
    slow work, which then completes) or one that never ends (a wedge, a hang)."""
    for again, original, timer in with_longer_timer(ev):
        label = (again.changed or {}).get("label") or again.label
        # a plan the investigation ran again is read by its rate; a table's rows as typed
        # (one run under each timer is what a user tried by hand, amd/xdna-driver#1083)
        completes = mostly_completes(again) if again.changed else again.never_fails
        still = fails_consistently(again) if again.changed else again.always_fails
        if completes:
            out.add(FOR if outlasts else CONTRADICTS, STRONG,
                    f"{original.label} failed at the timer every time; with the driver's "
                    f"timer at {timer:g} s ({label}) the same commands complete "
                    f"{again.completed} of {again.answered} trials: they "
                    + ("ran long, and outlasted the timer" if outlasts
                       else "did not hang (a hang outlasts any timer)"),
                    rate_cite(again), rate_cite(original))
        elif still:
            out.add(AGAINST if outlasts else FOR, STRONG if outlasts else SUPPORT,
                    f"with the driver's timer at {timer:g} s ({label}) the commands of "
                    f"{original.label} still fail every trial ({again.failed} of "
                    f"{again.answered}): they do not end within {timer:g} s either",
                    rate_cite(again))
