"""Reads of trajectories (lists with filters, one trace with its steps)."""

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.postgres.search import SearchQuery
from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    Func,
    IntegerField,
    Min,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    TextField,
    Value,
    When,
)
from django.db.models.functions import TruncDate
from django.utils import timezone

from traces.errors import NotFound
from traces.models import (
    ApiKey,
    AuditEvent,
    Membership,
    Project,
    Review,
    ReviewClaim,
    Step,
    Trace,
)
from traces.pagination import Page, RankedPage, paginate_by_id, paginate_by_rank
from traces.templatetags.hindsight import reveal


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
    # The dashboard's filters: agent, environment and tool match a case-insensitive part of
    # the value ("gpt" finds "gpt-4o-mini"). The API keeps exact values (its contract).
    is_partial: bool = False


def task_search_query(text: str) -> SearchQuery | None:
    """Every word must match, the last ones as prefixes too ("restart cont" finds "container")."""
    words = re.findall(r"\w+", text.lower())[:10]
    if not words:
        return None
    return SearchQuery(" & ".join(f"{w}:*" for w in words), config="simple", search_type="raw")


def _array_text(field: str) -> Func:
    # The elements joined by a unit separator, which no typed filter contains (see below).
    return Func(F(field), Value("\x1f"), function="array_to_string", output_field=TextField())


def trace_filter(queryset: QuerySet[Trace], filters: TraceFilters) -> QuerySet[Trace]:
    if filters.is_partial:
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
        filters = replace(filters, agent=None, environment=None, tool=None)
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


# ---------------------------------------------------------------------------- dashboard: access


@dataclass(frozen=True)
class ProjectAccess:
    """A project the user may open, and what they may do there."""

    project: Project
    role: str  # Membership.Role value; superusers count as admins everywhere

    @property
    def is_admin(self) -> bool:
        return self.role == Membership.Role.ADMIN


def project_access_list(*, user: User) -> list[ProjectAccess]:
    """The projects a user belongs to (all of them for a superuser), by name; one query."""
    if not user.is_authenticated or not user.is_active:
        return []
    if user.is_superuser:
        return [
            ProjectAccess(project=p, role=Membership.Role.ADMIN)
            for p in Project.objects.order_by("name")
        ]
    memberships = (
        Membership.objects.filter(user=user).select_related("project").order_by("project__name")
    )
    return [ProjectAccess(project=m.project, role=m.role) for m in memberships]


# ---------------------------------------------------------------------------- dashboard: trace list

LIST_COLUMNS = (
    "id", "project_id", "external_id", "agent", "task", "task_type", "environment", "tools",
    "outcome", "review_status", "review_status_reason", "step_count", "error_count",
    "duration_ms", "created_at", "completed_at",
)  # fmt: skip
# Counting stops here ("1,000+"): an exact count of a big filtered list costs more than the page.
COUNT_CAP = 1_000


def _steps_with_source(*sources: str) -> Exists:
    return Exists(Step.objects.filter(trace=OuterRef("pk"), label_source__in=sources))


def trace_filter_by_label_source(queryset: QuerySet[Trace], source: str | None) -> QuerySet[Trace]:
    """Traces with at least one step labelled by `source`; "none" for traces with no labels."""
    if not source:
        return queryset
    if source == "none":
        return queryset.exclude(_steps_with_source(*Step.LabelSource.values))
    return queryset.filter(_steps_with_source(source))


def capped_count(queryset: QuerySet[Any], cap: int = COUNT_CAP) -> tuple[int, bool]:
    """Count up to `cap` rows: exact for normal lists, "1,000+" without scanning 100k rows."""
    count = queryset.order_by()[: cap + 1].count()
    return min(count, cap), count > cap


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


def trace_list_page(
    *, project: Project, filters: TraceFilters, label_source: str | None, cursor: str | None,
    limit: int = 50,
) -> TraceListPage:  # fmt: skip
    """One page of a project's traces for the dashboard, with the label-source markers."""
    queryset = trace_filter(Trace.objects.filter(project=project), filters)
    queryset = trace_filter_by_label_source(queryset, label_source)
    count, capped = capped_count(queryset)
    page = paginate_by_id(queryset.only(*LIST_COLUMNS), cursor=cursor, limit=limit)
    _mark_label_sources(page.items)
    has_any = count > 0 or Trace.objects.filter(project=project).exists()
    return TraceListPage(page=page, count=count, is_count_capped=capped, has_any_trace=has_any)


