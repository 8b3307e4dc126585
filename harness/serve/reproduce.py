"""Reproduce through a running `flm serve`, and check the answers can be trusted.

Two traps of ROCm/FastFlowLM#712 are checked on every run:
- substitution (ROCm/FastFlowLM#716): a tag the server cannot resolve is
  answered by whatever model is resident, and the response echoes the tag
  asked for. So: is the requested tag known, is it what is resident, and does
  a made-up tag get a completion?
- physics: each decoded token streams the model's weights once, so bytes per
  token x tokens/s is a bandwidth; above what the NPU can draw, the figure
  cannot be the model asked for (63 tok/s x 2.02 GB = 127 GB/s, over ~88).
"""

from __future__ import annotations

import math
import platform
import re
import secrets
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness import __version__, command_argv
from harness.formats.git_head import harness_commit
from harness.formats.jsonread import describe
from harness.model.errors import EnvironmentNotReady
from harness.model.ert import parse_xrt_error
from harness.probe.checks import Check
from harness.report.model import Report, utc_now
from harness.serve.client import FlmClient, Reply
from harness.serve.modelpack import find_tag, read_model_list

# Upstream's estimate of what the NPU can stream from memory, ~65-88 GB/s (STACK.md 1),
# per generation; --bandwidth-ceiling overrides it.
CEILINGS_GBPS = {"NPU4 Strix": 70.0, "NPU5 Strix Halo": 88.0, "NPU6 Krackan": 65.0}
DEFAULT_CEILING_GBPS = 88.0
SPEED_FIELDS = ("prefill_duration_ttft", "prefill_speed_tps", "decoding_speed_tps")


@dataclass
class ServeOptions:
    url: str
    model: str
    prompt: str = "Say hello."
    max_tokens: int = 1
    requests: int = 1
    timeout_s: float = 120.0
    made_up_tag: bool = True
    model_bytes: int | None = None
    model_list: str | None = None
    model_dir: str | None = None
    generation: str | None = None
    ceiling_gbps: float | None = None
    total_timeout_s: float | None = None


@dataclass
class RequestResult:
    index: int
    model: str
    outcome: str          # success | error-body | timeout | dropped | http-error | bad-json | ...
    wall_ms: float
    state: str | None = None
    error: str | None = None
    http_status: int | None = None
    echoed_model: str | None = None
    completion_tokens: int | None = None
    content_chars: int | None = None
    prefill_duration_ttft: float | None = None
    prefill_speed_tps: float | None = None
    decoding_speed_tps: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


def _number(*sources: Any) -> float | None:
    for value in sources:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _wrong_type(body: dict[str, Any]) -> str | None:
    """Where a successful answer's shape is not OpenAI's chat completion, or None: a
    server's answer is input like any file, and the wrong type is an answer to record,
    not a fault of ours."""
    choices = body.get("choices")
    if not isinstance(choices, list):
        return f"choices is {describe(choices)}, not a list"
    if not isinstance(choices[0], dict):
        return f"choices[0] is {describe(choices[0])}, not an object"
    message = choices[0].get("message", {})
    if not isinstance(message, dict):
        return f"choices[0].message is {describe(message)}, not an object"
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        return f"choices[0].message.content is {describe(content)}, not text"
    if body.get("usage") is not None and not isinstance(body["usage"], dict):
        return f"usage is {describe(body['usage'])}, not an object"
    tokens = _mapping(body.get("usage")).get("completion_tokens")
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int)):
        return f"usage.completion_tokens is {describe(tokens)}, not an integer"
    if body.get("model") is not None and not isinstance(body["model"], str):
        return f"model is {describe(body['model'])}, not text"
    return None


