"""Fixtures of the OTLP receiver tests: keys, posting raw bodies, and a live site for the SDK."""

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from django.test import Client
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

from accounts.models import Project
from accounts.services.api_keys import api_key_create

PATH = "/api/v1/otlp/v1/traces"
PROTOBUF = "application/x-protobuf"


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


@dataclass
class Site:
    url: str
    key: str
    project: Project

    def provider(self, *, batch: bool = False, gzip: bool = False) -> TracerProvider:
        """The real SDK exporting to this site over HTTP with the API key header."""
        exporter = OTLPSpanExporter(
            endpoint=self.url + PATH,
            headers={"Authorization": f"Bearer {self.key}"},
            compression=Compression.Gzip if gzip else Compression.NoCompression,
            timeout=10,
        )
        provider = TracerProvider(resource=Resource.create({"service.name": "support-agent"}))
        processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
        provider.add_span_processor(processor)
        return provider


@pytest.fixture
def site(live_server, transactional_db) -> Iterator[Site]:
    project = Project.objects.create(name="otlp-tests")
    key = api_key_create(project=project, scopes=["ingest"]).raw
    yield Site(url=live_server.url, key=key, project=project)
