"""Fixtures for the client tests: the real site over HTTP (pytest-django's live server), a key,
and a small HTTP relay in front of it that can be slowed down or made to fail."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from hindsight_client import Backoff, HindsightClient
from traces.models import Project
from traces.services.api_keys import api_key_create

# Short waits keep the retry tests quick; the policy is the same as in production.
FAST_BACKOFF = Backoff(base=0.02, cap=0.2)


@dataclass
class Site:
    url: str
    key: str
    project: Project

    def client(self, url: str | None = None, **options) -> HindsightClient:
        """A client of this site, or of `url` (a relay in front of it) with this site's key."""
        return HindsightClient(url or self.url, self.key, **options)


@pytest.fixture(autouse=True)
def spool_dir(tmp_path, monkeypatch) -> Path:
    """Every test (and every process it starts) spools into its own directory, never into the
    user's cache."""
    directory = tmp_path / "spool"
    monkeypatch.setenv("HINDSIGHT_SPOOL_DIR", str(directory))
    return directory


@pytest.fixture
def site(live_server, transactional_db) -> Site:
    project = Project.objects.create(name="client-tests")
    key = api_key_create(project=project, scopes=["ingest", "recall"]).raw
    return Site(url=live_server.url, key=key, project=project)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Relay:
    """Forwards every request to `upstream`. `fail_next(status, n, retry_after)` answers the
    next n requests itself; `delay` holds each request; `down()` refuses connections."""

    upstream: str
    delay: float = 0.0
    failures: list[tuple[int, str | None]] = field(default_factory=list)
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
                    failure = relay.failures.pop(0) if relay.failures else None
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


@pytest.fixture
def relay(site) -> Iterator[Relay]:
    relay = Relay(upstream=site.url).up()
    yield relay
    relay.down()


def wait_for(predicate: Callable[[], object], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(0.02)
