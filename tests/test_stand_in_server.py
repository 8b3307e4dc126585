"""The simulated stack's `flm serve` (harness.sim.stand_in_server) and `investigate` asking
a server: the stand-in answers as FastFlowLM does (STACK.md 5: `/v1/models`,
`/v1/chat/completions`, `/api/tags`, `/api/ps`; errors as {"error": ...} with HTTP 200),
through the same client and classification as `serve-probe`; `serve-fault:KIND` fails a
request before any NPU call; `investigate --serve URL` asks a running server once and reads
its answers with the trials."""

from __future__ import annotations

import pytest
from diagkit import invoke
from fakeflm import Behaviour, FakeFlm

from harness.report.check import check_report_file
from harness.report.diagnosis import diagnose
from harness.report.fileformat import load_report
from harness.serve.client import FlmClient
from harness.serve.reproduce import Probe, ServeOptions, classify_reply
from harness.sim.stand_in_server import FAULT_ERROR, StandInServer

TIMEOUT = "runlist failed execution (ERT_CMD_STATE_TIMEOUT)"


def chat(url: str, tag: str = "minicpm5:2b"):
    payload = {"model": tag, "messages": [{"role": "user", "content": "Say hello."}],
               "max_tokens": 1, "stream": False}
    reply = FlmClient(url, 5.0).post("/v1/chat/completions", payload)
    return reply, classify_reply(0, tag, reply)


def test_it_lists_its_tag_and_decodes_as_the_npu_path_did():
    decodes = []
    with StandInServer("minicpm5:2b", lambda: decodes.append(1)) as server:
        reply, answer = chat(server.url)
        report = Probe(ServeOptions(server.url, "minicpm5:2b", made_up_tag=False), {}).run()
    assert answer.outcome == "success" and answer.completion_tokens == 1
    assert answer.echoed_model == "minicpm5:2b" and decodes == [1, 1]
    served = report.sections["server"]
    assert served["known_models"] == ["minicpm5:2b"]
    assert served["resident_after"] == ["minicpm5:2b"]
    assert served["version"].startswith("SIMULATED")          # never passes for a real one
    assert {c["name"]: c["status"] for c in served["checks"]} == {
        "tag known": "PASS", "resident model": "PASS"}


def test_a_failed_decode_is_an_error_body_with_http_200_carrying_xrt_s_state():
    with StandInServer("minicpm5:2b", lambda: TIMEOUT) as server:
        reply, answer = chat(server.url)
    assert (reply.status, reply.body) == (200, {"error": TIMEOUT})
    assert (answer.outcome, answer.state) == ("error-body", "TIMEOUT")


@pytest.mark.parametrize("fault, outcome, error", [
    ("error", "error-body", FAULT_ERROR),
    ("drop", "dropped", None),
])
def test_a_serve_fault_fails_the_request_before_any_npu_call(fault, outcome, error):
    decodes = []
    with StandInServer("minicpm5:2b", lambda: decodes.append(1), fault) as server:
        reply, answer = chat(server.url)
    assert answer.outcome == outcome and answer.state is None and decodes == []
    if error:
        assert answer.error == error


def test_an_unknown_tag_is_refused_without_a_decode():
    decodes = []
    with StandInServer("minicpm5:2b", lambda: decodes.append(1)) as server:
        reply, answer = chat(server.url, "no-such-model:0b")
    assert answer.outcome == "error-body" and "not found" in str(answer.error)
    assert decodes == []


def test_a_fault_it_does_not_know_is_refused():
    with pytest.raises(ValueError, match="one of error, drop"):
        StandInServer("minicpm5:2b", lambda: None, "slow")


# -- investigate and a server ------------------------------------------------------------------

def investigate(tmp_path, *more: str):
    out = tmp_path / "inv.yaml"
    return invoke("investigate", "minicpm5-2b-decode", "--no-isolate", "--out", str(out),
                  *more), out


