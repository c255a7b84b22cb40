"""The hand-over to Celery on commit: Redis up, Redis really stopped, and a real worker."""

import time
from datetime import timedelta

import pytest
import redis as redis_lib
from django.conf import settings
from django.utils import timezone

from core.publish import tasks_waiting
from tests.support.api import trajectory
from tests.support.waiting import wait_until
from traces.models import Trace
from traces.services.review_queue import REVIEW_TASK, trace_enqueue_stale
from traces.tasks import enqueue_pending_traces


def _queued_messages() -> int:
    return redis_lib.from_url(settings.REDIS_URL).llen("celery")


@pytest.fixture
def empty_queue(transactional_db):
    redis_lib.from_url(settings.REDIS_URL).delete("celery")


def test_committed_trace_is_published_and_marked_queued(api, empty_queue):
    response = api.post("traces", trajectory())

    assert response.status_code == 201
    assert response.json()["review_status"] == "queued"
    assert _queued_messages() == 1


def test_ingest_succeeds_with_redis_stopped_and_beat_enqueues_later(
    api, empty_queue, redis_control, settings
):
    redis_control.stop()
    began = time.monotonic()
    response = api.post("traces", trajectory())

    assert response.status_code == 201  # the rate limiter and the broker both fail open
    # ...and fast: two tries 0.2 s apart, not kombu's default ~6 s of retries per request.
    assert time.monotonic() - began < 3
    assert response.json()["review_status"] == "pending"
    trace = Trace.objects.get()
    assert trace.review_status == "pending"

    redis_control.start()
    settings.HINDSIGHT_REENQUEUE_AFTER_SECONDS = 1
    Trace.objects.update(review_status_at="2000-01-01T00:00:00Z")
    assert trace_enqueue_stale() == 1
    trace.refresh_from_db()
    assert trace.review_status == "queued"
    assert _queued_messages() == 1


def _connections_received() -> int:
    return redis_lib.from_url(settings.REDIS_URL).info("stats")["total_connections_received"]


def test_publishing_keeps_its_broker_connection_between_requests(api, empty_queue):
    api.post("traces", trajectory("first"))
    before = _connections_received()
    for n in range(5):
        assert api.post("traces", trajectory(f"run-{n}")).json()["review_status"] == "queued"

    assert _connections_received() - before <= 1  # the counting client's own connection
    assert _queued_messages() == 6


def test_a_restarted_redis_is_published_to_at_once_on_a_new_connection(
    api, empty_queue, redis_control
):
    api.post("traces", trajectory("before"))  # the kept connection is made
    redis_control.stop()
    redis_control.start()
    waiting = _queued_messages()
    began = time.monotonic()
    response = api.post("traces", trajectory("after"))

    assert response.json()["review_status"] == "queued"  # not left to the sweep
    assert time.monotonic() - began < 1
    assert _queued_messages() == waiting + 1


def test_sweep_skips_fresh_pending_traces(api, empty_queue, redis_control):
    redis_control.stop()
    api.post("traces", trajectory())
    redis_control.start()
    assert trace_enqueue_stale() == 0  # younger than HINDSIGHT_REENQUEUE_AFTER_SECONDS


def test_sweep_republishes_traces_stuck_in_queued(api, empty_queue):
    api.post("traces", trajectory())
    redis_lib.from_url(settings.REDIS_URL).delete("celery")  # the message was lost
    Trace.objects.update(review_status_at="2000-01-01T00:00:00Z")

    assert trace_enqueue_stale() == 1
    assert _queued_messages() == 1


def _waiting_reviews() -> list[int]:
    return sorted(args[0] for _, args in tasks_waiting({REVIEW_TASK}) or [])


def test_the_sweep_sends_again_within_a_minute_a_queued_trace_whose_task_is_gone(api, empty_queue):
    # Before: a queued trace whose task was lost waited for the stuck sweep, 15 minutes.
    lost, waiting, taken = (api.post("traces", trajectory(n)).json()["id"] for n in "abc")
    broker = redis_lib.from_url(settings.REDIS_URL)
    for message in broker.lrange("celery", 0, -1):
        if f'"argsrepr": "({lost},)"' in message.decode():
            broker.lrem("celery", 1, message)  # its delivery failed and could not say so
    assert _waiting_reviews() == [waiting, taken]
    from celery import current_app

    with current_app.connection_for_read() as connection:
        queue = connection.SimpleQueue("celery")
        held = queue.get(timeout=5)  # taken by a consumer, not acknowledged (kombu's unacked)
        Trace.objects.update(review_status_at=timezone.now() - timedelta(seconds=40))

        assert enqueue_pending_traces() == 1

        assert _waiting_reviews() == sorted([lost, waiting, taken])  # each exactly once
        assert Trace.objects.get(pk=lost).review_status == "queued"
        held.requeue()
        queue.close()


def test_the_sweep_leaves_queued_traces_alone_while_the_broker_is_unreadable(
    api, empty_queue, redis_control
):
    api.post("traces", trajectory())
    Trace.objects.update(review_status_at=timezone.now() - timedelta(seconds=40))
    redis_control.stop()
    assert tasks_waiting({REVIEW_TASK}) is None
    assert enqueue_pending_traces() == 0


@pytest.mark.worker
def test_a_real_worker_picks_up_the_ingested_trace(api, celery_worker):
    trace_id = api.post("traces", trajectory()).json()["id"]

    def handled() -> bool:
        return Trace.objects.get(pk=trace_id).review_status not in ("pending", "queued")

    wait_until(handled, timeout=20)
    assert b"hindsight.review_trace" in celery_worker.log.read_bytes()
