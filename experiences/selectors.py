"""Reads of experiences and failure patterns."""

import difflib
import re
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db.models import Prefetch, Q, QuerySet
from django.db.models.fields.json import KT

from core.errors import NotFound
from core.inputs import QueryIn
from core.pagination import Page, paginate_by_id, paginate_by_rank
from experiences.models import (
    Experience,
    ExperienceMerge,
    ExperienceSource,
    ExperienceVersion,
    ExperienceVote,
    FailurePattern,
    KbArticle,
    MergeProposal,
)
from experiences.services.dedup import experience_neighbours, specificity
from traces.models import Project
from traces.selectors.trace_list import capped_count

# The library's "scope" filter: which scope list must be non-empty.
SCOPE_FIELDS = {
    "environment": "scope_environments",
    "agent": "scope_agents",
    "user": "scope_users",
}


class ExperienceFilters(QueryIn):
    """The filters of the experience list: the API's query parameters (`GET /experiences`
    adds the page's) and the library page's; written once, here."""

    status: str | None = None
    polarity: str | None = None
    source: str | None = None
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
# tests/experience_pages).

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


# ---------------------------------------------------------------------------- dashboard: detail


def _merge_queryset() -> QuerySet[ExperienceMerge]:
    # `before` holds both rows' embeddings (2 × 384 floats): read only the two wordings from it
    return (
        ExperienceMerge.objects.select_related("merged_by")
        .defer("before")
        .annotate(
            survivor_before=KT("before__survivor__advice"),
            absorbed_before=KT("before__absorbed__advice"),
        )
    )


@dataclass(frozen=True)
class ExperienceDetail:
    experience: Experience
    versions: list[ExperienceVersion]
    sources: list[ExperienceSource]
    neighbours: list[tuple[Experience, float]]
    merges: list[ExperienceMerge]


def experience_detail(
    *, experience: Experience, user: User, neighbours: int = 5
) -> ExperienceDetail:
    """The detail page: earlier versions, provenance, near neighbours, merges it took part in."""
    sources = (
        ExperienceSource.objects.filter(experience=experience)
        .select_related("trace")
        .only("id", "experience_id", "step_indexes", "review_id", "trace__id", "trace__external_id",
              "trace__task", "trace__outcome", "trace__agent")
        .order_by("id")
    )  # fmt: skip
    near: list[tuple[Experience, float]] = []
    if experience.embedding is not None and experience.merged_into_id is None:
        near = experience_neighbours(experience, limit=neighbours)
    merges = (
        _merge_queryset().filter(Q(survivor=experience) | Q(absorbed=experience)).order_by("-pk")
    )
    experience_mark_votes(user=user, experiences=[experience])
    return ExperienceDetail(
        experience=experience,
        versions=list(experience.versions.order_by("-version")),
        sources=list(sources),
        neighbours=near,
        merges=list(merges),
    )


# ---------------------------------------------------------------------------- dashboard: merges


@dataclass(frozen=True)
class DiffPart:
    kind: str  # "same", "del" (only in the first text) or "ins" (only in the second)
    text: str


def advice_diff(first: str, second: str) -> tuple[list[DiffPart], list[DiffPart]]:
    """A word-level diff as plain-text parts for each side (the template escapes every part)."""
    a, b = first.split(), second.split()
    left: list[DiffPart] = []
    right: list[DiffPart] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            left.append(DiffPart("same", " ".join(a[i1:i2])))
            right.append(DiffPart("same", " ".join(b[j1:j2])))
            continue
        if i2 > i1:
            left.append(DiffPart("del", " ".join(a[i1:i2])))
        if j2 > j1:
            right.append(DiffPart("ins", " ".join(b[j1:j2])))
    return left, right


@dataclass(frozen=True)
class ProposalRow:
    proposal: MergeProposal
    first_diff: list[DiffPart]
    second_diff: list[DiffPart]

    @property
    def suggested_keep(self) -> str:
        """The wording dedup would keep: the more specific one (more tools, environment detail)."""
        first, second = self.proposal.first, self.proposal.second
        return "second" if specificity(second) > specificity(first) else "first"

    @property
    def suggested_advice(self) -> str:
        return getattr(self.proposal, self.suggested_keep).advice

    @property
    def stale(self) -> str:
        """Why the pair can no longer be merged as proposed ("" when it can)."""
        for experience in (self.proposal.first, self.proposal.second):
            if experience.merged_into_id:
                return f"#{experience.pk} was merged into #{experience.merged_into_id} meanwhile"
        return ""


def _proposal_queryset() -> QuerySet[MergeProposal]:
    return MergeProposal.objects.select_related(
        "first__recall_stats", "second__recall_stats"
    ).defer("first__embedding", "second__embedding", "first__path", "second__path")


def proposal_row(proposal: MergeProposal) -> ProposalRow:
    first, second = advice_diff(proposal.first.advice, proposal.second.advice)
    return ProposalRow(proposal=proposal, first_diff=first, second_diff=second)


