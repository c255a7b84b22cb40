"""The review life cycle of one trace: begin (decide), apply (store), fail, retry.

The reviewer itself runs between `review_begin` and `review_apply`, outside any transaction, so
a slow LLM never holds a row lock. `review_apply` must run inside the caller's transaction
together with the distillation of experiences: labels, reviews and experiences land together;
`review_tools_observe` closes that transaction.
"""

from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from accounts.models import Project
from core.errors import Conflict, NotFound
from traces.models import Review, Step, Trace
from traces.review.compression import compress, estimate_tokens
from traces.review.reviewers import get_reviewer, offline_reviewer, reviewer_name
from traces.review.triggers import (
    SHORT,
    full_review_reason,
    local_windows,
    short_review_reason,
    skip_reason,
)
from traces.review.types import (
    ReviewOutcome,
    ReviewRequest,
    StepJudgement,
    StepView,
    TraceView,
    Window,
)
from traces.review.usage import tool_usage
from traces.services.review_queue import review_enqueue
from traces.services.tool_profiles import effects_of, project_tool_effects, tool_profiles_observe

ACTIVE = (Trace.ReviewStatus.PENDING, Trace.ReviewStatus.QUEUED, Trace.ReviewStatus.REVIEWING)


@dataclass(frozen=True)
class ReviewPlan:
    trace_id: int
    requests: list[ReviewRequest]
    reason: str  # why these reviews run, shown on the trace
    project_id: int = 0


def trace_view(trace: Trace) -> TraceView:
    known = project_tool_effects(project_id=trace.project_id)
    return TraceView(
        id=trace.pk,
        task=trace.task,
        task_type=trace.task_type,
        intent=trace.intent,
        agent=trace.agent,
        environment=list(trace.environment),
        outcome=trace.outcome,
        feedback=trace.feedback,
        final_answer=trace.final_answer,
        duration_ms=trace.duration_ms,
        tool_effects=effects_of(trace.tools, known),
        project_tools=known,
    )


def step_view(step: Step) -> StepView:
    return StepView(
        index=step.index,
        kind=step.kind,
        tool=step.tool,
        arguments=step.arguments,
        observation=step.observation,
        observation_raw=step.observation_raw,
        is_error=step.is_error,
        error_type=step.error_type,
        content=step.content,
        agent=step.agent,
        context=step.context,
    )


def review_request(trace: TraceView, steps: list[StepView], window: Window) -> ReviewRequest:
    in_window = [s for s in steps if window.start <= s.index <= window.end]
    prompt = compress(trace, in_window, window, total_steps=len(steps))
    return ReviewRequest(trace=trace, steps=in_window, window=window, prompt=prompt)


# The claim in one statement (a transaction of a locking read and an update was four round
# trips). A trace already `reviewing` is taken again: that is a redelivered task whose worker died.
_CLAIM = """
    UPDATE traces_trace SET review_status = %s, review_status_reason = '', review_status_at = %s,
        review_worker = %s
    WHERE id = %s AND completed_at IS NOT NULL AND review_status = ANY(%s)
    RETURNING *
"""


