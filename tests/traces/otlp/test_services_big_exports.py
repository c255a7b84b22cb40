"""A collector's batch: thousands of spans of hundreds of traces in one export. It is buffered in
a few statements whatever its size, the first traces are stored before the answer, the rest by
the worker; a completion lost while the broker was down is stored by the sweep."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tests.support.spans import agent_run, export
from tests.support.waiting import wait_until
from traces.models import Trace
from traces.otlp.completion import ROOTED_GRACE_SECONDS, otel_traces_sweep
from traces.otlp.models import OtelSpan, OtelTrace


def runs(first: int, count: int) -> bytes:
    spans = [s for n in range(first, first + count) for s in agent_run(trace=n)]
    return export(*spans).SerializeToString()


def accepted(response) -> bool:
    answer = ExportTraceServiceResponse.FromString(response.content)
    return response.status_code == 200 and not answer.HasField("partial_success")


@pytest.mark.django_db
def test_an_export_is_buffered_in_the_same_few_statements_whatever_its_size(post, settings):
    settings.HINDSIGHT_OTLP_INLINE_TRACES = 0  # buffering alone: completion goes to the worker
    assert accepted(post(runs(1, 1)))  # the key's first use of the day is written once
    with CaptureQueriesContext(connection) as small:
        assert accepted(post(runs(10, 3)))
    with CaptureQueriesContext(connection) as big:
        assert accepted(post(runs(100, 60)))  # 300 spans of 60 traces
    assert len(big.captured_queries) == len(small.captured_queries) <= 20
    assert OtelTrace.objects.filter(has_root=True, completed_at=None).count() == 64
    assert OtelSpan.objects.count() == 64 * 5


@pytest.mark.worker
def test_the_first_traces_are_stored_before_the_answer_and_the_worker_stores_the_rest(
    post, settings, celery_worker
):
    settings.HINDSIGHT_OTLP_INLINE_TRACES = 2
    assert accepted(post(runs(1, 12)))
    # The answer came after the first two were stored; the worker stores the other ten.
    assert Trace.objects.count() >= 2
    wait_until(lambda: Trace.objects.count() == 12, timeout=60)
    assert set(Trace.objects.values_list("step_count", flat=True)) == {4}
    assert not OtelSpan.objects.exists()
    assert OtelTrace.objects.filter(completed_by=OtelTrace.CompletedBy.ROOT).count() == 12
    wait_until(lambda: "otlp.complete_traces" in celery_worker.log.read_text())


@pytest.mark.django_db
def test_a_completion_lost_while_the_broker_was_down_is_stored_by_the_sweep(
    post, settings, redis_control
):
    settings.HINDSIGHT_OTLP_INLINE_TRACES = 0
    redis_control.stop()
    assert accepted(post(runs(1, 4)))  # accepted: the spans are safe in PostgreSQL
    redis_control.start()
    assert not Trace.objects.exists()
    assert otel_traces_sweep() == 0  # not yet: its task may still be on its way
    OtelTrace.objects.update(
        last_received_at=timezone.now() - timedelta(seconds=ROOTED_GRACE_SECONDS + 1)
    )
    assert otel_traces_sweep() == 4
    assert Trace.objects.count() == 4
    assert set(OtelTrace.objects.values_list("completed_by", flat=True)) == {"root"}
