"""Reads of trajectories (lists with filters, one trace with its steps)."""

import re
from dataclasses import dataclass
from datetime import datetime

from django.contrib.postgres.search import SearchQuery
from django.db.models import Prefetch, QuerySet

from traces.errors import NotFound
from traces.models import Project, Step, Trace
from traces.pagination import Page, paginate_by_id


@dataclass(frozen=True)
class TraceFilters:
    agent: str | None = None
    outcome: str | None = None
    review_status: str | None = None
    environment: str | None = None
    tool: str | None = None
    task_type: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    q: str | None = None
    is_complete: bool | None = None


def task_search_query(text: str) -> SearchQuery | None:
    """Every word must match, the last ones as prefixes too ("restart cont" finds "container")."""
    words = re.findall(r"\w+", text.lower())[:10]
    if not words:
        return None
    return SearchQuery(" & ".join(f"{w}:*" for w in words), config="simple", search_type="raw")


def trace_filter(queryset: QuerySet[Trace], filters: TraceFilters) -> QuerySet[Trace]:
    if filters.agent:
        queryset = queryset.filter(agent=filters.agent)
    if filters.outcome:
        queryset = queryset.filter(outcome=filters.outcome)
    if filters.review_status:
        queryset = queryset.filter(review_status=filters.review_status)
    if filters.environment:
        queryset = queryset.filter(environment__contains=[filters.environment.lower()])
    if filters.tool:
        queryset = queryset.filter(tools__contains=[filters.tool])
    if filters.task_type:
        queryset = queryset.filter(task_type=filters.task_type)
    if filters.since:
        queryset = queryset.filter(created_at__gte=filters.since)
    if filters.until:
        queryset = queryset.filter(created_at__lt=filters.until)
    if filters.q:
        query = task_search_query(filters.q)
        if query is not None:
            queryset = queryset.filter(task_search=query)
    if filters.is_complete is not None:
        queryset = queryset.filter(completed_at__isnull=not filters.is_complete)
    return queryset


def trace_list(
    *, projects: list[Project] | QuerySet[Project], filters: TraceFilters, cursor: str | None, limit: int
) -> Page[Trace]:
    queryset = trace_filter(Trace.objects.filter(project__in=projects), filters)
    return paginate_by_id(queryset, cursor=cursor, limit=limit)


def trace_get(*, project: Project, trace_id: int) -> Trace:
    """One trace of the project with its steps in order; NotFound for another project's trace."""
    trace = (
        Trace.objects.filter(project=project, pk=trace_id)
        .prefetch_related(Prefetch("steps", queryset=Step.objects.order_by("index")))
        .first()
    )
    if trace is None:
        raise NotFound(f"trace {trace_id} not found")
    return trace