def review_begin(*, trace_id: int, worker: str = "") -> ReviewPlan | None:
    """Claim the trace for review and decide which reviews run; None when there is nothing to do.

    The trace is claimed (`reviewing`) before its steps are read: one that turns out not to be
    worth a review is then marked skipped (a worker dying in between leaves it `reviewing`, taken
    back as any review of a dead worker is).
    """
    claimed = Trace.objects.raw(
        _CLAIM,
        [Trace.ReviewStatus.REVIEWING, timezone.now(), worker, trace_id, list(ACTIVE)],
    )
    trace = next(iter(claimed), None)
    if trace is None:
        return None
    steps = [step_view(s) for s in Step.objects.filter(trace_id=trace_id).order_by("index")]
    view = trace_view(trace)
    windows: list[Window] = []
    full_reason = full_review_reason(view, steps)
    short_reason = None if full_reason else short_review_reason(view, steps)
    if full_reason is not None:
        windows.append(Window("full", "size", steps[0].index, steps[-1].index))
    elif short_reason is not None:
        windows.append(Window("full", SHORT, steps[0].index, steps[-1].index))
    windows.extend(local_windows(steps))
    if not windows:
        Trace.objects.filter(pk=trace_id, review_status=Trace.ReviewStatus.REVIEWING).update(
            review_status=Trace.ReviewStatus.SKIPPED,
            review_status_reason=skip_reason(view, steps),
            review_status_at=timezone.now(),
        )
        return None
    locals_ = [w for w in windows if w.kind == "local"]
    parts = [f"full review ({full_reason})"] if full_reason else []
    if locals_:
        parts.append(
            f"{len(locals_)} local review(s): "
            + ", ".join(w.trigger.replace("_", " ") for w in locals_)
        )
    reason = f"{'; '.join(parts)} by the {reviewer_name()} reviewer" if parts else ""
    if short_reason:
        short = f"short review ({short_reason.removeprefix('short: ')}) by the offline reviewer"
        reason = f"{short}; {reason}" if reason else short
    return ReviewPlan(
        trace_id=trace_id,
        requests=[review_request(view, steps, w) for w in windows],
        reason=reason,
        project_id=trace.project_id,
    )


def review_run(plan: ReviewPlan) -> list[ReviewOutcome]:
    reviewer = get_reviewer()
    return [
        (offline_reviewer() if request.window.trigger == SHORT else reviewer).review(request)
        for request in plan.requests
    ]


def _labels_to_apply(
    outcomes: list[ReviewOutcome],
) -> dict[int, tuple[ReviewOutcome, StepJudgement]]:
    # The full review labels every step; local reviews label their window only where no full
    # review ran (their own labels stay on their Review record either way).
    chosen: dict[int, tuple[ReviewOutcome, StepJudgement]] = {}
    full = [o for o in outcomes if o.request.window.kind == "full"]
    for outcome in full or outcomes:
        for judgement in outcome.template.labels:
            chosen.setdefault(judgement.index, (outcome, judgement))
    return chosen


def review_apply(*, plan: ReviewPlan, outcomes: list[ReviewOutcome]) -> list[Review]:
    """Store reviews and machine labels; call inside the caller's transaction.

    Human labels are never overwritten. Returns the new Review rows ([] if another worker
    already finished this trace).
    """
    trace = Trace.objects.select_for_update().get(pk=plan.trace_id)
    if trace.review_status != Trace.ReviewStatus.REVIEWING:
        return []
    reviews = [
        Review(
            trace=trace,
            kind=o.request.window.kind,
            trigger=o.request.window.trigger,
            window_start=o.request.window.start,
            window_end=o.request.window.end,
            reviewer=o.reviewer,
            model=o.model,
            prompt_version=o.prompt_version,
            prompt_chars=len(o.request.prompt),
            prompt_tokens=o.prompt_tokens or estimate_tokens(o.request.prompt),
            completion_tokens=o.completion_tokens,
            latency_ms=o.latency_ms,
            goal=o.template.goal,
            execution_path=o.template.execution_path,
            effective_steps=o.template.effective_steps,
            ineffective_steps=o.template.ineffective_steps,
            key_decisions=o.template.key_decisions,
            improvements=o.template.improvements,
            experience=o.template.experience,
            is_reference_worthy=o.template.worth_reference,
            labels={
                str(j.index): {"label": j.label, "reason": j.reason, "confidence": j.confidence}
                for j in o.template.labels
            },
        )
        for o in outcomes
    ]
    # A Review already stored for the same window and prompt version violates the unique
    # constraint: the whole transaction rolls back and the redelivered task changes nothing.
    Review.objects.bulk_create(reviews)

    now = timezone.now()
    _labels_write(trace.pk, _labels_to_apply(outcomes), now)
    trace.review_status = Trace.ReviewStatus.REVIEWED
    trace.review_status_reason = plan.reason
    trace.review_status_at = now
    trace.save(update_fields=["review_status", "review_status_reason", "review_status_at"])
    return reviews


