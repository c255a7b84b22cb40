"""Dedup checks that never ran (the broker was down) are found and sent again by beat."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from experiences.embeddings import embed_in_batches
from experiences.models import Experience, ExperienceDedupDue, ExperienceMerge, MergeProposal
from experiences.services import curation, dedup
from experiences.services.dedup import experience_dedup, experiences_due_for_dedup
from experiences.services.merging import experience_merge_undo
from experiences.tasks import dedup_due_experiences
from hindsight_site.review_tasks import dedup_on_commit
from tests.experiences.services.test_dedup import make, vector
from tests.support.waiting import wait_until
from tests.support.worker import WorkerProcess


def checked(experience: Experience) -> Experience:
    """As if its dedup had run (an experience written before this session's test)."""
    ExperienceDedupDue.objects.filter(experience=experience).delete()
    return experience


def age(*experiences: Experience, minutes: int = 10) -> None:
    """Make their due checks older than the sweep's grace period."""
    ExperienceDedupDue.objects.filter(experience__in=experiences).update(
        since=timezone.now() - timedelta(minutes=minutes)
    )


def due_version(experience: Experience) -> int | None:
    """The wording of it whose check is due, if any."""
    row = ExperienceDedupDue.objects.filter(experience=experience).first()
    return row.version if row else None


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

    assert due_version(experience) is None
    assert due() == []


@pytest.mark.django_db
def test_a_check_leaves_the_experience_row_and_its_vector_index_alone(project):
    experience = make(project)

    def row_version() -> int:
        with connection.cursor() as cursor:  # xmin: the transaction that wrote this row version
            cursor.execute(
                "SELECT xmin::text::bigint FROM experiences_experience WHERE id = %s",
                [experience.pk],
            )
            return cursor.fetchone()[0]

    written = row_version()
    with transaction.atomic():  # a new transaction id for whatever the check writes
        assert experience_dedup(experience_id=experience.pk) == "new"
    assert row_version() == written
    assert due_version(experience) is None


@pytest.mark.django_db
def test_every_write_of_a_wording_makes_its_check_due_however_it_is_written(project):
    first = checked(make(project))
    second = checked(make(project, axis=2))
    (bulk,) = Experience.objects.bulk_create(
        [Experience(project=project, task="t", advice="a", polarity="success", source="heuristic")]
    )

    Experience.objects.filter(pk=first.pk).update(version=F("version") + 1)  # a bulk update
    Experience.objects.filter(pk=second.pk).update(upvotes=F("upvotes") + 1)  # not a wording
    merged = checked(make(project, axis=4))
    Experience.objects.filter(pk=merged.pk).update(
        merged_into=first, version=F("version") + 1
    )  # merged away: nothing to check

    assert due_version(bulk) == 1
    assert due_version(first) == 2
    assert due_version(second) is None
    assert due_version(merged) is None


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
    assert (experience.version, due_version(experience)) == (2, 2)


@pytest.mark.django_db
def test_a_merge_leaves_the_survivors_new_wording_due(project):
    old = checked(make(project))
    new = make(project, cosine=0.99, advice="When you see restarts on k8s, read docker_logs.")

    assert experience_dedup(experience_id=new.pk) == "merged"
    old.refresh_from_db()
    new.refresh_from_db()
    age(old, new)

    assert (old.version, due_version(old)) == (2, 2)
    assert due_version(new) is None  # checked, and merged away
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


@pytest.mark.slow
@pytest.mark.django_db
def test_the_sweep_reads_the_due_checks_not_the_library(project):
    library = Experience.objects.bulk_create(
        Experience(project=project, task=f"t{n}", advice="a", polarity="success",
                   source="heuristic", embedding=vector(1.0, 1 + n % 8))
        for n in range(3000)
    )  # fmt: skip
    ExperienceDedupDue.objects.exclude(experience=library[-1]).delete()  # checked long ago
    age(library[-1])
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE experiences_experience")
        cursor.execute("ANALYZE experiences_experiencededupdue")
    query = dedup.dedup_due_checks(before=timezone.now()).values_list("experience_id")[:10]
    sql, params = query.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())

    assert "Seq Scan on experiences_experience " not in plan, plan
    assert "experiences_experience_pkey" in plan, plan  # each due one looked up by its id
    assert experiences_due_for_dedup(limit=10) == [library[-1].pk]


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
    assert "experiences.dedup_experiences sent 0 of 1; the rest stays due" in caplog.text

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
    assert other.merged_into_id is None and due_version(other) == other.version
    redis_control.start()
    worker = WorkerProcess(tmp_path / "worker.log")
    try:
        age(other)
        assert dedup_due_experiences() == 1
        wait_until(lambda: Experience.objects.get(pk=other.pk).merged_into_id == old.pk)
    finally:
        worker.stop()
