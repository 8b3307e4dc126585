"""How each cause of the table reads the observations: for every cause, the findings
for it, against it and contradicting it, each with its weight and the fields it was read
from (`harness.report.diagnosis.findings`). Observations of plans that fail now and then
never carry a claim about "every trial"; times and chains are read from the plans that
fail consistently.
"""

from __future__ import annotations

from typing import Any

from harness.report.diagnosis.deciding import PROGRAM_FAILED
from harness.report.diagnosis.findings import (
    AGAINST,
    CONSISTENT_FAILURES,
    CONTRADICTS,
    FOR,
    MIN_TRIALS_FOR_A_RATE,
    STRONG,
    SUPPORT,
    WEAK,
    Evidence,
    Findings,
    fails_consistently,
    rarely_fails,
    rate_cite,
    ttf_cite,
)
from harness.report.diagnosis.fixed import (
    CANNOT,
    CAUGHT,
    MOSTLY,
    OUTLASTS,
    against_a_fixed_cause,
    coin_tosses,
    complete_at_or_past,
    contradict_fixed,
    depth_text,
    failing_depth,
    longer_timer_findings,
    same_stack,
    shallower_complete,
    unexplained,
)
from harness.report.diagnosis.observed import (
    NOOP,
    TIMER_EVENTS,
    TRACE_TIMER_EVENTS,
    WORK,
    Arm,
)
from harness.report.diagnosis.stack_judges import (
    deep_runlist_tests,
    refusal_states,
    server_path,
    signs,
)
from harness.report.diagnosis.vocabulary import UNKNOWN_WORK
from harness.report.timing import AT_DEADLINE, AT_ONCE, AT_TIMER, BEFORE_TIMER
from harness.report.verdict import and_listed


def judge_depth_limit(ev: Evidence) -> Findings:
    out = Findings()
    if not ev.noop() and not signs(ev, "runlist-test-failed", "runlist-test-passed"):
        out.untested = ("no plan is known to have run NOOP runs (what a table's runs carried "
                        "it does not say: its workload column): depth alone was not tested"
                        if any(a.workload == UNKNOWN_WORK for a in ev.arms) else
                        "no plan ran NOOP runs: depth alone was not tested")
        return out
    failing = sorted((a for a in ev.failing if a.workload == NOOP), key=failing_depth)
    for arm in [a for a in failing if fails_consistently(a)][:1]:
        shallower = shallower_complete(arm, ev)
        if shallower:
            ok = max(shallower, key=lambda a: a.deepest)
            out.add(FOR, STRONG, f"NOOP {depth_text(arm)} fail in every trial, while "
                    f"runlists of {ok.deepest} complete: a threshold in depth",
                    rate_cite(arm), rate_cite(ok))
        else:
            out.add(FOR, WEAK, f"NOOP {depth_text(arm)} fail in every trial (no shallower "
                    "runlist has completed yet: no threshold shows)", rate_cite(arm))
    control = [a for a in failing if a.group.endswith("#control") and fails_consistently(a)]
    if control:
        out.add(FOR, SUPPORT, "the depth-only control fails too: NOOPs on XRT's "
                "validate.xclbin at the same depth, so no kernel of the case is needed",
                rate_cite(control[0]))
    # a plan failing where runlists as deep complete is not failing for its depth; where
    # every plan that fails every trial is so, no depth limit is at work (where some are
    # not, it may be beside another cause: against it, not a contradiction)
    consistent = [a for a in ev.failing if fails_consistently(a)]
    passed = [(arm, past[0]) for arm in consistent
              if (past := complete_at_or_past(arm, ev, NOOP if arm.workload == NOOP else None,
                                              mostly=True))]
    if passed:
        arm, done = passed[0]
        out.add(CONTRADICTS if len(passed) == len(consistent) else AGAINST,
                STRONG if len(passed) == len(consistent) else SUPPORT,
                f"{arm.label} fails at {depth_text(arm)}, yet {done.label} completes "
                f"{done.completed} of {done.answered} trials at {done.deepest}: depth alone "
                "does not fail there", rate_cite(arm), rate_cite(done))
    for report in ev.reports:
        result = str((report.xrt_smi or {}).get("result"))
        cite = report.cite("xrt_smi_control.result", result)
        if result == "FAILED":
            out.add(FOR, SUPPORT, "XRT's own deep runlist (xrt-smi validate's runlist-latency, "
                    "1000 NOOP runs in one runlist) fails here too", cite)
        elif result == "PASSED":
            out.add(AGAINST, SUPPORT, "XRT's own deep runlist (xrt-smi validate's "
                    "runlist-latency, 1000 NOOP runs in one runlist) completes here", cite)
    deep_runlist_tests(out, ev)
    against_a_fixed_cause(out, ev, "a limit")
    named = [a for a in ev.failing if a.named_runs and any(k == AT_ONCE for _, k in a.ttf)]
    if named:
        out.add(AGAINST, STRONG, f"the device named run {named[0].named_runs[0]} of "
                f"{named[0].label} and failed it at once: a refusal of that run, not a limit "
                "on what was queued", named[0].cite("trials[*].runlists[*].failing_run",
                                                    named[0].named_runs[0]), ttf_cite(named[0]))
    # a NOOP runlist that completes at a depth where another failed says the failure was
    # not the depth's: what those failures show is not read for a limit
    if not out.contradicted:
        contradict_fixed(out, failing, ev, NOOP, "a depth limit")
    open_to_it = unexplained(failing, ev, NOOP)
    caught = ev.timed(open_to_it, *CAUGHT)
    if caught:
        out.add(FOR, WEAK, "the NOOP failures came at the driver's timer (a wedge its "
                "detection caught)", ttf_cite(caught[0]))
    logged = _timer_lines(open_to_it)
    if logged:
        out.add(FOR, WEAK, "the driver logged its timeout, or the firmware reported one",
                _timer_lines_cite(logged[0]))
    longer_timer_findings(out, ev, outlasts=False)
    return out