def review_tools_observe(*, plan: ReviewPlan, outcomes: list[ReviewOutcome]) -> None:
    """What the run showed of its tools, for later reviews: the last write of the transaction
    `review_apply` opened. Every review of the project updates the same tool rows and holds
    their locks until it commits; written first, they made the other worker wait for the
    whole distillation."""
    full = next((o for o in outcomes if o.request.window.kind == "full"), None)
    if full is not None:
        tool_profiles_observe(project_id=plan.project_id, usage=tool_usage(full.request))


# One statement for a review's labels (human ones kept): `bulk_update` built a CASE of every
# row for each of seven columns and loaded the whole steps first, a third of a review's time.
_LABELS_WRITE = """
    UPDATE traces_step AS s SET label = u.label, label_source = u.source, label_reason = u.reason,
        label_confidence = u.confidence, labelled_by_id = NULL, labelled_at = %s,
        label_version = s.label_version + 1
    FROM unnest(%s::int[], %s::varchar[], %s::varchar[], %s::text[], %s::float8[])
        AS u(index, label, source, reason, confidence)
    WHERE s.trace_id = %s AND s.index = u.index AND s.label_source <> %s
"""


def _labels_write(
    trace_id: int, chosen: dict[int, tuple[ReviewOutcome, StepJudgement]], now: datetime
) -> None:
    indexes = sorted(chosen)
    judgements = [chosen[i][1] for i in indexes]
    with connection.cursor() as cursor:
        cursor.execute(
            _LABELS_WRITE,
            [
                now,
                indexes,
                [j.label for j in judgements],
                [chosen[i][0].reviewer for i in indexes],
                [j.reason for j in judgements],
                [j.confidence for j in judgements],
                trace_id,
                Step.LabelSource.HUMAN,
            ],
        )


def review_applied_before(*, trace_id: int) -> bool:
    """After a review's writes clashed with stored ones: whether they were another delivery's
    review of this trace (its reviews are stored; a delivery left reviewing is settled as
    reviewed), or not (the clash is this review's own: the caller fails it visibly)."""
    if not Review.objects.filter(trace_id=trace_id).exists():
        return False
    Trace.objects.filter(pk=trace_id, review_status=Trace.ReviewStatus.REVIEWING).update(
        review_status=Trace.ReviewStatus.REVIEWED, review_status_at=timezone.now()
    )
    return True


def review_fail(*, trace_id: int, reason: str) -> None:
    """Visible failure: the trace says why, and can be retried."""
    Trace.objects.filter(pk=trace_id, review_status__in=ACTIVE).update(
        review_status=Trace.ReviewStatus.FAILED,
        review_status_reason=reason[:2000],
        review_status_at=timezone.now(),
    )


def review_retry(*, project: Project, trace_id: int) -> Trace:
    """Send a failed (or skipped) trace back to review."""
    with transaction.atomic():
        trace = Trace.objects.select_for_update().filter(project=project, pk=trace_id).first()
        if trace is None:
            raise NotFound(f"trace {trace_id} not found")
        if not trace.is_complete:
            raise Conflict("the trace is not complete yet")
        if trace.review_status in ACTIVE:
            return trace
        if trace.review_status == Trace.ReviewStatus.REVIEWED:
            raise Conflict("the trace is already reviewed; relabel its steps instead")
        trace.review_status = Trace.ReviewStatus.PENDING
        trace.review_status_reason = "retry requested"
        trace.review_status_at = timezone.now()
        trace.save(update_fields=["review_status", "review_status_reason", "review_status_at"])
        transaction.on_commit(lambda: review_enqueue(trace_ids=[trace.pk]))
    return trace
