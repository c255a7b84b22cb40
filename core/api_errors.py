"""The API's error shape and the error statuses each operation documents."""

from typing import Any

from ninja import Schema


class ErrorOut(Schema):
    """Every API error: a message, or for 422 / 413 a list of `{loc, msg, type}`."""

    detail: Any


# Answered by every operation: no or revoked key, wrong scope, invalid parameters, rate limit.
_ALWAYS = (401, 403, 422, 429)
# Answered by operations with a JSON body: malformed JSON, body (or steps) over the limit.
BODY_ERRORS = (400, 413)


def errors(*statuses: int) -> dict[int, type[ErrorOut]]:
    """The error statuses of an operation for its `response=` (the OpenAPI schema documents
    them; tests/hindsight_site/test_api_*.py check that no other status is answered)."""
    return {status: ErrorOut for status in sorted({*_ALWAYS, *statuses})}
