"""Each redaction rule carries its own trigger (harness.report.redact_rules): the fast path
is made of the rules' triggers, and a rule runs only where its trigger is found. So a
trigger removed or narrowed disables its rule: these tests hold that it cannot do so
silently (every example of a rule is triggered by it and changed, every trigger of a rule
is the only one of its rule some example holds, and wherever a rule would change text,
its trigger is found), and pin each form of private data the rules replace."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.report.placeholders import placeholders_in
from harness.report.redact import VOCABULARY, Redactor
from harness.report.redact_rules import NAMES, RULES

STATIC = [rule for rule in RULES if rule.name != NAMES]


@pytest.mark.parametrize("rule", STATIC, ids=lambda rule: rule.name)
def test_every_example_of_a_rule_is_triggered_by_it_and_changed(rule):
    assert rule.examples
    for example in rule.examples:
        assert rule.fires(example), example
        assert rule.apply(Redactor(), example, False) != example, example
        assert Redactor().text(example) != example, example


@pytest.mark.parametrize("rule", STATIC, ids=lambda rule: rule.name)
def test_removing_any_trigger_of_a_rule_leaves_one_of_its_examples_unredacted(rule):
    """The test above fails for any trigger taken out: some example of the rule holds that
    trigger and no other of the rule's, and with it gone the rule never runs there."""
    for trigger in rule.triggers:
        weaker = replace(rule, triggers=tuple(t for t in rule.triggers if t != trigger))
        redactor = Redactor(tuple(weaker if r is rule else r for r in RULES))
        missed = [e for e in rule.examples if not weaker.fires(e)]
        assert missed, f"{rule.name}: no example needs {trigger!r}"
        # and what the redactor then writes differs: the rule's work is lost, not done
        # by another's
        assert any(Redactor()._text(e, 0) != redactor._text(e, 0) for e in missed), \
            (rule.name, trigger)


PIECES = ["http://", "https://", "bob", ":", "p@ss", "@", "example.org", "?", "&", "#", ";",
          "api_token=", "client_secret=", "X-Amz-Signature=", "session=", "key=", "x",
          "Bearer ", "basic ", "hf_", "ghp_", "github_pat_", "sk-", "xoxb-", "ABCDEFGHIJ1234567890",
          "abcdefghijklmnopqrst", "jane.doe", "/home/", "/Users/", "/root", "zelda9", "UUID=",
          "by-uuid/", "luks-", "cryptdevice=", "3f1c2b9a-7e4d-4a21-9c0b-5d6e7f801234",
          "1234-ABCD", "Serial Number: ", "S/N ", "SN: ", "Service Tag: ", "JXQ4Z53", "8812345",
          "3c:7c:3f:1a:2b:4d", "3c-7c-3f-1a-2b-4d", "3c7c.3f1a.2b4d", "3c7c3f1a2b4d",
          "link/ether ", "HWaddr ", "enx", "::", "ffff:", "fe80", "2001:db8:", "%eth0",
          "192.168.1.20", "10.", "1.", "version ", " ", "-", ".", "/", "\t", "é", "Z",
          "%40", "%2F", "%71", "AKIAIOSFODNN7EXAMPLE", "aws_secret_access_key=",
          "eyJhbGciOiJIUzI1NiJ9", "wwn-0x", "5002538e40a1b2c3", "naa.", "SSID ", "'Net'",
          "?code=", "#id=", "page=", "=",
          # round 6: named secrets, grouped and labelled WWNs, connection names, disk ids
          "password", "HF_TOKEN", ": ", "--token ", "api_key", "'", '"', "WWN ", "0x",
          "LU WWN Device Id: ", "5 002538 e4ca1ab88", "connection ", "by-id/nvme-",
          "Samsung_SSD_", "S7KHNJ0X123456Z", "-part1", "serial ", "ID_SERIAL_SHORT=",
          "mailto:", "%2540"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PIECES), max_size=10).map("".join))
def test_wherever_a_rule_would_change_text_its_trigger_is_found(text):
    for rule in STATIC:
        if rule.apply(Redactor(), text, False) != text:
            assert rule.fires(text), (rule.name, text)
    redactor = Redactor()
    if not redactor._may_change(text):
        assert redactor._text(text, 0) == text


