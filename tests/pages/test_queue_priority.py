"""The queue priority the step trigger keeps on each trajectory: it follows every label write,
follows a changed threshold after `queue_reprioritise`, and a queue page costs the same queries
however many trajectories wait."""

from io import StringIO

from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from traces.models import Step, Trace
from traces.selectors.queue import QueueReason


def priority(trace: Trace) -> int | None:
    return Trace.objects.values_list("queue_priority", flat=True).get(pk=trace.pk)


def test_the_priority_follows_every_label_write(project, make_trace):
    trace = make_trace(project, steps=3, labelled=None)
    assert priority(trace) is None  # nothing for a person to check yet

    Step.objects.filter(trace=trace).update(label="necessary", label_source="llm")
    assert priority(trace) == QueueReason.UNCHECKED
    Step.objects.filter(trace=trace, index=1).update(label_confidence=0.2)
    assert priority(trace) == QueueReason.LOW_CONFIDENCE
    Step.objects.filter(trace=trace, index=2).update(label="redundant", label_source="human")
    assert priority(trace) == QueueReason.DISAGREEMENT
    # a person accepts the rest as is: nothing machine-labelled is left to check
    Step.objects.filter(trace=trace, index__in=[0, 1]).update(
        label_source="human", is_accepted_as_is=True
    )
    assert priority(trace) is None
    Step.objects.filter(trace=trace, index=2).delete()
    Step.objects.filter(trace=trace, index=0).update(label_source="heuristic")
    assert priority(trace) == QueueReason.UNCHECKED


def test_reprioritise_applies_a_changed_threshold(project, make_trace):
    sure = make_trace(project, steps=2)
    Step.objects.filter(trace=sure).update(label_confidence=0.7)
    assert priority(sure) == QueueReason.UNCHECKED
    with connection.cursor() as cursor:  # what HINDSIGHT_LOW_CONFIDENCE=0.8 passes to PostgreSQL
        cursor.execute("SET hindsight.low_confidence = '0.8'")
    try:
        out = StringIO()
        call_command("queue_reprioritise", stdout=out)
        assert priority(sure) == QueueReason.LOW_CONFIDENCE
        assert "1 trajectories changed place in the queue" in out.getvalue()
        assert "1 / 1 trajectories" in out.getvalue()
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET hindsight.low_confidence")


def test_a_queue_page_costs_the_same_queries_at_any_length(
    client_for, reviewer, project, make_trace
):
    client = client_for(reviewer)
    make_trace(project)
    client.get("/queue/")  # warm-up
    with CaptureQueriesContext(connection) as few:
        assert client.get("/queue/").status_code == 200
    for _ in range(30):
        make_trace(project)
    with CaptureQueriesContext(connection) as many:
        body = client.get("/queue/").content.decode()
    assert len(many) == len(few)
    assert "<strong>31</strong> waiting" in body
    # the page and its count read the kept priority, no step of any trajectory
    pages = [q["sql"] for q in many if '"queue_priority" AS "priority"' in q["sql"]]
    assert pages and not any("traces_step" in sql for sql in pages)


def test_the_trigger_knows_the_machine_sources_and_reasons_of_the_code(db):
    """The priority function is SQL (migration 0011): it must name the same machine label
    sources and queue reasons as the Python that reads its result."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = 'traces_queue_priority'")
        (source,) = cursor.fetchone()
    assert all(f"'{s}'" in source for s in Step.MACHINE_LABEL_SOURCES)
    assert "'human'" in source
    for reason in (QueueReason.DISAGREEMENT, QueueReason.LOW_CONFIDENCE, QueueReason.UNCHECKED):
        assert f"THEN {reason}" in source or f"ELSE {reason}" in source
