"""A loopback server that misbehaves at the HTTP level, one way per mode, to test that a
client gives up on time: it trickles its status line, its headers or a chunk-size line a
byte at a time, says nothing at all, or answers 500 with text, or a redirect."""

from __future__ import annotations

import json
import socketserver
import threading
import time

GOOD_JSON = {"version": "1.0.6", "models": [{"name": "minicpm5:2b"}],
             "data": [{"id": "minicpm5:2b"}]}


class Hostile:
    def __init__(self, post: str, get: str = "json", drip_s: float = 0.2) -> None:
        self.modes = {"GET": get, "POST": post}
        self.drip_s = drip_s
        self.stop = threading.Event()
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                outer.serve(self.request)

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Hostile:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()

    def drip(self, sock, data: bytes, forever: bool = False) -> None:
        while not self.stop.is_set():
            for byte in data:
                if self.stop.is_set():
                    return
                sock.sendall(bytes([byte]))
                time.sleep(self.drip_s)
            if not forever:
                return

    def serve(self, sock) -> None:
        request = b""
        while b"\r\n\r\n" not in request:
            block = sock.recv(4096)
            if not block:
                return
            request += block
        mode = self.modes["POST" if request.startswith(b"POST") else "GET"]
        try:
            if mode == "json":
                body = json.dumps(GOOD_JSON).encode()
                sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            elif mode == "silent":
                self.stop.wait(60)
            elif mode == "trickle-status":
                self.drip(sock, b"HTTP/1.1 200 OK", forever=True)
            elif mode == "trickle-headers":
                sock.sendall(b"HTTP/1.1 200 OK\r\n")
                self.drip(sock, b"X-Slow: " + b"a" * 10_000, forever=True)
            elif mode == "trickle-chunk":
                sock.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                self.drip(sock, b"1" * 10_000, forever=True)
            elif mode == "http500":
                body = b"boom: the engine crashed\nmore detail\n"
                sock.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain"
                             + f"\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
            elif mode == "redirect":
                sock.sendall(b"HTTP/1.1 302 Found\r\nLocation: http://elsewhere:1/\r\n"
                             b"Content-Length: 0\r\n\r\n")
        except OSError:
            pass                         # the client gave up: the point of most modes
