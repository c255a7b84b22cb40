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
