"""No network call while a row lock is held: an edit waiting for a slow embedding endpoint does
not block anyone else working on the same experience (issue: a row stayed locked up to ~90 s)."""

import threading
import time

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction

from experiences.embeddings import get_embedder
from experiences.models import Experience
from experiences.services import curation
from tests.experiences.services.test_dedup import make


@pytest.fixture
def slow_embeddings(settings, fake_openai):
    settings.HINDSIGHT_EMBEDDING_BASE_URL = fake_openai.base_url
    settings.HINDSIGHT_EMBEDDING_MODEL = "fake-embed"
    get_embedder.cache_clear()
    fake_openai.embedding_gate.clear()  # every embedding request waits until the test lets it go
    yield fake_openai
    fake_openai.embedding_gate.set()
    get_embedder.cache_clear()


def wait_for_embedding_request(fake) -> None:
    deadline = time.monotonic() + 10
    while not fake.embedding_requests and time.monotonic() < deadline:
        time.sleep(0.02)


@pytest.mark.django_db(transaction=True)
def test_a_status_change_is_not_blocked_by_an_edit_waiting_for_its_embedding(
    project, slow_embeddings
):
    experience = make(project)
    ada = get_user_model().objects.create_user("ada", password="pw-123456789")
    outcome: dict = {}

    def edit() -> None:
        try:
            outcome["edited"] = curation.experience_edit(
                experience_id=experience.pk,
                advice="When a container restarts, read its logs before restarting it again.",
                scene={"intent": "find why a container restarts"},
                user=ada,
            )
        except Exception as error:  # noqa: BLE001 - reported by the assertion below
            outcome["error"] = error
        finally:
            connection.close()

    editor = threading.Thread(target=edit)
    editor.start()
    wait_for_embedding_request(slow_embeddings)
    assert slow_embeddings.embedding_requests, "the edit never asked for its embedding"

    # The edit is now waiting for the embedding endpoint. Another change of the same row must
    # go through at once: with the row locked it would wait, and fail at the lock timeout.
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL lock_timeout = '2s'")
        curation.experience_set_status(experience_id=experience.pk, status="approved", user=ada)
    assert editor.is_alive()  # still waiting: the status change did not wait for it

    slow_embeddings.embedding_gate.set()
    editor.join(30)
    assert "error" not in outcome, outcome.get("error")
    experience.refresh_from_db()
    assert experience.status == "approved"  # both changes kept
    assert experience.intent == "find why a container restarts"
    assert experience.embedding_model == "fake-embed"
    assert experience.version == 2


@pytest.mark.django_db(transaction=True)
def test_an_edit_whose_scene_changed_meanwhile_embeds_the_new_scene(project, slow_embeddings):
    experience = make(project)
    ada = get_user_model().objects.create_user("ada", password="pw-123456789")
    outcome: dict = {}

    def edit() -> None:
        try:
            curation.experience_edit(
                experience_id=experience.pk,
                advice=experience.advice,
                scene={"intent": "find why a container restarts"},
                user=ada,
            )
        finally:
            connection.close()

    editor = threading.Thread(target=edit)
    editor.start()
    wait_for_embedding_request(slow_embeddings)
    # While the first vector is computed, a merge brings another summary: that vector is stale.
    Experience.objects.filter(pk=experience.pk).update(summary="the api pod is OOMKilled")
    slow_embeddings.embedding_gate.set()
    editor.join(30)
    assert not editor.is_alive() and not outcome

    texts = [r["input"] for r in slow_embeddings.embedding_requests]
    assert len(texts) == 2 and "the api pod is OOMKilled" in str(texts[-1])
    experience.refresh_from_db()
    assert experience.intent == "find why a container restarts"
