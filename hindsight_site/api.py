"""The one NinjaAPI: routers of the apps, API-key auth, and domain errors mapped to statuses."""

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI

from experiences.api import router as experiences_router
from traces.api import router as traces_router
from traces.auth import API_KEY_AUTH, ApiKeyRateThrottle
from traces.errors import DomainError

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
