"""Reads of trajectories (lists with filters, one trace with its steps)."""

import difflib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.postgres.search import SearchQuery
from django.db.models import Case, Count, Exists, OuterRef, Prefetch, QuerySet, When
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
from traces.pagination import Page, paginate_by_id
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


# ---------------------------------------------------------------------------- dashboard: queue


class QueueReason:
    CORRECTED = 0  # a person already corrected a label here: machine and human disagreed
    HEURISTIC = 1  # labelled by the offline heuristic reviewer
    LOW_CONFIDENCE = 2
    UNCHECKED = 3  # machine labels never checked by a person

    TEXT = {
        CORRECTED: "a person corrected a label; the rest is unchecked",
        HEURISTIC: "heuristic labels",
        LOW_CONFIDENCE: "low-confidence labels",
        UNCHECKED: "never checked by a person",
    }


def queue_candidates(*, project: Project, user: User | None = None) -> QuerySet[Trace]:
    """Complete traces with machine labels no person has confirmed yet, most urgent first.

    Traces another reviewer holds with a live claim are left out; a lapsed claim holds nothing.
    """
    now = timezone.now()
    machine = Step.objects.filter(
        trace=OuterRef("pk"), label_source__in=MACHINE_LABEL_SOURCES
    ).exclude(label="")
    held = ReviewClaim.objects.filter(
        trace=OuterRef("pk"), finished_at__isnull=True, released_at__isnull=True,
        expires_at__gt=now,
    )  # fmt: skip
    if user is not None:
        held = held.exclude(user=user)
    low = settings.HINDSIGHT_LOW_CONFIDENCE
    return (
        Trace.objects.filter(project=project, completed_at__isnull=False)
        .filter(Exists(machine))
        .exclude(Exists(held))
        .annotate(
            priority=Case(
                When(_steps_with_source(Step.LabelSource.HUMAN), then=QueueReason.CORRECTED),
                When(_steps_with_source(Step.LabelSource.HEURISTIC), then=QueueReason.HEURISTIC),
                When(
                    Exists(machine.filter(label_confidence__lt=low)),
                    then=QueueReason.LOW_CONFIDENCE,
                ),
                default=QueueReason.UNCHECKED,
            )
        )
        .order_by("priority", "pk")
    )


def queue_overview(*, project: Project, user: User, limit: int = 20) -> dict[str, Any]:
    candidates = queue_candidates(project=project, user=user)
    rows = list(candidates.only(*LIST_COLUMNS)[:limit])
    for row in rows:
        row.reason = QueueReason.TEXT[row.priority]  # type: ignore[attr-defined]
    count, capped = capped_count(candidates.values("pk"))
    return {"items": rows, "count": count, "is_count_capped": capped}


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


def steps_aligned(a: Trace, b: Trace) -> list[dict[str, Any]]:
    """The steps of two traces side by side, aligned on (kind, tool) like a diff of two files."""
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
            rows.append({
                "left": one,
                "right": two,
                "same_action": same_action,
                "differs": not same_action or (
                    one.arguments != two.arguments  # type: ignore[union-attr]
                    or one.is_error != two.is_error  # type: ignore[union-attr]
                    or one.label != two.label  # type: ignore[union-attr]
                ),
            })  # fmt: skip
    return rows


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
