"""`runlist-harness diagnose FILE...` on any mix of harness reports and plain artefacts:
what it read as what, what it could not read and why, the ranking with FILE:LINE
citations, `--json` in today's shape (a list, the answer first, entries with id,
experiment, for, against), a refusal when nothing can be read, and recognition by
content, never by a file's name."""

from __future__ import annotations

import json

from diagkit import invoke, of, simulated

ERR = "amdxdna 0000:c6:00.1: [drm] *ERROR* "
DMESG = ("[    0.000000] Linux version 6.18.9-arch1-1 (linux@archlinux) #1 SMP\n"
         f"[    4.601230] {ERR}aie2_check_protocol: Incompatible firmware protocol major 7 "
         "minor 2\n")
FLM = "[Linux]  Kernel: 6.18.9-arch1-1\n[ERROR]  No NPU device found.\n"


def test_mixed_files_say_what_each_was_read_as_and_rank_with_citations(tmp_path):
    report = simulated(tmp_path, "r", "--profile", "inflight-cap:40")
    (tmp_path / "a").write_text(DMESG)
    (tmp_path / "b").write_text(FLM)
    (tmp_path / "c").write_text("it stopped working yesterday\n")
    result = invoke("diagnose", str(report), str(tmp_path / "a"), str(tmp_path / "b"),
                    str(tmp_path / "c"))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"evidence: {report} (reproduce, SIMULATED")
    assert lines[1] == f"read: {tmp_path / 'a'} as kernel log (dmesg): 2 lines"
    assert lines[2] == (f"read: {tmp_path / 'b'} as FastFlowLM output (flm serve, run or "
                        "validate): 2 lines")
    assert lines[3].startswith(f"not read: {tmp_path / 'c'}: none of its 1 lines is ")
    entry = of(report, tmp_path / "a", tmp_path / "b").entry("driver-bug")
    assert any(str(c).startswith(f"{tmp_path / 'a'}:2: ") for f in entry.supports
               for c in f.cites)


def test_json_keeps_its_shape_and_says_what_was_read(tmp_path):
    (tmp_path / "a").write_text(DMESG)
    (tmp_path / "c").write_text("no\n")
    result = invoke("diagnose", "--json", str(tmp_path / "a"), str(tmp_path / "c"))
    ranking = json.loads(result.stdout)
    assert isinstance(ranking, list) and ranking[0]["id"] == "driver-bug"
    assert all({"id", "experiment", "for", "against"} <= set(e) for e in ranking[1:])
    assert ranking[0]["reports"][0]["read_as"] == ["kernel log (dmesg): 2 lines"]
    assert ranking[0]["reports"][0]["source"] == "hardware"
    assert ranking[0]["not_read"][0]["file"] == str(tmp_path / "c")
    assert any(c.startswith(f"{tmp_path / 'a'}:2: ") for f in ranking[0]["for"]
               for c in f["cites"])


def test_nothing_readable_is_refused_naming_each_file_and_why(tmp_path):
    (tmp_path / "x").write_text("hello\n")
    (tmp_path / "y").write_bytes(b"\x00\x01\x02")
    result = invoke("diagnose", str(tmp_path / "x"), str(tmp_path / "y"))
    assert result.exit_code == 2
    assert f"{tmp_path / 'x'}: none of its 1 lines" in result.output
    assert f"{tmp_path / 'y'}: it is not text" in result.output
    assert "Traceback" not in result.output


def test_content_decides_never_the_name(tmp_path):
    """A kernel log named like JSON and a JSON error named like a kernel log."""
    (tmp_path / "error.json").write_text(DMESG)
    (tmp_path / "dmesg.txt").write_text('{"error":"runlist failed execution '
                                        '(ERT_CMD_STATE_TIMEOUT)"}\n')
    lines = invoke("diagnose", str(tmp_path / "error.json"),
                   str(tmp_path / "dmesg.txt")).stdout.splitlines()
    assert lines[0].endswith("error.json as kernel log (dmesg): 2 lines")
    assert lines[1].endswith("dmesg.txt as FastFlowLM's JSON error body: 1 line")


