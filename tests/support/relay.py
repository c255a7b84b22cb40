"""An HTTP relay in front of a site that can be slowed down or made to fail."""

from __future__ import annotations

import http.client
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from tests.support.ports import free_port


@dataclass
class Relay:
    """Forwards every request to `upstream`. `fail_next(status, n, retry_after)` answers the
    next n requests itself; `answer_when(status, ...)` answers itself every request whose path
    or body holds a marker (as a server failing on one value would); `delay` holds each
    request; `down()` refuses connections."""

    upstream: str
    delay: float = 0.0
    failures: list[tuple[int, str | None]] = field(default_factory=list)
    rules: list[tuple[int, str, bytes]] = field(default_factory=list)
    # The body size of every request, in order.
    sizes: list[int] = field(default_factory=list)
    # Forward the next n requests, then answer 502 as if the answer were lost on the way.
    lose_answers: int = 0
    seen: list[tuple[str, str, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def fail_next(self, status: int, times: int = 1, retry_after: str | None = None) -> None:
        with self.lock:
            self.failures.extend([(status, retry_after)] * times)

    def answer_when(self, status: int, *, path: str = "", body: bytes = b"") -> None:
        with self.lock:
            self.rules.append((status, path, body))

    def clear_rules(self) -> None:
        with self.lock:
            self.rules.clear()

    def paths(self, method: str | None = None) -> list[str]:
        return [path for m, path, _ in self.seen if method in (None, m)]

    def statuses(self) -> list[int]:
        return [status for _, _, status in self.seen]

    def up(self) -> Relay:
        relay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if relay.delay:
                    time.sleep(relay.delay)
                with relay.lock:
                    relay.sizes.append(len(body))
                    failure = relay.failures.pop(0) if relay.failures else None
                    for status, path, marker in relay.rules:
                        if failure is None and path in self.path and marker in body:
                            failure = (status, None)
                # Each request is noted before it is answered, so a client that got its answer
                # always finds it in `seen`.
                if failure is not None:
                    status, retry_after = failure
                    relay._note(self.command, self.path, status)
                    payload = b'{"detail": "injected by the test relay"}'
                    self.send_response(status)
                    if retry_after is not None:
                        self.send_header("Retry-After", retry_after)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                target = urlsplit(relay.upstream)
                conn = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                conn.request(self.command, self.path, body=body, headers=headers)
                answer = conn.getresponse()
                payload = answer.read()
                conn.close()
                with relay.lock:
                    lose = relay.lose_answers > 0
                    relay.lose_answers -= lose
                relay._note(self.command, self.path, answer.status)
                if lose:
                    self.send_response(502)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(answer.status)
                for name, value in answer.getheaders():
                    if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _forward

        if not self.port:
            self.port = free_port()
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def down(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def _note(self, method: str, path: str, status: int) -> None:
        with self.lock:
            self.seen.append((method, path, status))
