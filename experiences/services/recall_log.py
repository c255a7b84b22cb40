"""The recall log: what every recall returned, the agent's feedback on it, and its retention.

Feedback moves the returned experiences' votes and feeds the hit rate on /stats/. Logs older
than HINDSIGHT_RECALL_LOG_DAYS are deleted by beat (the stats look back 30 days).
"""

import json
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from accounts.models import ApiKey, Project
from core.errors import InvalidInput, NotFound
from experiences.models import Experience, RecallLog

# One statement, one round trip: the log row, and when the returned experiences were last
# recalled (their narrow ExperienceRecall rows, never the experience rows with the vector; at most
# once a minute each, so an agent asking at every step does not rewrite them; in id order, so
# two recalls of the same experiences never wait on each other in a cycle).
# The log is bookkeeping on the hot path: its commit does not wait for the WAL flush (a crash
# may lose the last few log rows, never an experience or a label); set_config(..., true) lasts
# until the end of the statement's own transaction.
RECALL_LOG_SQL = """
WITH no_flush_wait AS (SELECT set_config('synchronous_commit', 'off', true)),
logged AS (
    INSERT INTO experiences_recalllog
        (project_id, api_key_id, query, returned, helpful, unhelpful, latency_ms, created_at)
    SELECT %s, %s, %s::jsonb, %s::jsonb, '{}', '{}', %s, %s FROM no_flush_wait
    RETURNING id
),
touched AS (
    INSERT INTO experiences_experiencerecall AS r (experience_id, last_recalled_at)
    SELECT e.id, %s FROM experiences_experience e WHERE e.id = ANY(%s) ORDER BY e.id
    ON CONFLICT (experience_id) DO UPDATE SET last_recalled_at = EXCLUDED.last_recalled_at
    WHERE r.last_recalled_at < %s
)
SELECT id FROM logged
"""
LAST_RECALLED_RESOLUTION = timedelta(minutes=1)


def recall_log_write(
    *,
    project: Project,
    api_key: ApiKey | None,
    query: dict[str, Any],
    returned: list[tuple[int, float]],
    now: datetime,
    latency_ms: float,
) -> int:
    """Log a recall (`returned`: experience id and score, in rank order); returns the log's id."""
    with connection.cursor() as cursor:
        cursor.execute(
            RECALL_LOG_SQL,
            [
                project.pk,
                api_key.pk if api_key else None,
                json.dumps(query),
                json.dumps(
                    [
                        {"experience_id": pk, "score": score, "rank": rank}
                        for rank, (pk, score) in enumerate(returned)
                    ]
                ),
                latency_ms,
                now,
                now,
                [pk for pk, _ in returned],
                now - LAST_RECALLED_RESOLUTION,
            ],
        )
        row = cursor.fetchone()
    assert row is not None  # INSERT ... RETURNING always returns the new row
    return int(row[0])


def _vote_counts(helpful: list[int], unhelpful: list[int]) -> dict[int, tuple[int, int]]:
    counts = {i: (1, 0) for i in helpful}
    counts.update({i: (0, 1) for i in unhelpful})
    return counts


def recall_feedback(
    *, project: Project, recall_id: int, helpful: list[int], unhelpful: list[int]
) -> RecallLog:
    """Record which returned items helped. Sending feedback again replaces the earlier one:
    votes move by the difference."""
    with transaction.atomic():
        log = RecallLog.objects.select_for_update().filter(project=project, pk=recall_id).first()
        if log is None:
            raise NotFound(f"recall {recall_id} not found")
        returned = {item["experience_id"] for item in log.returned}
        foreign = sorted((set(helpful) | set(unhelpful)) - returned)
        if foreign:
            raise InvalidInput(f"experiences {foreign} were not returned by recall {recall_id}")
        if set(helpful) & set(unhelpful):
            raise InvalidInput("an experience cannot be both helpful and unhelpful")
        before, after = _vote_counts(log.helpful, log.unhelpful), _vote_counts(helpful, unhelpful)
        for experience_id in set(before) | set(after):
            up = after.get(experience_id, (0, 0))[0] - before.get(experience_id, (0, 0))[0]
            down = after.get(experience_id, (0, 0))[1] - before.get(experience_id, (0, 0))[1]
            if up or down:
                Experience.objects.filter(pk=experience_id, project=project).update(
                    upvotes=F("upvotes") + up, downvotes=F("downvotes") + down
                )
        log.helpful, log.unhelpful = sorted(set(helpful)), sorted(set(unhelpful))
        log.feedback_at = timezone.now()
        log.save(update_fields=["helpful", "unhelpful", "feedback_at"])
    return log


def recall_logs_prune(*, batch: int = 5000) -> int:
    """Delete logs older than HINDSIGHT_RECALL_LOG_DAYS (0 keeps them), oldest first, in
    batches so no transaction holds many rows; returns how many were deleted."""
    days = settings.HINDSIGHT_RECALL_LOG_DAYS
    if not days:
        return 0
    cutoff = timezone.now() - timedelta(days=days)
    deleted = 0
    while True:
        # Ids grow with time: walking the primary key from the oldest stops at the first batch.
        ids = list(
            RecallLog.objects.filter(created_at__lt=cutoff)
            .order_by("pk")
            .values_list("pk", flat=True)[:batch]
        )
        if not ids:
            return deleted
        deleted += RecallLog.objects.filter(pk__in=ids).delete()[0]
