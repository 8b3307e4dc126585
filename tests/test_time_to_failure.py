"""Time to failure: each failing trial's time from submit to answer, on the device clock on
the simulated stack and in wall time on hardware and under emulation, beside the timers its
stack has, and classed (harness.report.timing).

The driver timers are the flavour rows' (harness.model.drivers, STACK.md 4): mainline's
drm_sched 60 s (Linux drivers/accel/amdxdna aie2_ctx.c aie2_sched_job_timedout), staging's
tdr_timeout_ms 2000 on kernels >= 6.17 and its legacy check (two silent periods, 4-6 s)
before, the out-of-tree check every timeout_in_sec (2 s) that fires after two silent
periods (aie2_tdr.c aie2_tdr_work: 4-6 s).
"""

from __future__ import annotations

import pytest
from diagkit import invoke, report_of

from harness.model.drivers import driver_build
from harness.report.check import check_report_file
from harness.report.fileformat import load_report
from harness.report.header import Timers, read_timers
from harness.report.timing import (
    AT_DEADLINE,
    AT_ONCE,
    AT_TIMER,
    BEFORE_TIMER,
    PAST_TIMER,
    classify,
    stack_timers,
    time_to_failure,
)


def typed(header: dict) -> Timers:
    """The timers a report with this header keeps, as the readers take them."""
    timers = read_timers(stack_timers(header))
    assert timers is not None
    return timers


def simulated_header(flavour: str, kernel: str, **settings) -> dict:
    return {"backend": {"kind": "sim", "simulated": True, "isolation": False,
                        "driver": {"flavour": flavour, "kernel": kernel}},
            "settings": {"isolate": False, **settings}, "environment": {}}


@pytest.mark.parametrize("flavour, kernel, earliest, latest", [
    ("mainline", "7.0", 60.0, 60.0),       # drm_sched's 60 s, not tunable
    ("staging", "7.0", 2.0, 2.0),          # tdr_timeout_ms 2000, per context (>= 6.17)
    ("staging", "6.16", 4.0, 6.0),         # the legacy device check: two silent periods
    # aie2_tdr_work: two silent 2 s periods, and one more check for each other connected
    # context swapped out idle at a check of its own, the check skipped
    # (aie2_rq_handle_idle_ctx, RQ_CTX_IDLE_COUNT in aie2_ctx_runqueue.c at 856409ca): 15
    # at the 16 contexts a device connects
    ("oot", "7.0", 4.0, 36.0),
])
def test_the_driver_timer_is_the_flavour_row_s(flavour, kernel, earliest, latest):
    timers = stack_timers(simulated_header(flavour, kernel))
    driver = timers["driver"]
    build = driver_build(flavour, kernel)
    assert (driver["earliest_s"], driver["latest_s"]) == (earliest, latest) == \
        (build.earliest_seconds, build.worst_seconds)
    assert build.source in driver["source"] and timers["clock"] == "device"
    assert timers["xrt_wait_s"] is None and "no timeout" in timers["xrt_wait"]
    assert timers["harness_deadline_s"] is None and "in process" in timers["harness_deadline"]


def test_on_hardware_the_timer_is_the_probed_flavour_on_its_kernel_with_its_setting():
    header = {"backend": {"kind": "xrt", "simulated": False, "isolation": True},
              "settings": {"isolate": True, "deadline_s": 30.0},
              "environment": {"driver": {"flavour": "staging", "timeout_setting": "5000"},
                              "system": {"kernel": "6.17.0-1003-oem"}}}
    timers = stack_timers(header)
    assert timers["clock"] == "wall"
    assert (timers["driver"]["earliest_s"], timers["driver"]["latest_s"]) == (5.0, 5.0)
    assert timers["driver"]["source"].startswith("the probed driver")
    assert timers["harness_deadline_s"] == 30.0
    unknown = stack_timers({**header, "environment": {"driver": {"flavour": None}}})
    assert unknown["driver"]["seconds"] is None
    read = read_timers(unknown)
    assert read is not None and read.driver.window is None
    assert classify(50.0, read) == AT_ONCE and classify(5000.0, read) == BEFORE_TIMER


