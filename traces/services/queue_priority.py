"""Recomputing the review-queue priority the step trigger keeps on each trajectory (traces
migration 0011), for when HINDSIGHT_LOW_CONFIDENCE changed: in batches of trajectories, each its
own short transaction, so a large project is not locked for the whole run."""

from collections.abc import Callable

from django.db import connection, transaction

from traces.models import Trace

REPRIORITISE = """
UPDATE traces_trace t SET queue_priority = p.priority
FROM (SELECT id, traces_queue_priority(id) AS priority FROM unnest(%s::bigint[]) AS ids(id)) p
WHERE t.id = p.id AND t.queue_priority IS DISTINCT FROM p.priority
"""


def queue_reprioritise(
    *, batch: int = 5000, progress: Callable[[int, int], None] | None = None
) -> int:
    """Recompute every trajectory's priority with the current threshold; returns how many
    changed. `progress(done, total)` is called after each batch."""
    total = Trace.objects.count()
    changed = done = after = 0
    while ids := list(
        Trace.objects.filter(pk__gt=after).order_by("pk").values_list("pk", flat=True)[:batch]
    ):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(REPRIORITISE, [ids])
            changed += cursor.rowcount
        done, after = done + len(ids), ids[-1]
        if progress:
            progress(done, total)
    return changed