def test_investigate_asks_a_running_server_and_reads_it_with_the_trials(tmp_path):
    """--serve: flm serve (here a loopback server answering as FastFlowLM) fails with no
    XRT state where every runlist through pyxrt completes: not the NPU path, first; the
    server's answers are in the report, and it exits 1 as serve-probe does."""
    said = "failed to apply the chat template"
    with FakeFlm(Behaviour(chat="error", error=said)) as server:
        result, out = investigate(tmp_path, "--backend", "sim", "--serve", server.url)
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines()[2].startswith("diagnosis: not-npu-path: ")
    report = load_report(out)
    steps = [s["experiment"] for s in report.sections["investigate"]["steps"]]
    assert steps.count("the server") == 1
    served = report.sections["server"]
    # the server's own text is withheld whole in a report written redacted, as in a bundle
    assert [(r["outcome"], r.get("error")) for r in served["requests"]] == \
        [("error-body", f"<server text withheld: {len(said)} characters>")]
    assert "stand_in" not in served and served["model"] == "minicpm5:2b"
    assert check_report_file(str(out)).problems == []
    assert diagnose([out]).top.id == "not-npu-path"
    assert "flm serve failed while" in result.output


def test_a_server_that_fails_as_the_npu_path_does_is_not_a_second_cause(tmp_path):
    """The user's server answers XRT's TIMEOUT where NOOP runlists of 41 and more fail
    (inflight-cap:40): asked once, whatever the diagnosis (the user named it), it weighs
    against not-npu-path."""
    with FakeFlm(Behaviour(chat="error", error=TIMEOUT)) as server:
        result, out = investigate(tmp_path, "--profile", "inflight-cap:40", "--serve",
                                  server.url)
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines()[2].startswith("diagnosis: depth-limit: ")
    steps = [s["experiment"] for s in load_report(out).sections["investigate"]["steps"]]
    assert steps[0] == "three-way" and steps.count("the server") == 1
    entry = diagnose([out]).entry("not-npu-path")
    assert entry.status != "first" and any("carries XRT's state" in f.text
                                           for f in entry.against)


def test_a_server_that_cannot_be_reached_is_recorded_so_and_the_rest_goes_on(tmp_path):
    import socket
    with socket.socket() as closed:            # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    result, out = investigate(tmp_path, "--backend", "sim", "--serve",
                              f"http://127.0.0.1:{port}")
    assert result.exit_code == 0, result.output
    assert "no answer: cannot reach flm serve at" in result.output
    served = load_report(out).sections["server"]
    assert served["requests"] == [] and "cannot reach" in served["unreachable"]
    assert result.stdout.splitlines()[2].startswith("diagnosis: nothing-fails: ")
    assert diagnose([out]).entry("not-npu-path").status == "not tested"


def test_resume_does_not_ask_the_server_again(tmp_path, ctrl_c_once):
    """Ctrl-C at the 7th trial, after the three-way (3), the work stood in (2) and the
    server (serve-fault:error: no decode); --resume goes on without asking it again."""
    ctrl_c_once(lambda spec, n: n == 7)
    result, out = investigate(tmp_path, "--profile", "serve-fault:error")
    assert result.exit_code == 130
    assert "the server" in [s["experiment"] for s in
                            load_report(out).sections["investigate"]["steps"]]
    again = invoke("investigate", "--resume", str(out))
    assert again.exit_code == 1, again.output
    assert "diagnosis: not-npu-path: " in again.stdout
    steps = [s["experiment"] for s in load_report(out).sections["investigate"]["steps"]]
    assert steps.count("the server") == 1


@pytest.mark.parametrize("args, words", [
    (("--serve", "ftp://host"), "--serve 'ftp://host': use http://HOST:PORT"),
    (("--serve", "http://127.0.0.1:9", "nop-depth"), "give --serve-model TAG"),
])
def test_a_server_it_cannot_ask_is_refused_before_any_trial(tmp_path, args, words):
    case = [a for a in args if not a.startswith(("--", "ftp", "http"))]
    options = [a for a in args if a not in case]
    out = tmp_path / "inv.yaml"
    result = invoke("investigate", *(case or ["minicpm5-2b-decode"]), "--no-isolate",
                    "--out", str(out), *options)
    assert result.exit_code == 2 and words in result.output
    assert not out.exists()