# ---------------------------------------------------------------------------- dashboard: inspector


def _pretty_json(value: Any) -> str:
    if value in (None, "", {}, []):
        return ""
    return reveal(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str))


def duration_text(ms: int | None) -> str:
    if ms is None:
        return ""
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    return f"{ms // 60_000} min {ms % 60_000 // 1000} s"


def step_decorate(step: Step) -> Step:
    """Display-ready fields, computed once here instead of per template tag."""
    step.arguments_json = _pretty_json(step.arguments)  # type: ignore[attr-defined]
    step.duration_text = duration_text(step.duration_ms)  # type: ignore[attr-defined]
    context = step.context or {}
    known = [(k, context.get(k)) for k in ("task_goal", "subtask", "latest_user_input")]
    extra = {k: v for k, v in context.items() if k not in dict(known)}
    step.context_items = [(k.replace("_", " "), v) for k, v in known if v]  # type: ignore[attr-defined]
    step.context_extra_json = _pretty_json(extra)  # type: ignore[attr-defined]
    return step


def _display_items(value: Any) -> list[str]:
    """Review lists may hold strings or small objects; people read them as lines."""
    if not value:
        return []
    if not isinstance(value, list):
        value = [value]
    lines = []
    for item in value:
        if isinstance(item, dict):
            lines.append(" · ".join(f"{k}: {v}" for k, v in item.items() if v not in (None, "")))
        else:
            lines.append(str(item))
    return lines


def review_decorate(review: Review) -> Review:
    review.path_lines = _display_items(review.execution_path)  # type: ignore[attr-defined]
    review.decision_lines = _display_items(review.key_decisions)  # type: ignore[attr-defined]
    review.improvement_lines = _display_items(review.improvements)  # type: ignore[attr-defined]
    return review


STEP_COLUMNS_DEFERRED = ("observation_raw", "content_hash")


def step_queryset() -> QuerySet[Step]:
    return (
        Step.objects.defer(*STEP_COLUMNS_DEFERRED).select_related("labelled_by").order_by("index")
    )


@dataclass(frozen=True)
class MachineOpinion:
    """What the machine reviewer said about one step, kept in its Review after humans relabel."""

    label: str
    reason: str
    confidence: float | None
    reviewer: str  # Review.Reviewer: "llm" or "heuristic", the step's label_source it gave


def _opinion(value: Any, reviewer: str) -> MachineOpinion | None:
    label = _review_label(value)
    if not label:
        return None
    details = value if isinstance(value, dict) else {}
    reason = details.get("reason")
    confidence = details.get("confidence")
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        confidence = None
    elif not 0 <= confidence <= 1:
        confidence = None  # outside the step's check constraint: not worth restoring
    return MachineOpinion(
        label=label,
        reason=reason if isinstance(reason, str) else "",
        confidence=None if confidence is None else float(confidence),
        reviewer=reviewer if reviewer in Review.Reviewer.values else Review.Reviewer.LLM,
    )


def machine_opinions(reviews: Iterable[Review]) -> dict[int, MachineOpinion]:
    """Per step index, the machine's label from `reviews` given full before local (a local
    review's label refines the full review's for its window, as when the labels were applied)."""
    opinions: dict[int, MachineOpinion] = {}
    for review in reviews:
        for index, value in (review.labels or {}).items():
            opinion = _opinion(value, review.reviewer)
            if opinion is not None and str(index).isdigit():
                opinions[int(index)] = opinion
    return opinions


def machine_opinion_for(*, trace: Trace, index: int) -> MachineOpinion | None:
    reviews = Review.objects.filter(
        trace=trace, window_start__lte=index, window_end__gte=index
    ).order_by("kind", "pk")  # "full" sorts before "local"
    return machine_opinions(reviews.only("reviewer", "labels")).get(index)


