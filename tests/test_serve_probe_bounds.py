"""serve-probe gives up on time whatever a server does (hostile loopback servers, each
bounded by the test itself), and names odd answers for what they are."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hostile import Hostile

from harness.report.fileformat import load_report
from harness.serve.client import FlmClient


def serve_probe(url: str, *args: str, bound_s: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", "serve-probe", "--url", url,
                           "--model", "minicpm5:2b", "--out", "probe.yaml", *args],
                          capture_output=True, text=True, timeout=bound_s)


@pytest.mark.parametrize("mode", ["trickle-status", "trickle-headers", "trickle-chunk",
                                  "silent"])
def test_a_request_is_cut_off_at_its_timeout_whatever_the_server_sends(mode):
    with Hostile(post=mode, drip_s=0.05) as server:
        reply = FlmClient(server.url, 0.6).post("/v1/chat/completions", {"model": "x"})
    assert reply.outcome == "timeout", reply
    assert reply.wall_ms < 5000          # a bound on the client, far above its 0.6 s


def test_total_timeout_bounds_the_whole_command():
    with Hostile(post="silent", get="silent") as server:
        done = serve_probe(server.url, "--timeout", "5", "--total-timeout", "1.5",
                           "--requests", "3", bound_s=20)
    assert done.returncode == 1, done.stderr
    report = load_report("probe.yaml").sections["server"]
    assert {r["outcome"] for r in report["requests"]} == {"timeout"}
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["made-up tag"]["status"] == "WARN"       # never PASS without an answer


def test_http_500_with_text_and_a_redirect_are_named_for_what_they_are():
    with Hostile(post="http500") as server:
        done = serve_probe(server.url, "--timeout", "3", "--no-made-up-tag", "--no-redact")
    request = load_report("probe.yaml").sections["server"]["requests"][0]
    assert request["outcome"] == "http-error"
    assert request["error"] == "HTTP 500: boom: the engine crashed", done.stdout
    with Hostile(post="redirect") as server:
        reply = FlmClient(server.url, 3).post("/v1/chat/completions", {})
    assert reply.outcome == "redirect" and "302 redirect to http://elsewhere:1/" in reply.error


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999", "http://[::1", "ftp://host",
                                 "http://"])
def test_malformed_urls_are_bad_input(url):
    done = serve_probe(url, bound_s=20)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


@pytest.mark.parametrize("option", [["--timeout", "nan"], ["--timeout", "inf"],
                                    ["--bandwidth-ceiling", "nan"]])
def test_non_finite_numbers_are_bad_input(option):
    done = serve_probe("http://127.0.0.1:1", *option, bound_s=20)
    assert done.returncode == 2 and "is not a finite number" in done.stderr
