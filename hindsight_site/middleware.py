from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse


class ApiBodyLimitMiddleware:
    """Refuse API bodies over the limit with 413 before anything reads them."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith("/api/"):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            limit = settings.HINDSIGHT_MAX_BODY_BYTES
            if length > limit:
                return JsonResponse(
                    {"detail": f"request body is {length} bytes; the limit is {limit} bytes"},
                    status=413,
                )
        return self.get_response(request)
