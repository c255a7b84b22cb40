"""Fixtures for the client tests: the real site over HTTP (pytest-django's live server), a key,
a small HTTP relay in front of it that can be slowed down or made to fail, and the real
production stack (`hindsight run`: gunicorn) as a subprocess for what only it does."""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from accounts.models import Project
from accounts.services.api_keys import api_key_create
from hindsight_client import Backoff, HindsightClient
from tests.conftest import running_site_key

# Short waits keep the retry tests quick; the policy is the same as in production.
FAST_BACKOFF = Backoff(base=0.02, cap=0.2)
ROOT = Path(__file__).resolve().parents[2]
HINDSIGHT = shutil.which("hindsight", path=str(Path(sys.executable).parent)) or "hindsight"


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
    key = api_key_create(project=project, scopes=["ingest", "recall", "read"]).raw
    return Site(url=live_server.url, key=key, project=project)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


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


@pytest.fixture
def relay(site) -> Iterator[Relay]:
    relay = Relay(upstream=site.url).up()
    yield relay
    relay.down()


class SiteProcess:
    """`hindsight run --no-beat` (gunicorn, the worker, embedded PostgreSQL and Redis) on its
    own data dir and port."""

    def __init__(self, data_dir: Path, port: int) -> None:
        self.data_dir = data_dir
        self.port = port
        self.log = data_dir.parent / "site.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
        self.env.update(
            HINDSIGHT_DATA_DIR=str(data_dir),
            HINDSIGHT_PORT=str(port),
            HINDSIGHT_WEB_WORKERS="1",
            HINDSIGHT_WORKER_CONCURRENCY="1",
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.starts += 1  # the log is appended to: wait for one more "ready" than before
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [HINDSIGHT, "run", "--no-beat"],
                env=self.env,
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + 120
        marker = b"[hindsight] ready"
        while self.log.read_bytes().count(marker) < self.starts:
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail("the site did not start:\n" + self.log.read_text()[-3000:])
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def key(self) -> str:
        """The demo key: ingest and recall."""
        return (self.data_dir / "demo-api-key").read_text().strip()

    def pipeline_key(self) -> str:
        """A key that also reads trajectories back (`get_trace`)."""
        if not hasattr(self, "_pipeline_key"):
            self._pipeline_key = running_site_key(self.data_dir, ["ingest", "recall", "read"])
        return self._pipeline_key


def wait_for(predicate: Callable[[], object], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(0.02)
