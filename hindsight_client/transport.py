"""JSON over HTTP with the standard library only, plus the retry policy shared by the client
and the recorder (connection errors, 5xx, 408 and 429 are retried with backoff; 429's
Retry-After is honoured)."""

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

from hindsight_client.errors import ApiError, ConnectionFailed

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

    def __init__(self, base_url: str, api_key: str, timeout: float = 10.0) -> None:
        base_url = base_url.rstrip("/")
        if not base_url.endswith("/api/v1"):
            base_url += "/api/v1"
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"base_url must be an http(s) URL; got {base_url!r}")
        self.base_url = base_url
        self.api_key = api_key
        self.timeout = timeout

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
        encoded as JSON."""
        if data is None and body is not None:
            data = json.dumps(body, default=str).encode()
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
            with urllib.request.urlopen(request, timeout=timeout or self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            raise _api_error(error) from None
        except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
            reason = getattr(error, "reason", error)
            raise ConnectionFailed(f"{method} {request.full_url}: {reason}") from error
        return json.loads(raw) if raw else None


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
    return ApiError(error.code, detail, retry_after=_retry_after(error.headers.get("Retry-After")))


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
