import io
import json
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

_READ_CHUNK = 64 * 1024


class ApiBodyLimitMiddleware:
    """The edge of the API (`/api/`): bodies within the limit, and errors always JSON.

    * A body over HINDSIGHT_MAX_BODY_BYTES is refused with 413 before anything reads it.
    * A chunked body (`Transfer-Encoding: chunked`, no `Content-Length`) is read here, up to the
      limit: Django reads `CONTENT_LENGTH` bytes and without one sees an empty body, although
      gunicorn passes the decoded chunks and promises their end (`wsgi.input_terminated`).
    * An error answered before or outside ninja (an unknown path's 404, ninja's 405, a 400 for
      a bad Host, a 500 from a middleware) is rewritten as `{"detail": ...}`, like every other.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith("/api/"):
            return self.get_response(request)
        refused = _body_within_limit(request, settings.HINDSIGHT_MAX_BODY_BYTES)
        if refused is not None:
            return refused
        return _as_json_error(self.get_response(request))


def _too_large(detail: str) -> JsonResponse:
    return JsonResponse({"detail": detail}, status=413)


def _body_within_limit(request: HttpRequest, limit: int) -> HttpResponse | None:
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > limit:
        return _too_large(f"request body is {length} bytes; the limit is {limit} bytes")
    chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
    if length or not chunked or not request.META.get("wsgi.input_terminated"):
        return None
    # Read to the end the server promises, one byte past the limit at most.
    stream, chunks, size = request.META["wsgi.input"], [], 0
    while chunk := stream.read(min(_READ_CHUNK, limit + 1 - size)):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return _too_large(f"request body is over the limit of {limit} bytes")
    body = b"".join(chunks)
    # The request read its stream at construction with a length of 0; give it the body read.
    request._stream = io.BytesIO(body)
    request.META["CONTENT_LENGTH"] = str(len(body))
    return None


def _as_json_error(response: HttpResponse) -> HttpResponse:
    content_type = response.get("Content-Type", "")
    if response.status_code < 400 or response.streaming or not content_type.startswith("text/"):
        return response
    detail = response.reason_phrase
    if response.status_code == 405 and response.has_header("Allow"):
        detail += f"; allowed: {response['Allow']}"
    response.content = json.dumps({"detail": detail}).encode()
    response["Content-Type"] = "application/json"
    if response.has_header("Content-Length"):
        response["Content-Length"] = str(len(response.content))
    return response
