"""Redaction of a report of any size: lines and strings that nothing could change are
passed by with one scan (so that must never pass by something a rule would change), and
what the redactor remembers stays bounded however many distinct strings it sees."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.report.redact import MAX_REMEMBERED, Redactor

PIECES = ["zelda9", "box", "/home/", "home", "/Users/", "/root", "root", "://", "::", ":", "-",
          ".", "@", "10", "1", "255", "256", "192.168.", "fe80", "de:ad", "be", "Serial", "s/N",
          "number", "UUID=", "by-uuid/", "luks-", "bearer ", "token=", "key=", "version ",
          "firmware ", "v", "\\", "\"", "é", "\u202e", " ", "\t", "a", "Z", "0", "9", "_", "?",
          "&", "ab12cd34", "1b2c3d4e-aaaa-bbbb-cccc-1234567890ab",
          # the forms of round 4: secrets, tokens, e-mail, MACs, labelled serials, IPv6
          "=", ";", "#", "api_token", "X-Amz-Signature", "hf_", "ghp_", "xoxb-",
          "abcdefghijklmnop1234", "jane@example.org", "mac ", "link/ether ", "enx",
          "3c7c3f1a2b4d", "3c7c.3f1a.2b4d", "SN:", "Service Tag: ", "::ffff:", "cryptdevice=",
          "ZELDA9", "Zelda9-Box"]
KEYS = ["message", "hostname", "user", "machine_id", "serial_number", "fw_version", "kernel",
        "lines", "x"]
text = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)


def redactor() -> Redactor:
    found = Redactor()
    found.add_literal("hostname", "zelda9-box.lab.example.com")
    found.add_literal("user", "zelda9")
    return found


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=text, key=st.sampled_from(KEYS))
def test_a_string_passed_by_is_one_no_rule_changes(value, key):
    r = redactor()
    if not r._may_change(value):
        assert r._text(value, False) == value
        assert r._text(value, True) == value
    assert r.text(value, key) == r.text(value, key)          # remembered or not, the same


entries = st.recursive(st.one_of(text, st.integers(-2**40, 2**40), st.booleans(), st.none()),
                       lambda inner: st.one_of(st.lists(inner, max_size=4),
                                               st.dictionaries(st.sampled_from(KEYS), inner,
                                                               max_size=4)), max_leaves=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.dictionaries(st.sampled_from(KEYS), entries, max_size=5))
def test_a_journal_line_copied_as_it_is_is_one_redaction_leaves_alone(body):
    r = redactor()
    line = json.dumps({"trial": body}, ensure_ascii=True, separators=(", ", ": ")).encode()
    if r.untouched(line):
        assert r.data({"trial": body}) == {"trial": body}


def test_what_the_redactor_remembers_is_bounded(monkeypatch):
    assert MAX_REMEMBERED == 1 << 16
    monkeypatch.setattr("harness.report.redact.MAX_REMEMBERED", 1000)
    r = redactor()
    for n in range(3000):
        assert r.text(f"[{n:>8}.000000] TDR timeout detected") == \
            f"[{n:>8}.000000] TDR timeout detected"
    assert len(r._done) <= 1000
    assert r.text("ran on zelda9-box") == "ran on <hostname>"
    assert r.text("ran on zelda9-box") == "ran on <hostname>"   # and again, remembered


def test_a_home_folder_inside_a_url_teaches_no_user_name():
    r = Redactor()
    r.learn_text("docs at https://example.com/home/docs and /var/home/zelda9/x")
    assert r.text("read the docs, zelda9") == f"read the docs, {r.literals['zelda9']}"