def _timer_lines(arms: list[Arm]) -> list[Arm]:
    """Failing arms whose kernel log has the driver's timeout lines (harness.logs
    .driver_lines: TDR timeout detected, Device isn't making progress, the timeout capture,
    a context dump), or whose failures carried the firmware's timeout report (the health
    fields XRT's message prints)."""
    return [a for a in arms if a.health or any(a.events.get(kind) for kind in TIMER_EVENTS)]


def _timer_lines_cite(arm: Arm) -> Any:
    kinds = ", ".join(f"{kind} x{arm.events[kind]}" for kind in TIMER_EVENTS
                      if arm.events.get(kind) and kind not in TRACE_TIMER_EVENTS)
    if kinds:
        return arm.cite("trials[*].kernel_log.events", kinds)
    traced = arm.events.get("job_timedout")
    if traced:
        return arm.cite("trials[*].trace_events.timed_out", traced)
    return arm.cite("trials[*].runlists[*].health", f"the firmware's report, {arm.health} "
                    "failing runlists")


def at_once(arm: Arm) -> bool:
    return bool(arm.ttf) and all(kind == AT_ONCE for _, kind in arm.ttf)


def _chain_against_timer(failing: list[Arm], ev: Evidence
                         ) -> tuple[float, int, Any, float] | None:
    """How long the first consistently failing chain's commands take whose time and timer
    are known (a plan that fails now and then may fail for another reason),
    from the completed runlists of the same commands: (milliseconds, runs in the chain,
    where the time was read, the driver's soonest timer in seconds)."""
    for arm in [a for a in failing if fails_consistently(a)]:
        timer = ev.timer_s(arm)
        found = ev.run_time(arm)
        if timer is None or found is None:
            continue
        per_run, cite = found
        chain = arm.longest_failing_chain or min(arm.submit_size, arm.deepest)
        return per_run * chain, chain, cite, timer[0]
    return None


def _no_work_ran(ev: Evidence) -> str:
    """Why the files cannot show a hang in the work: what ran were NOOPs, or no runlist ran
    here at all and a program's failure says nothing of which of its runs hung."""
    if ev.arms and all(a.workload == NOOP for a in ev.arms):
        return ("no plan ran the engine's own commands (every run carried NOOPs): a hang in "
                "the work cannot show")
    if ev.arms:
        return ("no plan is known to have run the engine's own commands (what a table's runs "
                "carried it does not say: its workload column): a hang in the work cannot "
                "show")
    failed = [s for r in ev.reports for s in r.signs if s.kind in PROGRAM_FAILED]
    if failed:
        return (f"the program's own runlist failed ({failed[0].cite}), but no runlist of its "
                "commands ran where the harness could see its runs: which of them hung, and "
                "whether they would complete given longer, cannot show")
    return "no runlist of the engine's commands ran: a hang in the work cannot show"