def trace_inspect(*, trace_id: int, projects: list[Project]) -> Trace | None:
    """A trace with everything the inspector shows, in a fixed number of queries (any step count).

    The experiences panel reads `trace.experience_sources` by its related name, so this app never
    imports the experiences app.
    """
    trace = (
        Trace.objects.filter(pk=trace_id, project__in=projects)
        .select_related("project")
        .prefetch_related(
            Prefetch("steps", queryset=step_queryset()),
            Prefetch("reviews", queryset=Review.objects.order_by("kind", "window_start", "pk")),
            "experience_sources__experience",
        )
        .first()
    )
    if trace is None:
        return None
    for step in trace.steps.all():
        step_decorate(step)
    for review in trace.reviews.all():
        review_decorate(review)
    # The prefetch orders reviews by kind first: full before local, as machine_opinions needs.
    opinions = machine_opinions(trace.reviews.all())
    for step in trace.steps.all():
        step.machine_opinion = opinions.get(step.index)  # type: ignore[attr-defined]
    return trace


def trace_is_heuristic(trace: Trace) -> bool:
    """The labels or reviews came from the offline heuristic reviewer (said plainly in the UI)."""
    return any(r.reviewer == Review.Reviewer.HEURISTIC for r in trace.reviews.all()) or any(
        s.label_source == Step.LabelSource.HEURISTIC for s in trace.steps.all()
    )


MACHINE_LABEL_SOURCES = (Step.LabelSource.LLM, Step.LabelSource.HEURISTIC)


def machine_label_versions(trace: Trace) -> str:
    """ "index:version,…" of the machine-labelled steps as shown: what "Accept all" confirms."""
    machine = {Step.LabelSource.LLM, Step.LabelSource.HEURISTIC}
    return ",".join(
        f"{s.index}:{s.label_version}"
        for s in trace.steps.all()
        if s.label and s.label_source in machine
    )


def parse_label_versions(text: str) -> dict[int, int]:
    versions: dict[int, int] = {}
    for part in text.split(","):
        index, _, version = part.strip().partition(":")
        if index.isdigit() and version.isdigit():
            versions[int(index)] = int(version)
    return versions


def step_for_trace(*, trace: Trace, index: int) -> Step | None:
    step = step_queryset().filter(trace=trace, index=index).first()
    if step is None:
        return None
    step.machine_opinion = machine_opinion_for(trace=trace, index=index)  # type: ignore[attr-defined]
    return step_decorate(step)


# ------------------------------------------------------------------------- inspector: reading aids

STEP_FILTERS = ("tools", "errors", "mine")  # ?show= of the inspector; "" shows every step


def step_is_own_change(step: Step, *, user: User) -> bool:
    """The step's current label is one `user` set by judging the step ("my changes").

    A label confirmed wholesale ("Accept all", "Finish & next") is the machine's, not a change.
    """
    return (
        bool(step.label)
        and step.label_source == Step.LabelSource.HUMAN
        and step.labelled_by_id == user.pk
        and not step.is_accepted_as_is
    )


@dataclass(frozen=True)
class StepOverview:
    """Counts for the inspector's step filters and the targets of its jump links."""

    total: int
    tool_calls: int
    errors: int
    own_changes: int
    first_error: int | None
    first_unlabelled: int | None


def steps_mark_for_reading(steps: list[Step], *, user: User) -> StepOverview:
    """Mark each step with `repeats_index` (the first earlier step with the same text: a repeated
    prompt) and `is_own_change`; no query, the steps are already loaded."""
    first_with: dict[str, int] = {}
    own_changes = 0
    for step in steps:
        first = first_with.setdefault(step.content, step.index) if step.content else step.index
        step.repeats_index = first if first != step.index else None  # type: ignore[attr-defined]
        is_own = step_is_own_change(step, user=user)
        step.is_own_change = is_own  # type: ignore[attr-defined]
        own_changes += is_own
    return StepOverview(
        total=len(steps),
        tool_calls=sum(1 for s in steps if s.kind == Step.Kind.TOOL_CALL),
        errors=sum(1 for s in steps if s.is_error),
        own_changes=own_changes,
        first_error=next((s.index for s in steps if s.is_error), None),
        first_unlabelled=next((s.index for s in steps if not s.label), None),
    )


def step_mark_for_reading(step: Step, *, user: User) -> Step:
    """`steps_mark_for_reading` for one step re-rendered alone (after a relabel): one query."""
    earlier = Step.objects.filter(trace_id=step.trace_id, index__lt=step.index)
    first = (
        earlier.filter(content=step.content).order_by("index").values_list("index", flat=True)
        if step.content
        else earlier.none()
    ).first()
    step.repeats_index = first  # type: ignore[attr-defined]
    step.is_own_change = step_is_own_change(step, user=user)  # type: ignore[attr-defined]
    return step


