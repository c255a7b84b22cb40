"""The one NinjaAPI: routers of the apps, API-key auth, and domain errors mapped to statuses.

Every error is JSON `{"detail": ...}`, an unexpected exception included (logged with its
traceback, answered 500): no input should ever reach that handler, the fuzz tests check it.
"""

import logging

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import ValidationError

from accounts.auth import API_KEY_AUTH, ApiKeyRateThrottle
from core.errors import DomainError
from core.inputs import TOO_LARGE
from experiences.api import router as experiences_router
from hindsight_site.outage import outage_json
from traces.api import router as traces_router

logger = logging.getLogger("hindsight.api")

api = NinjaAPI(
    title="hindsight",
    version="1",
    description="Experience memory for LLM agents: trajectories in, reviewed experience out.",
    urls_namespace="api",
    docs_url="/docs",
    auth=API_KEY_AUTH,
    throttle=[ApiKeyRateThrottle()],
)
api.add_router("/", traces_router)
api.add_router("/", experiences_router)
api.add_router("/otlp", "traces.otlp.api.router")  # OTLP/HTTP: POST otlp/v1/traces


@api.exception_handler(DomainError)
def on_domain_error(request: HttpRequest, exc: DomainError) -> HttpResponse:
    return api.create_response(request, {"detail": exc.detail}, status=exc.status_code)


@api.exception_handler(RequestDataTooBig)
def on_body_too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return api.create_response(
        request, {"detail": "request body is over the size limit"}, status=413
    )


@api.exception_handler(ValidationError)
def on_validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    # Over a documented size limit (steps per trajectory) is 413 like an oversize body.
    too_large = any(e.get("type") == TOO_LARGE for e in exc.errors)
    return api.create_response(request, {"detail": exc.errors}, status=413 if too_large else 422)


@api.exception_handler(OperationalError)
@api.exception_handler(InterfaceError)
def on_database_outage(request: HttpRequest, exc: Exception) -> HttpResponse:
    return outage_json(request, exc)  # 503 + Retry-After: the client retries (outage.py)


@api.exception_handler(Exception)
def on_unexpected_error(request: HttpRequest, exc: Exception) -> HttpResponse:
    logger.exception("unhandled error in %s %s", request.method, request.path)
    detail = "internal error; the server logged it"
    if settings.DEBUG:
        detail += f": {type(exc).__name__}: {exc}"
    return api.create_response(request, {"detail": detail}, status=500)
