"""The trajectory API: ingest (single, batch, streamed, transcripts) and reads. Thin handlers."""

from django.http import HttpRequest
from ninja import Query, Router
from ninja.responses import Status

from accounts.auth import READ_SCOPES, require_scope
from core.api_errors import BODY_ERRORS, errors
from core.inputs import PageIn
from traces.review import service as review_service
from traces.schemas import (
    BatchOut,
    StepsAppendIn,
    TraceAcceptedOut,
    TraceBatchIn,
    TraceCompleteIn,
    TraceDetailOut,
    TraceImportIn,
    TraceIn,
    TraceListOut,
    TraceOpenIn,
)
from traces.selectors.trace_list import TraceFilters, trace_get, trace_list
from traces.services import imports, ingest, ingest_batch, streaming

router = Router(tags=["traces"])


def _accepted(trace) -> TraceAcceptedOut:
    return TraceAcceptedOut(
        id=trace.pk,
        external_id=trace.external_id,
        review_status=trace.review_status,
        is_complete=trace.is_complete,
        step_count=trace.step_count,
    )


@router.post(
    "/traces",
    response={200: TraceAcceptedOut, 201: TraceAcceptedOut, **errors(*BODY_ERRORS, 409)},
)
def post_trace(request: HttpRequest, payload: TraceIn):
    """Store a complete trajectory. The same body again returns the same trace (200)."""
    key = require_scope(request, "ingest")
    result = ingest.trace_ingest(project=key.project, payload=payload, api_key=key)
    return Status(201 if result.created else 200, _accepted(result.trace))


@router.post("/traces/batch", response={200: BatchOut, **errors(*BODY_ERRORS)})
def post_trace_batch(request: HttpRequest, payload: TraceBatchIn):
    """Store many trajectories; each gets its own result (created, duplicate, conflict, invalid)."""
    key = require_scope(request, "ingest")
    results = ingest_batch.trace_ingest_batch(
        project=key.project, items=payload.traces, api_key=key
    )
    return {"results": results}


@router.post(
    "/traces/import",
    response={200: TraceAcceptedOut, 201: TraceAcceptedOut, **errors(*BODY_ERRORS, 409)},
)
def post_trace_import(request: HttpRequest, payload: TraceImportIn):
    """Store an OpenAI / Anthropic transcript as a trajectory; answered like POST /traces."""
    key = require_scope(request, "ingest")
    result = imports.trace_import(project=key.project, payload=payload, api_key=key)
    return Status(201 if result.created else 200, _accepted(result.trace))


@router.post("/traces/import/batch", response={200: BatchOut, **errors(*BODY_ERRORS)})
def post_trace_import_batch(request: HttpRequest, payload: TraceBatchIn):
    """Store many transcripts; each gets its own result, like POST /traces/batch."""
    key = require_scope(request, "ingest")
    results = imports.trace_import_batch(project=key.project, items=payload.traces, api_key=key)
    return {"results": results}


@router.post(
    "/traces/open",
    response={200: TraceAcceptedOut, 201: TraceAcceptedOut, **errors(*BODY_ERRORS, 409)},
)
def post_trace_open(request: HttpRequest, payload: TraceOpenIn):
    """Open a trajectory whose steps will be streamed; idempotent on external_id."""
    key = require_scope(request, "ingest")
    result = streaming.trace_open(project=key.project, payload=payload, api_key=key)
    return Status(201 if result.created else 200, _accepted(result.trace))


@router.post(
    "/traces/{trace_id}/steps",
    response={200: TraceAcceptedOut, **errors(*BODY_ERRORS, 404, 409)},
)
def post_trace_steps(request: HttpRequest, trace_id: int, payload: StepsAppendIn):
    """Append steps in index order; resending a stored step is a no-op."""
    key = require_scope(request, "ingest")
    trace = streaming.trace_append_steps(project=key.project, trace_id=trace_id, payload=payload)
    return _accepted(trace)


@router.post(
    "/traces/{trace_id}/complete",
    response={200: TraceAcceptedOut, **errors(*BODY_ERRORS, 404, 409)},
)
def post_trace_complete(request: HttpRequest, trace_id: int, payload: TraceCompleteIn):
    """Complete a streamed trajectory with its outcome; it is then handed to review."""
    key = require_scope(request, "ingest")
    trace = streaming.trace_complete(
        project=key.project, trace_id=trace_id, payload=payload, api_key=key
    )
    return _accepted(trace)


class TraceListParams(TraceFilters, PageIn):
    """The trace list's filters (defined once, by the selector) and its page."""


@router.get("/traces", response={200: TraceListOut, **errors()})
def get_traces(request: HttpRequest, params: Query[TraceListParams]):
    """Traces of the key's project, newest first, with cursor pagination."""
    key = require_scope(request, *READ_SCOPES)
    page = trace_list(
        projects=[key.project], filters=params, cursor=params.cursor, limit=params.limit
    )
    return {"items": page.items, "next_cursor": page.next_cursor}


@router.get("/traces/{trace_id}", response={200: TraceDetailOut, **errors(404)})
def get_trace(request: HttpRequest, trace_id: int):
    """One trace with its steps (and their labels) and its reviews."""
    key = require_scope(request, *READ_SCOPES)
    return trace_get(project=key.project, trace_id=trace_id)


@router.post("/traces/{trace_id}/review", response={200: TraceAcceptedOut, **errors(404, 409)})
def post_trace_review(request: HttpRequest, trace_id: int):
    """Send a failed or skipped trace back to review (e.g. after fixing the LLM endpoint)."""
    key = require_scope(request, "ingest", "admin")
    return _accepted(review_service.review_retry(project=key.project, trace_id=trace_id))