def reviews_drop_repeats(reviews: list[Review]) -> None:
    """Show each goal, key decision, improvement and experience once across a trace's reviews:
    local reviews repeat the full review's. `repeats_left_out` counts what a review lost."""
    seen: set[tuple[str, str]] = set()

    def first_time(part: str, text: str) -> bool:
        key = (part, " ".join(text.split()).casefold())
        if key in seen:
            return False
        seen.add(key)
        return True

    for review in reviews:
        lines = {
            "decision_lines": getattr(review, "decision_lines", []),
            "improvement_lines": getattr(review, "improvement_lines", []),
        }
        kept = {name: [x for x in found if first_time(name, x)] for name, found in lines.items()}
        left_out = sum(len(lines[name]) - len(kept[name]) for name in lines)
        for name, found in kept.items():
            setattr(review, name, found)
        review.is_goal_repeated = bool(review.goal) and not first_time("goal", review.goal)  # type: ignore[attr-defined]
        review.is_experience_repeated = bool(review.experience) and not first_time(  # type: ignore[attr-defined]
            "experience", review.experience
        )
        left_out += review.is_goal_repeated + review.is_experience_repeated  # type: ignore[attr-defined]
        review.repeats_left_out = left_out  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------- dashboard: queue


class QueueReason:
    """Why a trajectory waits where it does in the queue: its priority, lowest first."""

    DISAGREEMENT = 0  # a person changed a label the machine set: the others are doubtful too
    LOW_CONFIDENCE = 1  # the reviewer itself was unsure of some steps
    UNCHECKED = 2  # machine labels nobody has looked at yet

    # The `why` filter of /queue/ names them by these slugs.
    SLUGS = {DISAGREEMENT: "disagreement", LOW_CONFIDENCE: "low-confidence", UNCHECKED: "unchecked"}
    TITLES = {
        DISAGREEMENT: "Disagreement",
        LOW_CONFIDENCE: "Low confidence",
        UNCHECKED: "Never reviewed",
    }

    @classmethod
    def from_slug(cls, slug: str) -> int | None:
        return next((value for value, name in cls.SLUGS.items() if name == slug), None)


def queue_candidates(
    *, project: Project, user: User | None = None, include_held: bool = False
) -> QuerySet[Trace]:
    """Complete traces with machine labels no person has confirmed yet, most urgent first.

    Traces another reviewer holds with a live claim are left out (unless `include_held`, for
    the overview that shows who holds them); a lapsed claim holds nothing.
    """
    now = timezone.now()
    machine = Step.objects.filter(
        trace=OuterRef("pk"), label_source__in=MACHINE_LABEL_SOURCES
    ).exclude(label="")
    # "Accept all" marks steps human too, but that is a confirmation, not a disagreement.
    changed = Step.objects.filter(
        trace=OuterRef("pk"), label_source=Step.LabelSource.HUMAN, is_accepted_as_is=False
    )
    low = settings.HINDSIGHT_LOW_CONFIDENCE
    candidates = (
        Trace.objects.filter(project=project, completed_at__isnull=False)
        .filter(Exists(machine))
        .annotate(
            priority=Case(
                When(Exists(changed), then=QueueReason.DISAGREEMENT),
                When(
                    Exists(machine.filter(label_confidence__lt=low)),
                    then=QueueReason.LOW_CONFIDENCE,
                ),
                default=QueueReason.UNCHECKED,
                output_field=IntegerField(),
            )
        )
        .order_by("priority", "pk")
    )
    if not include_held:
        held = ReviewClaim.objects.filter(
            trace=OuterRef("pk"), finished_at__isnull=True, released_at__isnull=True,
            expires_at__gt=now,
        )  # fmt: skip
        if user is not None:
            held = held.exclude(user=user)
        candidates = candidates.exclude(Exists(held))
    return candidates


@dataclass(frozen=True)
class QueueFilters:
    agent: str | None = None
    outcome: str | None = None
    why: int | None = None  # a QueueReason value

    @property
    def is_filtered(self) -> bool:
        return bool(self.agent or self.outcome or self.why is not None)


@dataclass(frozen=True)
class QueueProgress:
    """What the signed-in reviewer finished, against what is waiting."""

    this_session: int
    today: int
    waiting: int
    is_waiting_capped: bool


