"""A small HTTP client for `flm serve` that always gives up on time.

Every request has an overall deadline: the socket timeout bounds each read,
and the body is read in pieces with the deadline checked between them, so a
server that stalls, trickles or drops the connection is reported, never
waited on forever. FastFlowLM answers errors as ``{"error": "..."}`` with
HTTP 200 (STACK.md 5), so an HTTP status alone says little.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from harness.errors import BadInput

MAX_BODY = 8 * 1024 * 1024


@dataclass
class Reply:
    outcome: str                # ok | http-error | bad-json | timeout | dropped | unreachable
    status: int | None = None
    body: Any = None
    error: str | None = None
    wall_ms: float = 0.0


class FlmClient:
    def __init__(self, url: str, timeout_s: float = 60.0) -> None:
        parts = urlsplit(url if "://" in url else f"http://{url}")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BadInput(f"--url {url!r}: use http://HOST:PORT (e.g. http://127.0.0.1:52625)")
        self.url = f"{parts.scheme}://{parts.netloc}"
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.base = parts.path.rstrip("/")
        self.timeout_s = timeout_s

    def get(self, path: str, timeout_s: float | None = None) -> Reply:
        return self._request("GET", path, None, timeout_s)

    def post(self, path: str, payload: dict[str, Any], timeout_s: float | None = None) -> Reply:
        return self._request("POST", path, json.dumps(payload).encode(), timeout_s)

    def _request(self, method: str, path: str, body: bytes | None,
                 timeout_s: float | None) -> Reply:
        limit = timeout_s or self.timeout_s
        started = time.monotonic()
        deadline = started + limit
        kind = http.client.HTTPSConnection if self.scheme == "https" else \
            http.client.HTTPConnection
        conn = kind(self.host, self.port, timeout=limit)

        def done(reply: Reply) -> Reply:
            reply.wall_ms = round((time.monotonic() - started) * 1000, 1)
            conn.close()
            return reply

        try:
            conn.connect()
        except (ConnectionRefusedError, socket.gaierror, OSError) as err:
            if isinstance(err, TimeoutError):
                return done(Reply("timeout", error=f"no connection within {limit:g} s"))
            return done(Reply("unreachable", error=_reason(err)))
        try:
            headers = {"Content-Type": "application/json"} if body is not None else {}
            conn.request(method, self.base + path, body=body, headers=headers)
            response = conn.getresponse()
            chunks: list[bytes] = []
            total = 0
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                if conn.sock is not None:
                    conn.sock.settimeout(left)
                block = response.read1(65536)
                if not block:
                    break
                chunks.append(block)
                total += len(block)
                if total > MAX_BODY:
                    return done(Reply("bad-json", response.status,
                                      error=f"response larger than {MAX_BODY} bytes"))
        except TimeoutError:
            return done(Reply("timeout", error=f"no complete answer within {limit:g} s"))
        except (http.client.RemoteDisconnected, http.client.IncompleteRead,
                ConnectionResetError, BrokenPipeError) as err:
            return done(Reply("dropped", error=f"the server dropped the connection "
                                               f"({type(err).__name__})"))
        except (http.client.HTTPException, OSError) as err:
            return done(Reply("dropped", error=f"{type(err).__name__}: {err}"))
        raw = b"".join(chunks)
        try:
            parsed = json.loads(raw.decode("utf-8")) if raw else None
        except (UnicodeDecodeError, ValueError):
            return done(Reply("bad-json", response.status,
                              error=f"not JSON: {raw[:120]!r}"))
        if response.status >= 400:
            return done(Reply("http-error", response.status, parsed,
                              error=f"HTTP {response.status}"))
        return done(Reply("ok", response.status, parsed))


def _reason(err: BaseException) -> str:
    if isinstance(err, ConnectionRefusedError):
        return "connection refused"
    if isinstance(err, socket.gaierror):
        return f"unknown host ({err.strerror})"
    return getattr(err, "strerror", None) or str(err)