def judge_work_hang(ev: Evidence) -> Findings:
    out = Findings()
    if not ev.work():
        out.untested = _no_work_ran(ev)
        return out
    failing = [a for a in ev.failing if a.workload == WORK]
    if not failing:
        for arm in [a for a in ev.failing if a.workload == NOOP and fails_consistently(a)]:
            ok = complete_at_or_past(arm, ev, WORK)
            if ok:
                out.add(CONTRADICTS, STRONG, f"the engine's commands complete at "
                        f"{ok[0].deepest} runs ({ok[0].label}) where NOOPs fail: the work "
                        "does not hang", rate_cite(ok[0]), rate_cite(arm))
                break
        return out
    consistent = [a for a in failing if fails_consistently(a)]
    # the shallowest failing plan of the work where NOOPs as deep complete says most
    beside = [(arm, ok) for arm in sorted(consistent, key=failing_depth)
              if (ok := complete_at_or_past(arm, ev, NOOP))]
    if beside:
        arm, ok = beside[0]
        out.add(FOR, STRONG, f"the engine's commands fail at {depth_text(arm)} "
                f"({arm.label}) while NOOPs complete at {ok[0].deepest} ({ok[0].label})",
                rate_cite(arm), rate_cite(ok[0]))
    for arm in consistent[:1] if not beside else []:
        loose = [a for a in ev.arms if a.workload == NOOP and same_stack(a, arm, ev)
                 and a.never_fails and a.deepest >= failing_depth(arm)]
        if loose:
            out.add(FOR, WEAK, f"the engine's commands fail at {depth_text(arm)} "
                    f"({arm.label}); NOOPs completed at {loose[0].deepest} in "
                    f"{loose[0].completed} trial(s) ({loose[0].label})", rate_cite(arm),
                    rate_cite(loose[0]))
    # NOOPs failing as shallow explain the work's failures by depth: against a hang, unless
    # the work also fails where NOOPs as deep complete (then both may be at work)
    for arm in failing:
        noop_fail = [a for a in ev.failing if a.workload == NOOP and same_stack(a, arm, ev)
                     and fails_consistently(a) and a.deepest <= max(arm.failing_depths or [0])]
        if noop_fail and not beside:
            out.add(AGAINST, STRONG, f"NOOPs fail too, at {noop_fail[0].deepest} runs "
                    f"({noop_fail[0].label}): depth alone explains it",
                    rate_cite(noop_fail[0]))
            break
    contradict_fixed(out, failing, ev, "commands", "a hang at the Nth run of the work")
    caught = ev.timed(unexplained(failing, ev, "commands"), *CAUGHT, AT_DEADLINE)
    if caught:
        out.add(FOR, WEAK, "the failures came at the driver's timer or found no answer: a "
                "hang", ttf_cite(caught[0]))
    quick = [a for a in failing if at_once(a) and fails_consistently(a)]
    if quick:
        out.add(CONTRADICTS, STRONG, f"{quick[0].label} failed at once in every trial: a "
                "hang is noticed by a timer, never at once", ttf_cite(quick[0]))
    timed = _chain_against_timer(failing, ev)
    if timed is not None:
        ms, chain, cite, timer = timed
        if ms < CANNOT * timer * 1000:
            out.add(FOR, SUPPORT, f"a chain of {chain} of these commands takes {ms:.1f} ms "
                    f"when they complete, far below the {timer:g} s timer: they hung "
                    "rather than ran long", cite)
        elif ms >= OUTLASTS * timer * 1000:
            out.add(AGAINST, SUPPORT, f"a chain of {chain} of these commands takes "
                    f"{ms / 1000:.1f} s: long enough to outlast the {timer:g} s timer "
                    "without hanging", cite)
    against_a_fixed_cause(out, ev, "a hang at the Nth run")
    longer_timer_findings(out, ev, outlasts=False)
    return out