@dataclass(frozen=True)
class QueuePage:
    page: RankedPage[Trace]
    count: int  # of the filtered queue
    is_count_capped: bool
    progress: QueueProgress
    agents: list[str]


def _percent(value: float) -> str:
    return f"{round(100 * value)} %"


def _queue_why(trace: Trace, parts: Mapping[str, Any]) -> str:
    """The sentence behind a row's priority, from the counts of its steps."""
    machine = parts.get("machine", 0)
    unchecked = f"{machine} machine label{'s' if machine != 1 else ''} unchecked"
    if trace.priority == QueueReason.DISAGREEMENT:  # type: ignore[attr-defined]
        changed = parts.get("changed", 0)
        return f"a person changed {changed} label{'s' if changed != 1 else ''}; {unchecked}"
    if trace.priority == QueueReason.LOW_CONFIDENCE:  # type: ignore[attr-defined]
        threshold = _percent(settings.HINDSIGHT_LOW_CONFIDENCE)
        lowest = parts.get("lowest")
        lowest_text = f" (lowest {_percent(lowest)})" if lowest is not None else ""
        return (
            f"{parts.get('low', 0)} of {machine} labels under {threshold} confidence{lowest_text}"
        )
    return f"no person has looked at it: {unchecked}"


def _decorate_queue_rows(traces: list[Trace]) -> None:
    """Why, and who holds it, for a page of the queue: two queries whatever the page size."""
    ids = [t.pk for t in traces]
    machine = Q(label_source__in=MACHINE_LABEL_SOURCES) & ~Q(label="")
    low = settings.HINDSIGHT_LOW_CONFIDENCE
    counts = {
        row["trace_id"]: row
        for row in Step.objects.filter(trace_id__in=ids)
        .values("trace_id")
        .annotate(
            machine=Count("pk", filter=machine),
            low=Count("pk", filter=machine & Q(label_confidence__lt=low)),
            lowest=Min("label_confidence", filter=machine),
            changed=Count(
                "pk", filter=Q(label_source=Step.LabelSource.HUMAN, is_accepted_as_is=False)
            ),
        )
        .order_by()
    }
    claims = {
        claim.trace_id: claim
        for claim in ReviewClaim.objects.filter(
            trace_id__in=ids,
            finished_at__isnull=True,
            released_at__isnull=True,
            expires_at__gt=timezone.now(),
        ).select_related("user")  # fmt: skip
    }
    for trace in traces:
        trace.why_title = QueueReason.TITLES[trace.priority]  # type: ignore[attr-defined]
        trace.why = _queue_why(trace, counts.get(trace.pk, {}))  # type: ignore[attr-defined]
        trace.claim = claims.get(trace.pk)  # type: ignore[attr-defined]


def queue_progress(*, project: Project, user: User, waiting: int, capped: bool) -> QueueProgress:
    """Trajectories the user finished from the queue since signing in, and since midnight."""
    midnight = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    session_start = user.last_login or midnight
    done = ReviewClaim.objects.filter(
        project=project, user=user, finished_at__gte=min(midnight, session_start)
    ).aggregate(
        this_session=Count("pk", filter=Q(finished_at__gte=session_start)),
        today=Count("pk", filter=Q(finished_at__gte=midnight)),
    )
    return QueueProgress(
        this_session=done["this_session"], today=done["today"], waiting=waiting,
        is_waiting_capped=capped,
    )  # fmt: skip


QUEUE_AGENTS_SHOWN = 100


def queue_page(
    *, project: Project, user: User, filters: QueueFilters, cursor: str | None, limit: int = 20
) -> QueuePage:
    """One page of the review queue (held traces included, with their holder), its size and
    the reviewer's progress."""
    queue = queue_candidates(project=project, user=user, include_held=True)
    matching = queue
    if filters.agent:
        matching = matching.filter(agent=filters.agent)
    if filters.outcome:
        matching = matching.filter(outcome=filters.outcome)
    if filters.why is not None:
        matching = matching.filter(Q(priority=filters.why))  # an annotation
    page = paginate_by_rank(
        matching.only(*LIST_COLUMNS), rank="priority", descending=False, cursor=cursor, limit=limit
    )
    _decorate_queue_rows(page.items)
    count, capped = capped_count(matching.values("pk"))
    waiting, waiting_capped = (
        capped_count(queue.values("pk")) if filters.is_filtered else (count, capped)
    )
    agents = list(
        Trace.objects.filter(project=project)  # the (project, agent) index
        .order_by("agent")
        .values_list("agent", flat=True)
        .distinct()[:QUEUE_AGENTS_SHOWN]
    )
    return QueuePage(
        page=page,
        count=count,
        is_count_capped=capped,
        progress=queue_progress(project=project, user=user, waiting=waiting, capped=waiting_capped),
        agents=agents,
    )


