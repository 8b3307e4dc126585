"""Two redacted machines stay two (docs/reports-and-privacy.md, "Telling machines apart"):
a redacted report's host name and machine id are placeholders every report shares, so
`report compare` said "nothing recorded (same setup)" of two machines and `diagnose` saw
one. The probe records a tag derived from the machine id (machine-id(5): an
application-specific HMAC keyed by it), which redaction keeps and the readers use."""

from __future__ import annotations

from diagkit import completed_trial, failed_trial, hardware_report, invoke, plan
from machines import Tree

from harness.formats.yamlio import dump_yaml, load_yaml_text
from harness.probe.readers import Sources
from harness.probe.system import machine_tag, system_facts
from harness.report.redact import redact


def facts(tmp_path, name: str, host: str, machine_id: str) -> dict:
    tree = Tree(tmp_path / name)
    tree.write("/proc/sys/kernel/hostname", host)
    tree.write("/etc/machine-id", machine_id)
    return system_facts(Sources(tree.root))


def test_the_tag_tells_machines_apart_and_names_no_machine_id(tmp_path):
    one = facts(tmp_path, "b", "brisk-otter-77", "c0ffee00c0ffee00c0ffee00c0ffee77")
    again = facts(tmp_path, "b2", "renamed", "c0ffee00c0ffee00c0ffee00c0ffee77")
    other = facts(tmp_path, "d", "calm-heron-12", "d00dfeedd00dfeedd00dfeedd00dfeed")
    assert one["machine_tag"] == again["machine_tag"] != other["machine_tag"]
    assert one["machine_tag"] == machine_tag("c0ffee00c0ffee00c0ffee00c0ffee77")
    assert "c0ffee00" not in one["machine_tag"]
    # the redacted fingerprint keeps the tag, not the names
    shown = redact({"environment": {"system": one}})["environment"]["system"]
    assert shown["machine_tag"] == one["machine_tag"]
    assert shown["hostname"] == "<hostname>" and shown["machine_id"] == "<machine-id>"
    assert machine_tag(None) is None and machine_tag("") is None


def redacted_machine(tmp_path, name: str, machine_id: str, failing: bool):
    trials = [failed_trial(i, 42, [24, 18], "TIMEOUT", wall_ms=60_000.0) for i in range(2)] \
        if failing else [completed_trial(i, [42], ms_per_run=0.05) for i in range(3)]
    path = hardware_report(tmp_path, name, [plan("monolithic", "42", [42], trials)])
    doc = load_yaml_text(path.read_text())
    doc["environment"]["system"].update({"hostname": "<hostname>",
                                         "machine_id": "<machine-id>",
                                         "machine_tag": machine_tag(machine_id)})
    path.write_text(dump_yaml(doc))
    return path


def test_compare_and_diagnose_tell_two_redacted_machines_apart(tmp_path):
    b = redacted_machine(tmp_path, "hwB", "c0ffee00c0ffee00c0ffee00c0ffee77", True)
    d = redacted_machine(tmp_path, "hwD", "d00dfeedd00dfeedd00dfeedd00dfeed", False)
    compared = invoke("report", "compare", str(b), str(d)).stdout
    assert "nothing recorded (same setup)" not in compared
    assert "machine" in compared.split("columns differ by:")[1].splitlines()[0]
    diagnosed = invoke("diagnose", str(b), str(d)).stdout
    assert "machines: 2 (1 failing, 1 working" in diagnosed
    # two reports of one redacted machine are one machine
    again = redacted_machine(tmp_path, "hwB2", "c0ffee00c0ffee00c0ffee00c0ffee77", True)
    assert "machines:" not in invoke("diagnose", str(b), str(again)).stdout
