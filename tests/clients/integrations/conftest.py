"""Fixtures of the client-distribution and framework-integration tests: one real site per
session (`hindsight run`: gunicorn, a Celery worker that reviews and distils, embedded
PostgreSQL and Redis, on its own data dir and port), shared by every test here, and the
local OpenAI-compatible server playing the agents' LLM."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hindsight_client import HindsightClient
from tests.support.fake_openai import FakeOpenAI
from tests.support.launcher import SiteProcess
from tests.support.ports import free_port
from tests.support.waiting import wait_until


@dataclass
class LiveSite:
    url: str
    key: str  # the demo key: scopes ingest and recall (what the examples are given)
    reader: str  # a key that also reads trajectories back (the tests' checks)

    def client(self, **options: Any) -> HindsightClient:
        return HindsightClient(self.url, self.key, **{"spool_dir": False, **options})

    def get(self, path: str) -> Any:
        request = urllib.request.Request(
            f"{self.url}/api/v1/{path}", headers={"Authorization": f"Bearer {self.reader}"}
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read())

    def traces_of(self, agent: str) -> list[dict[str, Any]]:
        """The agent's traces, oldest first, each with its steps and review status."""
        listed = self.get(f"traces?agent={agent}&limit=200")["items"]
        return [self.get(f"traces/{t['id']}") for t in reversed(listed)]

    def reviewed_traces_of(self, agent: str, count: int, timeout: float = 30.0) -> list[dict]:
        """Wait until the agent has `count` complete traces, all reviewed by the worker."""

        def reviewed() -> list[dict] | None:
            traces = self.traces_of(agent)
            done = [t for t in traces if t["review_status"] == "reviewed"]
            return traces if len(traces) == count and len(done) == count else None

        return wait_until(reviewed, timeout=timeout)

    def completed_trace_of(self, agent: str, timeout: float = 30.0) -> dict[str, Any]:
        """The agent's one trace, once it is complete (whatever its review)."""

        def completed() -> dict[str, Any] | None:
            listed = self.get(f"traces?agent={agent}&is_complete=true")["items"]
            return self.get(f"traces/{listed[0]['id']}") if listed else None

        return wait_until(completed, timeout=timeout)


@pytest.fixture(scope="session")
def live_site(tmp_path_factory) -> Iterator[LiveSite]:
    directory = tmp_path_factory.mktemp("integrations-site")
    site = SiteProcess(directory / "data", free_port())
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        site.env.pop(name, None)  # the site reviews offline; only the agents talk to the fake
    # One failed call is enough to warn: each framework's second run is warned about its
    # first run's failure.
    site.env["HINDSIGHT_WARN_MIN_OCCURRENCES"] = "1"
    site.start()
    try:
        yield LiveSite(url=site.url, key=site.key(), reader=site.pipeline_key())
    finally:
        site.stop()


@pytest.fixture(scope="session")
def agent_llm() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def example_project(live_site, agent_llm, monkeypatch, tmp_path) -> Iterator[Path]:
    """A directory for a docs example to inspect, made the current one, with the environment
    the examples read: the site's URL and key, the agent's LLM."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HINDSIGHT_URL", live_site.url)
    monkeypatch.setenv("HINDSIGHT_API_KEY", live_site.key)
    monkeypatch.setenv("OPENAI_BASE_URL", agent_llm.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    yield tmp_path
    agent_llm.agent = None
    agent_llm.chat_requests.clear()