def claim_open_for(*, user: User, project: Project | None = None) -> ReviewClaim | None:
    """The user's live claim, if any (in `project` when given)."""
    claims = ReviewClaim.objects.filter(
        user=user, finished_at__isnull=True, released_at__isnull=True,
        expires_at__gt=timezone.now(),
    ).select_related("trace")  # fmt: skip
    if project is not None:
        claims = claims.filter(project=project)
    return claims.order_by("-pk").first()


# ---------------------------------------------------------------------------- dashboard: audit


def audit_list(
    *,
    project: Project,
    action: str | None = None,
    object_type: str | None = None,
    actor: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    cursor: str | None = None,
    limit: int = 50,
) -> Page[AuditEvent]:
    events = AuditEvent.objects.filter(project=project).select_related(
        "actor_user", "actor_api_key"
    )
    if action:
        events = events.filter(action__startswith=action)
    if object_type:
        events = events.filter(object_type=object_type)
    if actor:
        events = events.filter(actor_user__username=actor)
    if since:
        events = events.filter(created_at__gte=since)
    if until:
        events = events.filter(created_at__lt=until)
    return paginate_by_id(events, cursor=cursor, limit=limit)


# ---------------------------------------------------------------------------- dashboard: settings


def member_list(*, project: Project) -> list[Membership]:
    return list(
        Membership.objects.filter(project=project).select_related("user").order_by("user__username")
    )


def api_key_list(*, project: Project) -> list[ApiKey]:
    return list(
        ApiKey.objects.filter(project=project)
        .select_related("created_by")
        .order_by("revoked_at", "-pk")
    )


# ---------------------------------------------------------------------------- dashboard: compare


def _signature(step: Step) -> str:
    return f"{step.kind}:{step.tool}"


# A text longer than this shows a preview, and the whole (with its diff) one click away.
COMPARE_PREVIEW_CHARS = 300
# Word diffs beyond this many tokens a side are skipped (difflib is quadratic at worst): the
# texts are then shown whole, the row still marked as differing.
WORD_DIFF_MAX_TOKENS = 4000
_TOKENS_RE = re.compile(r"\s+|\w+|[^\w\s]")


@dataclass(frozen=True)
class CompareText:
    """One field of one step in the comparison: its parts (kind: same / del / ins), and a
    preview when it is long."""

    parts: list[tuple[str, str]]
    preview: str
    length: int

    @property
    def differs(self) -> bool:
        return any(kind != "same" for kind, _ in self.parts)


