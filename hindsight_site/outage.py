"""A database outage answers 503 with Retry-After, never a 500.

While PostgreSQL is unreachable (restarting, failing over, overloaded), every request that needs
it fails the same way; clients and the hindsight client retry a 503 after Retry-After, so the
API says exactly that, as JSON `{"detail": ...}`, and the dashboard shows a short page saying
so. Nothing is lost: a request that failed this way stored nothing (each write is one
transaction) and can be sent again.
"""

import logging

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse

logger = logging.getLogger(__name__)

OUTAGE_ERRORS = (OperationalError, InterfaceError)
RETRY_AFTER_SECONDS = 5
DETAIL = "the database is unavailable right now; nothing was stored, retry in a few seconds"
PAGE = (
    "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>hindsight: "
    "unavailable</title></head><body><main><h1>Temporarily unavailable</h1><p>The database "
    "cannot be reached right now. Nothing was changed; reload this page in a few seconds."
    "</p></main></body></html>"
)


def outage_json(request: HttpRequest | None = None, exc: Exception | None = None) -> HttpResponse:
    logger.warning("database unavailable: answering 503", exc_info=exc)
    response = JsonResponse({"detail": DETAIL}, status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


class DatabaseOutageMiddleware:
    """Turns a database outage in any view into a 503 (JSON under /api/, a page elsewhere)."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, OUTAGE_ERRORS):
            return None
        if request.path.startswith("/api/"):
            return outage_json(request, exception)
        logger.warning("database unavailable: answering 503", exc_info=exception)
        response = HttpResponse(PAGE, status=503)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
