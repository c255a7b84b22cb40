"""Handing complete trajectories to the review worker, and recovering when that fails.

A trace is `pending` until its review task has been published to the broker, then `queued`.
If Redis is down the publish fails, the trace simply stays `pending` and the beat sweep
(`trace_enqueue_stale`) publishes it later: ingest never fails because of the broker.
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
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
    """Publish a review task per trace; returns how many were published."""
    from hindsight_site.celery import app

    published: list[int] = []
    try:
        if len(trace_ids) > 1:
            app.send_task(REVIEW_MANY_TASK, args=(list(trace_ids),), retry=False)
            published.extend(trace_ids)
        else:
            with app.producer_or_acquire() as producer:
                for trace_id in trace_ids:
                    app.send_task(REVIEW_TASK, args=(trace_id,), producer=producer, retry=False)
                    published.append(trace_id)
    except Exception:  # noqa: BLE001 - broker down: keep them pending, beat retries
        logger.warning(
            "broker unreachable: %d trace(s) stay pending until the next sweep",
            len(trace_ids) - len(published),
            exc_info=True,
        )
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


def trace_reclaim_orphans(*, worker: str) -> int:
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
    logger.warning("worker %s restarted: %d trace(s) it was reviewing go back to review",
                   worker, len(ids))  # fmt: skip
    Trace.objects.filter(pk__in=ids, review_status=Trace.ReviewStatus.REVIEWING).update(
        review_status=Trace.ReviewStatus.PENDING, review_status_at=timezone.now()
    )
    return review_enqueue(trace_ids=ids)


def trace_rederive_stale(*, limit: int = 500) -> int:
    """Re-derive traces relabelled more than a sweep ago whose re-derivation never ran."""
    from hindsight_site.celery import app

    before = timezone.now() - timedelta(seconds=settings.HINDSIGHT_REENQUEUE_AFTER_SECONDS)
    ids = list(
        Trace.objects.filter(labels_changed_at__lt=before)
        .filter(
            Q(experiences_derived_at__isnull=True)
            | Q(experiences_derived_at__lt=F("labels_changed_at"))
        )
        .values_list("pk", flat=True)[:limit]
    )
    sent = 0
    for trace_id in ids:
        try:
            app.send_task(REDERIVE_TASK, args=(trace_id,), retry=False)
            sent += 1
        except Exception:  # noqa: BLE001 - broker down: the next sweep tries again
            logger.warning("broker unreachable: re-derivation sweep stopped")
            break
    return sent


def trace_rederive_enqueue(*, trace_id: int) -> None:
    """After a human relabel commits: re-derive the trace's experiences from the new labels.

    Call inside the relabel transaction; the task is published only if it commits. If the broker
    is down the relabel still stands and `trace_rederive_stale` (beat) re-derives later.
    """

    def publish() -> None:
        from hindsight_site.celery import app

        try:
            app.send_task(REDERIVE_TASK, args=(trace_id,), retry=False)
        except Exception:  # noqa: BLE001 - broker down: logged; labels are already saved
            logger.warning("broker unreachable: re-derivation of trace %s not queued", trace_id)

    transaction.on_commit(publish)
