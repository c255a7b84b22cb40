"""Reads of experiences and failure patterns."""

from dataclasses import dataclass

from django.db.models import Prefetch, QuerySet

from experiences.models import Experience, ExperienceSource, FailurePattern
from traces.errors import NotFound
from traces.models import Project
from traces.pagination import Page, paginate_by_id


@dataclass(frozen=True)
class ExperienceFilters:
    status: str | None = None
    polarity: str | None = None
    source: str | None = None
    tool: str | None = None
    environment: str | None = None
    agent: str | None = None
    trace: int | None = None


def _with_sources(queryset: QuerySet[Experience]) -> QuerySet[Experience]:
    return queryset.prefetch_related(
        Prefetch("sources", queryset=ExperienceSource.objects.select_related("trace").only(
            "id", "experience_id", "trace_id", "review_id", "step_indexes", "trace__external_id"
        ).order_by("id"))
    ).defer("embedding")  # fmt: skip


def experience_list(*, project: Project, filters: ExperienceFilters, cursor: str | None, limit: int) -> Page[Experience]:
    queryset = Experience.objects.filter(project=project, merged_into__isnull=True)
    if filters.status:
        queryset = queryset.filter(status=filters.status)
    if filters.polarity:
        queryset = queryset.filter(polarity=filters.polarity)
    if filters.source:
        queryset = queryset.filter(source=filters.source)
    if filters.tool:
        queryset = queryset.filter(tools__contains=[filters.tool])
    if filters.environment:
        queryset = queryset.filter(environment__contains=[filters.environment.lower()])
    if filters.agent:
        queryset = queryset.filter(agent=filters.agent)
    if filters.trace:
        queryset = queryset.filter(sources__trace_id=filters.trace)
    return paginate_by_id(_with_sources(queryset), cursor=cursor, limit=limit)


def experience_get(*, project: Project, experience_id: int) -> Experience:
    experience = (
        _with_sources(Experience.objects.filter(project=project, pk=experience_id))
        .prefetch_related("versions")
        .first()
    )
    if experience is None:
        raise NotFound(f"experience {experience_id} not found")
    return experience


def failure_pattern_list(*, project: Project, tool: str | None, cursor: str | None, limit: int) -> Page[FailurePattern]:
    queryset = FailurePattern.objects.filter(project=project)
    if tool:
        queryset = queryset.filter(tool=tool)
    return paginate_by_id(queryset, cursor=cursor, limit=limit)
