"""Celery tasks of the trajectory app: thin shells around one service call each."""

from celery import shared_task

from traces.services import review_queue


@shared_task(name="traces.enqueue_pending_traces", acks_late=True, ignore_result=True)
def enqueue_pending_traces() -> int:
    """Beat: publish complete traces whose hand-over to review failed or was lost."""
    return (
        review_queue.trace_enqueue_stale()
        + review_queue.trace_rederive_stale()
        + review_queue.trace_reclaim_from_silent_workers()
    )
