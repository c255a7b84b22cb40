"""The recall log's retention: beat deletes logs past HINDSIGHT_RECALL_LOG_DAYS, oldest first."""

from datetime import timedelta

import pytest
from django.utils import timezone

from experiences.models import RecallLog
from experiences.services.recall_log import recall_logs_prune
from experiences.tasks import prune_recall_logs

pytestmark = pytest.mark.django_db


def make_logs(project, *, age_days: float, count: int) -> list[int]:
    logs = RecallLog.objects.bulk_create(
        [RecallLog(project=project, returned=[]) for _ in range(count)]
    )
    ids = [log.pk for log in logs]
    # created_at is auto_now_add: age the rows afterwards.
    RecallLog.objects.filter(pk__in=ids).update(
        created_at=timezone.now() - timedelta(days=age_days)
    )
    return ids


def test_logs_past_the_retention_are_deleted_in_batches_and_recent_ones_kept(project, settings):
    settings.HINDSIGHT_RECALL_LOG_DAYS = 90
    make_logs(project, age_days=120, count=7)
    kept = make_logs(project, age_days=89, count=3)

    assert recall_logs_prune(batch=2) == 7
    assert sorted(RecallLog.objects.values_list("pk", flat=True)) == kept
    assert recall_logs_prune(batch=2) == 0


def test_zero_days_keeps_every_log(project, settings):
    settings.HINDSIGHT_RECALL_LOG_DAYS = 0
    make_logs(project, age_days=3650, count=2)

    assert prune_recall_logs() == 0
    assert RecallLog.objects.count() == 2


def test_the_daily_beat_entry_runs_the_prune_task(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["prune-recall-logs"]
    assert entry["task"] == prune_recall_logs.name and entry["schedule"] == 24 * 3600
