"""End to end through a real Celery worker process: HTTP ingest -> review -> experience."""

import json
import signal
import urllib.request

import pytest

from experiences.models import Experience
from tests.support.pipeline_trajectories import seed_000_body
from tests.support.waiting import wait_until
from tests.support.worker import WorkerProcess
from traces.models import Trace

pytestmark = pytest.mark.worker


def post_json(url: str, key: str, body: dict) -> dict:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def status_of(trace_id: int) -> str:
    return Trace.objects.get(pk=trace_id).review_status


def test_an_ingested_trajectory_gets_labels_and_an_experience(
    live_server, pipeline_key, celery_worker
):
    accepted = post_json(f"{live_server.url}/api/v1/traces", pipeline_key, seed_000_body())

    wait_until(lambda: status_of(accepted["id"]) == "reviewed", timeout=30)
    trace = Trace.objects.get(pk=accepted["id"])
    assert trace.steps.filter(label="").count() == 0
    experience = Experience.objects.get(sources__trace=trace)
    assert experience.embedding is not None


def llm_env(fake_openai, **extra: str) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": fake_openai.base_url,
        "OPENAI_API_KEY": "k",
        "HINDSIGHT_LLM_MODEL": "fake-reviewer",
        "HINDSIGHT_LLM_TIMEOUT": "5",
        **extra,
    }


def test_an_llm_that_keeps_failing_marks_the_trace_failed_and_a_retry_succeeds(
    live_server, pipeline_key, fake_openai, transactional_db, tmp_path
):
    fake_openai.default = "500"
    worker = WorkerProcess(
        tmp_path / "worker.log", llm_env(fake_openai, HINDSIGHT_REVIEW_MAX_RETRIES="1")
    )
    try:
        trace_id = post_json(f"{live_server.url}/api/v1/traces", pipeline_key, seed_000_body())[
            "id"
        ]
        wait_until(lambda: status_of(trace_id) == "failed", timeout=30)
        trace = Trace.objects.get(pk=trace_id)
        assert "after 2 attempt(s)" in trace.review_status_reason
        assert "500 - upstream exploded" in trace.review_status_reason
        assert len(fake_openai.chat_requests) == 2
        assert trace.steps.exclude(label="").count() == 0  # nothing half-applied

        fake_openai.default = "ok"
        post_json(f"{live_server.url}/api/v1/traces/{trace_id}/review", pipeline_key, {})
        wait_until(lambda: status_of(trace_id) == "reviewed", timeout=30)
        assert Trace.objects.get(pk=trace_id).reviews.get().reviewer == "llm"
    finally:
        worker.stop()


def test_a_worker_killed_mid_review_does_not_lose_the_trace(
    live_server, pipeline_key, fake_openai, transactional_db, tmp_path
):
    fake_openai.delay = 3.0  # the LLM is slow: the worker is killed while waiting for it
    env = llm_env(
        fake_openai, HINDSIGHT_VISIBILITY_TIMEOUT="2", HINDSIGHT_UNACKED_RESTORE_INTERVAL="1"
    )
    first = WorkerProcess(tmp_path / "first.log", env)
    trace_id = post_json(f"{live_server.url}/api/v1/traces", pipeline_key, seed_000_body())["id"]
    wait_until(lambda: status_of(trace_id) == "reviewing" and fake_openai.chat_requests, timeout=20)
    first.process.send_signal(signal.SIGKILL)
    first.process.wait()
    assert status_of(trace_id) == "reviewing"

    fake_openai.delay = 0.0
    second = WorkerProcess(tmp_path / "second.log", env)
    try:
        wait_until(lambda: status_of(trace_id) == "reviewed", timeout=40)
        assert Trace.objects.get(pk=trace_id).reviews.count() == 1
        assert Experience.objects.filter(sources__trace_id=trace_id).count() == 1
    finally:
        second.stop()


def test_a_review_that_loses_its_database_connection_is_retried_with_backoff(
    live_server, pipeline_key, fake_openai, transactional_db, tmp_path
):
    # Before: the task failed on its dead connection, was not retried, and the trace was not
    # reviewed (issue 26: traces sat `queued` until the stuck sweep, 15 minutes later).
    from django.db import connection

    fake_openai.delay = 1.5  # the worker's connection is terminated while it waits for the LLM
    worker = WorkerProcess(tmp_path / "worker.log", llm_env(fake_openai, PGAPPNAME="rev-worker"))
    try:
        trace_id = post_json(f"{live_server.url}/api/v1/traces", pipeline_key, seed_000_body())[
            "id"
        ]
        wait_until(lambda: status_of(trace_id) == "reviewing" and fake_openai.chat_requests)
        fake_openai.delay = 0.0
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name = 'rev-worker'"
            )
            assert cursor.fetchone()[0] >= 1

        wait_until(lambda: status_of(trace_id) == "reviewed", timeout=30)
        log = worker.log.read_text()
        assert "Retry in" in log and "OperationalError" in log
        assert Trace.objects.get(pk=trace_id).reviews.count() == 1
    finally:
        worker.stop()


