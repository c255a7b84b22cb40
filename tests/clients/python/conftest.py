"""Fixtures for the client tests: the real site over HTTP (pytest-django's live server), a key,
and a small HTTP relay in front of it that can be slowed down or made to fail (the relay, the
launched production stack and the retry policy are in tests/support/)."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from accounts.models import Project
from accounts.services.api_keys import api_key_create
from tests.support.client import Site
from tests.support.relay import Relay


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


@pytest.fixture
def relay(site) -> Iterator[Relay]:
    relay = Relay(upstream=site.url).up()
    yield relay
    relay.down()
