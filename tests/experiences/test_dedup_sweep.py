"""Dedup checks that never ran (the broker was down) are found and sent again by beat."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from experiences.embeddings import embed_in_batches
from experiences.models import Experience, ExperienceMerge, MergeProposal
from experiences.services import curation, dedup
from experiences.services.dedup import experience_dedup, experiences_due_for_dedup
from experiences.services.merging import experience_merge_undo
from experiences.tasks import dedup_due_experiences
from hindsight_site.pipeline import dedup_on_commit
from tests.conftest import WorkerProcess, wait_until
from tests.experiences.test_dedup import make


def checked(experience: Experience) -> Experience:
    """As if its dedup had run (an experience written before this session's test)."""
    Experience.objects.filter(pk=experience.pk).update(dedup_checked_version=F("version"))
    experience.refresh_from_db()
    return experience


def age(*experiences: Experience, minutes: int = 10) -> None:
    """Make them older than the sweep's grace period."""
    for experience in experiences:
        Experience.objects.filter(pk=experience.pk).update(
            updated_at=timezone.now() - timedelta(minutes=minutes)
        )


def due() -> list[int]:
    return experiences_due_for_dedup(limit=100)


@pytest.fixture
def admin_user(db):
    return get_user_model().objects.create_user("ada", password="pw-123456789")


@pytest.mark.django_db
def test_a_check_records_the_wording_it_compared(project):
    experience = make(project)
    age(experience)
    assert due() == [experience.pk]

    assert experience_dedup(experience_id=experience.pk) == "new"

    experience.refresh_from_db()
    assert experience.dedup_checked_version == experience.version == 1
    assert due() == []


@pytest.mark.django_db
def test_an_edit_makes_the_experience_due_again(project, admin_user):
    experience = checked(make(project))

    curation.experience_edit(
        experience_id=experience.pk, advice="Read docker_logs --since 10m first.", user=admin_user
    )
    age(experience)

    assert due() == [experience.pk]


@pytest.mark.django_db
def test_a_check_never_covers_a_wording_changed_while_it_ran(project, monkeypatch):
    experience = make(project)
    neighbours = dedup.experience_neighbours

    def edited_meanwhile(row, *, limit):
        Experience.objects.filter(pk=row.pk).update(version=F("version") + 1)
        return neighbours(row, limit=limit)

    monkeypatch.setattr(dedup, "experience_neighbours", edited_meanwhile)

    assert experience_dedup(experience_id=experience.pk) == "new"

    experience.refresh_from_db()
    assert (experience.version, experience.dedup_checked_version) == (2, 0)


@pytest.mark.django_db
def test_a_merge_leaves_the_survivors_new_wording_due(project):
    old = checked(make(project))
    new = make(project, cosine=0.99, advice="When you see restarts on k8s, read docker_logs.")

    assert experience_dedup(experience_id=new.pk) == "merged"
    old.refresh_from_db()
    new.refresh_from_db()
    age(old, new)

    assert (old.version, old.dedup_checked_version) == (2, 1)
    assert new.dedup_checked_version == new.version  # checked, and merged away
    assert due() == [old.pk]
    assert experience_dedup(experience_id=old.pk) == "new"
    assert due() == []


@pytest.mark.django_db
def test_an_undone_merge_is_not_redone_by_the_sweep(project):
    old = checked(make(project))
    new = make(project, cosine=0.99)
    experience_dedup(experience_id=new.pk)

    experience_merge_undo(merge_id=ExperienceMerge.objects.get().pk)
    age(old, new)

    assert due() == []


@pytest.mark.django_db
def test_a_pair_whose_merge_was_undone_is_proposed_not_merged_after_an_edit(project):
    checked(make(project))
    new = make(project, cosine=0.99)
    experience_dedup(experience_id=new.pk)
    experience_merge_undo(merge_id=ExperienceMerge.objects.get().pk)
    Experience.objects.filter(pk=new.pk).update(version=F("version") + 1)  # reworded later

    assert experience_dedup(experience_id=new.pk) == "proposed"

    assert Experience.objects.get(pk=new.pk).merged_into is None
    assert MergeProposal.objects.get().status == "open"


@pytest.mark.django_db
def test_the_sweep_takes_due_experiences_after_the_grace_period_oldest_first(project, settings):
    settings.HINDSIGHT_DEDUP_SWEEP_GRACE_SECONDS = 120
    oldest, older, old = make(project), make(project, axis=2), make(project, axis=3)
    age(oldest, minutes=30)
    age(older, minutes=20)
    age(old, minutes=3)
    make(project, axis=4)  # written a moment ago: its check sent on commit is still on its way
    age(checked(make(project, axis=5)))
    age(make(project, axis=6, status="archived"))
    age(make(project, axis=7, embedding=None))

    assert experiences_due_for_dedup(limit=2) == [oldest.pk, older.pk]
    assert experiences_due_for_dedup(limit=10) == [oldest.pk, older.pk, old.pk]


@pytest.mark.django_db
def test_the_sweep_query_is_served_by_its_partial_index(project):
    age(make(project))
    query = (
        Experience.objects.filter(
            merged_into__isnull=True,
            dedup_checked_version__lt=F("version"),
            updated_at__lt=timezone.now(),
        )
        .order_by("updated_at")
        .values_list("pk", flat=True)[:10]
    )
    sql, params = query.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a tiny table would be scanned anyway
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())

    assert "experiences_exp_dedup_due" in plan, plan