def judge_slow_work(ev: Evidence) -> Findings:
    out = Findings()
    failing = ev.failing
    # runlists of the same commands that complete where these failed did not outlast it
    contradict_fixed(out, failing, ev, "commands", "work that outlasts the timer")
    caught = ev.timed(unexplained(failing, ev, "commands"), AT_TIMER)
    if caught:
        out.add(FOR, SUPPORT, "the failures came at the driver's timer", ttf_cite(caught[0]))
    quick = [a for a in ev.timed(failing, AT_ONCE, BEFORE_TIMER) if fails_consistently(a)]
    if quick:
        out.add(CONTRADICTS, STRONG, f"{quick[0].label} failed before the driver's timer "
                "could fire, every time: work that outlasts the timer fails at the timer",
                ttf_cite(quick[0]))
    timed = _chain_against_timer(failing, ev)
    if timed is not None:
        ms, chain, cite, timer = timed
        if ms >= OUTLASTS * timer * 1000:
            out.add(FOR, STRONG, f"a chain of {chain} of these commands takes "
                    f"{ms / 1000:.1f} s (from the runlists of them that completed): past the "
                    f"{timer:g} s timer, while shorter runlists complete", cite)
        elif ms < CANNOT * timer * 1000:
            out.add(CONTRADICTS, STRONG, f"a chain of {chain} of these commands takes "
                    f"{ms:.1f} ms when they complete, far below the {timer:g} s timer: "
                    "they cannot outlast it", cite)
        else:
            out.add(AGAINST, SUPPORT, f"a chain of {chain} of these commands takes "
                    f"{ms / 1000:.1f} s, short of the {timer:g} s timer", cite)
    against_a_fixed_cause(out, ev, "work that outlasts the timer")
    longer_timer_findings(out, ev, outlasts=True)
    return out


def judge_refused(ev: Evidence) -> Findings:
    out = Findings()
    failing = ev.failing
    named = [a for a in failing if a.named_runs and not a.states.get("TIMEOUT")]
    if named:
        arm = named[0]
        state = next(s for s in arm.states if s not in ("COMPLETED", "TIMEOUT"))
        out.add(FOR, STRONG, f"the device named the failing run ({state} at run "
                f"{arm.named_runs[0]} of {arm.label}, from the chain's error_index)",
                arm.cite("trials[*].runlists[*].failing_run", arm.named_runs[0]),
                rate_cite(arm))
        positions = {run for a in named for run in a.named_runs}
        if len(positions) == 1 and len({a.deepest for a in named}) > 1:
            out.add(FOR, WEAK, f"runlists of different depths fail at the same run "
                    f"({positions.pop()})", *[rate_cite(a) for a in named[:2]])
    quick = [a for a in failing if at_once(a)]
    if quick:
        out.add(FOR, SUPPORT, f"{quick[0].label} failed at once, far below every timer",
                ttf_cite(quick[0]))
    caught = [a for a in ev.timed(failing, *CAUGHT) if fails_consistently(a)]
    if caught:
        # where another plan was refused at once, naming its run, this one's hang is beside
        # the refusal, not against it having happened
        refusal = [a for a in named + quick if fails_consistently(a)]
        out.add(AGAINST if refusal else CONTRADICTS, SUPPORT if refusal else STRONG,
                f"{caught[0].label} failed at the driver's timer, every time: it waited for "
                "a hang to be noticed; nothing refused it at once", ttf_cite(caught[0]))
    logged = [a for a in _timer_lines(ev.timed(failing, *CAUGHT)) if fails_consistently(a)]
    if logged:
        out.add(AGAINST, SUPPORT, "the driver logged a timeout for these failures, or the "
                "firmware reported one: it waited for a hang to be noticed",
                _timer_lines_cite(logged[0]))
    errors = [a for a in failing if a.events.get("aie_error")]
    if errors:
        out.add(FOR, WEAK, "the kernel log has the firmware's AIE error lines",
                errors[0].cite("trials[*].kernel_log.events", "aie_error"))
    refusal_states(out, ev)
    against_a_fixed_cause(out, ev, "a refusal")
    return out


