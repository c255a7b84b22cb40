"""Keyset (cursor) pagination on a descending id: stable and O(page) at any depth; a list's
row count capped so a page never scans a big table to count it."""

import base64
from dataclasses import dataclass
from typing import Any

from django.db.models import Model, Q, QuerySet

from core.errors import InvalidInput

COUNT_CAP = 1_000  # a list counts its rows up to this, then says "1,000+"


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


# ---------------------------------------------------------------------------- keyset on a rank
# Work lists (the review queue, the merge queue) are read most urgent first, not newest first:
# the same keyset idea on (rank, id), with the position of the page carried in the cursor so the
# page can say "21–40 of N" without counting what lies before it.


@dataclass(frozen=True)
class RankedPage[M: Model]:
    items: list[M]
    next_cursor: str | None
    start: int  # the 1-based position of items[0] in the whole list

    @property
    def end(self) -> int:
        return self.start + len(self.items) - 1


def encode_rank_cursor(*, rank: float, last_id: int, shown: int) -> str:
    text = f"rank:{float(rank)!r}:{last_id}:{shown}"
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_rank_cursor(cursor: str) -> tuple[float, int, int]:
    """(rank, last id, rows shown before) of a cursor made by encode_rank_cursor."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        kind, rank, last_id, shown = base64.urlsafe_b64decode(padded).decode().split(":")
        if kind != "rank":
            raise ValueError(kind)
        value = float(rank)
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(rank)
        return value, int(last_id), max(int(shown), 0)
    except (ValueError, UnicodeDecodeError):
        raise InvalidInput("cursor is not valid; pass the next_cursor of a previous page") from None


def paginate_by_rank[M: Model](
    queryset: QuerySet[M], *, rank: str, descending: bool, cursor: str | None, limit: int
) -> RankedPage[M]:
    """Ordered by `rank` (a field or annotation, never null), then id; one extra row tells
    whether a next page exists."""
    shown = 0
    if cursor:
        value, last_id, shown = decode_rank_cursor(cursor)
        beyond = f"{rank}__lt" if descending else f"{rank}__gt"
        queryset = queryset.filter(Q(**{beyond: value}) | Q(**{rank: value, "pk__gt": last_id}))
    rows = list(queryset.order_by(f"-{rank}" if descending else rank, "pk")[: limit + 1])
    has_more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = (
        encode_rank_cursor(rank=getattr(rows[-1], rank), last_id=rows[-1].pk, shown=shown + limit)
        if has_more and rows
        else None
    )
    return RankedPage(items=rows, next_cursor=next_cursor, start=shown + 1)


@dataclass(frozen=True)
class NewerPage:
    """The way back from a page of paginate_by_id: the page just before it (newer rows)."""

    cursor: str | None  # None: that page is the first one (no cursor)


def newer_page(queryset: QuerySet, *, cursor: str | None, limit: int) -> NewerPage | None:
    """The page before `cursor`'s page in paginate_by_id's order, or None on the first page.

    `cursor` shows the rows with id < C; the page before it holds the `limit` rows with the
    smallest ids >= C, and its own cursor is the id just above them (one extra row tells)."""
    if not cursor:
        return None
    boundary = decode_cursor(cursor)
    above = list(
        queryset.filter(pk__gte=boundary).order_by("pk").values_list("pk", flat=True)[: limit + 1]
    )
    return NewerPage(cursor=encode_cursor(above[limit]) if len(above) > limit else None)


def capped_count(queryset: QuerySet[Any], cap: int = COUNT_CAP) -> tuple[int, bool]:
    """Count up to `cap` rows: exact for normal lists, "1,000+" without scanning 100k rows."""
    count = queryset.order_by()[: cap + 1].count()
    return min(count, cap), count > cap
