"""Handing complete trajectories to the review worker, and recovering when that fails.

A trace is `pending` until its review task has been published to the broker, then `queued`.
If Redis is down the publish fails, the trace simply stays `pending` and the beat sweep
(`trace_enqueue_stale`) publishes it later: ingest never fails because of the broker.
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from traces.models import Trace

logger = logging.getLogger(__name__)

# Tasks are sent by name: the pipeline that reviews and distils is wired in hindsight_site,
# so this app never imports the experiences app.
REVIEW_TASK = "hindsight.review_trace"
# A batch is handed over as one message; the worker fans it out into one REVIEW_TASK per trace
# (publishing is ~1-2 ms of web CPU per message, which adds up at hundreds of traces a second).
REVIEW_MANY_TASK = "hindsight.review_traces"
REDERIVE_TASK = "hindsight.rederive_trace"
# Queued or reviewing for longer than this means the task was lost (e.g. Redis lost it).
STUCK_AFTER = timedelta(minutes=15)


def review_enqueue(*, trace_ids: list[int]) -> int:
    """Publish a review task per trace; returns how many were published (those not published
    stay pending: beat's sweep publishes them)."""
    from core.publish import tasks_publish

    published: list[int] = []
    if len(trace_ids) > 1:
        if tasks_publish(REVIEW_MANY_TASK, [(list(trace_ids),)]):
            published.extend(trace_ids)
    elif trace_ids:
        published = trace_ids[: tasks_publish(REVIEW_TASK, [(trace_ids[0],)])]
    if published:
        Trace.objects.filter(pk__in=published, review_status=Trace.ReviewStatus.PENDING).update(
            review_status=Trace.ReviewStatus.QUEUED, review_status_at=timezone.now()
        )
    return len(published)


def trace_enqueue_stale(*, limit: int = 1000) -> int:
    """Publish complete traces never handed over, or whose task was lost."""
    now = timezone.now()
    pending_before = now - timedelta(seconds=settings.HINDSIGHT_REENQUEUE_AFTER_SECONDS)
    stale = (
        Trace.objects.filter(completed_at__isnull=False)
        .filter(
            Q(review_status=Trace.ReviewStatus.PENDING, review_status_at__lt=pending_before)
            | Q(
                review_status__in=[Trace.ReviewStatus.QUEUED, Trace.ReviewStatus.REVIEWING],
                review_status_at__lt=now - STUCK_AFTER,
            )
        )
        .order_by("review_status_at")
        .values_list("pk", flat=True)[:limit]
    )
    ids = list(stale)
    if not ids:
        return 0
    # Stuck ones go back to pending first so review_enqueue marks them queued again.
    Trace.objects.filter(pk__in=ids).update(
        review_status=Trace.ReviewStatus.PENDING, review_status_at=now
    )
    return review_enqueue(trace_ids=ids)


# A queued trace whose review task the broker no longer holds (in no queue, taken by no worker)
# was lost: a delivery that failed and could not say so (the database was down, issue 26: 11
# traces sat queued 16 minutes), or a broker that lost it. Past this age the sweep sends it
# again, so with the 30 s sweep within a minute.
QUEUED_LOST_AFTER = timedelta(seconds=30)


def trace_enqueue_lost(*, limit: int = 1000) -> int:
    """Beat: send again the review of queued traces whose task the broker does not hold."""
    from core.publish import tasks_waiting

    ids = list(
        Trace.objects.filter(
            completed_at__isnull=False,
            review_status=Trace.ReviewStatus.QUEUED,
            review_status_at__lt=timezone.now() - QUEUED_LOST_AFTER,
        )
        .order_by("review_status_at")
        .values_list("pk", flat=True)[:limit]
    )
    if not ids:
        return 0
    waiting = tasks_waiting({REVIEW_TASK, REVIEW_MANY_TASK})
    if waiting is None:
        return 0  # no judgement possible: STUCK_AFTER is the backstop
    held: set[int] = set()
    for name, args in waiting:
        held.update(args[0] if name == REVIEW_MANY_TASK else args[:1])
    lost = [trace_id for trace_id in ids if trace_id not in held]
    if not lost:
        return 0
    logger.warning("%d queued trace(s) have no review task in the broker: sending again", len(lost))
    Trace.objects.filter(pk__in=lost, review_status=Trace.ReviewStatus.QUEUED).update(
        review_status=Trace.ReviewStatus.PENDING, review_status_at=timezone.now()
    )
    return review_enqueue(trace_ids=lost)


# A review held this long by a worker that does not answer a ping is taken back, so with the
# 30 s sweep it is back in review within a minute (the LLM call of a live worker can take
# minutes: only a silent worker loses its reviews).
ORPHANED_AFTER = timedelta(seconds=30)


def trace_reclaim_from_silent_workers(*, ping_timeout: float = 1.0) -> int:
    """Beat: traces `reviewing` for over ORPHANED_AFTER whose worker does not answer a ping
    (it died and did not come back: another host, scaled down) go back to review now, not at
    the broker's visibility timeout or STUCK_AFTER. Nothing happens if the ping itself fails."""
    from celery import current_app as app

    held = set(
        Trace.objects.filter(
            review_status=Trace.ReviewStatus.REVIEWING,
            review_status_at__lt=timezone.now() - ORPHANED_AFTER,
        )
        .exclude(review_worker="")
        .values_list("review_worker", flat=True)
        .distinct()
    )
    if not held:
        return 0
    try:
        alive = {name for reply in app.control.ping(timeout=ping_timeout) for name in reply}
    except Exception:  # noqa: BLE001 - broker down: no judgement possible, try next sweep
        logger.warning("could not ping the workers: reviews not reclaimed", exc_info=True)
        return 0
    return sum(
        trace_reclaim_orphans(worker=worker, why="does not answer")
        for worker in sorted(held - alive)
    )


def traces_back_to_pending(*, trace_ids: list[int]) -> None:
    """Queued traces whose review task was not sent after all: the next sweep publishes them."""
    Trace.objects.filter(pk__in=trace_ids, review_status=Trace.ReviewStatus.QUEUED).update(
        review_status=Trace.ReviewStatus.PENDING,
        review_status_at=timezone.now()
        - timedelta(seconds=settings.HINDSIGHT_REENQUEUE_AFTER_SECONDS),
    )


def trace_reclaim_orphans(*, worker: str, why: str = "restarted") -> int:
    """A worker starting: the traces its previous run left `reviewing` (it died mid-review:
    killed, out of memory) go back to review now, not when the broker redelivers the task
    (the visibility timeout) or the stuck sweep (STUCK_AFTER). The launcher restarts a dead
    worker under the same name. A redelivered task finding it reviewed does nothing."""
    if not worker:
        return 0
    ids = list(
        Trace.objects.filter(
            review_status=Trace.ReviewStatus.REVIEWING, review_worker=worker
        ).values_list("pk", flat=True)
    )
    if not ids:
        return 0
    logger.warning("worker %s %s: %d trace(s) it was reviewing go back to review",
                   worker, why, len(ids))  # fmt: skip
    Trace.objects.filter(pk__in=ids, review_status=Trace.ReviewStatus.REVIEWING).update(
        review_status=Trace.ReviewStatus.PENDING, review_status_at=timezone.now()
    )
    return review_enqueue(trace_ids=ids)


def trace_rederive_stale(*, limit: int = 500) -> int:
    """Re-derive traces relabelled more than a sweep ago whose re-derivation never ran."""
    from core.publish import tasks_publish

    before = timezone.now() - timedelta(seconds=settings.HINDSIGHT_REENQUEUE_AFTER_SECONDS)
    ids = list(
        Trace.objects.filter(labels_changed_at__lt=before)
        .filter(
            Q(experiences_derived_at__isnull=True)
            | Q(experiences_derived_at__lt=F("labels_changed_at"))
        )
        .values_list("pk", flat=True)[:limit]
    )
    return tasks_publish(REDERIVE_TASK, [(trace_id,) for trace_id in ids])


def trace_rederive_enqueue(*, trace_id: int) -> None:
    """After a human relabel commits: re-derive the trace's experiences from the new labels.

    Call inside the relabel transaction; the task is published only if it commits. If the broker
    is down the relabel still stands and `trace_rederive_stale` (beat) re-derives later.
    """
    from core.publish import tasks_publish_on_commit

    tasks_publish_on_commit(REDERIVE_TASK, [(trace_id,)])
