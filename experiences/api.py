"""The experience API: the library as agents and tools read it."""

from django.http import HttpRequest
from ninja import Query, Router, Schema

from experiences import selectors
from experiences.schemas import ExperienceDetailOut, ExperienceListOut, FailurePatternListOut
from traces.auth import require_scope

router = Router(tags=["experiences"])
READ_SCOPES = ("recall", "admin", "ingest")


class ExperienceListParams(Schema):
    status: str | None = None
    polarity: str | None = None
    source: str | None = None
    tool: str | None = None
    environment: str | None = None
    agent: str | None = None
    trace: int | None = None
    cursor: str | None = None
    limit: int = 50


@router.get("/experiences", response=ExperienceListOut)
def get_experiences(request: HttpRequest, params: Query[ExperienceListParams]):
    """Experiences of the key's project, newest first, with cursor pagination."""
    key = require_scope(request, *READ_SCOPES)
    filters = selectors.ExperienceFilters(**params.model_dump(exclude={"cursor", "limit"}))
    page = selectors.experience_list(
        project=key.project, filters=filters, cursor=params.cursor, limit=max(1, min(params.limit, 200))
    )
    return {"items": page.items, "next_cursor": page.next_cursor}


@router.get("/experiences/{experience_id}", response=ExperienceDetailOut)
def get_experience(request: HttpRequest, experience_id: int):
    """One experience with scene, advice, execution path, provenance and earlier versions."""
    key = require_scope(request, *READ_SCOPES)
    return selectors.experience_get(project=key.project, experience_id=experience_id)


@router.get("/failure-patterns", response=FailurePatternListOut)
def get_failure_patterns(request: HttpRequest, tool: str | None = None, cursor: str | None = None, limit: int = 50):
    """Recurring tool failures, the raw material of warnings."""
    key = require_scope(request, *READ_SCOPES)
    page = selectors.failure_pattern_list(
        project=key.project, tool=tool, cursor=cursor, limit=max(1, min(limit, 200))
    )
    return {"items": page.items, "next_cursor": page.next_cursor}