def word_diff(one: str, two: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Two texts as parts: what both share ("same"), what only the first has ("del"), what only
    the second has ("ins"). Tokens are words, runs of spaces and single punctuation marks."""
    left, right = _TOKENS_RE.findall(one), _TOKENS_RE.findall(two)
    if one == two or max(len(left), len(right)) > WORD_DIFF_MAX_TOKENS:
        return [("same", one)], [("same" if one == two else "ins", two)]
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    first: list[tuple[str, str]] = []
    second: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            first.append(("same", "".join(left[i1:i2])))
            second.append(("same", "".join(right[j1:j2])))
            continue
        if i2 > i1:
            first.append(("del", "".join(left[i1:i2])))
        if j2 > j1:
            second.append(("ins", "".join(right[j1:j2])))
    return _joined(first), _joined(second)


def _joined(parts: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Neighbouring parts of one kind as one; a lone run of spaces between two changes joins
    them, so "a b c" replaced by "x y z" reads as one change, not three."""
    out: list[tuple[str, str]] = []
    for kind, text in parts:
        if out and (
            out[-1][0] == kind or (kind == "same" and not text.strip() and out[-1][0] != "same")
        ):
            out[-1] = (out[-1][0], out[-1][1] + text)
        else:
            out.append((kind, text))
    return out


def _preview(text: str, limit: int = COMPARE_PREVIEW_CHARS) -> str:
    if len(text) <= limit:
        return ""
    cut = text[:limit]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + "…"


def _compare_texts(one: Step | None, two: Step | None) -> dict[str, dict[str, CompareText]]:
    """The arguments, content and observation of an aligned pair, word-diffed when both exist."""
    sides: dict[str, dict[str, CompareText]] = {"left": {}, "right": {}}
    for name in ("arguments_json", "content", "observation"):
        a = reveal(getattr(one, name, "") or "") if one is not None else ""
        b = reveal(getattr(two, name, "") or "") if two is not None else ""
        if one is not None and two is not None:
            left, right = word_diff(a, b) if a and b else ([("del", a)], [("ins", b)])
        else:
            left, right = [("same", a)], [("same", b)]
        for side, text, parts in (("left", a, left), ("right", b, right)):
            if text:
                sides[side][name] = CompareText(
                    parts=parts, preview=_preview(text), length=len(text)
                )
    return sides


def steps_aligned(a: Trace, b: Trace) -> list[dict[str, Any]]:
    """The steps of two traces side by side, aligned on (kind, tool) like a diff of two files;
    the texts of an aligned pair are word-diffed."""
    left, right = list(a.steps.all()), list(b.steps.all())
    matcher = difflib.SequenceMatcher(
        None, [_signature(s) for s in left], [_signature(s) for s in right], autojunk=False
    )
    rows: list[dict[str, Any]] = []
    for _, i1, i2, j1, j2 in matcher.get_opcodes():
        for offset in range(max(i2 - i1, j2 - j1)):
            one = left[i1 + offset] if i1 + offset < i2 else None
            two = right[j1 + offset] if j1 + offset < j2 else None
            same_action = one is not None and two is not None and _signature(one) == _signature(two)
            texts = _compare_texts(one, two)
            rows.append({
                "left": one,
                "right": two,
                "left_texts": texts["left"],
                "right_texts": texts["right"],
                "same_action": same_action,
                "differs": not same_action or (
                    one.arguments != two.arguments  # type: ignore[union-attr]
                    or one.is_error != two.is_error  # type: ignore[union-attr]
                    or one.label != two.label  # type: ignore[union-attr]
                    or any(t.differs for t in texts["left"].values())
                    or any(t.differs for t in texts["right"].values())
                ),
            })  # fmt: skip
    return rows


_RUN_SUFFIX_RE = re.compile(r"[-_.:/#\s]*(?:run|attempt|try|retry|take)?[-_.:#]?\d+$", re.I)
OTHER_RUNS_SHOWN = 20


def external_id_stem(external_id: str) -> str:
    """The run id without its last number ("deploy-web-attempt-3" → "deploy-web"): runs of one
    task often share it. Empty when there is no number to drop or too little is left."""
    stem = _RUN_SUFFIX_RE.sub("", external_id)
    return stem if stem != external_id and len(stem) >= 4 else ""


def trace_other_runs(*, trace: Trace, limit: int = OTHER_RUNS_SHOWN) -> list[Trace]:
    """Other trajectories of the same task in the trace's project: the same task text, or a run
    id of the same stem. A different outcome first (where they parted is the interesting part),
    then newest. Each carries `match`: why it is suggested."""
    project_traces = Trace.objects.filter(project_id=trace.project_id).exclude(pk=trace.pk)
    found: dict[int, Trace] = {}
    query = task_search_query(trace.task)
    if query is not None:  # the GIN index on the task narrows, the equality decides
        same_task = project_traces.filter(task_search=query, task=trace.task)
        for other in same_task.only(*LIST_COLUMNS).order_by("-pk")[: limit * 2]:
            other.match = "same task"  # type: ignore[attr-defined]
            found[other.pk] = other
    stem = external_id_stem(trace.external_id)
    if stem:
        similar = project_traces.filter(external_id__startswith=stem).exclude(pk__in=list(found))
        for other in similar.only(*LIST_COLUMNS).order_by("-pk")[: limit * 5]:
            if external_id_stem(other.external_id) == stem:
                other.match = "run id like this one"  # type: ignore[attr-defined]
                found[other.pk] = other
    ranked = sorted(found.values(), key=lambda t: (t.outcome == trace.outcome, -t.pk))
    return ranked[:limit]


# ---------------------------------------------------------------------------- dashboard: stats

AGREEMENT_SAMPLE = 50_000


def _review_label(value: Any) -> str:
    if isinstance(value, dict):
        value = value.get("label")
    return value if isinstance(value, str) and value in Step.Label.values else ""


def machine_labels_for(trace_ids: list[int]) -> dict[tuple[int, int], str]:
    """What the reviewer said per (trace, step index), from the Review records (kept after
    humans relabel); a local review's label refines the full review's for its window."""
    machine: dict[tuple[int, int], str] = {}
    reviews = (
        Review.objects.filter(trace_id__in=trace_ids)
        .order_by("trace_id", "kind", "pk")  # "full" sorts before "local"
        .values_list("trace_id", "labels")
    )
    for trace_id, review_labels in reviews.iterator():
        for index, value in (review_labels or {}).items():
            label = _review_label(value)
            if label and str(index).isdigit():
                machine[(trace_id, int(index))] = label
    return machine


def cohen_kappa(pairs: list[tuple[str, str]], categories: list[str]) -> float | None:
    n = len(pairs)
    if not n:
        return None
    observed = sum(1 for x, y in pairs if x == y) / n
    expected = sum(
        (sum(1 for x, _ in pairs if x == c) / n) * (sum(1 for _, y in pairs if y == c) / n)
        for c in categories
    )
    if expected >= 1:
        return None  # one category only (e.g. a label nobody used): agreement is undefined
    return round((observed - expected) / (1 - expected), 3)


def label_agreement(*, project: Project) -> dict[str, Any]:
    """Machine vs human on the steps a person judged: per label counts and Cohen's kappa.

    Labels accepted as is ("Accept all", "Finish & next") are left out: nobody looked at those
    steps one by one, so counting them would inflate agreement with the machine.
    """
    judged = Step.objects.filter(trace__project=project, label_source=Step.LabelSource.HUMAN)
    accepted = judged.filter(is_accepted_as_is=True).exclude(label="").count()
    human = list(
        judged.filter(is_accepted_as_is=False)
        .exclude(label="")
        .order_by("-pk")
        .values_list("trace_id", "index", "label")[:AGREEMENT_SAMPLE]
    )
    machine = machine_labels_for(sorted({t for t, _, _ in human}))
    pairs = [(machine[(t, i)], label) for t, i, label in human if (t, i) in machine]
    rows = []
    for label in Step.Label.values:
        binary = [(m == label, h == label) for m, h in pairs]
        rows.append({
            "label": label,
            "both": sum(1 for m, h in binary if m and h),
            "machine_only": sum(1 for m, h in binary if m and not h),
            "human_only": sum(1 for m, h in binary if h and not m),
            "kappa": cohen_kappa([(str(m), str(h)) for m, h in binary], ["True", "False"]),
        })  # fmt: skip
    return {
        "pairs": len(pairs),
        "accepted_as_is": accepted,
        "rows": rows,
        "kappa": cohen_kappa(pairs, list(Step.Label.values)),
        "matrix": [
            [sum(1 for m, h in pairs if m == row and h == col) for col in Step.Label.values]
            for row in Step.Label.values
        ],
    }


def project_stats(*, project: Project, days: int = 30) -> dict[str, Any]:
    by_source: dict[str, dict[str, int]] = {}
    distribution = (
        Step.objects.filter(trace__project=project)
        .exclude(label="")
        .values_list("label_source", "label")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for source, label, n in distribution:
        by_source.setdefault(source, {})[label] = n
    statuses = dict(
        Trace.objects.filter(project=project)
        .values_list("review_status")
        .annotate(n=Count("pk"))
        .order_by()
    )
    since = timezone.now() - timedelta(days=days)
    per_day = (
        Trace.objects.filter(project=project, created_at__gte=since)
        .annotate(day=TruncDate("created_at"))
        .values_list("day")
        .annotate(n=Count("pk"))
        .order_by("day")
    )
    return {
        "labels": list(Step.Label.values),
        "sources": list(Step.LabelSource.values),
        "by_source": by_source,
        "statuses": [(s, statuses.get(s, 0)) for s in Trace.ReviewStatus.values],
        "per_day": [(day.isoformat(), n) for day, n in per_day],
        "agreement": label_agreement(project=project),
        "days": days,
    }