# -- each form private data takes --------------------------------------------------------------

def redacted(text: str, **names: str) -> str:
    redactor = Redactor()
    for kind, value in names.items():
        redactor.add_literal(kind.replace("_", "-"), value)
    return redactor.text(text)


@pytest.mark.parametrize("text, secret", [
    ("http://bob:p@ss-SECRET7@host.example/v1", "SECRET7"),
    ("https://h/x?api_token=TOKSECRET1", "TOKSECRET1"),
    ("https://h/x?a=1&client_secret=CLSECRET2", "CLSECRET2"),
    ("https://b.s3.amazonaws.com/k?X-Amz-Credential=AKCRED&X-Amz-Signature=SIGSECRET3",
     "SIGSECRET3"),
    ("https://gitlab/api?private_token=PRIVSECRET4", "PRIVSECRET4"),
    ("https://h/?access_key=ACCSECRET5", "ACCSECRET5"),
    ("https://h/?session=SESSSECRET6", "SESSSECRET6"),
    ("https://h/?my_refresh_token_v2=ANYSECRET7", "ANYSECRET7"),
    # user-info without a scheme, as `--url` takes it (the client adds http://)
    ("--url=quill5:pw%2FSECRETA@127.0.0.1:52625", "SECRETA"),
    ("--url quill5:p@ss-SECRETB@127.0.0.1:52625/v1", "SECRETB"),
    ("from //bob:SECRETC@files.example", "SECRETC"),
    ("proxy=bob:SECRETD@proxy.example:3128", "SECRETD"),
])
def test_url_secrets_and_passwords_holding_at(text, secret):
    out = redacted(text)
    assert secret not in out and ("<credentials>@" in out or "=<secret>" in out)


@pytest.mark.parametrize("text, secret", [
    ("mail jane.doe@example.org please", "jane.doe"),
    ("HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGh"),
    ("git remote https://ghp_0123456789abcdefABCDEFxyz@github.com", "0123456789abcdef"),
    ("token github_pat_11ABCDEFG0123456789_abcdefXYZ", "11ABCDEFG"),
    ("link/ether 3c7c3f1a2b4d brd ff:ff:ff:ff:ff:ff", "3c7c3f1a2b4d"),
    ("renamed eth0 to enx3c7c3f1a2b4d", "3c7c3f1a2b4d"),
    ("switch port 3c7c.3f1a.2b4d", "3c7c.3f1a.2b4d"),
    ("SN: 8812345QX", "8812345QX"),
    ("Service Tag: JXQ4Z53", "JXQ4Z53"),
    ("product_uuid 3f1c2b9a-7e4d-4a21-9c0b-5d6e7f801234", "3f1c2b9a"),
    ("peer ::ffff:192.168.1.20 went away", "168.1.20"),
    ("peer 2001:db8::8a2e:370:7334", "8a2e"),
    ("BOOT_IMAGE=/vmlinuz cryptdevice=luks-3f1c2b9a-7e4d-4a21-9c0b-5d6e7f801234 root=x",
     "3f1c2b9a"),
])
def test_every_other_form_of_private_data(text, secret):
    assert secret not in redacted(text)


def test_the_artefacts_uuids_stay_and_other_uuids_go():
    """A maintainer needs the xclbin's UUID (XRT's messages quote it); a machine's own
    (DMI's product_uuid) is private."""
    xclbin, machine = "5c54180d-ffae-27b5-e975-f55593462f7b", "3f1c2b9a-7e4d-4a21-9c0b-5d6e7f801234"
    report = {"artifacts": {"xclbins": [{"role": "layer", "uuid": xclbin}]},
              "environment": {"system": {"dmi": {"product_uuid": machine}}},
              "message": f"load_xclbin {xclbin} on {machine}"}
    redactor = Redactor()
    redactor.learn(report)
    out = redactor.data(report)
    assert out["artifacts"]["xclbins"][0]["uuid"] == xclbin
    assert out["message"] == f"load_xclbin {xclbin} on <uuid-1>"
    assert machine not in str(out)


