"""Celery tasks of the trajectory app: thin shells around one service call each."""

from celery import shared_task

from traces.services import review_queue


@shared_task(name="traces.enqueue_pending_traces", acks_late=True, ignore_result=True)
def enqueue_pending_traces() -> int:
    """Beat: publish complete traces whose hand-over to review failed or was lost."""
    return review_queue.trace_enqueue_stale()


@shared_task(
    name="traces.review_trace",
    bind=True,
    acks_late=True,
    ignore_result=True,
    autoretry_for=(ConnectionError,),
    retry_backoff=True,
    max_retries=5,
)
def review_trace(self, trace_id: int) -> str:
    """Review one complete trace (idempotent: a trace already past `queued` is left alone)."""
    return review_queue.trace_review(trace_id=trace_id)
