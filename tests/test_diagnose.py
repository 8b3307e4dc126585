"""`runlist-harness diagnose`: from the observations of one or more reports to the causes
they support (harness.report.diagnosis), on reports the harness wrote on the simulated
stack under each hypothesis, and on reports made by hand in the shape of hardware
evidence (kernel-log events, the firmware's account, set-up refusals, a serve-probe).

What each row predicts comes from the threads the issue names (amd/xdna-driver#1605 and
#1083, Xilinx/mlir-air#1984, IRON#43 and #103, ROCm/FastFlowLM#712 and #536); the timers
from the flavour rows (harness.model.drivers, STACK.md 4).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from diagkit import (
    completed_trial,
    failed_trial,
    hardware_report,
    invoke,
    of,
    plan,
    serve_report,
    setup_refused,
    simulated,
    work_case,
)

from harness.app.cli import main
from harness.report.diagnosis import IDS
from harness.report.diagnosis.ranking import CONTRADICTED, FIRST


def first(diagnosis) -> str:
    assert diagnosis.entries[0].status == FIRST
    assert diagnosis.entries[0].status != CONTRADICTED
    return diagnosis.top.id


# -- reports the harness wrote, one per simulated hypothesis ----------------------------------

@pytest.mark.parametrize("profile, cause", [
    ("inflight-cap:40", "depth-limit"),
    ("staging,inflight-cap:40", "depth-limit"),
    ("slow:layer:2800000", "slow-work"),
    ("staging,slow:layer:90000", "slow-work"),
    ("reject-at:30", "refused"),
    ("oot,reject-at:24", "refused"),
    # a firmware whose protocol does not settle app health (the driver never asks): its
    # report records app_health null and still checks
    ("mainline,kernel:6.18,firmware:1.0.0.63,inflight-cap:40", "depth-limit"),
])
def test_each_hypothesis_is_named_first_from_the_harness_s_own_report(tmp_path, profile,
                                                                      cause):
    report = simulated(tmp_path, "r", "--profile", profile)
    diagnosis = of(report)
    assert first(diagnosis) == cause
    top = diagnosis.top
    assert top.supports and not top.contradictions and top.falsifier and top.experiment
    # every claim names its report and field
    assert all(str(report) in str(c) and "plans[" in str(c)
               for f in top.supports for c in f.cites)


def test_nondeterminism_is_named_from_rates_strictly_between_0_and_1(tmp_path):
    report = simulated(tmp_path, "r", "--profile", "flaky:0.4,seed:3", "--trials", "8")
    diagnosis = of(report)
    assert first(diagnosis) == "nondeterministic"
    assert "trials failed and" in diagnosis.top.supports[0].text


def test_work_hang_is_named_where_noops_complete_and_the_work_does_not(tmp_path):
    """work-hang:30: the case's runs carry work (an instruction stream of its own), so 42
    of them hang at the 30th while the depth-only control's 42 NOOPs complete and the cut
    21+21 completes, fast: a hang, not slow work, not depth."""
    report = simulated(tmp_path, "r", str(work_case(tmp_path)), "--profile", "work-hang:30")
    diagnosis = of(report)
    assert first(diagnosis) == "work-hang"
    texts = " ".join(f.text for f in diagnosis.top.supports)
    assert "while NOOPs complete at 42" in texts and "they hung rather than ran long" in texts
    assert diagnosis.entry("depth-limit").status == CONTRADICTED
    assert diagnosis.entry("slow-work").status == CONTRADICTED


def test_on_the_documented_stack_nothing_fails_and_it_says_what_hardware_would_decide(
        tmp_path):
    report = simulated(tmp_path, "r")
    diagnosis = of(report)
    assert diagnosis.top.id == "nothing-fails"
    assert "a hardware run decides: reproduce_ert_timeout on the machine" in \
        diagnosis.top.experiment
    # NOOPs only: the engine's work is said untested, not absolved
    assert diagnosis.entry("work-hang").status == "not tested"


def test_a_hypothesis_aimed_at_what_did_not_run_fails_nothing_and_says_so(tmp_path):
    report = simulated(tmp_path, "r", "--profile", "work-hang:8")
    diagnosis = of(report)
    assert diagnosis.top.id == "nothing-fails"
    assert "work-hang:8" in diagnosis.top.experiment and "NOOPs" in diagnosis.top.experiment


def test_undetermined_when_the_evidence_does_not_separate_the_leaders(tmp_path):
    """One trial of monolithic only (no cut, no control): NOOPs fail at the timer, and no
    shallower runlist, no other xclbin, no completed runlist of these commands says
    whether it is depth or slow work: undetermined, with the experiment to run."""
    report = simulated(tmp_path, "r", "minicpm5-2b-decode", "--profile", "inflight-cap:40",
                       "--trials", "1", "--plan", "monolithic", command="run")
    diagnosis = of(report)
    assert diagnosis.top.id == "undetermined"
    assert diagnosis.top.leading and diagnosis.top.experiment


def test_json_is_the_ranking_as_a_list_with_stable_ids(tmp_path):
    report = simulated(tmp_path, "r", "--profile", "inflight-cap:40")
    result = invoke("diagnose", "--json", str(report))
    assert result.exit_code == 0
    ranking = json.loads(result.stdout)
    assert isinstance(ranking, list)
    assert [entry["id"] for entry in ranking][0] == "depth-limit"
    assert sorted(entry["id"] for entry in ranking) == sorted(IDS)
    assert set(IDS) == {"depth-limit", "work-hang", "slow-work", "refused", "resources",
                        "nondeterministic", "not-npu-path", "firmware-mismatch", "driver-bug",
                        "iommu", "power-management", "device-access", "host-memory",
                        "contention", "wrong-binary"}
    top = ranking[0]
    assert top["status"] == "first" and top["for"] and top["falsifier"] and top["experiment"]
    assert top["reports"][0]["source"] == "SIMULATED"
    assert all(c.startswith(str(report)) for f in top["for"] for c in f["cites"])
    nothing = json.loads(invoke("diagnose", "--json",
                                str(simulated(tmp_path, "d"))).stdout)
    assert nothing[0]["id"] == "nothing-fails"


def test_the_text_says_where_the_evidence_comes_from(tmp_path):
    report = simulated(tmp_path, "r", "--profile", "inflight-cap:40")
    out = invoke("diagnose", str(report)).stdout
    assert out.startswith(f"evidence: {report} (reproduce, SIMULATED, profile "
                          "mainline,inflight-cap:40: not hardware evidence; by construction")
    assert "diagnosis: depth-limit:" in out and "falsified by:" in out and "next: " in out
    assert "the other causes:" in out


def test_runs_end_with_a_pointer_to_diagnose(tmp_path):
    out = tmp_path / "r.yaml"
    for args in (["reproduce"], ["run", "minicpm5-2b-decode", "--plan", "42"],
                 ["bisect", "minicpm5-2b-decode", "--lo", "1", "--hi", "8"]):
        result = invoke(*args, "--no-isolate", "--trials", "1", "--backend", "sim",
                        "--out", str(out), "--force")
        assert result.stdout.rstrip().splitlines()[-1].startswith(
            f"diagnose: runlist-harness diagnose {out}"), args


def test_a_report_that_does_not_check_is_refused_naming_it(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema: xdna-runlist-harness/report/v1\ncommand: run\n")
    result = CliRunner().invoke(main, ["diagnose", str(bad)])
    assert result.exit_code == 2
    assert "does not pass `report check`" in result.output


# -- hardware-shaped evidence, by hand ------------------------------------------------------

TDR = [{"event": "tdr_timeout", "usec": 1, "function": "aie2_tdr_detect"}]


def test_hardware_noops_at_the_timer_with_the_driver_s_lines_read_as_a_depth_limit(tmp_path):
    """Staging 2 s (tdr_timeout_ms 2000 on 6.17): NOOP 42 times out at 2.0 s with 'TDR
    timeout detected' in every trial, 21+21 completes in 2 ms, and the depth-only control
    (XRT's validate.xclbin) times out too."""
    timeout = [failed_trial(i, 42, [24, 18], "TIMEOUT", wall_ms=2004.0, events=TDR)
               for i in range(3)]
    report = hardware_report(tmp_path, "hw", [
        plan("monolithic", "42", [42], timeout),
        plan("halves", "21+21", [21, 21], [completed_trial(i, [21, 21], ms_per_run=0.06)
                                           for i in range(3)]),
        plan("depth-only", "42", [42], [failed_trial(i, 42, [24, 18], "TIMEOUT",
                                                     wall_ms=2003.0) for i in range(3)],
             control=True)], flavour="staging", kernel="6.17.0-1003-oem",
        timeout_setting="2000", sections={"xrt_smi_control": {
            "command": "xrt-smi validate --run runlist-latency", "result": "FAILED"}})
    diagnosis = of(report)
    assert first(diagnosis) == "depth-limit"
    assert diagnosis.reports[0].source == "hardware"
    cites = " ".join(str(c) for f in diagnosis.top.supports for c in f.cites)
    assert "driver-timer x3 (2004.0 ms)" in cites
    # the driver's own lines, read from the kernel log into events
    assert "trials[*].kernel_log.events = tdr_timeout x3" in cites
    # XRT's own deep runlist failing too, from the report's xrt-smi control
    assert any("XRT's own deep runlist" in f.text and "xrt_smi_control.result = FAILED"
               in str(f.cites[0]) for f in diagnosis.top.supports)


def test_a_firmware_error_that_names_its_run_at_once_reads_as_refused(tmp_path):
    errors = [failed_trial(i, 42, [24, 18], "ERROR", wall_ms=3.5, failing_chain=1,
                           failing_run=30, named=True) for i in range(3)]
    report = hardware_report(tmp_path, "hw", [
        plan("monolithic", "42", [42], errors),
        plan("halves", "21+21", [21, 21], [completed_trial(i, [21, 21], ms_per_run=0.05)
                                           for i in range(3)])])
    assert first(of(report)) == "refused"


def test_a_refused_context_the_run_s_own_demand_cannot_explain_reads_as_contention(tmp_path):
    """The run asks four contexts (one per xclbin) and every XDNA device gives six at least
    (npu1_regs.c hwctx_limit; 16 on npu4/5/6): a context refused with none left means
    other clients held them (contention), not the run's own demand (resources)."""
    refused = [setup_refused(i, "DRM_IOCTL_AMDXDNA_CREATE_HWCTX IOCTL failed (err=-22): "
                                "Invalid argument") for i in range(3)]
    report = hardware_report(tmp_path, "hw", [plan("monolithic", "42", [42], refused)])
    diagnosis = of(report)
    assert first(diagnosis) == "contention"
    assert "asks 4" in diagnosis.top.supports[0].text
    assert "CREATE_HWCTX" in " ".join(str(c) for f in diagnosis.top.supports for c in f.cites)
    assert any("cannot use them up" in f.text for f in diagnosis.entry("resources").against)


def test_a_capture_that_completes_where_flm_serve_fails_reads_as_not_the_npu_path(tmp_path):
    """The engine's own commands (a capture) complete through pyxrt at 42; flm serve drops
    the request with no XRT state: not the NPU path. With XRT's state in the server's
    error and only NOOPs through pyxrt, it stays undetermined."""
    pyxrt = hardware_report(tmp_path, "capture", [
        plan("frame", "42", [42], [completed_trial(i, [42], ms_per_run=0.4)
                                   for i in range(3)])], nop_only=False, case_kind="capture")
    server = serve_report(tmp_path, "serve", [("dropped", None), ("dropped", None)])
    diagnosis = of(pyxrt, server)
    assert first(diagnosis) == "not-npu-path"
    noops = hardware_report(tmp_path, "noops", [
        plan("monolithic", "42", [42], [completed_trial(i, [42], ms_per_run=0.05)
                                        for i in range(3)])])
    stated = serve_report(tmp_path, "stated", [("error-body", "TIMEOUT")])
    assert of(noops, stated).top.id != "not-npu-path"


def test_hardware_noops_that_complete_say_the_engine_s_commands_are_left(tmp_path):
    report = hardware_report(tmp_path, "hw", [
        plan("monolithic", "42", [42], [completed_trial(i, [42], ms_per_run=0.05)
                                        for i in range(3)])])
    diagnosis = of(report)
    assert diagnosis.top.id == "nothing-fails"
    assert "what fails must be in the engine's own commands" in diagnosis.top.experiment
    assert "capture record" in diagnosis.top.experiment


def test_several_reports_are_read_together(tmp_path):
    """A bisect's threshold and a reproduce's control, from two reports."""
    bisect = simulated(tmp_path, "b", "minicpm5-2b-decode", "--lo", "1", "--hi", "64",
                       "--profile", "inflight-cap:40", "--trials", "2", command="bisect")
    reproduce = simulated(tmp_path, "r", "--profile", "inflight-cap:40")
    diagnosis = of(bisect, reproduce)
    assert first(diagnosis) == "depth-limit"
    assert len(diagnosis.reports) == 2
    text = diagnosis.top.supports[0].text
    assert "runlists of 41 runs fail" in text and "runlists of 40 complete" in text


# -- the ranking's promises, over any observations --------------------------------------------

def _arms(draw, file: str):
    from hypothesis import strategies as st

    from harness.report.diagnosis.observed import NOOP, WORK, Arm
    from harness.report.timing import CLASS_TEXT
    arms = []
    for position in range(draw(st.integers(1, 4))):
        failed = draw(st.integers(0, 4))
        arm = Arm(file=file, position=position, name=f"p{position}", label=f"p{position}",
                  workload=draw(st.sampled_from([NOOP, WORK])), stand_in=False,
                  group=f"{file}#{draw(st.sampled_from(['case', 'control']))}",
                  runs=draw(st.lists(st.integers(1, 96), min_size=1, max_size=3)),
                  completed=draw(st.integers(0, 4)), failed=failed,
                  setup_failed=draw(st.integers(0, 1)))
        arm.ttf = [(draw(st.floats(0.5, 200_000.0)), draw(st.sampled_from(tuple(CLASS_TEXT))))
                   for _ in range(failed)]
        arm.failing_depths = [max(arm.runs)] * failed
        arm.failing_chain_runs = [min(24, max(arm.runs))] * failed
        arm.named_runs = draw(st.lists(st.integers(0, 95), max_size=failed))
        arm.run_ms = draw(st.lists(st.floats(0.001, 5000.0), max_size=3))
        arm.states.update({"TIMEOUT": failed, "COMPLETED": arm.completed})
        if arm.setup_failed:
            arm.setup_errors = ["set-up failed: DRM_IOCTL_AMDXDNA_CREATE_HWCTX IOCTL failed"]
        arms.append(arm)
    return arms


def test_no_cause_an_observation_contradicts_is_ever_first_and_a_lead_is_clear():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from harness.report.diagnosis import diagnose_observed
    from harness.report.diagnosis.observed import Observed
    from harness.report.diagnosis.ranking import MARGIN, MIN_SCORE
    from harness.report.header import read_timers
    from harness.report.timing import stack_timers

    @st.composite
    def reports(draw):
        flavour = draw(st.sampled_from(["mainline", "staging", "oot"]))
        header = {"backend": {"kind": "sim", "simulated": True,
                              "driver": {"flavour": flavour, "kernel": "7.0"}},
                  "settings": {"isolate": False}, "environment": {}}
        report = Observed(file="r.yaml", command="run", source="SIMULATED", profile=flavour,
                          by_construction=[], documented=True,
                          timers=read_timers(stack_timers(header)),
                          case="c", case_kind="case", layers=42)
        report.arms = _arms(draw, "r.yaml")
        return report

    @settings(max_examples=80, deadline=None)
    @given(reports())
    def check(report):
        diagnosis = diagnose_observed([report])
        assert sorted(e.id for e in diagnosis.entries if e.id in IDS) == sorted(IDS)
        top = diagnosis.top
        assert top.status == FIRST
        if not report.failures:
            # nothing-fails rests on enough answered trials; fewer say nothing yet
            enough = sum(a.answered for a in report.arms) >= 3
            assert top.id == ("nothing-fails" if enough else "undetermined")
        elif top.id not in ("undetermined", "nothing-fails"):
            assert not top.contradictions and top.supports
            assert top.score >= MIN_SCORE
            others = [e.score for e in diagnosis.entries[1:] if e.status == "candidate"]
            assert all(top.score - score >= MARGIN for score in others)
    check()


def test_the_firmware_s_timeout_report_argues_against_a_refusal(tmp_path):
    """Mainline 7.1 asks the firmware for its app health report on a timeout and XRT's
    message prints it (harness.model.drivers APP_HEALTH_QUERY, 25854131c04a): failures that
    carry it waited for a timer, which a refusal does not."""
    health = {"txn_op_idx": 0, "ctx_pc": 0, "fatal_error_type": 0,
              "fatal_error_exception_type": 0, "fatal_error_exception_pc": 0,
              "fatal_error_app_module": 0}
    timeouts = [failed_trial(i, 42, [24, 18], "TIMEOUT", wall_ms=60_010.0, health=health)
                for i in range(3)]
    report = hardware_report(tmp_path, "hw", [
        plan("monolithic", "42", [42], timeouts),
        plan("halves", "21+21", [21, 21], [completed_trial(i, [21, 21], ms_per_run=0.05)
                                           for i in range(3)])], kernel="7.1.0-1-generic")
    refused = of(report).entry("refused")
    assert any("the firmware reported one" in f.text
               and "trials[*].runlists[*].health = the firmware's report, 3 failing runlists"
               in str(f.cites[0]) for f in refused.against)
