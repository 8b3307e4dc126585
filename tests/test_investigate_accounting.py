"""Device time, honestly (issue 49.6): what the trials would take on the machine the run
describes (a hung trial the timer in force, a refused one its real time, one the deadline
ended the deadline), summed and stated beside wall time; and a budget is never overspent by
more than the one trial started inside it."""

from __future__ import annotations

import pytest
from diagkit import invoke

from harness.model.results import RunlistOutcome, TrialResult, TrialStatus
from harness.report.fileformat import load_report
from harness.report.timing import DEVICE, WALL
from harness.search.accounting import Clock, spent


def _trial(status: TrialStatus, *, wall_ms: float, device_ms: float | None = None,
           deadline_s: float | None = None) -> TrialResult:
    runlists = [] if device_ms is None else [RunlistOutcome(0, 42, [24, 18], state="TIMEOUT",
                                                            device_ms=device_ms)]
    return TrialResult(0, status, wall_ms=wall_ms, runlists=runlists, deadline_s=deadline_s)


def test_a_hung_trial_costs_the_timer_on_the_device_clock_and_its_wall_time_beside():
    hung = _trial(TrialStatus.FAILED, wall_ms=1.5, device_ms=60_000.0)   # mainline's 60 s
    refused = _trial(TrialStatus.FAILED, wall_ms=0.4)                    # set-up refused
    used = spent([hung, refused], Clock(DEVICE))
    assert used.device_s == pytest.approx(60.0) and used.wall_s == pytest.approx(0.0019)
    assert used.text(Clock(DEVICE)).startswith("60.0 s of device time (the simulated clock")


def test_a_trial_the_deadline_ended_held_the_device_until_it():
    killed = _trial(TrialStatus.DEADLINE, wall_ms=17_900.0, deadline_s=17.8)
    assert Clock(WALL).device_s(killed) == pytest.approx(17.9)
    assert Clock(DEVICE).device_s(_trial(TrialStatus.DEADLINE, wall_ms=100.0,
                                         deadline_s=17.8)) == pytest.approx(17.8)


def test_the_emulator_s_clock_rate_scales_wall_time_to_the_device_s():
    backend = {"kind": "xrt", "simulated": True, "emulated": {"clock_rate": 100.0}}
    clock = Clock.of(WALL, backend)
    assert clock.rate == 100.0
    assert clock.device_s(_trial(TrialStatus.FAILED, wall_ms=20.0, device_ms=None)) == \
        pytest.approx(2.0)                                 # staging's 2 s, at 100x
    assert "the emulated clock, 100x the wall clock" in spent([], clock).text(clock)
    assert Clock.of(WALL, {"kind": "xrt", "simulated": False}).rate == 1.0


def test_the_report_and_the_verdict_state_device_time_beside_wall_time(tmp_path):
    out = tmp_path / "inv.yaml"
    invoke("investigate", "--no-isolate", "--profile", "inflight-cap:40", "--budget", "2",
           "--out", str(out))
    report = load_report(out)
    answer = report.sections["investigate"]["answer"]
    assert answer["device_s"] >= 60.0 and 0 < answer["wall_s"] < answer["device_s"]
    line = next(x for x in report.verdict["text"].splitlines() if x.startswith("investigated"))
    assert f"{answer['device_s']:.1f} s of device time (the simulated clock" in line
    assert f"{answer['wall_s']:.1f} s of wall time" in line


@pytest.mark.parametrize("profile", ["slow:layer:3400000", "inflight-cap:30",
                                     "work-hang:11", "flaky:0.2,seed:4",
                                     "serve-fault:error,flaky:0.3,seed:2"])
def test_the_budget_is_overspent_by_one_trial_at_most(tmp_path, profile):
    """Mainline's 60 s timer against a 1.5-minute budget: every path that starts a trial
    (an experiment's, the stand-in server's decode) stops once the budget is spent."""
    out = tmp_path / "inv.yaml"
    invoke("investigate", "--no-isolate", "--profile", profile, "--budget", "1.5", "--out",
           str(out))
    report = load_report(out)
    clock = Clock(DEVICE)
    trials = [t for p in report.plans for t in p.trials if t.status.finished]
    costs = [clock.device_s(t) for t in trials]
    # the last trial started inside the budget: without it (at most the dearest) spent less
    assert sum(costs) - max(costs) < 90.0
    assert report.sections["investigate"]["answer"]["device_s"] == \
        pytest.approx(sum(costs), abs=0.01)


def test_a_trial_its_plan_says_would_pass_the_budget_is_not_started(tmp_path):
    """Runs that carry work (no stand-in): the one runlist and the control each hang at
    mainline's 60 s; with 2.5 minutes, the cheap cut gets its trials and a third hung trial,
    which would end at 3 minutes, is not started."""
    from diagkit import work_case
    case = work_case(tmp_path)
    out = tmp_path / "inv.yaml"
    result = invoke("investigate", str(case), "--no-isolate", "--profile", "inflight-cap:40",
                    "--budget", "2.5", "--out", str(out))
    answer = load_report(out).sections["investigate"]["answer"]
    assert answer["stopped"] == "the budget of 2.5 min of device time is spent"
    assert 120.0 <= answer["device_s"] <= 150.0, result.stdout


def test_a_budget_too_small_for_one_hung_trial_says_what_would_go_on(tmp_path):
    out = tmp_path / "inv.yaml"
    invoke("investigate", "--no-isolate", "--profile", "inflight-cap:40", "--budget", "0.5",
           "--out", str(out))
    report = load_report(out)
    section = report.sections["investigate"]
    assert section["answer"]["device_s"] == pytest.approx(60.0, abs=0.1)   # one trial
    assert section["steps"][0] == {**section["steps"][0], "experiment": "three-way",
                                   "stopped": "the budget"}
    text = report.verdict["text"]
    assert "its dearest trial cost 60.0 s of device time" in text
    assert f"next: runlist-harness investigate --resume {out} --budget 6" in text


def test_the_bundle_states_device_time_beside_wall_time(tmp_path):
    import tarfile
    out = tmp_path / "inv.yaml"
    invoke("investigate", "--no-isolate", "--profile", "reject-at:30", "--out", str(out))
    bundled = invoke("report", "bundle", str(out))
    assert bundled.exit_code == 0, bundled.output
    archive = next(tmp_path.glob("*.tar.gz"))
    with tarfile.open(archive) as tar:
        texts = [tar.extractfile(m).read().decode() for m in tar.getmembers()
                 if m.isfile() and m.name.endswith(".md")]
    said = [t for t in texts if "s of device time (the simulated clock" in t]
    assert said and all("s of wall time" in t for t in said)
