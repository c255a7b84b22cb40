"""Errors raised by the client. API errors carry the status and the server's `detail`."""

from __future__ import annotations

from typing import Any


class HindsightError(Exception):
    """Base class of every error this package raises."""


class ConnectionFailed(HindsightError):
    """The server could not be reached (refused, reset, timed out)."""


class ApiError(HindsightError):
    """A non-2xx answer. `detail` is the server's `{"detail": ...}` (a string or a list of
    field errors for 422)."""

    def __init__(self, status: int, detail: Any, *, retry_after: float | None = None) -> None:
        self.status = status
        self.detail = detail
        self.retry_after = retry_after
        super().__init__(f"HTTP {status}: {_short(detail)}")

    @property
    def is_transient(self) -> bool:
        """Worth retrying: rate limited, or the server (or a proxy before it) failed."""
        return is_transient_status(self.status)


class RequestTooLarge(ApiError):
    """413: the body is over the server's `HINDSIGHT_MAX_BODY_BYTES` (or a trajectory over
    `HINDSIGHT_MAX_STEPS`). Also raised before sending, without a request, for a body over the
    client's `Limits.max_body_bytes` (then `client_side` is True)."""

    def __init__(
        self,
        status: int,
        detail: Any,
        *,
        retry_after: float | None = None,
        client_side: bool = False,
    ) -> None:
        super().__init__(status, detail, retry_after=retry_after)
        self.client_side = client_side


class InvalidRequest(ApiError):
    """422 (the schema errors, each naming its field in `detail`) or 400 (malformed JSON)."""


def api_error(status: int, detail: Any, *, retry_after: float | None = None) -> ApiError:
    """The ApiError subclass for `status`."""
    if status == 413:
        return RequestTooLarge(status, detail, retry_after=retry_after)
    if status in (400, 422):
        return InvalidRequest(status, detail, retry_after=retry_after)
    return ApiError(status, detail, retry_after=retry_after)


class StepRejected(HindsightError):
    """One recorded step that is not stored as recorded: the server refused it on its own
    (`error`: a 413, 422 or 400, or a 500 the server gives that step alone), or it cannot fit in
    a request even with its text cut (`error` is then the client's own RequestTooLarge). The
    trace holds a `system` step in its place, at its index, saying so; the other steps of the
    trajectory are stored and the trace is completed as usual."""

    def __init__(self, *, index: int, kind: str, tool: str, error: ApiError) -> None:
        self.index = index
        self.kind = kind
        self.tool = tool
        self.error = error
        what = f"{kind} {tool}" if tool else kind
        super().__init__(f"step {index} ({what}) was not stored: {error}")

    @property
    def status(self) -> int:
        return self.error.status

    @property
    def detail(self) -> Any:
        return self.error.detail


class RecorderError(HindsightError):
    """A recorder stopped because the server refused its data (bad key, invalid input, ...).
    The cause is the ApiError; `unsent` counts the events that were not stored."""

    def __init__(self, message: str, *, unsent: int) -> None:
        super().__init__(message)
        self.unsent = unsent


class QueueFull(HindsightError):
    """Raised by `record_event` when the recorder's queue stays full and overflow="raise"."""


def is_transient_status(status: int) -> bool:
    return status == 429 or status == 408 or status >= 500


def _short(detail: Any) -> str:
    text = detail if isinstance(detail, str) else repr(detail)
    return text if len(text) <= 500 else text[:497] + "..."
