"""The report header read once into typed sections (harness.report.header): what each
section feeds in a render, the defaults an old report without it gets, a malformed section
read as absent, and the untyped walks left in harness/report counted down."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import harness
from harness.report.compare import attributes
from harness.report.header import ReportHeader, read_header
from harness.report.render import command_line, environment_rows, harness_made_by, title

REPORT = Path(harness.__file__).resolve().parent / "report"

# every optional section the readers use, as the harness writes it on a machine
FULL: dict[str, Any] = {
    "command": "reproduce",
    "harness": {"version": "0.1.0", "commit": "abc123",
                "argv": ["reproduce_ert_timeout", "--trials", "2"]},
    "backend": {"kind": "xrt", "simulated": False},
    "case": {"name": "minicpm5-2b-decode", "flow": "elf"},
    "settings": {"flow": "instr-bo"},
    "environment": {
        "system": {"kernel": "6.18.0", "distribution": "Fedora 43", "hostname": "box",
                   "machine_id": "0123456789abcdef"},
        "npu": {"present": True, "generation": "NPU5 Strix Halo",
                "ioctl": {"firmware": "1.1.2.65", "power_mode": "turbo",
                          "driver_version": "0.6"},
                "sysfs": {"fw_version": "1.0.0.1"}},
        "driver": {"loaded": True, "module": "amdxdna", "flavour": "out-of-tree",
                   "timeout_rule": "2 s per command", "parameters": {"timeout_in_sec": 2}},
        "xrt": {"pyxrt": {"xrt_version": "2.21.75", "file": "pyxrt.so"},
                "mapped": [{"path": "libxrt_coreutil.so.2"}]},
        "memlock": {"soft": 1, "hard": 2},
    },
}

# the lines of `environment_rows` each environment section feeds, with it and without it
FED = {
    "system": [(("kernel", "6.18.0"), ("kernel", "?")),
               (("distribution", "Fedora 43"), ("distribution", "?"))],
    "npu": [(("NPU generation", "NPU5 Strix Halo"), ("NPU generation", "unknown")),
            (("firmware", "1.1.2.65"), ("firmware", "unknown")),
            (("power mode", "turbo"), ("power mode", "unknown"))],
    "driver": [(("driver", "amdxdna 0.6, flavour out-of-tree"), ("driver", "not recorded")),
               (("timeout rule", "2 s per command"), ("timeout rule", "-"))],
    "xrt": [(("XRT", "2.21.75 (pyxrt.so)"), ("XRT", "not recorded")),
            (("XRT libraries mapped", "libxrt_coreutil.so.2"), ("XRT libraries mapped", "none"))],
    "memlock": [(("memlock", "soft 1, hard 2"), ("memlock", "soft None, hard None"))],
}


def typed(header: ReportHeader) -> ReportHeader:
    """The header's typed fields, without the raw sections kept for untyped readers."""
    return replace(header, environment=replace(header.environment, raw={}),
                   backend=replace(header.backend, raw={}))


def without(section: str) -> dict[str, Any]:
    env = {k: v for k, v in FULL["environment"].items() if k != section}
    return {**FULL, "environment": env}


def test_every_section_feeds_its_lines():
    rows = environment_rows(FULL["environment"])
    for lines in FED.values():
        for present, _ in lines:
            assert present in rows
    assert title(FULL) == "minicpm5-2b-decode: hardware NPU (NPU5 Strix Halo)"
    assert command_line(FULL) == "reproduce_ert_timeout --trials 2"
    assert harness_made_by(FULL) == "xdna-runlist-harness 0.1.0, source commit abc123"
    assert attributes(FULL) == {"profile": "hardware", "firmware": "1.1.2.65",
                                "driver": "out-of-tree", "XRT": "2.21.75", "machine": "box",
                                "case": "minicpm5-2b-decode", "param timeout_in_sec": "2"}
    assert read_header(FULL).settings.flow == "instr-bo"


# ids spelled apart from the section names: the id "npu" would mark a test as needing one
@pytest.mark.parametrize("section", sorted(FED), ids=lambda name: f"without-{name}")
def test_a_report_without_a_section_reads_as_an_old_one_did(section):
    rows = environment_rows(without(section)["environment"])
    for present, absent in FED[section]:
        assert absent in rows and present not in rows
    others = [line for name, lines in FED.items() if name != section for line in lines]
    for present, _ in others:
        if section != "npu" or present[0] != "driver":     # the ioctl names the version
            assert present in rows


def test_without_case_harness_or_environment_the_old_defaults_show():
    bare = {"command": "run", "backend": {"kind": "xrt"}}
    assert title(bare) == "?: hardware NPU"
    assert command_line(bare) == "runlist-harness run"
    assert harness_made_by(bare) == ("xdna-runlist-harness ?, source commit unknown (not run "
                                     "from a git checkout)")
    assert attributes(bare)["case"] == "None"


@pytest.mark.parametrize("section", ["environment", "backend", "case", "harness", "npu",
                                     "driver", "xrt", "ioctl"], ids=lambda name: f"bad-{name}")