def classify_reply(index: int, model: str, reply: Reply) -> RequestResult:
    result = RequestResult(index, model, reply.outcome, reply.wall_ms, error=reply.error,
                           http_status=reply.status)
    body = _mapping(reply.body)
    if "error" in body:
        message = body["error"]
        if isinstance(message, dict):
            message = message.get("message") or str(message)
        result.outcome = "error-body" if reply.outcome == "ok" else reply.outcome
        result.error = str(message)[:2000]
        failure = parse_xrt_error(result.error)
        result.state = failure.state.name if failure.state else None
        return result
    if reply.outcome != "ok":
        return result
    if not body.get("choices"):
        result.outcome = "unexpected"
        result.error = f"neither choices nor error in the answer: {str(body)[:160]}"
        return result
    wrong = _wrong_type(body)
    if wrong:
        result.outcome = "unexpected"
        result.error = f"not a chat completion: {wrong}"
        return result
    result.outcome = "success"
    result.echoed_model = body.get("model")
    usage = _mapping(body.get("usage"))
    result.completion_tokens = usage.get("completion_tokens")
    result.content_chars = len(_mapping(body["choices"][0]).get("message", {}).get("content")
                               or "")
    for name in SPEED_FIELDS:
        setattr(result, name, _number(body.get(name), usage.get(name)))
    return result


def _names(reply: Reply, key: str, field_name: str) -> list[str]:
    items = _mapping(reply.body).get(key)
    if not isinstance(items, list):
        return []
    return [str(item.get(field_name)) for item in items
            if isinstance(item, dict) and isinstance(item.get(field_name), str)
            and item.get(field_name)]


def model_size(opts: ServeOptions, flm_binary: str | None) -> tuple[int | None, str]:
    """Bytes streamed per decoded token: --model-bytes, model_list.json, or model.q4nx."""
    if opts.model_bytes:
        return opts.model_bytes, "--model-bytes"
    lists = [opts.model_list] if opts.model_list else []
    if flm_binary:
        lists.append(str(Path(flm_binary).resolve().parent / "model_list.json"))
    for candidate in lists:
        if not Path(candidate).is_file():
            continue
        data = read_model_list(candidate)
        entry = find_tag(data, opts.model)
        if entry and isinstance(entry.get("size"), int):
            return entry["size"], f"model_list.json ({candidate})"
        if entry and data.get("model_path") and entry.get("name"):
            q4nx = Path(str(data["model_path"])).expanduser() / entry["name"] / "model.q4nx"
            if q4nx.is_file():
                return q4nx.stat().st_size, str(q4nx)
    if opts.model_dir:
        q4nx = Path(opts.model_dir) / "model.q4nx"
        if q4nx.is_file():
            return q4nx.stat().st_size, str(q4nx)
    return None, "unknown"


def plausibility(result: RequestResult, size: int | None, generation: str | None,
                 ceiling: float) -> Check | None:
    tps = result.decoding_speed_tps
    if result.outcome != "success" or tps is None:
        return None
    if not math.isfinite(tps) or tps < 0:
        # NaN compares false with any ceiling: it would pass every bound
        return Check("FAIL", "plausibility", f"request {result.index}: the server reported "
                     f"{tps} tok/s, which is no speed", "the server's timing is broken; "
                     "do not trust its speeds")
    if size is None:
        return Check("WARN", "plausibility", f"request {result.index}: {tps:g} tok/s, but "
                     "the model's size is unknown", "give --model-bytes, --model-list or "
                     "--model-dir")
    gbps = size * tps / 1e9
    arithmetic = (f"{tps:g} tok/s x {size / 1e9:.2f} GB per token = {gbps:.1f} GB/s")
    where = f"the {ceiling:g} GB/s ceiling" + (f" of {generation}" if generation else "")
    if gbps > ceiling:
        return Check("FAIL", "plausibility", f"request {result.index}: {arithmetic}, above "
                     f"{where}: implausible", "this answer cannot have streamed that model; "
                     "check which model is resident (`/api/ps`)")
    return Check("PASS", "plausibility", f"request {result.index}: {arithmetic}, within {where}")


