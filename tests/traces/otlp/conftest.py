"""Fixtures of the OTLP receiver tests: keys, posting raw bodies, and a live site for the SDK."""

from collections.abc import Callable, Iterator

import pytest
from django.test import Client

from accounts.models import Project
from accounts.services.api_keys import api_key_create
from tests.support.otlp import PATH, PROTOBUF, Site


@pytest.fixture
def post(pipeline_key) -> Callable:
    """POST a raw body to the receiver with the project's ingest key (or `key`)."""
    client = Client()

    def send(
        body: bytes,
        content_type: str = PROTOBUF,
        *,
        key: str | None = "default",
        headers: dict[str, str] | None = None,
    ):
        headers = dict(headers or {})
        if key == "default":
            key = pipeline_key
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        return client.post(PATH, data=body, content_type=content_type, headers=headers)

    return send


@pytest.fixture
def site(live_server, transactional_db) -> Iterator[Site]:
    project = Project.objects.create(name="otlp-tests")
    key = api_key_create(project=project, scopes=["ingest"]).raw
    yield Site(url=live_server.url, key=key, project=project)
