"""Lists of trajectories: the filters shared by the API and the dashboard, the dashboard's
trace list page (keyset pages, capped counts, label sources), one trace by id."""

from dataclasses import dataclass
from datetime import datetime

from django.contrib.postgres.search import SearchQuery, SearchVector
from django.db import connection
from django.db.models import (
    Count,
    Exists,
    F,
    Func,
    Min,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    TextField,
    Value,
)

from accounts.models import Project
from core.errors import NotFound
from core.inputs import QueryIn
from core.pagination import NewerPage, Page, capped_count, newer_page, paginate_by_id
from traces.models import Review, Step, Trace


class TraceFilters(QueryIn):
    """The filters of a trace list: the API's query parameters (`GET /traces` adds the page's)
    and what the dashboard's filter form gives; written once, here."""

    agent: str | None = None
    # The model's choices: `?outcome=bogus` is a 422 naming the field, never an empty list.
    outcome: Trace.Outcome | None = None
    review_status: Trace.ReviewStatus | None = None
    environment: str | None = None
    tool: str | None = None
    task_type: Trace.TaskType | None = None
    since: datetime | None = None
    until: datetime | None = None
    q: str | None = None
    is_complete: bool | None = None


# The words of a step a search finds it by: what it did, how it failed, what it said and saw.
# Traces migration 0013 indexes exactly this expression (GIN), so a search reads the index.
STEP_SEARCH = SearchVector("tool", "error_type", "content", "observation", config="simple")


SEARCH_WORDS = 10  # a search matches on its first words (a 20 KB task is no query)
# The words PostgreSQL's parser finds in a text, in order: the same ones the indexed vectors
# hold. A regular expression split "40.00" or "web.log" in two and then matched nothing.
_WORDS_SQL = (
    "SELECT coalesce(array_agg(w.lexeme ORDER BY w.positions[1]), '{}')"
    " FROM (SELECT lexeme, positions FROM unnest(to_tsvector('simple', %s))"
    " ORDER BY positions[1] LIMIT %s) w"
)


def search_words(text: str) -> list[str]:
    """The first words of `text` as the search indexes hold them (one query)."""
    with connection.cursor() as cursor:
        cursor.execute(_WORDS_SQL, [text[:2000], SEARCH_WORDS])
        row = cursor.fetchone()
    return list(row[0]) if row else []


def _quoted(word: str) -> str:
    # a tsquery operand in quotes: quotes and backslashes doubled
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


def task_search_query(text: str) -> SearchQuery | None:
    """Every word must match, each also as a prefix ("restart cont" finds "container")."""
    words = search_words(text) if text.strip() else []
    if not words:
        return None
    return SearchQuery(
        " & ".join(f"{_quoted(w)}:*" for w in words), config="simple", search_type="raw"
    )


def _array_text(field: str) -> Func:
    # The elements joined by a unit separator, which no typed filter contains (see below).
    return Func(F(field), Value("\x1f"), function="array_to_string", output_field=TextField())


def trace_filter(
    queryset: QuerySet[Trace], filters: TraceFilters, *, partial: bool = False
) -> QuerySet[Trace]:
    """`partial`, the dashboard's lists: agent, environment and tool match a case-insensitive
    part of the value ("gpt" finds "gpt-4o-mini"); the API keeps exact values (its contract)."""
    if partial:
        # A part of a value, any case: a scan of the project's rows (the GIN indexes serve
        # exact elements only), paid by the dashboard's keyset page, never by the API.
        for name, field in (("agent", "agent"), ("environment", "environment"), ("tool", "tools")):
            part = (getattr(filters, name) or "").replace("\x1f", "").strip()
            if not part:
                continue
            if field == "agent":
                queryset = queryset.filter(agent__icontains=part)
            else:
                queryset = queryset.alias(**{f"{field}_text": _array_text(field)}).filter(
                    **{f"{field}_text__icontains": part}
                )
        filters = filters.model_copy(update={"agent": None, "environment": None, "tool": None})
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
            queryset = trace_search(queryset, query, in_steps=partial)
    if filters.is_complete is not None:
        queryset = queryset.filter(completed_at__isnull=not filters.is_complete)
    return queryset


def trace_search(
    queryset: QuerySet[Trace], query: SearchQuery, *, in_steps: bool
) -> QuerySet[Trace]:
    """Traces whose task has the words, or (`in_steps`, the dashboard) one of whose steps."""
    if not in_steps:
        return queryset.filter(task_search=query)
    return queryset.filter(
        Q(task_search=query) | Q(pk__in=steps_matching(query).values("trace_id"))
    )


def steps_matching(query: SearchQuery) -> QuerySet[Step]:
    """Steps whose tool, error type, content or observation has the words (the GIN index)."""
    return Step.objects.alias(found=STEP_SEARCH).filter(found=query)


def trace_list(
    *,
    projects: list[Project] | QuerySet[Project],
    filters: TraceFilters,
    cursor: str | None,
    limit: int,
) -> Page[Trace]:
    queryset = trace_filter(Trace.objects.filter(project__in=projects), filters)
    return paginate_by_id(queryset, cursor=cursor, limit=limit)


