"""The OTLP receiver's path and content type, and a live site the real OpenTelemetry SDK exports
to."""

from dataclasses import dataclass

from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

from accounts.models import Project

PATH = "/api/v1/otlp/v1/traces"
PROTOBUF = "application/x-protobuf"


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
