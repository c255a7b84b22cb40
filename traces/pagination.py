"""Keyset (cursor) pagination on a descending id: stable and O(page) at any depth."""

import base64
from dataclasses import dataclass

from django.db.models import Model, QuerySet

from traces.errors import InvalidInput


@dataclass(frozen=True)
class Page[M: Model]:
    items: list[M]
    next_cursor: str | None


def encode_cursor(last_id: int) -> str:
    return base64.urlsafe_b64encode(f"id:{last_id}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        kind, _, value = base64.urlsafe_b64decode(padded).decode().partition(":")
        if kind != "id":
            raise ValueError(kind)
        return int(value)
    except (ValueError, UnicodeDecodeError):
        raise InvalidInput("cursor is not valid; pass the next_cursor of a previous page") from None


def paginate_by_id[M: Model](queryset: QuerySet[M], *, cursor: str | None, limit: int) -> Page[M]:
    """Newest first. Fetches one extra row to know whether a next page exists."""
    if cursor:
        queryset = queryset.filter(pk__lt=decode_cursor(cursor))
    rows = list(queryset.order_by("-pk")[: limit + 1])
    has_more = len(rows) > limit
    rows = rows[:limit]
    return Page(items=rows, next_cursor=encode_cursor(rows[-1].pk) if has_more and rows else None)
