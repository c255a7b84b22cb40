"""Fixtures of the API's fuzz tests (test_api_schemathesis.py, test_api_hostile_input.py,
test_middleware_chunked_body.py): a key with every scope, requests through the real WSGI stack."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis.configuration import set_hypothesis_home_dir

from tests.support.api import ApiClient

# Hypothesis caches what it learns about strings under ./.hypothesis by default; keep it with the
# suite's other data (the data dir is outside the work tree or git-ignored).
set_hypothesis_home_dir(Path(os.environ["HINDSIGHT_DATA_DIR"]) / "hypothesis")


@pytest.fixture
def all_scopes_key(project, make_key) -> str:
    return make_key(project, ("ingest", "recall", "admin"))


@pytest.fixture
def full_api(all_scopes_key) -> ApiClient:
    return ApiClient(all_scopes_key)


@pytest.fixture
def wsgi_in_test_transaction() -> Iterator[None]:
    """Call the WSGI application in-process inside the test's transaction.

    Django closes "old" connections when a request starts and ends, which inside the test's
    transaction would break it; its own test client unhooks the same handler.
    """
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