def judge_nondeterministic(ev: Evidence) -> Findings:
    out = Findings()
    tosses = sorted(coin_tosses(ev), key=lambda a: -(a.rate or 0.0))
    for arm in tosses[:3]:
        # a plan that mostly fails yet completes at times: no fixed cause does that; one
        # that mostly completes and fails at times may be noise beside one
        out.add(FOR, STRONG if (arm.rate or 0.0) >= MOSTLY else SUPPORT,
                f"{arm.label}: {arm.failed} of {arm.answered} trials failed and "
                f"{arm.completed} completed, the same runlists each time", rate_cite(arm))
    rare = [a for a in ev.arms if rarely_fails(a)]
    fixed = [a for a in ev.failing if fails_consistently(a)]
    if rare and not fixed and not tosses:
        # no plan fails every trial: a rare failure is not noise beside a fixed cause, it is
        # the failure, and the same runlists completing otherwise make it intermittent; one
        # failure may be a one-off, two are a rate
        failures = sum(a.failed for a in rare)
        out.add(FOR, STRONG if failures >= CONSISTENT_FAILURES else SUPPORT,
                f"{and_listed([a.label for a in rare])}: {failures} of "
                f"{sum(a.answered for a in rare)} trials failed, the same runlists "
                "completing in the others, and no plan fails every trial", *[
                    rate_cite(a) for a in rare])
    elif rare:
        out.add(FOR, WEAK, f"{rare[0].label} fails rarely ({rare[0].failed} of "
                f"{rare[0].answered} trials)", rate_cite(rare[0]))
    failing = ev.failing
    steady = [a for a in failing if a.answered >= MIN_TRIALS_FOR_A_RATE and not a.mixed]
    if failing and not tosses and len(steady) == len(failing):
        out.add(AGAINST, SUPPORT, f"every failing plan failed in all of its trials "
                f"({MIN_TRIALS_FOR_A_RATE} or more each)", rate_cite(steady[0]))
    return out


def judge_not_npu_path(ev: Evidence) -> Findings:
    out = Findings()
    servers = [r for r in ev.reports if r.server_requests]
    if not servers and server_path(out, ev):
        return out
    if not servers:
        out.untested = ("no serve-probe report: flm serve was not compared with pyxrt "
                        "(investigate --serve URL, or serve-probe)")
        return out
    failed = [(r, q) for r in servers for q in r.server_requests
              if q.get("outcome") != "success"]
    if not failed:
        return out
    report, request = failed[0]
    cite = report.cite("server.requests[*].outcome", request.get("outcome"))
    # a rare failure beside it is noise (findings.rarely_fails), not the NPU path failing
    work_ok = [a for a in ev.arms if a.workload == WORK and (a.never_fails or rarely_fails(a))]
    noop_ok = [a for a in ev.arms if a.workload == NOOP and a.never_fails]
    if work_ok:
        whose = "the simulator's stand-in for the engine's commands" if work_ok[0].stand_in \
            else "the engine's own commands"
        out.add(FOR, STRONG, f"flm serve failed while {whose} through pyxrt complete "
                f"({work_ok[0].label})", cite, rate_cite(work_ok[0]))
    elif noop_ok:
        out.add(FOR, WEAK, f"flm serve failed while NOOP runlists through pyxrt complete "
                f"({noop_ok[0].label})", cite, rate_cite(noop_ok[0]))
    stateless = [q for _, q in failed if not q.get("state")]
    stated = [q for _, q in failed if q.get("state")]
    if stateless:
        out.add(FOR, SUPPORT, "the server's failures carry no XRT state: no NPU answered "
                "them", report.cite("server.requests[*].state", "none"))
    if stated:
        out.add(AGAINST, SUPPORT, f"the server's failure carries XRT's state "
                f"({stated[0].get('state')}): the NPU path answered it",
                report.cite("server.requests[*].state", stated[0].get("state")))
    work_failing = [a for a in ev.failing if a.workload == WORK and not rarely_fails(a)]
    if work_failing:
        out.add(CONTRADICTS, STRONG, f"the engine's commands fail through pyxrt too "
                f"({work_failing[0].label}): the NPU path fails", rate_cite(work_failing[0]))
    return out
