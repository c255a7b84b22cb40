"""The review queue: what needs a person first and why, its pages and filters, progress."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.postgres.aggregates import ArrayAgg
from django.db.models import Count, Exists, F, Min, OuterRef, Q, QuerySet
from django.utils import timezone

from accounts.models import Project
from core.pagination import RankedPage, capped_count, paginate_by_rank
from traces.known_values import trace_known_values
from traces.models import ReviewClaim, Step, Trace
from traces.review.types import went_wrong
from traces.selectors.trace_list import LIST_COLUMNS


class QueueReason:
    """Why a trajectory waits where it does in the queue, in the order a person's judgement is
    worth most. The priority the step trigger keeps (traces migration 0012) is
    `reason * RANK_SPAN` plus the lowest confidence of the unchecked machine labels in
    thousandths (999 when none has one): within a reason, the least confident come first."""

    FAILURE = 0  # a run that went wrong: its lesson and warnings rest on the steps it blames
    DISAGREEMENT = 1  # a person changed a label the machine set: the others are doubtful too
    LOW_CONFIDENCE = 2  # the reviewer itself was unsure of some steps
    UNCHECKED = 3  # machine labels nobody has looked at yet
    RANK_SPAN = 1000

    # The `why` filter of /queue/ names them by these slugs.
    SLUGS = {
        FAILURE: "failure", DISAGREEMENT: "disagreement", LOW_CONFIDENCE: "low-confidence",
        UNCHECKED: "unchecked",
    }  # fmt: skip
    TITLES = {
        FAILURE: "Failed run",
        DISAGREEMENT: "Disagreement",
        LOW_CONFIDENCE: "Low confidence",
        UNCHECKED: "Never reviewed",
    }

    @classmethod
    def from_slug(cls, slug: str) -> int | None:
        return next((value for value, name in cls.SLUGS.items() if name == slug), None)

    @classmethod
    def of(cls, priority: int) -> int:
        return priority // cls.RANK_SPAN

    @classmethod
    def for_counts(cls, *, outcome: str, changed: int, lowest: float | None) -> int:
        """The reason the trigger's SQL gives, from the same facts (what the row says)."""
        if went_wrong(outcome):
            return cls.FAILURE
        if changed:
            return cls.DISAGREEMENT
        if lowest is not None and lowest < settings.HINDSIGHT_LOW_CONFIDENCE:
            return cls.LOW_CONFIDENCE
        return cls.UNCHECKED


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


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


BLAMED_SHOWN = 4  # the blamed steps a row names; more are counted


def _blamed_text(parts: Mapping[str, Any]) -> str:
    blamed = list(zip(parts.get("blamed") or [], parts.get("blamed_labels") or [], strict=False))
    if not blamed:
        return "the machine blames no step"
    named = ", ".join(f"{index} ({label})" for index, label in blamed[:BLAMED_SHOWN])
    more = f" and {len(blamed) - BLAMED_SHOWN} more" if len(blamed) > BLAMED_SHOWN else ""
    return f"the machine blames step{'s' if len(blamed) != 1 else ''} {named}{more}"


def _queue_why(trace: Trace, reason: int, parts: Mapping[str, Any]) -> str:
    """The sentence behind a row's place, from the current counts of its steps."""
    machine = parts.get("machine", 0)
    lowest = parts.get("lowest")
    unchecked = _plural(machine, "machine label") + " unchecked"
    least_sure = f", the least sure {_percent(lowest)}" if lowest is not None else ""
    if reason == QueueReason.FAILURE:
        return f"{_blamed_text(parts)}; {unchecked}{least_sure}"
    if reason == QueueReason.DISAGREEMENT:
        changed = parts.get("changed", 0)
        return f"a person changed {_plural(changed, 'label')}; {unchecked}{least_sure}"
    if reason == QueueReason.LOW_CONFIDENCE:
        threshold = _percent(settings.HINDSIGHT_LOW_CONFIDENCE)
        return (
            f"{parts.get('low', 0)} of {machine} labels under {threshold} confidence"
            f" (lowest {_percent(lowest or 0)})"
        )
    return f"no person has looked at it: {unchecked}{least_sure}"