def test_a_malformed_section_reads_as_absent(section):
    """A list where a mapping is due: read as absent by report.header, in one place, not a
    crash in whichever reader meets it first."""
    data: dict[str, Any] = {**FULL, "environment": dict(FULL["environment"])}
    if section in ("npu", "driver", "xrt"):
        data["environment"][section] = ["malformed"]
    elif section == "ioctl":
        data["environment"]["npu"] = {**FULL["environment"]["npu"], "ioctl": ["malformed"]}
    else:
        data[section] = ["malformed"]
    absent = without(section) if section in ("npu", "driver", "xrt") else \
        {k: v for k, v in FULL.items() if k != section}
    if section == "ioctl":
        absent = {**FULL, "environment": {**FULL["environment"], "npu": {
            k: v for k, v in FULL["environment"]["npu"].items() if k != "ioctl"}}}
    assert typed(read_header(data)) == typed(read_header(absent))
    assert environment_rows(data.get("environment")) == environment_rows(
        absent.get("environment") or {})
    assert title(data) == title(absent)
    assert attributes(data) == attributes(absent)


# `.get(...) or {}` and `isinstance(..., dict)` across harness/report (report/header.py,
# where every section is read, excluded): 88 and 99 before the typed header; 40 and 93 once
# render.py, compare.py and bundle.py read through it; 18 and 86 once timing, failing, check
# and the diagnosis did too (what is left reads plans and trials, not the header).
MAX_OR_EMPTY = 18
MAX_DICT_CHECKS = 86


def _count(pattern: str) -> int:
    return sum(len(re.findall(pattern, path.read_text()))
               for path in REPORT.rglob("*.py") if path.name != "header.py")


def test_the_untyped_walks_of_the_header_do_not_come_back():
    assert _count(r"get\(.*\) or \{\}") <= MAX_OR_EMPTY
    assert _count(r"isinstance\(.*dict\)") <= MAX_DICT_CHECKS


@pytest.mark.parametrize("section", ["timers", "settings", "backend", "case"],
                         ids=lambda name: f"bad-{name}")
def test_the_timers_and_the_diagnosis_read_a_malformed_section_as_absent(section):
    """The timers, the time-to-failure classes and the diagnosis read the header through
    report.header too: a list where a mapping is due reads as the section's absence."""
    from harness.report.diagnosis.observed import observe_document
    from harness.report.timing import stack_timers
    data = {**SIMULATED, section: ["malformed"]}
    absent = {k: v for k, v in SIMULATED.items() if k != section}
    assert read_header(data).timers == read_header(absent).timers
    assert stack_timers(data) == stack_timers(absent)
    seen, expected = observe_document(data, "r.yaml"), observe_document(absent, "r.yaml")
    assert (seen.timers, seen.case, seen.case_kind, seen.documented) == \
        (expected.timers, expected.case, expected.case_kind, expected.documented)


SIMULATED: dict[str, Any] = {
    "command": "run",
    "backend": {"kind": "sim", "simulated": True, "profile": "staging", "isolation": False,
                "driver": {"flavour": "staging", "kernel": "7.0"}},
    "settings": {"isolate": False, "deadline_s": 30.0},
    "case": {"name": "minicpm5-2b-decode", "kind": "case", "layers": 42,
             "workload": {"nop_only": True}},
    "timers": {"clock": "device", "driver": {"flavour": "staging", "kernel": "7.0",
                                             "earliest_s": 2.0, "latest_s": 2.0}},
    "plans": [],
}


def _counting(monkeypatch) -> list[int]:
    """Every read of a header into its typed form, by whichever module asks for one."""
    import harness.report.bundle
    import harness.report.digest
    import harness.report.header
    import harness.report.render
    reads: list[int] = []
    real = harness.report.header.read_header

    def counted(data: dict[str, Any]) -> ReportHeader:
        reads.append(id(data))
        return real(data)
    for module in (harness.report.header, harness.report.digest, harness.report.bundle,
                   harness.report.render):
        monkeypatch.setattr(module, "read_header", counted, raising=False)
    return reads


def test_a_render_reads_the_header_once(monkeypatch):
    from harness.report.digest import Digest
    from harness.report.render import render_markdown, render_text
    view = Digest.of_document({**FULL, "plans": [], "finished": "2026-01-01T00:00:00Z",
                               "timers": {"driver": {"flavour": "mainline", "earliest_s": 2.0,
                                                     "latest_s": 4.0}}}).view(False)
    reads = _counting(monkeypatch)
    render_markdown(view)
    render_text(view)
    assert reads == [id(view.header)]


def test_a_bundle_reads_each_header_once(monkeypatch, tmp_path):
    from diagkit import simulated

    from harness.report.bundle import write_bundle
    from harness.report.digest import Digest
    from harness.report.reader import ReportReader
    report = simulated(tmp_path, "r", "--trials", "1")
    reader = ReportReader(report)
    digest = Digest.of_document(reader.document())
    reads = _counting(monkeypatch)
    write_bundle(report, reader, digest, tmp_path / "b.tar.gz")
    # the README and report.md share the view's read; no header is read twice
    assert reads and len(reads) == len(set(reads)), reads
