"""A small HTTP client for `flm serve` that gives up on time, whatever the server does.

Every request has a deadline on the wall clock, checked before every read: each
`recv` waits at most the time left, so a server that trickles its status line,
its headers, a chunk-size line or its body one byte at a time is cut off at the
deadline like a silent one (`http.client` restarts its socket timeout on every
byte and would wait forever). An overall deadline (`--total-timeout`) can cap
every request of a command too.

FastFlowLM answers errors as ``{"error": "..."}`` with HTTP 200 (STACK.md 5), so
a status alone says little; the outcomes are: ok, redirect (3xx), http-error
(4xx/5xx, with the first line of its text), bad-json (2xx that is not JSON),
timeout, dropped, unreachable.
"""

from __future__ import annotations

import json
import math
import socket
import ssl
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from harness.formats.jsonread import JsonShapeError, loads
from harness.model.errors import BadInput

MAX_BODY = 8 * 1024 * 1024
MAX_HEAD = 64 * 1024


@dataclass
class Reply:
    outcome: str                # ok | redirect | http-error | bad-json | timeout | dropped | ...
    status: int | None = None
    body: Any = None
    error: str | None = None
    wall_ms: float = 0.0


class _Dropped(Exception):
    pass


class _Reader:
    """Reads from a socket, never waiting past `deadline` (time.monotonic)."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock = sock
        self.deadline = deadline
        self.buffer = b""

    def _fill(self) -> bool:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        self.sock.settimeout(left)
        block = self.sock.recv(65536)
        if not block:
            return False
        self.buffer += block
        return True

    def line(self, limit: int = MAX_HEAD) -> bytes:
        while b"\n" not in self.buffer:
            if len(self.buffer) > limit:
                raise _Dropped("a header line longer than the server may send")
            if not self._fill():
                raise _Dropped("the server closed the connection mid-answer")
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.rstrip(b"\r")

    def exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            if not self._fill():
                raise _Dropped("the server closed the connection mid-body")
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    def rest(self, limit: int) -> bytes:
        while self._fill():
            if len(self.buffer) > limit:
                break
        data, self.buffer = self.buffer, b""
        return data


def parse_url(url: str, option: str = "--url") -> tuple[str, str, int, str]:
    """(scheme, host, port, base path) of an http(s) URL, or BadInput naming what is wrong
    and the option that gave it."""
    shown = _without_userinfo(url)          # an error is pasted too: no password in it
    try:
        parts = urlsplit(_with_scheme(url))
        port = parts.port
    except ValueError as err:
        raise BadInput(f"{option} {shown!r} is not a URL ({err}); use http://HOST:PORT, e.g. "
                       "http://127.0.0.1:52625") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadInput(f"{option} {shown!r}: use http://HOST:PORT (e.g. "
                       "http://127.0.0.1:52625)")
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80), \
        parts.path.rstrip("/")


def recorded_url(url: str, option: str = "--url") -> str:
    """The URL as a report records it (and the client asks): scheme://host:port and the
    base path, nothing else. User-info (`user:password@`) is never sent, so it is never
    kept, whether or not the URL had a scheme; a query or fragment is not asked either."""
    scheme, host, port, base = parse_url(url, option)
    return f"{scheme}://{_bracketed(host)}:{port}{base}"


def carries_userinfo(url: str) -> bool:
    """Whether a URL as given names a user (and perhaps a password) before its host."""
    return _without_userinfo(url) != url


def _with_scheme(url: str) -> str:
    """A URL typed without a scheme (`host:port`, `//host:port`) as the http one it is."""
    return url if "://" in url else "http://" + url.removeprefix("//")


def _without_userinfo(url: str) -> str:
    """`url` with whatever stands before the last @ of its authority left out."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        sep = "//" if url.startswith("//") else ""
        scheme, rest = "", url.removeprefix(sep)
    authority_end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    at = rest.rfind("@", 0, authority_end)
    if at < 0:
        return url
    return scheme + sep + rest[at + 1:]


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


