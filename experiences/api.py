"""The experience API: the library as agents and tools read it."""

from typing import Literal

from django.http import HttpRequest, HttpResponse
from ninja import Query, Router

from accounts.auth import READ_SCOPES, require_scope
from core.api_errors import BODY_ERRORS, errors
from core.inputs import PageIn
from experiences import selectors
from experiences.schemas import (
    ExperienceDetailOut,
    ExperienceListOut,
    FailurePatternListOut,
    RecallFeedbackIn,
    RecallFeedbackOut,
    RecallIn,
    RecallOut,
    WarningsIn,
    WarningsOut,
)
from experiences.services import recall as recall_service
from experiences.services import recall_log
from experiences.services.kb_export import kb_export_file
from experiences.services.recall_candidates import RecallQuery
from experiences.services.warnings import warnings_for_call

router = Router(tags=["experiences"])


class ExperienceListParams(selectors.ExperienceFilters, PageIn):
    """The experience list's filters (defined once, by the selector) and its page."""


@router.get("/experiences", response={200: ExperienceListOut, **errors()})
def get_experiences(request: HttpRequest, params: Query[ExperienceListParams]):
    """Experiences of the key's project, newest first, with cursor pagination."""
    key = require_scope(request, *READ_SCOPES)
    page = selectors.experience_list(
        project=key.project, filters=params, cursor=params.cursor, limit=params.limit
    )
    return {"items": page.items, "next_cursor": page.next_cursor}


@router.get("/experiences/{experience_id}", response={200: ExperienceDetailOut, **errors(404)})
def get_experience(request: HttpRequest, experience_id: int):
    """One experience with scene, advice, execution path, provenance and earlier versions."""
    key = require_scope(request, *READ_SCOPES)
    return selectors.experience_get(project=key.project, experience_id=experience_id)


class FailurePatternListParams(PageIn):
    tool: str | None = None


@router.get("/failure-patterns", response={200: FailurePatternListOut, **errors()})
def get_failure_patterns(request: HttpRequest, params: Query[FailurePatternListParams]):
    """Recurring tool failures, the raw material of warnings."""
    key = require_scope(request, *READ_SCOPES)
    page = selectors.failure_pattern_list(
        project=key.project,
        tool=params.tool,
        cursor=params.cursor,
        limit=params.limit,
    )
    return {"items": page.items, "next_cursor": page.next_cursor}


@router.post("/recall", response={200: RecallOut, **errors(*BODY_ERRORS)})
def post_recall(request: HttpRequest, payload: RecallIn):
    """Experience for a task: rule pre-filter, vector ranking, decay; explained item by item."""
    key = require_scope(request, "recall")
    query = RecallQuery(**payload.model_dump())
    result = recall_service.experience_recall(project=key.project, query=query, api_key=key)
    return {
        "id": result.log_id,
        "items": [
            {
                "experience_id": item.experience.id,
                "advice": item.experience.advice,
                "kind": item.experience.kind,
                "polarity": item.experience.polarity,
                "support": item.experience.support_count,
                "same_instance": item.case.same_instance,
                "replay": item.case.replay,
                "sources": list(item.case.sources),
                "status": item.experience.status,
                "score": item.score,
                "score_parts": item.score_parts,
                "environment_match": item.environment_match,
                "environment": item.experience.environment,
                "tools": item.experience.tools,
                "path": item.experience.path,
            }
            for item in result.items
        ],
        "prompt_block": result.prompt_block,
        "warnings": result.warnings,
    }


@router.post(
    "/recall/{recall_id}/feedback",
    response={200: RecallFeedbackOut, **errors(*BODY_ERRORS, 404)},
)
def post_recall_feedback(request: HttpRequest, recall_id: int, payload: RecallFeedbackIn):
    """Which recalled items helped: feeds the experiences' votes and the recall hit rate."""
    key = require_scope(request, "recall")
    log = recall_log.recall_feedback(
        project=key.project,
        recall_id=recall_id,
        helpful=payload.helpful,
        unhelpful=payload.unhelpful,
    )
    return {"id": log.pk, "helpful": log.helpful, "unhelpful": log.unhelpful}


@router.post("/warnings", response={200: WarningsOut, **errors(*BODY_ERRORS)})
def post_warnings(request: HttpRequest, payload: WarningsIn):
    """Frequent failure patterns matching a planned tool call, with what to do instead."""
    key = require_scope(request, "recall")
    environment = [e.strip().lower() for e in payload.environment if e.strip()]
    found = warnings_for_call(
        project=key.project, tool=payload.tool, arguments=payload.arguments, environment=environment
    )
    return {"warnings": found}


@router.get("/kb/export", response={200: None, **errors()})
def get_kb_export(request: HttpRequest, format: Literal["markdown", "jsonl"] = "markdown"):
    """The knowledge base: Markdown articles (zip, one file per article) or JSONL."""
    key = require_scope(request, *READ_SCOPES)
    content, content_type, name = kb_export_file(project=key.project, format=format)
    response = HttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