def test_an_engine_timeout_alone_is_undetermined_with_the_deciding_experiment(tmp_path):
    """The engine's own commands failed and no NOOP ran: what separates depth, a hang in
    the work and work that outlasts the timer is those commands captured and run beside
    NOOPs at the same depth (NOOPs alone tell only depth from the rest)."""
    (tmp_path / "a").write_text('{"error":"runlist failed execution (ERT_CMD_STATE_TIMEOUT)"}')
    lines = invoke("diagnose", str(tmp_path / "a")).stdout.splitlines()
    assert lines[1].startswith("diagnosis: undetermined: ")
    assert lines[2].startswith("  next: the failing program's own commands beside NOOPs at "
                               "the same depth: runlist-harness capture record ")
    assert "-- flm run MODEL, then reproduce_ert_timeout --capture DIR" in lines[2]
    assert "the depth-only NOOP control" in lines[2]
    assert "at most 9.0 min of device time" in lines[2]
    assert "reproduce_ert_timeout on the machine (the NOOP depth test" in lines[2]


def test_a_failure_that_names_no_program_s_commands_gets_the_noop_depth_test(tmp_path):
    """A kernel log's timeout alone says nothing of what ran: the NOOP depth test."""
    (tmp_path / "a").write_text("[  5.0] amdxdna 0000:c5:00.1: [drm] *ERROR* "
                                "aie2_tdr_detect: TDR timeout detected\n")
    lines = invoke("diagnose", str(tmp_path / "a")).stdout.splitlines()
    assert lines[1].startswith("diagnosis: undetermined: ")
    assert lines[2].startswith("  next: reproduce_ert_timeout on the machine (the NOOP depth "
                               "test")


def test_the_help_names_the_artefacts_it_reads():
    text = invoke("diagnose", "--help").output
    for what in ("dmesg", "journalctl -k", "flm serve", "xrt-smi examine", "outcomes table",
                 "never by its name"):
        assert what in " ".join(text.split())


STAGING_TDR = (f"[  812.002311] {ERR}aie2_tdr_detect: TDR timeout detected\n"
               "[  812.002400] amdxdna 0000:c6:00.1: [drm] aie2_tdr_work_func: Device isn't "
               "making progress\n")
ENGINE_TIMEOUT = '{"error":"runlist failed execution (ERT_CMD_STATE_TIMEOUT)"}\n'


def test_staging_s_own_timeout_lines_name_its_tree_and_timer(tmp_path):
    """The in-tree driver prints no timeout line of its own (7.0: the trace event only),
    so [drm] lines from aie2_tdr_detect are the staging tree's (its flavour row), and the
    deciding experiment's device time is held to staging's timer, not the slowest."""
    (tmp_path / "a").write_text(STAGING_TDR)
    (tmp_path / "b").write_text(ENGINE_TIMEOUT)
    diagnosis = of(tmp_path / "a", tmp_path / "b")
    assert diagnosis.reports[0].stack.flavour == "staging"
    assert "the staging driver's" in diagnosis.top.experiment
    assert "the driver these files show is not known" not in diagnosis.top.experiment


def test_a_program_s_failure_alone_is_not_said_to_have_run_noops(tmp_path):
    """Only the engine's error and the kernel log: nothing ran NOOPs, so work-hang is not
    'untested because every run carried NOOPs'; it is untested because no runlist of the
    engine's ran where its runs could be seen."""
    (tmp_path / "a").write_text(STAGING_TDR)
    (tmp_path / "b").write_text(ENGINE_TIMEOUT)
    hang = of(tmp_path / "a", tmp_path / "b").entry("work-hang")
    assert hang.status == "not tested"
    assert "NOOPs" not in hang.untested and f"{tmp_path / 'b'}:1" in hang.untested
