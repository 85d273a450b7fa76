"""A real HTTP(S) hop in front of the test engine, for fault and TLS tests.

It forwards every request unchanged to the engine, and can be told to answer
the first N requests with an error status (429 / 503), to drop every
connection (``down``: the cluster went away), to stall requests (timeouts) or to serve TLS with a given
certificate, or to hold a ``_bulk`` request until the test decides whether the
engine gets it (``hold_bulk``: the client is killed meanwhile). Nothing is
mocked: the client talks real HTTP to it and it talks real HTTP to the engine.
"""

from __future__ import annotations

import http.client
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

_HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class ProxyState:
    """What the proxy does and saw; shared with its handler threads."""

    def __init__(self, upstream: str, fail_first: int, fail_status: int) -> None:
        parts = urlsplit(upstream)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.fail_first = fail_first
        self.fail_status = fail_status
        self.requests: list[str] = []
        self.failed: list[str] = []
        self.headers_seen: list[dict[str, str]] = []  # lower-case names
        self.down = False  # True: drop every connection without an answer, like a lost cluster
        self.stall_next = 0  # the next N requests wait ``stall_s`` before being forwarded (timeouts)
        self.stall_s = 0.0
        # hold_bulk = N: the (N+1)th _bulk request waits, with ``held`` set, until ``release`` is
        # set; then it is forwarded if ``forward_held`` else dropped unanswered. ``settled`` follows.
        self.hold_bulk: int | None = None
        self.forward_held = False
        self.bulks = 0
        self.held = threading.Event()
        self.release = threading.Event()
        self.settled = threading.Event()
        self.fail_matching: str | None = None  # also fail every request whose line contains this
        self.lock = threading.Lock()

    def arrive(self, line: str, headers: dict[str, str]) -> bool:
        """Record a request; True if it is to be stalled."""
        with self.lock:
            self.requests.append(line)
            self.headers_seen.append(headers)
            if self.stall_next > 0:
                self.stall_next -= 1
                return True
            return False

    def hold(self, line: str) -> bool:
        """True if this request is the ``_bulk`` to hold."""
        if "/_bulk" not in line:
            return False
        with self.lock:
            self.bulks += 1
            return self.hold_bulk is not None and self.bulks == self.hold_bulk + 1

    def should_fail(self, line: str) -> bool:
        with self.lock:
            if len(self.failed) < self.fail_first or (self.fail_matching and self.fail_matching in line):
                self.failed.append(line)
                return True
            return False


def _handler(state: ProxyState) -> type[BaseHTTPRequestHandler]:
    class Forward(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: the test asserts on ``state`` instead."""

        def _forward(self) -> None:
            if state.down:
                self.close_connection = True
                return
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_HEADERS}
            seen = {k.lower(): v for k, v in self.headers.items()}
            line = f"{self.command} {self.path}"
            if state.arrive(line, seen):
                time.sleep(state.stall_s)
            if state.hold(line):
                state.held.set()
                state.release.wait()
                if not state.forward_held:
                    self.close_connection = True
                    state.settled.set()
                    return
                try:
                    self._upstream(body, headers)
                finally:
                    state.settled.set()
                return
            if state.should_fail(line):
                payload = b'{"error":{"type":"es_rejected_execution_exception","reason":"busy"},"status":429}'
                self.send_response(state.fail_status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                return
            self._upstream(body, headers)

        def _upstream(self, body: bytes | None, headers: dict[str, str]) -> None:
            upstream = http.client.HTTPConnection(state.host, state.port, timeout=120)
            try:
                upstream.request(self.command, self.path, body=body, headers=headers)
                response = upstream.getresponse()
                payload = response.read()
                self.send_response(response.status)
                for key, value in response.getheaders():
                    if key.lower() not in _HOP_HEADERS:
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)
            finally:
                upstream.close()

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _forward  # noqa: N815 - http.server's names

    return Forward


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that gave up (timeout test) or a proxy shutting down is expected here."""


@contextmanager
def forwarding_proxy(
    upstream: str,
    *,
    fail_first: int = 0,
    fail_status: int = 429,
    tls: ssl.SSLContext | None = None,
) -> Iterator[tuple[str, ProxyState]]:
    """Serve on a free loopback port; yields the proxy URL and its state."""
    state = ProxyState(upstream, fail_first, fail_status)
    server = _QuietServer(("127.0.0.1", 0), _handler(state))
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    scheme = "https" if tls is not None else "http"
    try:
        yield f"{scheme}://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
