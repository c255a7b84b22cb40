"""Importing agent transcripts: converted by the import schema, stored by the ingest service."""

from typing import Any

from accounts.models import ApiKey, Project
from traces.schemas import TraceImportIn, TraceIn
from traces.services.ingest import IngestResult, trace_ingest
from traces.services.ingest_batch import trace_ingest_batch


def trace_import(
    *, project: Project, payload: TraceImportIn, api_key: ApiKey | None = None
) -> IngestResult:
    """Store one imported transcript exactly as POST /traces stores a trajectory."""
    return trace_ingest(project=project, payload=payload.trace, api_key=api_key)


def import_parse(raw: Any) -> TraceIn:
    """One import body into its native trajectory; a ValidationError names the message."""
    return TraceImportIn.model_validate(raw).trace


def trace_import_batch(
    *, project: Project, items: list[dict[str, Any]], api_key: ApiKey | None = None
) -> list[dict[str, Any]]:
    """Store many imported transcripts; a result per item, like POST /traces/batch."""
    return trace_ingest_batch(project=project, items=items, api_key=api_key, parse=import_parse)