@pytest.mark.parametrize("user, text, gone", [
    ("jörg", "ran by Jörg and JÖRG and jörg", "örg"),
    ("Alice", "host alice-box, home /home/alice", "alice"),
    ("straße", "STRASSE and Strasse and straße", "tra"),
])
def test_a_user_name_in_any_letter_case(user, text, gone):
    out = redacted(text, user=user)
    assert gone not in out.lower(), out


@pytest.mark.parametrize("user", ["staging", "xrt", "test"])
def test_a_user_named_as_a_word_of_the_report_loses_the_name_not_the_words(user):
    """`staging` as a user: the profile `staging,inflight-cap:40` became
    `<user-1>,inflight-cap:40`. The name goes where it stands as one; the word stays."""
    assert user in VOCABULARY
    report = {"backend": {"profile": f"{user},inflight-cap:40"},
              "harness": {"argv": ["runlist-harness", "run", "--profile", f"{user},hang-at:3",
                                   "--out", f"/home/{user}/r.yaml"]},
              "message": f"{user} driver via xrt-smi; a test by {user}@box, ~{user}/x, "
                         f"USER={user}",
              "environment": {"system": {"user": user}}}
    redactor = Redactor()
    redactor.learn(report)
    out = redactor.data(report)
    assert out["backend"]["profile"] == f"{user},inflight-cap:40"
    assert out["harness"]["argv"][3] == f"{user},hang-at:3"
    assert out["harness"]["argv"][5] == "/home/<user-1>/r.yaml"
    assert out["message"] == (f"{user} driver via xrt-smi; a test by <user-1>@box, "
                              "~<user-1>/x, USER=<user-1>")
    assert out["environment"]["system"]["user"] == "<user-1>"


def test_keyed_serials_of_every_shape_go_everywhere():
    """A serial under a key naming one may be a number, several words or a list: each goes
    from the field and from free text (dropping any of these rules failed no test)."""
    report = {"npu": {"serial_number": 987654321, "board_serial": "AB12 CD34 EF56",
                      "serials": ["SNLISTA111", "SNLISTB222"]},
              "message": "987654321, AB12 CD34 EF56, SNLISTA111 and SNLISTB222 seen"}
    redactor = Redactor()
    redactor.learn(report)
    out = str(redactor.data(report))
    for secret in ("987654321", "AB12 CD34", "SNLISTA111", "SNLISTB222"):
        assert secret not in out


def test_the_prompt_and_a_server_s_own_error_text_are_withheld():
    settings_ = {"prompt": "my private question about /home/zelda9"}
    request = {"index": 0, "outcome": "error-body", "wall_ms": 3.0,
               "error": "runlist failed: the prompt was 'my private question'"}
    ours = {"index": 1, "outcome": "timeout", "wall_ms": 3.0, "error": "no answer within 1 s"}
    out = Redactor().data({"settings": settings_, "requests": [request, ours]})
    assert out["settings"]["prompt"] == "<prompt withheld: 38 characters>"
    assert out["requests"][0]["error"].startswith("<server text withheld: ")
    assert out["requests"][1]["error"] == "no answer within 1 s"


def test_placeholders_are_found_in_a_garbled_field():
    assert placeholders_in("<user-1>,inflight-cap:40") == ["<user-1>"]
    assert placeholders_in("staging,inflight-cap:40") == []


# -- a name inside a token ---------------------------------------------------------------------

@pytest.mark.parametrize("text, kept", [
    ("client quill5_jupyter", "client <user-1>_jupyter"),
    ("/data/proj_quill5/m.bin", "/data/proj_<user-1>/m.bin"),
    ("--out r_quill5.yaml; cd r_quill5.recipes", "--out r_<user-1>.yaml; cd r_<user-1>.recipes"),
    ("zelda QUILL5-box myQuill5 Quill5Lab 2quill5",
     "zelda <user-1>-box my<user-1> <user-1>Lab 2<user-1>"),
    ("host brisk-otter-77_vm and brisk-otter-77.lab.example.com",
     "host <hostname>_vm and <hostname>"),
    ("r_brisk-otter-77.yaml", "r_<hostname>.yaml"),          # a file's suffix is no domain
])
def test_a_name_is_replaced_whatever_joins_it_to_other_text(text, kept):
    assert redacted(text, user="quill5", hostname="brisk-otter-77") == kept