@dataclass(frozen=True)
class ProposalQueue:
    rows: list[ProposalRow]
    count: int
    is_count_capped: bool
    start: int = 1  # the 1-based position of rows[0] among all open proposals
    next_cursor: str | None = None

    @property
    def end(self) -> int:
        return self.start + len(self.rows) - 1


def proposal_queue(
    *, project: Project, cursor: str | None = None, limit: int = 20
) -> ProposalQueue:
    """A page of open proposals, most similar first (served by the partial index on open
    proposals)."""
    queryset = _proposal_queryset().filter(project=project, status=MergeProposal.Status.OPEN)
    count, capped = capped_count(queryset)
    page = paginate_by_rank(
        queryset, rank="similarity", descending=True, cursor=cursor, limit=limit
    )
    return ProposalQueue(
        rows=[proposal_row(p) for p in page.items], count=count, is_count_capped=capped,
        start=page.start, next_cursor=page.next_cursor,
    )  # fmt: skip


def proposal_for_user(*, projects: list[Project], proposal_id: int) -> MergeProposal | None:
    return (
        _proposal_queryset()
        .filter(project__in=projects, pk=proposal_id)
        .select_related("project")
        .first()
    )


def merge_of_proposal(proposal: MergeProposal) -> ExperienceMerge | None:
    """The merge a decided proposal made (the newest one of its pair)."""
    pair = {"survivor_id": proposal.first_id, "absorbed_id": proposal.second_id}
    return _merge_queryset().filter(**pair).order_by("-pk").first()


def merge_history(
    *, project: Project, cursor: str | None, limit: int = 20
) -> Page[ExperienceMerge]:
    """Past merges, automatic and manual, newest first, with both wordings from before."""
    return paginate_by_id(_merge_queryset().filter(project=project), cursor=cursor, limit=limit)


def merge_for_user(*, projects: list[Project], merge_id: int) -> ExperienceMerge | None:
    return (
        _merge_queryset()
        .filter(project__in=projects, pk=merge_id)
        .select_related("project")
        .first()
    )


# ---------------------------------------------------------------------------- dashboard: kb


@dataclass(frozen=True)
class KbOverview:
    by_tool: list[KbArticle]
    by_task_type: list[KbArticle]
    promoted_count: int

    @property
    def article_count(self) -> int:
        return len(self.by_tool) + len(self.by_task_type)


def kb_overview(*, project: Project) -> KbOverview:
    articles = list(
        KbArticle.objects.filter(project=project).select_related("edited_by").order_by("key")
    )
    promoted = Experience.objects.filter(
        project=project, status=Experience.Status.PROMOTED, merged_into__isnull=True
    )
    return KbOverview(
        by_tool=[a for a in articles if a.key.startswith("tool:")],
        by_task_type=[a for a in articles if not a.key.startswith("tool:")],
        promoted_count=promoted.count(),
    )


def kb_article_for_user(*, projects: list[Project], article_id: int) -> KbArticle | None:
    return (
        KbArticle.objects.filter(project__in=projects, pk=article_id)
        .select_related("project", "edited_by")
        .first()
    )


def _bar_width(n: int, peak: int) -> int:
    """A bar's width in percent of the peak, to the nearest 5 (a CSS class: the
    Content-Security-Policy allows no inline style)."""
    return 5 * round(20 * n / peak) if peak else 0


def experience_stats(*, project: Project, days: int = 30) -> dict:
    """Experiences over time, by status, and how often recalled items helped (for /stats/)."""
    from datetime import timedelta

    from django.db.models import Count, Q
    from django.db.models.functions import TruncDate
    from django.utils import timezone

    from experiences.models import RecallLog

    since = timezone.now() - timedelta(days=days)
    per_day = list(
        Experience.objects.filter(project=project, created_at__gte=since)
        .annotate(day=TruncDate("created_at"))
        .values_list("day")
        .annotate(n=Count("pk"))
        .order_by("day")
    )
    peak = max((n for _, n in per_day), default=0)
    statuses = dict(
        Experience.objects.filter(project=project, merged_into__isnull=True)
        .values_list("status")
        .annotate(n=Count("pk"))
        .order_by()
    )
    recalls = RecallLog.objects.filter(project=project, created_at__gte=since).aggregate(
        total=Count("pk"),
        with_feedback=Count("pk", filter=Q(feedback_at__isnull=False)),
        helped=Count("pk", filter=Q(feedback_at__isnull=False) & ~Q(helpful=[])),
    )
    rate = recalls["helped"] / recalls["with_feedback"] if recalls["with_feedback"] else None
    return {
        "days": days,
        "per_day": [{"day": day, "n": n, "width": _bar_width(n, peak)} for day, n in per_day],
        "statuses": [(s, statuses.get(s, 0)) for s in Experience.Status.values],
        "recalls": recalls,
        "hit_rate": None if rate is None else round(100 * rate),
    }