@dataclass
class Probe:
    opts: ServeOptions
    environment: dict[str, Any]
    client: FlmClient = field(init=False)

    def __post_init__(self) -> None:
        total = self.opts.total_timeout_s
        self.client = FlmClient(self.opts.url, self.opts.timeout_s,
                                time.monotonic() + total if total else None)

    def chat(self, index: int, tag: str) -> RequestResult:
        payload = {"model": tag, "messages": [{"role": "user", "content": self.opts.prompt}],
                   "max_tokens": self.opts.max_tokens, "stream": False}
        return classify_reply(index, tag, self.client.post("/v1/chat/completions", payload))

    def run(self) -> Report:
        opts, client = self.opts, self.client
        quick = min(opts.timeout_s, 15.0)
        version = client.get("/api/version", quick)
        if version.outcome == "unreachable":
            raise EnvironmentNotReady(f"cannot reach flm serve at {client.url}: "
                                      f"{version.error}; start it (`flm serve MODEL`) or fix "
                                      "--url")
        listed = client.get("/v1/models", quick)
        tags = client.get("/api/tags", quick)
        before = client.get("/api/ps", quick)
        known = sorted(set(_names(listed, "data", "id")) | set(_names(tags, "models", "name")))
        results = [self.chat(i, opts.model) for i in range(opts.requests)]
        after = client.get("/api/ps", quick)
        resident = _names(after, "models", "name") or _names(after, "models", "model")
        made_up = None
        if opts.made_up_tag:
            fake = f"no-such-model-{secrets.token_hex(3)}:0b"
            made_up = self.chat(len(results), fake)
        generation = opts.generation or (self.environment.get("npu") or {}).get("generation")
        ceiling = opts.ceiling_gbps or CEILINGS_GBPS.get(generation or "", DEFAULT_CEILING_GBPS)
        size, size_source = model_size(opts, (self.environment.get("flm") or {}).get("binary"))
        checks = self.checks(known, resident, results, made_up, size, generation, ceiling)
        server = {
            "url": client.url,
            "version": str(_mapping(version.body).get("version"))[:200]
            if _mapping(version.body).get("version") is not None else None,
            "endpoints": {path: reply.outcome for path, reply in
                          (("/api/version", version), ("/v1/models", listed),
                           ("/api/tags", tags), ("/api/ps", after))},
            "known_models": known,
            "resident_before": _names(before, "models", "name"),
            "resident_after": resident,
            "requests": [r.to_dict() for r in results],
            "made_up_tag": made_up.to_dict() if made_up else None,
            "model_bytes": size,
            "model_bytes_source": size_source,
            "bandwidth_ceiling_gbps": ceiling,
            "checks": [c.to_dict() for c in checks],
        }
        report = Report(
            command="serve-probe",
            harness={"version": __version__, "python": platform.python_version(),
                     "argv": command_argv(), "commit": harness_commit()},
            backend={"kind": "flm-server", "simulated": False, "url": client.url},
            case={"name": f"serve-probe {opts.model}", "source": "ROCm/FastFlowLM#712"},
            settings={"model": opts.model, "requests": opts.requests,
                      "max_tokens": opts.max_tokens, "prompt": opts.prompt,
                      "timeout_s": opts.timeout_s},
            environment=self.environment,
            sections={"server": server})
        report.verdict = verdict(results, checks)
        report.finished = utc_now()
        return report

    def checks(self, known: list[str], resident: list[str], results: list[RequestResult],
               made_up: RequestResult | None, size: int | None, generation: str | None,
               ceiling: float) -> list[Check]:
        tag = self.opts.model
        answered = any(r.outcome == "success" for r in results)
        out = []
        if known and tag not in known:
            out.append(Check("FAIL" if answered else "WARN", "tag known",
                             f"{tag} is not among the server's models ({', '.join(known)})"
                             + ("; yet it was answered" if answered else ""),
                             "use a listed tag: unknown tags are answered by the resident "
                             "model (ROCm/FastFlowLM#716)"))
        elif known:
            out.append(Check("PASS", "tag known", f"{tag} is listed by the server"))
        if resident and tag not in resident:
            out.append(Check("FAIL", "resident model", f"resident: {', '.join(resident)}; "
                             f"asked for {tag}", "the answers may come from the resident "
                             "model, whatever the response's model field says"))
        elif resident:
            out.append(Check("PASS", "resident model", f"{tag} is resident"))
        if made_up is not None:
            if made_up.outcome == "success":
                out.append(Check("FAIL", "made-up tag", f"{made_up.model} got a completion",
                                 "this server substitutes models for unknown tags "
                                 "(ROCm/FastFlowLM#716); check every tag you use"))
            elif refused(made_up):
                out.append(Check("PASS", "made-up tag", f"{made_up.model} was refused "
                                 f"({made_up.outcome}"
                                 + (f" {made_up.http_status}" if made_up.http_status else "")
                                 + ")"))
            elif made_up.outcome in ("error-body", "http-error"):
                out.append(Check("WARN", "made-up tag", f"{made_up.model} was not refused: "
                                 "the server tried to serve it and failed ("
                                 + (made_up.error or made_up.outcome).splitlines()[0][:160]
                                 + ")", "a server that refuses unknown tags answers 4xx or "
                                 "says the model is not found; check every tag you use "
                                 "(ROCm/FastFlowLM#716)"))
            else:
                out.append(Check("WARN", "made-up tag", f"{made_up.model} got no proper answer "
                                 f"({made_up.outcome}): whether this server substitutes models "
                                 "is unknown", "run serve-probe again once the server answers"))
        for result in results:
            check = plausibility(result, size, generation, ceiling)
            if check is not None:
                out.append(check)
        return out


