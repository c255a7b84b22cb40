"""POST /api/v1/otlp/v1/traces: the OTLP/HTTP trace receiver (an exporter's endpoint is
`<site>/api/v1/otlp`). Auth, scope and rate limit are the API's own; failures are rewritten
into the google.rpc.Status body OTLP clients expect (see decoding.py)."""

from collections.abc import Callable
from functools import wraps

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from ninja import Router
from ninja.decorators import decorate_view

from accounts.auth import require_scope
from traces.otlp import decoding, services

router = Router(tags=["otlp"])

_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/x-protobuf": {"schema": {"type": "string", "format": "binary"}},
            "application/json": {"schema": {"type": "object"}},
        },
    }
}


def otlp_failures(run: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Every 4xx/5xx of the operation (auth, throttle and handler errors alike) as a Status."""

    @wraps(run)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        response = run(request, *args, **kwargs)
        if response.status_code >= 400:
            response.content, response["Content-Type"] = decoding.failure_rewrite(
                content_type=request.META.get("CONTENT_TYPE"),
                status=response.status_code,
                content=response.content,
            )
        return response

    return wrapper


@router.post("/v1/traces", openapi_extra=_BODY, summary="Export spans (OTLP/HTTP)")
@decorate_view(otlp_failures)
def post_otlp_traces(request: HttpRequest) -> HttpResponse:
    """OTLP ExportTraceServiceRequest in, ExportTraceServiceResponse out, in the same encoding."""
    key = require_scope(request, "ingest")
    encoding, export = decoding.export_request_read(
        body=request.body,
        content_type=request.META.get("CONTENT_TYPE"),
        content_encoding=request.headers.get("Content-Encoding"),
        limit=settings.HINDSIGHT_MAX_BODY_BYTES,
    )
    result = services.otlp_export(project=key.project, request=export, api_key=key)
    body = decoding.export_response_body(
        encoding, rejected_spans=result.rejected_spans, error_message=result.error_message
    )
    return HttpResponse(body, content_type=decoding.CONTENT_TYPES[encoding])
