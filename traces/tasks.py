"""Celery tasks of the trajectory app: thin shells around one service call each."""

from celery import shared_task

from traces.services import retention, review_queue, tallies


@shared_task(name="traces.enqueue_pending_traces", acks_late=True, ignore_result=True)
def enqueue_pending_traces() -> int:
    """Beat: publish complete traces whose hand-over to review failed or was lost."""
    return (
        review_queue.trace_enqueue_stale()
        + review_queue.trace_enqueue_lost()
        + review_queue.trace_rederive_stale()
        + review_queue.trace_reclaim_from_silent_workers()
    )


@shared_task(name="traces.drop_old_raw_observations", acks_late=True, ignore_result=True)
def drop_old_raw_observations() -> dict:
    """Beat, daily: raw observations past HINDSIGHT_OBSERVATION_RAW_RETENTION_DAYS."""
    return retention.observations_raw_drop_old()


@shared_task(name="traces.compact_tallies", ignore_result=True)
def compact_tallies() -> dict:
    """Beat, every minute: fold the /stats/ tally deltas (traces/services/tallies.py)."""
    return tallies.tallies_compact()
