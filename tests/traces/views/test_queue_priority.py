"""The queue priority the step trigger keeps on each trajectory: it follows every label write,
follows a changed threshold after `queue_reprioritise`, and a queue page costs the same queries
however many trajectories wait."""

import re
from io import StringIO

from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from traces.models import Step, Trace
from traces.review.types import WENT_WRONG_OUTCOMES
from traces.selectors.queue import QueueReason, queue_candidates


def priority(trace: Trace) -> int | None:
    return Trace.objects.values_list("queue_priority", flat=True).get(pk=trace.pk)


def reason(trace: Trace) -> int | None:
    kept = priority(trace)
    return None if kept is None else QueueReason.of(kept)


def test_the_priority_follows_every_label_write(project, make_trace):
    trace = make_trace(project, steps=3, labelled=None)
    assert priority(trace) is None  # nothing for a person to check yet

    Step.objects.filter(trace=trace).update(label="necessary", label_source="llm")
    assert priority(trace) == QueueReason.UNCHECKED * 1000 + 999  # no confidence given
    Step.objects.filter(trace=trace, index=1).update(label_confidence=0.2)
    assert priority(trace) == QueueReason.LOW_CONFIDENCE * 1000 + 200
    Step.objects.filter(trace=trace, index=2).update(label="redundant", label_source="human")
    assert priority(trace) == QueueReason.DISAGREEMENT * 1000 + 200
    # a person accepts the rest as is: nothing machine-labelled is left to check
    Step.objects.filter(trace=trace, index__in=[0, 1]).update(
        label_source="human", is_accepted_as_is=True
    )
    assert priority(trace) is None
    Step.objects.filter(trace=trace, index=2).delete()
    Step.objects.filter(trace=trace, index=0).update(label_source="heuristic")
    assert reason(trace) == QueueReason.UNCHECKED


def test_failed_runs_come_first_and_the_least_confident_first_within_a_reason(
    project, make_trace
):  # fmt: skip
    sure_failure = make_trace(project, outcome="failure")
    Step.objects.filter(trace=sure_failure).update(label_confidence=0.95)
    unsure_partial = make_trace(project, outcome="partial")
    Step.objects.filter(trace=unsure_partial, index=1).update(label_confidence=0.4)
    corrected = make_trace(project)
    Step.objects.filter(trace=corrected, index=0).update(label_source="human")
    unsure, less_unsure = make_trace(project), make_trace(project)
    Step.objects.filter(trace=unsure, index=2).update(label_confidence=0.1)
    Step.objects.filter(trace=less_unsure, index=2).update(label_confidence=0.5)
    easy = [make_trace(project) for _ in range(3)]

    ordered = list(queue_candidates(project=project).values_list("pk", flat=True))

    assert ordered == [
        unsure_partial.pk, sure_failure.pk, corrected.pk, unsure.pk, less_unsure.pk,
        *(t.pk for t in easy),
    ]  # fmt: skip


def test_a_confidence_exactly_at_the_threshold_is_not_low(project, make_trace, settings):
    """0.6 as a double is below 0.6 as a real (0.6000000238): 0011 ranked the heuristic's 0.6
    fallback as low while the row said "0 of 3 labels under 60 %"."""
    assert settings.HINDSIGHT_LOW_CONFIDENCE == 0.6
    trace = make_trace(project)
    Step.objects.filter(trace=trace).update(label_confidence=0.6)

    assert priority(trace) == QueueReason.UNCHECKED * 1000 + 600


def test_a_changed_outcome_moves_the_trajectory(project, make_trace):
    trace = make_trace(project)
    assert reason(trace) == QueueReason.UNCHECKED

    Trace.objects.filter(pk=trace.pk).update(outcome="failure")
    assert reason(trace) == QueueReason.FAILURE
    Trace.objects.filter(pk=trace.pk).update(review_status="reviewed")  # not the outcome
    assert reason(trace) == QueueReason.FAILURE


def test_reprioritise_applies_a_changed_threshold(project, make_trace):
    sure = make_trace(project, steps=2)
    Step.objects.filter(trace=sure).update(label_confidence=0.7)
    assert reason(sure) == QueueReason.UNCHECKED
    with connection.cursor() as cursor:  # what HINDSIGHT_LOW_CONFIDENCE=0.8 passes to PostgreSQL
        cursor.execute("SET hindsight.low_confidence = '0.8'")
    try:
        out = StringIO()
        call_command("queue_reprioritise", stdout=out)
        assert reason(sure) == QueueReason.LOW_CONFIDENCE
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
    """The priority function is SQL (migration 0012): it must name the same machine label
    sources, failed outcomes, queue reasons, rank span and default threshold as the Python that
    reads its result and explains it (QueueReason.for_counts)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = 'traces_queue_rank'")
        (source,) = cursor.fetchone()
    assert all(f"'{s}'" in source for s in Step.MACHINE_LABEL_SOURCES)
    assert "'human'" in source
    (failed,) = re.findall(r"outcome IN \(([^)]*)\) THEN", source)
    assert {o.strip().strip("'") for o in failed.split(",")} == WENT_WRONG_OUTCOMES
    reasons = (
        QueueReason.FAILURE, QueueReason.DISAGREEMENT, QueueReason.LOW_CONFIDENCE,
        QueueReason.UNCHECKED,
    )  # fmt: skip
    assert set(reasons) == set(QueueReason.SLUGS) == set(QueueReason.TITLES)
    for value in reasons:
        assert f"THEN {value}" in source or f"ELSE {value}" in source
    span = QueueReason.RANK_SPAN
    assert f"* {span} +" in source
    assert f"least(floor(s.lowest * {span}), {span - 1}), {span - 1})" in source
    assert "::float8" in source and "::real" not in source  # the threshold as Python compares it
    # without the per-connection setting it falls back to HINDSIGHT_LOW_CONFIDENCE's default
    assert "0.6) THEN 2" in " ".join(source.split())
