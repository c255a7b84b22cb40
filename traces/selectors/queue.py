"""The review queue: what needs a person first and why, its pages and filters, progress."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import Count, Exists, F, Min, OuterRef, Q, QuerySet
from django.utils import timezone

from core.pagination import RankedPage, paginate_by_rank
from traces.known_values import trace_known_values
from traces.models import (
    Project,
    ReviewClaim,
    Step,
    Trace,
)
from traces.selectors.trace_list import LIST_COLUMNS, capped_count


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
    the overview that shows who holds them); a lapsed claim holds nothing. The priority is kept
    on each trace by a trigger on its steps (traces migration 0011), so a page is a range of the
    `traces_trace_queue` index whatever the size of the project.
    """
    now = timezone.now()
    candidates = (
        Trace.objects.filter(
            project=project, completed_at__isnull=False, queue_priority__isnull=False
        )
        .annotate(priority=F("queue_priority"))
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
    machine = Q(label_source__in=Step.MACHINE_LABEL_SOURCES) & ~Q(label="")
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
    # The agents of the latest traces, as the list's filter suggests them (a bounded read: a
    # DISTINCT over the project's traces cost 48 ms at 100k of them), and the one filtered by.
    agents = trace_known_values(project=project).agents[:QUEUE_AGENTS_SHOWN]
    if filters.agent and filters.agent not in agents:
        agents = sorted([*agents, filters.agent])
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
