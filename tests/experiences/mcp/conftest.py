"""Fixtures for the MCP tests: a live hindsight site with a key (the command lines that put the
capture proxy between the `mcp` client and the toy server are in tests/support/mcp.py)."""

import pytest

from accounts.models import Project
from accounts.services.api_keys import api_key_create
from tests.support.mcp import Site


@pytest.fixture
def site(live_server, transactional_db) -> Site:
    project = Project.objects.create(name="mcp-tests")
    key = api_key_create(project=project, scopes=["ingest", "recall"]).raw
    return Site(url=live_server.url, key=key, project=project)
