"""A loopback HTTP server that answers like FastFlowLM's `flm serve` (STACK.md 5).

Errors come back as {"error": ...} with HTTP 200; the response's model field
echoes the tag asked for; /api/ps names the resident model; an unknown tag is
answered by the resident model when `substitute` is on (ROCm/FastFlowLM#716).
It can also be slow, trickle its answer, or drop the connection.
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass, field

from harness.sim.stand_in_server import JsonHandler, LoopbackServer


@dataclass
class Behaviour:
    models: list[str] = field(default_factory=lambda: ["qwen3:1.7b", "minicpm5:2b"])
    resident: str = "minicpm5:2b"
    chat: str = "success"            # success | error | slow | drop | trickle
    error: str = "runlist failed execution (ERT_CMD_STATE_TIMEOUT)"
    substitute: bool = False         # answer unknown tags with the resident model
    decode_tps: float = 19.8
    delay_s: float = 5.0
    unknown_tag: str = "refuse"      # refuse (not found) | fail (tries it: HTTP 500)
    answer: str | None = None        # raw JSON text for a completion, wrong as it may be
    requests: list[dict] = field(default_factory=list)


class FakeFlm(LoopbackServer):
    def __init__(self, behaviour: Behaviour | None = None) -> None:
        self.behaviour = behaviour or Behaviour()
        super().__init__(_handler(self.behaviour), "fake flm serve")


def _handler(b: Behaviour):
    class Handler(JsonHandler):

        def do_GET(self) -> None:
            if self.path == "/api/version":
                self.send_json({"version": "1.0.6"})
            elif self.path == "/v1/models":
                self.send_json({"object": "list", "data": [{"id": m} for m in b.models]})
            elif self.path == "/api/tags":
                self.send_json({"models": [{"name": m} for m in b.models]})
            elif self.path == "/api/ps":
                self.send_json({"models": [{"name": b.resident, "model": b.resident}]})
            else:
                self.send_json({"error": "not found"}, 404)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            request = json.loads(self.rfile.read(length) or b"{}")
            b.requests.append(request)
            tag = request.get("model")
            if tag not in b.models and not b.substitute:
                if b.unknown_tag == "fail":
                    self.send_json({"error": "internal error while loading the model"}, 500)
                else:
                    self.send_json({"error": f"model {tag} not found"})
                return
            if b.answer is not None:
                body = b.answer.encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            if b.chat == "drop":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if b.chat == "slow":
                time.sleep(b.delay_s)
            if b.chat == "trickle":
                self.send_response(200)
                self.send_header("Content-Length", "1000")
                self.end_headers()
                for _ in range(int(b.delay_s / 0.1)):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.1)
                return
            if b.chat == "error":
                self.send_json({"error": b.error})
                return
            self.send_json({
                "id": "chatcmpl-1", "object": "chat.completion", "model": tag,
                "choices": [{"index": 0, "finish_reason": "length",
                             "message": {"role": "assistant", "content": "Hi"}}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13},
                "prefill_duration_ttft": 0.21, "prefill_speed_tps": 57.1,
                "decoding_speed_tps": b.decode_tps,
            })

    return Handler