@pytest.mark.parametrize("flavour, kernel, ms, kind", [
    ("mainline", "7.0", 1.5, AT_ONCE),
    ("mainline", "7.0", 900.0, AT_ONCE),          # under a second: at once even on 60 s
    ("mainline", "7.0", 20_000.0, BEFORE_TIMER),
    ("mainline", "7.0", 60_000.0, AT_TIMER),
    ("mainline", "7.0", 60_002.4, AT_TIMER),       # what ran before the hang
    ("mainline", "7.0", 120_000.0, PAST_TIMER),    # two timeouts in turn
    ("staging", "7.0", 150.0, AT_ONCE),            # under a tenth of 2 s
    ("staging", "7.0", 1000.0, BEFORE_TIMER),
    ("staging", "7.0", 2000.0, AT_TIMER),
    ("oot", "7.0", 5000.0, AT_TIMER),              # within the 4-6 s window
    # checks skipped beside idle connected contexts are still its timer (two: 10 s); past
    # every skip the device allows, two declarations in turn
    ("oot", "7.0", 10_000.0, AT_TIMER),
    ("oot", "7.0", 12_000.0, AT_TIMER),
    ("oot", "7.0", 80_000.0, PAST_TIMER),
])
def test_each_failure_is_classed_against_the_timers(flavour, kernel, ms, kind):
    assert classify(ms, typed(simulated_header(flavour, kernel))) == kind


def test_a_trial_the_deadline_ended_is_classed_at_the_harness_s_deadline():
    timers = typed(simulated_header("staging", "7.0"))
    ttf = time_to_failure({"index": 0, "status": "deadline", "deadline_s": 12.5,
                           "runlists": []}, timers)
    assert ttf == {"ms": 12500.0, "clock": "wall", "class": AT_DEADLINE}
    assert time_to_failure({"index": 0, "status": "completed", "runlists": []}, timers) is None
    # a set-up refused: no runlist answered, nothing to time (its error says why)
    assert time_to_failure({"index": 0, "status": "failed", "error": "set-up failed: x",
                            "runlists": []}, timers) is None


def test_emulated_and_stand_in_reports_read_wall_time():
    for backend in ({"kind": "xrt", "emulated": {"profile": "staging"}},
                    {"kind": "xrt", "stand_in": True}):
        header = {"backend": {**backend, "simulated": True,
                              "driver": {"flavour": "staging", "kernel": "7.0"}},
                  "settings": {"isolate": True}, "environment": {}}
        timers = typed(header)
        assert timers.clock == "wall"
        trial = {"status": "failed", "runlists": [{"state": "TIMEOUT", "wall_ms": 2003.0,
                                                   "device_ms": 1.0}]}
        assert time_to_failure(trial, timers)["ms"] == 2003.0


@pytest.mark.parametrize("profile, ms, kind, words", [
    ("slow:layer:2800000", 60_000.0, AT_TIMER, "at the driver's 60 s timer"),
    ("reject-at:30", 1.505, AT_ONCE, "well before any timer"),
    ("staging,hang-at:30", 2001.2, AT_TIMER, "at the driver's 2 s timer"),
])
def test_reports_console_and_render_carry_the_time_to_failure(tmp_path, profile, ms, kind,
                                                              words):
    out = tmp_path / "r.yaml"
    result = invoke("reproduce", "--no-isolate", "--trials", "1", "--no-control",
                    "--profile", profile, "--out", str(out))
    assert result.exit_code == 1, result.output
    assert "monolithic 42: trial 1" in result.output
    seconds = f"{ms / 1000:.1f} s" if ms >= 1000 else f"{ms:.1f} ms"
    assert f"after {seconds} of simulated device time, {words}" in result.output
    report = load_report(report_of(result))
    assert check_report_file(str(out)).problems == []
    assert report.sections["timers"]["clock"] == "device"
    (trial,) = report.plan("monolithic").trials
    assert trial.time_to_failure == {"ms": pytest.approx(ms, abs=0.01), "clock": "device",
                                     "runlist": 0, "class": kind}
    assert report.plan("halves").trials[0].time_to_failure is None
    rendered = invoke("report", "render", str(out)).output
    assert "| plan | trials | outcome | expected | time to failure |" in rendered
    assert f"after {seconds}, {words}" in rendered
    assert "**Timers:** driver: the driver's" in rendered
    text = invoke("report", "render", "--format", "text", str(out)).output
    assert f"after {seconds}, {words}" in text and "timers:" in text
