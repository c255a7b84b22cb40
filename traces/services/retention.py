"""Retention of raw observations: the bulk of a stored step, needed only while it is reviewed.

A step keeps its observation twice: the summary the reviewer and the pages show (`observation`,
HINDSIGHT_OBSERVATION_SUMMARY_CHARS with every error line) and the raw text as the agent sent
it (`observation_raw`, up to HINDSIGHT_OBSERVATION_RAW_CAP). With
HINDSIGHT_OBSERVATION_RAW_RETENTION_DAYS set, beat drops the raw text of trajectories stored
longer ago than that once their review has ended (reviewed or skipped; a failed review keeps its
raw text for the retry). Summaries, labels and experiences stay. Each sweep writes one audit
event per project with how many trajectories and steps lost their raw text, and each trajectory
records when (`Trace.observations_raw_dropped_at`: the inspector says so instead of offering
the raw text).
"""

from collections import Counter
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import Project
from accounts.services.audit import audit_event
from traces.models import Step, Trace

ENDED = [Trace.ReviewStatus.REVIEWED, Trace.ReviewStatus.SKIPPED]


def observations_raw_due(*, now: datetime):
    """Trajectories whose raw observations are past the retention time (none when it is 0)."""
    days = settings.HINDSIGHT_OBSERVATION_RAW_RETENTION_DAYS
    if not days:
        return Trace.objects.none()
    return Trace.objects.filter(
        created_at__lt=now - timedelta(days=days),
        review_status__in=ENDED,
        observations_raw_dropped_at__isnull=True,
    )


def observations_raw_drop_old(*, now: datetime | None = None, batch: int = 500) -> dict:
    """Drop the raw text of due trajectories, `batch` trajectories per transaction (short locks
    on a library of millions of steps). Returns {"traces": n, "steps": n}."""
    now = now or timezone.now()
    traces: Counter[int] = Counter()
    steps: Counter[int] = Counter()
    while True:
        with transaction.atomic():
            due = list(
                observations_raw_due(now=now)
                .order_by("id")
                .select_for_update(skip_locked=True)
                .values_list("project_id", "id")[:batch]
            )
            if not due:
                break
            for project_id in {project_id for project_id, _ in due}:
                ids = [trace_id for p, trace_id in due if p == project_id]
                steps[project_id] += (
                    Step.objects.filter(trace_id__in=ids)
                    .exclude(observation_raw="")
                    .update(observation_raw="")
                )
                traces[project_id] += len(ids)
            Trace.objects.filter(id__in=[trace_id for _, trace_id in due]).update(
                observations_raw_dropped_at=now
            )
    for project in Project.objects.filter(pk__in=traces):
        audit_event(
            action="observations.raw_dropped",
            object_type="project",
            object_id=project.pk,
            project=project,
            after={
                "traces": traces[project.pk],
                "steps": steps[project.pk],
                "older_than_days": settings.HINDSIGHT_OBSERVATION_RAW_RETENTION_DAYS,
            },
        )
    return {"traces": traces.total(), "steps": steps.total()}
