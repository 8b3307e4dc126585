"""The simulated stack's `flm serve`: a loopback HTTP server that answers as FastFlowLM's
does (STACK.md 5: OpenAI's `/v1/models` and `/v1/chat/completions`, Ollama's `/api/tags`
and `/api/ps`; errors as ``{"error": "..."}`` with HTTP 200), so `investigate` can ask
"is it the NPU path at all?" where there is no real server, through the same client and
checks as `serve-probe`.

It serves one tag. Its decode is whatever the `decode` callable says the NPU path did
(None: the token was decoded; else the error text the engine surfaces, XRT's message with
its state), unless the profile's `serve-fault:KIND` fails the request first, before any
NPU call: `error` answers an error that carries no XRT state, `drop` closes the
connection without an answer (a server that died mid-request). Its version, its answers'
ids and its own errors name it a stand-in, and a report marks its section so, so no line
of it can pass for a real server's.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

from harness.sim.profiles import SERVE_FAULTS

VERSION = "SIMULATED stand-in for flm serve"
FAULT_ERROR = ("SIMULATED serve-fault:error: the stand-in server failed this request before "
               "any NPU call")
MAX_REQUEST = 1024 * 1024

Decode = Callable[[], "str | None"]
Served = TypeVar("Served", bound="LoopbackServer")


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away is not news; the server keeps answering."""


class LoopbackServer:
    """An HTTP server on 127.0.0.1 (an ephemeral port) with `handler`; a context manager
    that serves from a daemon thread and stops on exit."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], name: str) -> None:
        self._server = _Quiet(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name=name)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self: Served) -> Served:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class StandInServer(LoopbackServer):
    """A stand-in `flm serve` for one tag."""

    def __init__(self, tag: str, decode: Decode, fault: str | None = None) -> None:
        if fault is not None and fault not in SERVE_FAULTS:
            raise ValueError(f"serve-fault {fault!r}: one of {', '.join(SERVE_FAULTS)}")
        self.tag = tag
        self.decode = decode
        self.fault = fault
        self.chats = 0                      # chat requests answered (or dropped)
        super().__init__(_handler(self), "stand-in flm serve")

    def answer_chat(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """The body a chat request gets (None: the connection is dropped)."""
        self.chats += 1
        tag = request.get("model")
        if tag != self.tag:
            return {"error": f"model {tag} not found (the stand-in serves {self.tag} only)"}
        if self.fault == "drop":
            return None
        if self.fault == "error":
            return {"error": FAULT_ERROR}
        failed = self.decode()
        if failed is not None:
            return {"error": failed}
        return {"id": f"stand-in-{self.chats}", "object": "chat.completion", "model": tag,
                "choices": [{"index": 0, "finish_reason": "length",
                             "message": {"role": "assistant", "content": ""}}],
                "usage": {"completion_tokens": 1}}


class JsonHandler(BaseHTTPRequestHandler):
    """Answers in JSON, quietly."""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the harness's own output says what the server answered."""

    def send_json(self, data: dict[str, Any], status: int = 200) -> None:
        body = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _handler(server: StandInServer) -> type[BaseHTTPRequestHandler]:
    tag = server.tag

    class Handler(JsonHandler):
        def do_GET(self) -> None:
            answers: dict[str, dict[str, Any]] = {
                "/api/version": {"version": VERSION},
                "/v1/models": {"object": "list", "data": [{"id": tag}]},
                "/api/tags": {"models": [{"name": tag}]},
                "/api/ps": {"models": [{"name": tag, "model": tag}]}}
            if self.path in answers:
                self.send_json(answers[self.path])
            else:
                self.send_json({"error": f"{self.path} not found"}, 404)

        def do_POST(self) -> None:
            if self.path != "/v1/chat/completions":
                self.send_json({"error": f"{self.path} not found"}, 404)
                return
            try:
                length = min(int(self.headers.get("Content-Length", 0)), MAX_REQUEST)
                request = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self.send_json({"error": "the request is not JSON"}, 400)
                return
            body = server.answer_chat(request if isinstance(request, dict) else {})
            if body is None:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.send_json(body)

    return Handler