class FlmClient:
    def __init__(self, url: str, timeout_s: float = 60.0,
                 total_deadline: float | None = None) -> None:
        if not math.isfinite(timeout_s) or timeout_s <= 0:
            raise BadInput(f"--timeout {timeout_s}: give a number of seconds above 0")
        self.scheme, self.host, self.port, self.base = parse_url(url)
        self.url = f"{self.scheme}://{_bracketed(self.host)}:{self.port}"
        self.timeout_s = timeout_s
        self.total_deadline = total_deadline          # time.monotonic(), for every request

    def get(self, path: str, timeout_s: float | None = None) -> Reply:
        return self._request("GET", path, None, timeout_s)

    def post(self, path: str, payload: dict[str, Any], timeout_s: float | None = None) -> Reply:
        return self._request("POST", path, json.dumps(payload).encode(), timeout_s)

    def _request(self, method: str, path: str, body: bytes | None,
                 timeout_s: float | None) -> Reply:
        limit = timeout_s or self.timeout_s
        started = time.monotonic()
        deadline = started + limit
        if self.total_deadline is not None and self.total_deadline < deadline:
            deadline = self.total_deadline
        reply = self._exchange(method, path, body, deadline, limit)
        reply.wall_ms = round((time.monotonic() - started) * 1000, 1)
        return reply

    def _exchange(self, method: str, path: str, body: bytes | None, deadline: float,
                  limit: float) -> Reply:
        left = deadline - time.monotonic()
        if left <= 0:
            return Reply("timeout", error="no time left (--total-timeout)")
        try:
            sock = socket.create_connection((self.host, self.port), timeout=left)
        except TimeoutError:
            return Reply("timeout", error=f"no connection within {limit:g} s")
        except OSError as err:
            return Reply("unreachable", error=_reason(err))
        try:
            if self.scheme == "https":
                sock.settimeout(max(0.001, deadline - time.monotonic()))
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=self.host)
            head = (f"{method} {self.base + path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                    "Connection: close\r\nAccept: application/json\r\n")
            if body is not None:
                head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            sock.sendall(head.encode() + b"\r\n" + (body or b""))
            status, headers, data = _read_response(_Reader(sock, deadline))
        except TimeoutError:
            return Reply("timeout", error=f"no complete answer within {limit:g} s")
        except (_Dropped, ConnectionError) as err:
            return Reply("dropped", error=f"the server dropped the connection ({err})")
        except ssl.SSLError as err:
            return Reply("dropped", error=f"TLS failed: {err.reason or err}")
        except OSError as err:
            return Reply("dropped", error=f"{type(err).__name__}: {err}")
        finally:
            sock.close()
        return _classify(status, headers, data)


def _read_response(reader: _Reader) -> tuple[int, dict[str, str], bytes]:
    status_line = reader.line().decode("latin-1")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit() \
            or len(parts[1]) != 3:
        raise _Dropped(f"not an HTTP answer: {status_line[:60]!r}")
    headers: dict[str, str] = {}
    for _ in range(200):
        line = reader.line().decode("latin-1")
        if not line:
            break
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    else:
        raise _Dropped("more headers than an answer may have")
    if "chunked" in headers.get("transfer-encoding", "").lower():
        data = b""
        while True:
            size_text = reader.line().split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise _Dropped(f"a bad chunk size {size_text[:20]!r}") from None
            if size == 0:
                while reader.line():          # trailers, up to the blank line
                    pass
                return int(parts[1]), headers, data
            if len(data) + size > MAX_BODY:
                raise _Dropped(f"an answer larger than {MAX_BODY} bytes")
            data += reader.exactly(size)
            reader.line()
    if "content-length" in headers:
        try:
            length = int(headers["content-length"])
        except ValueError:
            raise _Dropped(f"a bad Content-Length {headers['content-length'][:20]!r}") from None
        if not 0 <= length <= MAX_BODY:
            shown = length if len(headers["content-length"]) <= 20 else \
                f"{len(headers['content-length'])} digits of"
            raise _Dropped(f"an answer of {shown} bytes (at most {MAX_BODY} are read)")
        return int(parts[1]), headers, reader.exactly(length)
    data = reader.rest(MAX_BODY)
    if len(data) > MAX_BODY:
        raise _Dropped(f"an answer larger than {MAX_BODY} bytes")
    return int(parts[1]), headers, data


def _classify(status: int, headers: dict[str, str], data: bytes) -> Reply:
    text = data.decode("utf-8", "replace")
    try:
        parsed = loads(text) if text.strip() else None
        is_json, problem = True, ""
    except ValueError as err:   # JsonShapeError too: deep or duplicated is no answer
        parsed, is_json = None, False
        problem = str(err) if isinstance(err, JsonShapeError) else "not JSON"
    if 300 <= status < 400:
        where = headers.get("location", "nowhere given")
        return Reply("redirect", status, parsed, error=f"HTTP {status} redirect to {where}; give "
                     "--url the server's own address")
    if status >= 400:
        first = (text.strip().splitlines() or [""])[0][:160]
        detail = f": {first}" if first and not is_json else ""
        return Reply("http-error", status, parsed, error=f"HTTP {status}{detail}")
    if not is_json:
        return Reply("bad-json", status, error=f"HTTP {status} but {problem}: {data[:120]!r}")
    return Reply("ok", status, parsed)


def _reason(err: BaseException) -> str:
    if isinstance(err, ConnectionRefusedError):
        return "connection refused"
    if isinstance(err, socket.gaierror):
        return f"unknown host ({err.strerror})"
    return getattr(err, "strerror", None) or str(err)