def trace_get(*, project: Project, trace_id: int) -> Trace:
    """One trace of the project with its steps in order; NotFound for another project's trace."""
    trace = (
        Trace.objects.filter(project=project, pk=trace_id)
        .prefetch_related(
            Prefetch("steps", queryset=Step.objects.order_by("index")),
            Prefetch("reviews", queryset=Review.objects.order_by("kind", "window_start")),
        )
        .first()
    )
    if trace is None:
        raise NotFound(f"trace {trace_id} not found")
    return trace


LIST_COLUMNS = (
    "id", "project_id", "external_id", "agent", "task", "task_type", "environment", "tools",
    "outcome", "review_status", "review_status_reason", "step_count", "error_count",
    "duration_ms", "created_at", "completed_at",
)  # fmt: skip
# Counting stops here ("1,000+"): an exact count of a big filtered list costs more than the page.


def _steps_with_source(*sources: str) -> Exists:
    return Exists(Step.objects.filter(trace=OuterRef("pk"), label_source__in=sources))


def trace_filter_by_label_source(queryset: QuerySet[Trace], source: str | None) -> QuerySet[Trace]:
    """Traces with at least one step labelled by `source`; "none" for traces with no labels."""
    if not source:
        return queryset
    if source == "none":
        return queryset.exclude(_steps_with_source(*Step.LabelSource.values))
    return queryset.filter(_steps_with_source(source))


def _mark_label_sources(traces: list[Trace]) -> None:
    """Set has_human_labels / has_heuristic_labels on a page of traces in one query.

    Separate from the page query on purpose: as EXISTS columns there, PostgreSQL hashes every
    step of the table; here it reads only the page's steps through the (trace, index) index.
    """
    found = set(
        Step.objects.filter(
            trace_id__in=[t.pk for t in traces],
            label_source__in=[Step.LabelSource.HUMAN, Step.LabelSource.HEURISTIC],
        )
        .values_list("trace_id", "label_source")
        .distinct()
        .order_by()
    )
    for trace in traces:
        trace.has_human_labels = (trace.pk, Step.LabelSource.HUMAN) in found  # type: ignore[attr-defined]
        trace.has_heuristic_labels = (trace.pk, Step.LabelSource.HEURISTIC) in found  # type: ignore[attr-defined]


@dataclass(frozen=True)
class TraceListPage:
    page: Page[Trace]
    count: int
    is_count_capped: bool
    has_any_trace: bool
    newer: NewerPage | None  # the way back: the page before this one, None on the first


def trace_filter_by_run_id(queryset: QuerySet[Trace], run_id: str | None) -> QuerySet[Trace]:
    """The dashboard's run id: an external id or its beginning ("deploy-web-" finds every
    attempt), or the agent's session id."""
    if not run_id:
        return queryset
    return queryset.filter(Q(external_id__startswith=run_id) | Q(session_id=run_id))


def _mark_matching_steps(traces: list[Trace], query: SearchQuery | None) -> None:
    """`matching_steps` (how many) and `first_matching_step` of each trace on a page of a
    search: one query, through the step search index."""
    if query is None:
        return
    found = {
        trace_id: (count, first)
        for trace_id, count, first in steps_matching(query)
        .filter(trace_id__in=[t.pk for t in traces])
        .values("trace_id")
        .annotate(count=Count("pk"), first=Min("index"))
        .values_list("trace_id", "count", "first")
        .order_by()
    }
    for trace in traces:
        count, first = found.get(trace.pk, (0, None))
        trace.matching_steps = count  # type: ignore[attr-defined]
        trace.first_matching_step = first  # type: ignore[attr-defined]


def trace_list_page(
    *, project: Project, filters: TraceFilters, label_source: str | None, cursor: str | None,
    limit: int = 50, run_id: str | None = None,
) -> TraceListPage:  # fmt: skip
    """One page of a project's traces for the dashboard, with the label-source markers, the
    steps a search matched, and the cursor of the page before it (among the same rows)."""
    search = task_search_query(filters.q) if filters.q else None  # once: it asks PostgreSQL
    unsearched = filters.model_copy(update={"q": None})
    queryset = trace_filter(Trace.objects.filter(project=project), unsearched, partial=True)
    if search is not None:
        queryset = trace_search(queryset, search, in_steps=True)
    queryset = trace_filter_by_label_source(queryset, label_source)
    queryset = trace_filter_by_run_id(queryset, run_id)
    count, capped = capped_count(queryset)
    page = paginate_by_id(queryset.only(*LIST_COLUMNS), cursor=cursor, limit=limit)
    _mark_label_sources(page.items)
    _mark_matching_steps(page.items, search)
    has_any = count > 0 or Trace.objects.filter(project=project).exists()
    return TraceListPage(
        page=page, count=count, is_count_capped=capped, has_any_trace=has_any,
        newer=newer_page(queryset, cursor=cursor, limit=limit),
    )  # fmt: skip