@pytest.mark.parametrize("name, text, kept", [
    # a short or common name inside a word of one case, or a number inside a longer one,
    # is that word or number (docs/reports-and-privacy.md says the rule)
    ("alice", "malice and alicebox, but alice_x, AliceBox and alice2",
     "malice and alicebox, but <user-1>_x, <user-1>Box and <user-1>2"),
    ("987654321", "serial 987654321, SN987654321, not 1987654321",
     "serial <serial-1>, SN<serial-1>, not 1987654321"),
    # a hex name inside a hash is part of the hash
    ("cafe1", "sha 9f0cafe1a2b3c4d5e6f7a8b9c0d1 by cafe1",
     "sha 9f0cafe1a2b3c4d5e6f7a8b9c0d1 by <user-1>"),
])
def test_short_or_common_names_follow_the_documented_rule(name, text, kept):
    kind = "serial" if name.isdigit() else "user"
    assert redacted(text, **{kind: name}) == kept


@pytest.mark.parametrize("text, kept, gone", [
    # the factor table of several machines (harness.report.diagnosis.cohort)
    ("  firmware: failing 1.1.2.65 x2; working 1.0.0.63 x2 -> separates them",
     ["1.1.2.65", "1.0.0.63"], []),
    # a firmware release the harness knows, wherever it stands
    ("machine 3: working; kernel 6.18.9, firmware 1.0.0.63, XRT 2.21.75", ["1.0.0.63"], []),
    ("npu.sbin 1.1.2.64 loaded", ["1.1.2.64"], []),
    # ... but a line that speaks of firmware still hides an address in a URL or with a port
    ("fetching firmware from http://10.1.2.3/npu.sbin", [], ["10.1.2.3"]),
    ("firmware server 192.168.7.9:8080 answered", [], ["192.168.7.9"]),
])
def test_firmware_versions_are_kept_and_addresses_beside_them_go(text, kept, gone):
    out = redacted(text)
    assert all(k in out for k in kept) and not any(g in out for g in gone), out


@pytest.mark.parametrize("text, secret, kept", [
    # smartctl groups a WWN as NAA, OUI and id; lsblk's WWN column prints it with 0x
    ("LU WWN Device Id: 5 002538 e4ca1ab88", "e4ca1ab88", "LU WWN Device Id: <wwn-1>"),
    ("WWN 0x5002538e4ca1ab99", "e4ca1ab99", "WWN 0x<wwn-1>"),
    # NetworkManager names a connection by its SSID unless it was renamed
    ("device (wlan0): Activation: starting connection 'CanaryBetaNet' (a1b2)", "CanaryBeta",
     "Activation: starting connection '<ssid-1>'"),
    # an address encoded twice, after mailto: (no user-info: the address goes whole)
    ("mailto:quill5%2540corp-canary.example", "corp-canary", "mailto:<email-1>"),
    # udev's persistent names hold the disk's serial; nvme-cli prints one without a colon
    ("/dev/disk/by-id/nvme-Samsung_SSD_980_PRO_1TB_S7KHNJ0X123456Z-part1", "S7KHNJ0X",
     "by-id/nvme-Samsung_SSD_980_PRO_1TB_<serial-1>-part1"),
    ("serial S7KHNJ0X123456Z", "S7KHNJ0X", "serial <serial-1>"),
    ("ID_SERIAL_SHORT=S7KHNJ0X123456Z", "S7KHNJ0X", "ID_SERIAL_SHORT=<serial-1>"),
])
def test_the_forms_that_survived_round_five(text, secret, kept):
    out = redacted(text)
    assert secret not in out and kept in out, out


@pytest.mark.parametrize("text", ["serial console on ttyS0", "serial8250: ttyS0 at I/O",
                                  "a connection to the server", "WWN unknown"])
def test_words_beside_those_forms_stay(text):
    assert redacted(text) == text
