"""Lists of experiences: the filters shared by the API and the library page, the API's list and
detail of experiences and failure patterns, the library's pages, one experience by id."""

import re
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db.models import Prefetch, QuerySet

from accounts.models import Project
from core.errors import NotFound
from core.inputs import QueryIn
from core.pagination import Page, capped_count, paginate_by_id
from experiences.models import Experience, ExperienceSource, ExperienceVote, FailurePattern

# The library's "scope" filter: which scope list must be non-empty.
SCOPE_FIELDS = {
    "environment": "scope_environments",
    "agent": "scope_agents",
    "user": "scope_users",
}


class ExperienceFilters(QueryIn):
    """The filters of the experience list: the API's query parameters (`GET /experiences`
    adds the page's) and the library page's; written once, here."""

    # The model's choices: `?status=bogus` is a 422 naming the field, never an empty list.
    status: Experience.Status | None = None
    polarity: Experience.Polarity | None = None
    source: Experience.Source | None = None
    tool: str | None = None
    environment: str | None = None
    agent: str | None = None
    trace: int | None = None


class LibraryFilters(ExperienceFilters):
    """The library page's filters: the API's, the words of the advice and the kind of scope
    (global, environment, agent, user)."""

    q: str | None = None
    scope: str | None = None


def _with_sources(queryset: QuerySet[Experience]) -> QuerySet[Experience]:
    return queryset.prefetch_related(
        Prefetch("sources", queryset=ExperienceSource.objects.select_related("trace").only(
            "id", "experience_id", "trace_id", "review_id", "step_indexes", "trace__external_id"
        ).order_by("id"))
    ).select_related("recall_stats").defer("embedding")  # fmt: skip


def _filter_api(queryset: QuerySet[Experience], filters: ExperienceFilters) -> QuerySet[Experience]:
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
    return queryset


def experience_list(
    *, project: Project, filters: ExperienceFilters, cursor: str | None, limit: int
) -> Page[Experience]:
    queryset = _filter_api(
        Experience.objects.filter(project=project, merged_into__isnull=True), filters
    )
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


def failure_pattern_list(
    *, project: Project, tool: str | None, cursor: str | None, limit: int
) -> Page[FailurePattern]:
    queryset = FailurePattern.objects.filter(project=project)
    if tool:
        queryset = queryset.filter(tool=tool)
    return paginate_by_id(queryset, cursor=cursor, limit=limit)


# ---------------------------------------------------------------------------- dashboard: library
# Every list below reads a fixed number of queries whatever its length (asserted in
# tests/experiences/views).

LIBRARY_DEFER = ("embedding", "path", "task")


def experience_filter(
    queryset: QuerySet[Experience], filters: LibraryFilters
) -> QuerySet[Experience]:
    """The API's filters plus the library's: words of the advice, the kind of scope."""
    queryset = _filter_api(queryset, filters)
    for word in re.findall(r"\w+", (filters.q or "").lower())[:10]:
        # every word must appear; without a text index this reads the project's rows (the
        # project/-id index still bounds it by the page's LIMIT when the words are common)
        queryset = queryset.filter(advice__icontains=word)
    if filters.scope == "global":
        queryset = queryset.filter(scope_environments=[], scope_agents=[], scope_users=[])
    elif filters.scope in SCOPE_FIELDS:
        queryset = queryset.exclude(**{SCOPE_FIELDS[filters.scope]: []})
    return queryset


def experience_mark_votes(*, user: User, experiences: list[Experience]) -> None:
    """Set `my_vote` (+1, -1 or 0) on each experience: the viewer's own vote, in one query."""
    rows = ExperienceVote.objects.filter(user=user, experience_id__in=[e.pk for e in experiences])
    votes = dict(rows.values_list("experience_id", "value"))
    for experience in experiences:
        experience.my_vote = votes.get(experience.pk, 0)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class LibraryPage:
    page: Page[Experience]
    count: int
    is_count_capped: bool
    has_any_experience: bool


def experience_library_page(
    *, project: Project, filters: LibraryFilters, user: User, cursor: str | None,
    limit: int = 50,
) -> LibraryPage:  # fmt: skip
    """A page of the library (merged-away rows left out), its count and the viewer's votes."""
    queryset = experience_filter(
        Experience.objects.filter(project=project, merged_into__isnull=True), filters
    )
    count, capped = capped_count(queryset)
    page = paginate_by_id(
        queryset.select_related("recall_stats").defer(*LIBRARY_DEFER), cursor=cursor, limit=limit
    )
    has_any = count > 0 or Experience.objects.filter(project=project).exists()
    experience_mark_votes(user=user, experiences=page.items)
    return LibraryPage(page=page, count=count, is_count_capped=capped, has_any_experience=has_any)


def experience_for_user(
    *, projects: list[Project], experience_id: int, light: bool = False
) -> Experience | None:
    """An experience of one of these projects (None otherwise); `light` leaves the heavy columns."""
    queryset = Experience.objects.filter(project__in=projects, pk=experience_id).select_related(
        "project", "recall_stats"
    )
    return (queryset.defer(*LIBRARY_DEFER) if light else queryset).first()


def experiences_of_project(*, project: Project, ids: list[int]) -> list[int]:
    """The ids among `ids` that are live experiences of the project (bulk actions)."""
    queryset = Experience.objects.filter(project=project, pk__in=ids, merged_into__isnull=True)
    return sorted(queryset.values_list("pk", flat=True))
