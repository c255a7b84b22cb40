"""Shared fixtures: projects and keys, an API client, a real Celery worker, Redis control."""

import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib
from django.conf import settings
from django.test import Client

from accounts.models import ApiKey, Project
from accounts.services.api_keys import api_key_create
from hindsight_site import embedded
from tests.fake_openai import FakeOpenAI

ROOT = Path(__file__).resolve().parent.parent
_ids = itertools.count(1)
BROWSER_TESTS = Path(__file__).resolve().parent / "browser"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/browser/ drives Chromium: marked `browser` (`-m "not browser"`)."""
    for item in items:
        if BROWSER_TESTS in Path(item.path).parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session", autouse=True)
def _clean_broker() -> None:
    # Redis keeps its AOF between runs; tasks left by an earlier run must not leak into this one.
    redis_lib.from_url(settings.REDIS_URL).flushdb()


@pytest.fixture
def make_project(db) -> Callable[..., Project]:
    def make(name: str | None = None) -> Project:
        return Project.objects.create(name=name or f"project-{next(_ids)}")

    return make


@pytest.fixture
def project(make_project) -> Project:
    return make_project("acme")


@pytest.fixture
def make_key(db) -> Callable[..., str]:
    def make(project: Project, scopes: tuple[str, ...] = ("ingest", "recall")) -> str:
        return api_key_create(project=project, scopes=list(scopes)).raw

    return make


@pytest.fixture
def pipeline_key(project, make_key) -> str:
    """A key that sends trajectories and reads them back (ingest + read), as most tests do."""
    return make_key(project, ("ingest", "read"))


class ApiClient:
    """The Django test client speaking JSON with an API key."""

    def __init__(self, key: str | None) -> None:
        self.client = Client()
        self.key = key

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"} if self.key else {}

    def post(self, path: str, body: Any = None, *, raw: bytes | None = None):
        data = raw if raw is not None else json.dumps(body)
        return self.client.post(
            "/api/v1/" + path, data=data, content_type="application/json", headers=self._headers()
        )

    def get(self, path: str, params: dict[str, Any] | None = None):
        return self.client.get("/api/v1/" + path, params or {}, headers=self._headers())


@pytest.fixture
def api(pipeline_key) -> ApiClient:
    return ApiClient(pipeline_key)


@pytest.fixture
def api_for() -> Callable[[str | None], ApiClient]:
    return ApiClient


def step(index: int, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"index": index, "kind": "tool_call", "tool": "shell"}
    base.update(fields)
    return base


def trajectory(external_id: str = "run-1", *, steps: int = 3, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "external_id": external_id,
        "agent": "ops-bot",
        "task": "Find out why the web container keeps restarting",
        "environment": ["docker"],
        "outcome": "success",
        "steps": [
            step(i, arguments={"cmd": f"docker logs web --tail {i}"}, observation=f"line {i}")
            for i in range(steps)
        ],
    }
    body.update(fields)
    return body


# ---------------------------------------------------------------------------- real processes


def running_site_key(data_dir: Path, scopes: list[str], project: str = "demo") -> str:
    """A new key of the running site on `data_dir` (its launcher's database, found through its
    record), written straight into its table: `manage.py create_api_key` costs a Django start
    (~3 s) per launched site. The demo key has no `read` scope; tests that read back get this."""
    import secrets

    import psycopg

    from accounts.auth import hash_key
    from accounts.services.api_keys import KEY_PREFIX, VISIBLE_PREFIX_CHARS

    record = embedded.read_record(data_dir)
    assert record is not None, f"no running site on {data_dir}"
    raw = KEY_PREFIX + secrets.token_urlsafe(32)
    with psycopg.connect(record.database_url, autocommit=True) as connection:
        connection.execute(
            "INSERT INTO traces_apikey (project_id, name, prefix, key_hash, scopes, created_at) "
            "SELECT id, 'tests', %s, %s, %s, now() FROM traces_project WHERE name = %s",
            [raw[:VISIBLE_PREFIX_CHARS], hash_key(raw), sorted(scopes), project],
        )
    return raw


def worker_database_url() -> str:
    from django.db import connection

    info = connection.settings_dict
    return f"postgresql://{info['USER']}:{info['PASSWORD']}@/{info['NAME']}?host={info['HOST']}"


class WorkerProcess:
    def __init__(self, log: Path, extra_env: dict[str, str] | None = None) -> None:
        env = {
            **os.environ,
            "DATABASE_URL": worker_database_url(),
            "REDIS_URL": settings.REDIS_URL,
            **(extra_env or {}),
        }
        self.log = log
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "hindsight_site",
                "worker",
                "--pool",
                "solo",
                "--loglevel",
                "INFO",
                "--without-gossip",
                "--without-mingle",
                "--hostname",
                f"test-{os.getpid()}-{next(_ids)}@%h",
            ],
            env=env,
            cwd=ROOT,
            stdout=log.open("ab"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while b"ready." not in log.read_bytes():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("celery worker did not start:\n" + log.read_text()[-3000:])
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def celery_worker(transactional_db, tmp_path) -> Iterator[WorkerProcess]:
    worker = WorkerProcess(tmp_path / "worker.log")
    yield worker
    worker.stop()


def wait_until(
    predicate: Callable[[], Any], *, timeout: float = 15.0, interval: float = 0.05
) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


@pytest.fixture
def redis_control() -> Iterator["RedisControl"]:
    control = RedisControl()
    yield control
    control.start()


class RedisControl:
    """Stops and restarts the suite's embedded Redis (same socket), for broker-outage tests."""

    def __init__(self) -> None:
        self.directory = embedded.data_dir()
        self.socket = embedded.redis_socket(self.directory)
        assert settings.REDIS_URL == embedded.redis_url_for_socket(self.socket)

    def stop(self) -> None:
        try:
            redis_lib.from_url(settings.REDIS_URL).shutdown(nosave=True)
        except redis_lib.ConnectionError:
            pass  # shutdown closes the connection under us
        wait_until(lambda: not embedded.redis_answers(self.socket))

    def start(self) -> None:
        if embedded.redis_answers(self.socket):
            return
        server = embedded.RedisServer(self.directory)
        server.start()
        import atexit

        atexit.register(server.stop)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def llm_settings(settings, fake_openai):
    """Point the in-process LLM reviewer at the local OpenAI-compatible server."""
    settings.OPENAI_BASE_URL = fake_openai.base_url
    settings.OPENAI_API_KEY = "test-key"
    settings.HINDSIGHT_LLM_MODEL = "fake-reviewer"
    settings.HINDSIGHT_LLM_TIMEOUT = 1.0
    settings.HINDSIGHT_REVIEWER = "auto"
    return settings


__all__ = ["ApiKey", "step", "trajectory", "wait_until"]