def test_a_batch_is_handed_over_in_one_message_and_every_trace_gets_reviewed(
    live_server, pipeline_key, celery_worker
):
    bodies = [seed_000_body(f"batch-{i}") for i in range(3)]
    results = post_json(f"{live_server.url}/api/v1/traces/batch", pipeline_key, {"traces": bodies})
    ids = [r["id"] for r in results["results"]]

    wait_until(lambda: all(status_of(i) == "reviewed" for i in ids), timeout=40)
    assert b"hindsight.review_traces" in celery_worker.log.read_bytes()


def test_a_human_relabel_re_derives_the_experience_through_the_worker(
    live_server, pipeline_key, celery_worker
):
    from django.contrib.auth import get_user_model

    from accounts.models import AuditEvent
    from traces.services.labels import step_relabel

    trace_id = post_json(f"{live_server.url}/api/v1/traces", pipeline_key, seed_000_body())["id"]
    wait_until(lambda: status_of(trace_id) == "reviewed", timeout=30)
    trace = Trace.objects.get(pk=trace_id)
    experience = Experience.objects.get(sources__trace=trace)
    reviewer = get_user_model().objects.create_user("rita", password="pw-123456789")
    step = trace.steps.get(index=2)  # a blind restart, labelled redundant by the heuristic

    step_relabel(trace=trace, index=2, label="necessary", reason="it cleared the stale DNS cache",
                 expected_version=step.label_version, user=reviewer)  # fmt: skip

    def revised() -> bool:
        experience.refresh_from_db()
        return experience.version == 2

    wait_until(revised, timeout=30)
    assert experience.source == "human" and "docker_restart" in experience.advice
    assert experience.versions.count() == 2
    assert AuditEvent.objects.filter(action="step.relabel", object_type="step").exists()


def test_a_review_held_by_a_worker_that_is_gone_is_taken_back_by_the_sweep(project, celery_worker):
    from datetime import timedelta

    from django.utils import timezone

    from hindsight_site.celery import app
    from traces.models import Review
    from traces.schemas import TraceIn
    from traces.services.ingest import trace_ingest
    from traces.tasks import enqueue_pending_traces

    (alive,) = [name for reply in app.control.ping(timeout=2) for name in reply]
    long_ago = timezone.now() - timedelta(minutes=2)
    held = {}
    for worker in ("ghost@a-host-that-is-gone", alive):
        trace = trace_ingest(
            project=project, payload=TraceIn.model_validate(seed_000_body(f"held-by-{worker}"))
        ).trace
        wait_until(lambda pk=trace.pk: status_of(pk) == "reviewed", timeout=30)
        # As if `worker` had taken it and died before storing its review.
        Review.objects.filter(trace=trace).delete()
        Trace.objects.filter(pk=trace.pk).update(
            review_status="reviewing", review_status_at=long_ago, review_worker=worker
        )
        held[worker] = trace.pk

    enqueue_pending_traces()

    wait_until(lambda: status_of(held["ghost@a-host-that-is-gone"]) == "reviewed", timeout=30)
    # The live worker's review is its own business (an LLM call may take minutes).
    assert status_of(held[alive]) == "reviewing"


def worker_sessions(application_name: str) -> set:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT backend_start FROM pg_stat_activity WHERE application_name = %s",
            [application_name],
        )
        return {row[0] for row in cursor.fetchall()}


def test_the_worker_keeps_its_database_session_from_one_task_to_the_next(
    live_server, pipeline_key, transactional_db, tmp_path
):
    # Celery's Django fixup closed every connection around every task: each review, dedup and
    # induction opened a new PostgreSQL session, a fifth of a worker's time under load.
    worker = WorkerProcess(tmp_path / "worker.log", {"PGAPPNAME": "kept-worker"})
    try:
        first = post_json(
            f"{live_server.url}/api/v1/traces", pipeline_key, seed_000_body("kept-1")
        )["id"]
        wait_until(lambda: status_of(first) == "reviewed", timeout=30)
        sessions = wait_until(lambda: worker_sessions("kept-worker"))

        second = post_json(
            f"{live_server.url}/api/v1/traces", pipeline_key, seed_000_body("kept-2")
        )["id"]
        wait_until(lambda: status_of(second) == "reviewed", timeout=30)

        assert sessions <= worker_sessions("kept-worker")
    finally:
        worker.stop()