NOT_FOUND = re.compile(r"not found|unknown model|no such model|does not exist|not exist|"
                       r"invalid model|not available|model .* not", re.I)


def refused(answer: RequestResult) -> bool:
    """Whether the server refused a tag (as a server that knows its models does: a 4xx, or
    an error saying the model is not there), rather than trying to run it and failing (an
    XRT state, a 5xx, any other error)."""
    if answer.state:
        return False
    if answer.outcome == "http-error" and answer.http_status is not None:
        return 400 <= answer.http_status < 500
    return answer.outcome == "error-body" and bool(NOT_FOUND.search(answer.error or "")) \
        and not (answer.http_status or 200) >= 500


def verdict(results: list[RequestResult], checks: list[Check]) -> dict[str, Any]:
    total = len(results)
    states = [r.state for r in results if r.outcome == "error-body" and r.state]
    failed = [r for r in results if r.outcome != "success"]
    flagged = [c for c in checks if c.status == "FAIL"]
    caveat = ("; but: " + "; ".join(f"{c.name}: {c.detail}" for c in flagged)) if flagged else ""
    if states:
        counts: dict[str, int] = {}
        for state in states:
            counts[state] = counts.get(state, 0) + 1
        first = next(r for r in results if r.state)
        summary = ", ".join(f"{s} {n}/{total}" for s, n in counts.items())
        return {"reproduced": True,
                "text": f"reproduced through flm serve: {len(failed)}/{total} requests failed "
                        f"({summary}): {(first.error or str(first.state)).splitlines()[0]}{caveat}"}
    if failed:
        kinds = ", ".join(sorted({r.outcome for r in failed}))
        return {"reproduced": None,
                "text": f"inconclusive: {len(failed)}/{total} requests failed without an XRT "
                        f"state ({kinds}){caveat}"}
    speeds = [r.decoding_speed_tps for r in results if r.decoding_speed_tps is not None
              and math.isfinite(r.decoding_speed_tps)]
    speed = f", decode {sum(speeds) / len(speeds):.1f} tok/s" if speeds else ""
    return {"reproduced": False,
            "text": f"not reproduced: {total}/{total} requests completed{speed}{caveat}"}


def request_failed(report: Report) -> bool:
    return any(r.get("outcome") != "success"
               for r in report.sections.get("server", {}).get("requests", []))
