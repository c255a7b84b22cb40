"""JSON over HTTP with the standard library only, plus the retry policy shared by the client
and the recorder (connection errors, 5xx, 408 and 429 are retried with backoff; 429's
Retry-After is honoured).

No body over `Limits.max_body_bytes` is sent: it is refused before any request with the same
RequestTooLarge a server answers. And a server that answers before it has read the whole body
(gunicorn answers 413 to a body over its limit, then closes the connection) is heard: the rest
of the body fails with a broken pipe or a reset, so sending stops there and the answer already
on its way is read; only when there is none is it a connection error.
"""

from __future__ import annotations

import http.client
import json
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from hindsight_client.errors import ApiError, ConnectionFailed, RequestTooLarge, api_error
from hindsight_client.limits import Limits

T = TypeVar("T")
USER_AGENT = "hindsight-client/0.1"


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with full jitter: attempt n waits up to min(cap, base * 2**n)."""

    base: float = 0.1
    cap: float = 2.0

    def delay(self, attempt: int, error: Exception | None = None) -> float:
        if isinstance(error, ApiError) and error.retry_after is not None:
            return max(0.0, error.retry_after)
        ceiling = min(self.cap, self.base * (2**attempt))
        return random.uniform(ceiling / 2, ceiling)


def is_retryable(error: Exception) -> bool:
    if isinstance(error, ConnectionFailed):
        return True
    return isinstance(error, ApiError) and error.is_transient


class Transport:
    """One base URL and API key; every call is a fresh connection (gunicorn's sync workers
    close each connection after its response anyway)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        timeout: float = 10.0,
        *,
        limits: Limits | None = None,
    ) -> None:
        base_url = base_url.rstrip("/")
        if not base_url.endswith("/api/v1"):
            base_url += "/api/v1"
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"base_url must be an http(s) URL; got {base_url!r}")
        self.base_url = base_url
        self.api_key = api_key
        self.timeout = timeout
        self.limits = limits or Limits()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        timeout: float | None = None,
        data: bytes | None = None,
    ) -> Any:
        """The decoded JSON answer of a 2xx; ApiError for any other status; ConnectionFailed
        when the server cannot be reached or the answer was cut. `data` is a body already
        encoded as JSON. A body over `limits.max_body_bytes` raises RequestTooLarge unsent."""
        if data is None and body is not None:
            data = json.dumps(body, default=str).encode()
        limit = self.limits.max_body_bytes
        if data is not None and len(data) > limit:
            raise RequestTooLarge(
                413,
                f"request body is {len(data)} bytes; the limit is {limit} bytes "
                "(not sent: over the client's Limits.max_body_bytes)",
                client_side=True,
            )
        request = urllib.request.Request(
            f"{self.base_url}/{path.lstrip('/')}",
            data=data,
            method=method,
            headers={
                "Authorization": f"Bearer {self.api_key}",
                "Content-Type": "application/json",
                "Accept": "application/json",
                "User-Agent": USER_AGENT,
            },
        )
        try:
            with _OPENER.open(request, timeout=timeout or self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            raise _api_error(error) from None
        except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
            reason = getattr(error, "reason", error)
            raise ConnectionFailed(f"{method} {request.full_url}: {reason}") from error
        return json.loads(raw) if raw else None


class _HTTPConnection(http.client.HTTPConnection):
    """Stops sending at a broken pipe or a reset, so that urllib reads the server's answer."""

    send_error: OSError | None = None

    def send(self, data: Any) -> None:
        if self.send_error is not None:
            return  # the server stopped reading: the rest would fail the same way
        try:
            super().send(data)
        except (BrokenPipeError, ConnectionResetError) as error:
            # If the server answered before closing, getresponse() reads that answer; if not,
            # it fails with a connection error, as the send would have.
            self.send_error = error


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPConnection, req)


_handlers: list[Any] = [_HTTPHandler]
if hasattr(http.client, "HTTPSConnection") and hasattr(urllib.request, "HTTPSHandler"):
    # The MRO puts _HTTPConnection.send between HTTPSConnection and HTTPConnection.
    class _HTTPSConnection(http.client.HTTPSConnection, _HTTPConnection):
        pass

    class _HTTPSHandler(urllib.request.HTTPSHandler):
        def do_open(
            self, http_class: Any, req: urllib.request.Request, **http_conn_args: Any
        ) -> http.client.HTTPResponse:
            return super().do_open(_HTTPSConnection, req, **http_conn_args)

    _handlers.append(_HTTPSHandler)

# The default opener's handlers (proxies from the environment included), with these two
# in place of urllib's own HTTP and HTTPS handlers.
_OPENER = urllib.request.build_opener(*_handlers)


def _api_error(error: urllib.error.HTTPError) -> ApiError:
    try:
        raw = error.read()
    except (OSError, http.client.HTTPException):
        raw = b""
    try:
        payload = json.loads(raw) if raw else None
        detail = payload.get("detail", payload) if isinstance(payload, dict) else payload
    except ValueError:
        detail = raw.decode(errors="replace")[:500]
    return api_error(error.code, detail, retry_after=_retry_after(error.headers.get("Retry-After")))


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        return None  # an HTTP date: rare for an API, fall back to backoff


def call_with_retries(  # noqa: UP047 - vendored into agents on Python < 3.12
    call: Callable[[], T],
    *,
    attempts: int,
    backoff: Backoff,
    max_wait: float,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run `call`, retrying retryable errors up to `attempts` times in all; a wait longer
    than `max_wait` (e.g. a long Retry-After) is not waited: the error is raised."""
    attempt = 0
    while True:
        try:
            return call()
        except (ApiError, ConnectionFailed) as error:
            attempt += 1
            if not is_retryable(error) or attempt >= attempts:
                raise
            delay = backoff.delay(attempt - 1, error)
            if delay > max_wait:
                raise
            sleep(delay)