# ---------------------------------------------------------------------------- real Redis and worker


@pytest.mark.worker
def test_a_dedup_lost_while_redis_was_down_is_merged_by_the_sweep(
    project, transactional_db, redis_control, tmp_path, caplog
):
    old = checked(make(project))
    redis_control.stop()
    with transaction.atomic():  # as a review stores a distilled experience
        new = make(project, cosine=0.99, advice="When you see restarts on k8s, read docker_logs.")
        dedup_on_commit([new.pk])
    assert "experiences.dedup_experience sent 0 of 1; the rest stays due" in caplog.text

    redis_control.start()
    worker = WorkerProcess(tmp_path / "worker.log")
    try:
        age(new)
        assert dedup_due_experiences() == 1  # beat's task, run here: it publishes to Redis

        wait_until(lambda: Experience.objects.get(pk=new.pk).merged_into_id == old.pk)
        # The survivor's merged wording is checked at once (sent when the merge commits).
        wait_until(lambda: not experiences_due_for_dedup(limit=10))
    finally:
        worker.stop()
    assert dedup_due_experiences() == 0


@pytest.mark.worker
def test_an_edit_made_while_redis_was_down_is_checked_by_the_sweep(
    project, admin_user, transactional_db, redis_control, tmp_path
):
    task, intent = "web container restarts", "find why it restarts"
    advice = "When the web container restarts, read docker_logs --tail 200 first."
    (vector,) = embed_in_batches([f"{task}\n{intent}"])  # the scene: summary (task) + intent
    old = checked(make(project, task=task, intent=intent, advice=advice, embedding=vector))
    other = checked(make(project, task=task, axis=2, advice="Restart the container."))
    redis_control.stop()

    # The edit gives it the same scene (an intent change re-embeds it) and the same wording.
    curation.experience_edit(
        experience_id=other.pk, advice=advice, scene={"intent": intent}, user=admin_user
    )

    other.refresh_from_db()
    assert other.merged_into_id is None and other.dedup_checked_version < other.version
    redis_control.start()
    worker = WorkerProcess(tmp_path / "worker.log")
    try:
        age(other)
        assert dedup_due_experiences() == 1
        wait_until(lambda: Experience.objects.get(pk=other.pk).merged_into_id == old.pk)
    finally:
        worker.stop()
