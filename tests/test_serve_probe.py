"""serve-probe against a real HTTP server on loopback that behaves like flm serve."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from fakeflm import Behaviour, FakeFlm
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.app.cli import main
from harness.report.fileformat import load_report, read_document
from harness.report.schema import report_schema
from harness.serve.client import FlmClient
from harness.serve.modelpack import find_tag, inspect_pack, read_q4nx


def probe(server: FakeFlm, *args: str):
    return CliRunner().invoke(main, ["serve-probe", "--url", server.url, *args])


def report_of(result) -> Path:
    return Path([x for x in result.stdout.splitlines() if x.startswith("report: ")][0][8:])


def test_error_body_at_200_reproduces_with_timeout():
    with FakeFlm(Behaviour(chat="error")) as server:
        result = probe(server, "--model", "minicpm5:2b", "--requests", "2")
    assert result.exit_code == 1, result.output
    assert "verdict: reproduced through flm serve: 2/2 requests failed (TIMEOUT 2/2): " \
           "runlist failed execution (ERT_CMD_STATE_TIMEOUT)" in result.stdout
    report = load_report(report_of(result))
    assert report.verdict["reproduced"] is True
    assert report.backend == {"kind": "flm-server", "simulated": False, "url": server.url}
    requests = report.sections["server"]["requests"]
    assert [r["state"] for r in requests] == ["TIMEOUT", "TIMEOUT"]
    assert [r["outcome"] for r in requests] == ["error-body", "error-body"]
    jsonschema.validate(read_document(report_of(result)), report_schema())


def test_sixty_three_tokens_a_second_for_two_gigabytes_is_implausible():
    with FakeFlm(Behaviour(decode_tps=63.0)) as server:
        result = probe(server, "--model", "minicpm5:2b", "--model-bytes", "2020000000",
                       "--npu", "npu5")
    assert result.exit_code == 0
    line = [x for x in result.stdout.splitlines() if x.startswith("  FAIL plausibility")][0]
    assert "63 tok/s x 2.02 GB per token = 127.3 GB/s" in line
    assert "88 GB/s ceiling of NPU5 Strix Halo" in line
    assert "but: plausibility" in result.stdout


def test_plausible_speed_passes():
    with FakeFlm(Behaviour(decode_tps=19.8)) as server:
        result = probe(server, "--model", "minicpm5:2b", "--model-bytes", "2020000000")
    assert "PASS plausibility: request 0: 19.8 tok/s x 2.02 GB per token = 40.0 GB/s" \
        in result.stdout
    assert "verdict: not reproduced: 1/1 requests completed, decode 19.8 tok/s" \
        in result.stdout


def test_substitution_is_flagged_three_ways():
    behaviour = Behaviour(models=["qwen3:1.7b"], resident="qwen3:1.7b", substitute=True)
    with FakeFlm(behaviour) as server:
        result = probe(server, "--model", "minicpm5:2b")
    checks = {line.split(":")[0].strip(): line for line in result.stdout.splitlines()
              if line.startswith("  ") and line.strip()[:4] in ("PASS", "FAIL", "WARN")}
    assert checks["FAIL tag known"].count("not among the server's models") == 1
    assert "yet it was answered" in checks["FAIL tag known"]
    assert "resident: qwen3:1.7b; asked for minicpm5:2b" in checks["FAIL resident model"]
    assert "got a completion" in checks["FAIL made-up tag"]
    report = load_report(report_of(result))
    # the response echoed the requested tag: only the checks reveal the substitution
    assert report.sections["server"]["requests"][0]["echoed_model"] == "minicpm5:2b"


def test_honest_server_passes_the_substitution_checks():
    with FakeFlm(Behaviour()) as server:
        result = probe(server, "--model", "minicpm5:2b")
    assert "PASS made-up tag" in result.stdout and "PASS resident model" in result.stdout
    made_up = [r for r in server.behaviour.requests if r["model"].startswith("no-such-model")]
    assert len(made_up) == 1 and made_up[0]["max_tokens"] == 1


def test_unreachable_url_is_exit_3_and_one_line():
    result = CliRunner().invoke(main, ["serve-probe", "--url", "http://127.0.0.1:1",
                                       "--model", "x"])
    assert result.exit_code == 3
    lines = [x for x in result.output.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: cannot reach flm serve at "
                                                   "http://127.0.0.1:1: connection refused")


@pytest.mark.parametrize("chat, outcome", [("slow", "timeout"), ("trickle", "timeout"),
                                           ("drop", "dropped")])
def test_slow_trickling_and_dropped_answers_never_hang(chat, outcome):
    with FakeFlm(Behaviour(chat=chat, delay_s=5.0)) as server:
        result = probe(server, "--model", "minicpm5:2b", "--timeout", "0.5",
                       "--no-made-up-tag")
    assert result.exit_code == 1
    request = load_report(report_of(result)).sections["server"]["requests"][0]
    assert request["outcome"] == outcome
    assert "inconclusive: 1/1 requests failed without an XRT state" in result.stdout


def test_client_rejects_bad_urls():
    from harness.model.errors import BadInput
    with pytest.raises(BadInput, match="use http://HOST:PORT"):
        FlmClient("ftp://x")


def test_model_size_from_model_list(tmp_path):
    model_list = tmp_path / "model_list.json"
    model_list.write_text(json.dumps({"model_path": str(tmp_path / "models"), "models": {
        "minicpm5": {"2b": {"name": "MiniCPM5-2B-NPU2", "size": 2020000000,
                            "details": {"family": "qwen3"}}}}}))
    with FakeFlm(Behaviour(decode_tps=63.0)) as server:
        result = probe(server, "--model", "minicpm5:2b", "--model-list", str(model_list))
    report = load_report(report_of(result))
    assert report.sections["server"]["model_bytes"] == 2020000000
    assert "model_list.json" in report.sections["server"]["model_bytes_source"]
    assert "FAIL plausibility" in result.stdout


def test_render_works_on_a_serve_probe_report():
    with FakeFlm(Behaviour(chat="error")) as server:
        result = probe(server, "--model", "minicpm5:2b")
    md = CliRunner().invoke(main, ["report", "render", str(report_of(result))]).stdout
    assert md.splitlines()[0] == "## xdna-runlist-harness: serve-probe minicpm5:2b: through " \
                                 "a running flm serve"
    assert "### Server" in md and "| 0 | minicpm5:2b | error-body | TIMEOUT |" in md


# -- model packs -----------------------------------------------------------------------

def write_q4nx(path: Path, layers: int, qk_norm: bool, extra: bytes = b"") -> None:
    header: dict = {"__metadata__": {"format": "q4nx"}}
    offset = 0
    for i in range(layers):
        names = [f"model.layers.{i}.self_attn.q_proj.weight"]
        if qk_norm:
            names += [f"model.layers.{i}.self_attn.q_norm.weight",
                      f"model.layers.{i}.self_attn.k_norm.weight"]
        for name in names:
            header[name] = {"dtype": "U8", "shape": [4], "data_offsets": [offset, offset + 4]}
            offset += 4
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(offset) + extra)


def test_pack_inspect(tmp_path):
    folder = tmp_path / "MiniCPM5-2B-NPU2"
    folder.mkdir()
    write_q4nx(folder / "model.q4nx", 42, qk_norm=True)
    (folder / "config.json").write_text(json.dumps({
        "num_hidden_layers": 42, "hidden_size": 2048, "num_attention_heads": 16,
        "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 6144,
        "vocab_size": 130560, "addr_qk": 1, "flm_version": "1.0.6"}))
    result = CliRunner().invoke(main, ["pack", "inspect", str(folder)])
    assert result.exit_code == 0
    assert "42 layers, q_norm/k_norm present" in result.output
    assert "hidden_size 2048" in result.output and "flm_version 1.0.6" in result.output
    info = inspect_pack(folder)
    assert info["q4nx"]["layers"] == 42 and info["notes"][0].startswith("q_norm/k_norm")


def test_pack_inspect_notes_a_layer_mismatch(tmp_path):
    write_q4nx(tmp_path / "model.q4nx", 36, qk_norm=False)
    (tmp_path / "config.json").write_text(json.dumps({"num_hidden_layers": 42}))
    assert inspect_pack(tmp_path)["notes"] == ["model.q4nx has 36 layers, config.json says 42"]


@pytest.mark.parametrize("data, words", [
    (b"\x01\x02", "shorter than"),
    (struct.pack("<Q", 10**12) + b"{}", "impossible"),
    (struct.pack("<Q", 4) + b"{oo}", "does not parse"),
])
def test_malformed_q4nx(tmp_path, data, words):
    path = tmp_path / "model.q4nx"
    path.write_bytes(data)
    result = CliRunner().invoke(main, ["pack", "inspect", str(tmp_path)])
    assert result.exit_code == 2 and words in result.output
    with pytest.raises(Exception, match=words):
        read_q4nx(path)


def test_find_tag():
    model_list = {"models": {"qwen3": {"1.7b": {"name": "Qwen3-1.7B-NPU2", "size": 1}},
                             "minicpm5": {"2b": {"name": "MiniCPM5-2B-NPU2", "size": 2}}}}
    assert find_tag(model_list, "minicpm5:2b")["size"] == 2
    assert find_tag(model_list, "Qwen3-1.7B-NPU2")["size"] == 1
    assert find_tag(model_list, "llama:8b") is None


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_q4nx_reader_only_raises_bad_input(tmp_path_factory, data):
    from harness.model.errors import BadInput
    path = tmp_path_factory.mktemp("q4nx") / "model.q4nx"
    path.write_bytes(data)
    try:
        read_q4nx(path)
    except BadInput:
        pass