def _decorate_queue_rows(traces: list[Trace]) -> None:
    """Why, and who holds it, for a page of the queue: two queries whatever the page size.

    The title and sentence come from the steps as they are now, by the trigger's own rules, so
    a row never says what is not so (a priority left stale by a changed threshold until
    `queue_reprioritise` runs only sorts the row late)."""
    ids = [t.pk for t in traces]
    machine = Q(label_source__in=Step.MACHINE_LABEL_SOURCES) & ~Q(label="")
    blamed = machine & Q(label__in=[Step.Label.FAILED, Step.Label.MISLEADING])
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
            first_low=Min("index", filter=machine & Q(label_confidence__lt=low)),
            first_error=Min("index", filter=Q(is_error=True)),
            first_machine=Min("index", filter=machine),
            blamed=ArrayAgg("index", filter=blamed, order_by="index", default=[]),
            blamed_labels=ArrayAgg("label", filter=blamed, order_by="index", default=[]),
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
        parts: Mapping[str, Any] = counts.get(trace.pk, {})
        reason = QueueReason.for_counts(
            outcome=trace.outcome, changed=parts.get("changed", 0), lowest=parts.get("lowest")
        )
        trace.why_slug = QueueReason.SLUGS[reason]  # type: ignore[attr-defined]
        partial = reason == QueueReason.FAILURE and trace.outcome == Trace.Outcome.PARTIAL
        trace.why_title = "Partly failed run" if partial else QueueReason.TITLES[reason]  # type: ignore[attr-defined]
        trace.why = _queue_why(trace, reason, parts)  # type: ignore[attr-defined]
        trace.look_at = _look_at(reason, parts)  # type: ignore[attr-defined]
        trace.claim = claims.get(trace.pk)  # type: ignore[attr-defined]


def _look_at(reason: int, parts: Mapping[str, Any]) -> int | None:
    """The step the reason points at, where the trace page opens: the first step the machine
    blames in a failed run (else its first error), the first label of low confidence, the first
    machine label left after a person's change; None (the top) for a run nobody looked at."""
    if reason == QueueReason.FAILURE:
        blamed = parts.get("blamed") or []
        return blamed[0] if blamed else parts.get("first_error")
    if reason == QueueReason.LOW_CONFIDENCE:
        return parts.get("first_low")
    if reason == QueueReason.DISAGREEMENT:
        return parts.get("first_machine")
    return None


def queue_reason_of(trace: Trace) -> Trace:
    """One trajectory with its queue row's why_title, why, why_slug and look_at (two queries):
    what the trace page says to the reviewer the queue sent there."""
    _decorate_queue_rows([trace])
    return trace


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
    if filters.why is not None:  # a range of the kept priority: one range of its index
        span = QueueReason.RANK_SPAN
        matching = matching.filter(
            queue_priority__gte=filters.why * span, queue_priority__lt=(filters.why + 1) * span
        )
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


def claim_live_on(*, trace: Trace) -> ReviewClaim | None:
    """The live claim on a trajectory, whoever holds it (one at most: a partial unique
    constraint)."""
    return (
        ReviewClaim.objects.filter(
            trace=trace,
            finished_at__isnull=True,
            released_at__isnull=True,
            expires_at__gt=timezone.now(),
        )  # fmt: skip
        .select_related("user")
        .first()
    )


def claim_of_user(*, claim_id: int, user: User, projects: list[Project]) -> ReviewClaim | None:
    """One of the user's own claims (finished or not), in one of `projects`."""
    return (
        ReviewClaim.objects.filter(pk=claim_id, user=user, project__in=projects)
        .select_related("trace", "project")
        .first()
    )
