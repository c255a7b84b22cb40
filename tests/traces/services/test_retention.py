"""Retention of raw observations: reviewed trajectories lose their raw text after N days, keep
their summaries, and the drop is audited; nothing else is touched."""

from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from accounts.models import AuditEvent
from tests.support.api import step, trajectory
from traces.models import Step, Trace
from traces.services.retention import observations_raw_drop_old
from traces.tasks import drop_old_raw_observations

LONG = "pulling image layer 7/9 ... " * 40 + "\nError: OOMKilled (exit code 137)"


def stored(api, external_id: str, *, days_ago: int, status: str) -> Trace:
    body = trajectory(external_id)
    body["steps"] = [step(0, observation=LONG), step(1, observation="ok")]
    response = api.post("traces", body)
    assert response.status_code in (200, 201), response.content
    trace = Trace.objects.get(external_id=external_id)
    Trace.objects.filter(pk=trace.pk).update(
        created_at=timezone.now() - timedelta(days=days_ago), review_status=status
    )
    return trace


@pytest.fixture
def retention(settings):
    settings.HINDSIGHT_OBSERVATION_RAW_RETENTION_DAYS = 30
    return settings


def raws(trace: Trace) -> list[str]:
    return list(
        Step.objects.filter(trace=trace).order_by("index").values_list("observation_raw", flat=True)
    )


def test_old_reviewed_trajectories_lose_their_raw_text_and_keep_the_summary(api, retention):
    old = stored(api, "old", days_ago=40, status="reviewed")
    summaries = list(
        Step.objects.filter(trace=old).order_by("index").values_list("observation", flat=True)
    )
    assert raws(old)[0].startswith("pulling image") and len(raws(old)[0]) > len(summaries[0])

    done = drop_old_raw_observations.apply().get()

    assert done == {"traces": 1, "steps": 2}
    assert raws(old) == ["", ""]
    after = list(
        Step.objects.filter(trace=old).order_by("index").values_list("observation", flat=True)
    )
    assert after == summaries and "OOMKilled" in after[0]  # the error line is in the summary
    old.refresh_from_db()
    assert old.observations_raw_dropped_at is not None
    event = AuditEvent.objects.get(action="observations.raw_dropped")
    assert event.project_id == old.project_id
    assert event.after == {"traces": 1, "steps": 2, "older_than_days": 30}


def test_recent_unfinished_and_failed_reviews_keep_their_raw_text(api, retention):
    recent = stored(api, "recent", days_ago=10, status="reviewed")
    pending = stored(api, "pending", days_ago=40, status="pending")
    failed = stored(api, "failed", days_ago=40, status="failed")  # kept for the retry
    skipped = stored(api, "skipped", days_ago=40, status="skipped")

    assert observations_raw_drop_old() == {"traces": 1, "steps": 2}

    for kept in (recent, pending, failed):
        assert raws(kept)[0].startswith("pulling image"), kept.external_id
    assert raws(skipped) == ["", ""]


def test_a_second_sweep_finds_nothing_and_writes_no_audit_event(api, retention):
    stored(api, "old", days_ago=40, status="reviewed")
    observations_raw_drop_old()

    assert observations_raw_drop_old() == {"traces": 0, "steps": 0}
    assert AuditEvent.objects.filter(action="observations.raw_dropped").count() == 1


def test_batches_cover_every_due_trajectory(api, retention):
    for i in range(5):
        stored(api, f"old-{i}", days_ago=40, status="reviewed")

    assert observations_raw_drop_old(batch=2) == {"traces": 5, "steps": 10}
    assert not Step.objects.exclude(observation_raw="").exists()


def test_retention_zero_keeps_everything(api, settings):
    settings.HINDSIGHT_OBSERVATION_RAW_RETENTION_DAYS = 0
    old = stored(api, "old", days_ago=4000, status="reviewed")

    assert observations_raw_drop_old() == {"traces": 0, "steps": 0}
    assert raws(old)[0].startswith("pulling image")


def test_beat_runs_the_sweep_daily():
    entry = django_settings.CELERY_BEAT_SCHEDULE["drop-old-raw-observations"]
    assert entry == {"task": "traces.drop_old_raw_observations", "schedule": 24 * 3600}


def test_the_inspector_says_the_raw_text_was_dropped(api, retention):
    from django.contrib.auth import get_user_model
    from django.test import Client

    from accounts.models import Membership

    old = stored(api, "old", days_ago=40, status="reviewed")
    observations_raw_drop_old()
    user = get_user_model().objects.create_user("rita", password="a-long-test-password")
    Membership.objects.create(project=old.project, user=user, role=Membership.Role.REVIEWER)
    client = Client()
    client.force_login(user)

    page = client.get(f"/traces/{old.pk}/").content.decode()
    assert "Raw observations dropped on" in page and "OOMKilled" in page  # the summary stays
    plain = client.get(f"/traces/{old.pk}/steps/0/raw/")
    assert plain.status_code == 200 and b"dropped on" in plain.content
    partial = client.get(f"/traces/{old.pk}/steps/0/raw/", headers={"HX-Request": "true"})
    assert (
        b"dropped on" in partial.content and b"the summary above is what is kept" in partial.content
    )
