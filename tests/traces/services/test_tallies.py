"""The counts /stats/ reads come from trigger-kept tallies: they must equal a full count after
every kind of write (ingest, review, relabel, accept, delete), survive compaction, and never make
two ingests wait for each other."""

import threading
from collections import Counter

import psycopg
import pytest
from django.db import connection
from django.db.models import Count
from django.utils import timezone

from accounts.models import Project
from traces.models import Step, Tally, Trace
from traces.selectors.stats import project_stats, tallies
from traces.services.tallies import tallies_compact


def counted(project: Project) -> dict[str, dict[str, int]]:
    """The label distribution by a full scan: what the tallies replace."""
    rows = (
        Step.objects.filter(trace__project=project)
        .exclude(label="")
        .values_list("label_source", "is_accepted_as_is", "label")
        .annotate(n=Count("pk"))
    )
    found: dict[str, dict[str, int]] = {}
    for source, accepted, label, n in rows:  # accepted as is: apart from human judgements
        column = "accepted" if accepted and source == "human" else source
        found.setdefault(column, {})[label] = found.get(column, {}).get(label, 0) + n
    return found


def statuses(project: Project) -> dict[str, int]:
    return {s: n for s, n in project_stats(project=project)["statuses"] if n}


def test_tallies_follow_every_write_and_survive_compaction(project, make_project, make_trace):
    other = make_project("other")
    first = make_trace(project, steps=4)
    second = make_trace(project, steps=3, labelled="heuristic")
    make_trace(other, steps=2)
    make_trace(project, steps=2, labelled=None)  # ingested, not reviewed: no labels
    assert project_stats(project=project)["by_source"] == counted(project)

    # a person relabels one step and accepts another as is; a review relabels a whole trace
    Step.objects.filter(trace=first, index=0).update(label="redundant", label_source="human")
    Step.objects.filter(trace=first, index=1).update(label_source="human", is_accepted_as_is=True)
    Step.objects.filter(trace=second).update(label="misleading")
    stats = project_stats(project=project)
    assert stats["by_source"] == counted(project)
    assert stats["agreement"]["accepted_as_is"] == 1
    assert statuses(project) == {"reviewed": 2, "pending": 1}

    # a statement that changes no counted column appends nothing
    rows = Tally.objects.count()
    Step.objects.filter(trace=first).update(observation_raw="")
    Trace.objects.filter(pk=first.pk).update(updated_at=timezone.now())
    assert Tally.objects.count() == rows

    second.delete()
    assert project_stats(project=project)["by_source"] == counted(project)
    assert statuses(project) == {"reviewed": 1, "pending": 1}
    per_day = project_stats(project=project)["per_day"]
    assert sum(n for _, n in per_day) == 2
    assert per_day[-1][0] == timezone.localdate().isoformat()

    before = {p: project_stats(project=p)["by_source"] for p in (project, other)}
    result = tallies_compact()
    assert result["rows_after"] < result["rows_before"]
    assert Tally.objects.filter(project=project).values("name").distinct().count() == (
        Tally.objects.filter(project=project).count()
    )  # one row per name
    assert {p: project_stats(project=p)["by_source"] for p in (project, other)} == before
    assert statuses(other) == {"reviewed": 1}


def test_a_deleted_projects_tallies_go_at_the_next_compaction(make_project, make_trace):
    doomed = make_project("doomed")
    make_trace(doomed, steps=2)
    doomed_id = doomed.pk
    doomed.delete()  # its traces' and steps' triggers still append deltas while it goes
    tallies_compact()
    assert not Tally.objects.filter(project_id=doomed_id).exists()


def test_the_stats_page_reads_no_step_rows(client_for, reviewer, project, make_trace):
    make_trace(project, steps=3, review=True)
    client_for(reviewer).get("/stats/")  # warm-up
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        response = client_for(reviewer).get("/stats/")
    assert response.status_code == 200
    step_reads = [q["sql"] for q in captured if 'FROM "traces_step"' in q["sql"]]
    # only the bounded sample of human judgements reads steps, with a LIMIT
    assert all("LIMIT" in sql for sql in step_reads), step_reads
    assert 'GROUP BY "traces_step"' not in " ".join(q["sql"] for q in captured)


def test_tallies_name_the_accepted_labels_apart(project, make_trace):
    trace = make_trace(project, steps=2)
    Step.objects.filter(trace=trace).update(label_source="human", is_accepted_as_is=True)
    assert tallies(project=project, prefix="label:human:") == {"necessary:accepted": 2}
    assert project_stats(project=project)["by_source"] == {"accepted": {"necessary": 2}}


@pytest.mark.django_db(transaction=True)
def test_two_ingests_of_one_project_do_not_wait_for_each_other(project, make_trace):
    """The triggers only append: a transaction that wrote steps and has not committed yet does
    not hold a counter row another ingest needs."""
    trace = make_trace(project, steps=1)
    dsn = connection.get_connection_params()
    dsn = {k: v for k, v in dsn.items() if k in ("host", "port", "dbname", "user", "password")}
    insert = (
        "INSERT INTO traces_step (trace_id, index, agent, kind, tool, arguments, content, "
        "observation, observation_raw, is_observation_truncated, is_error, error_type, context, "
        "content_hash, label, label_source, label_reason, label_version, is_accepted_as_is) "
        "VALUES (%s, %s, '', 'tool_call', 't', '{}', '', '', '', false, false, '', '{}', '', "
        "'necessary', 'llm', '', 1, false)"
    )
    with psycopg.connect(**dsn) as holder, psycopg.connect(**dsn, autocommit=True) as other:
        holder.execute(insert, (trace.pk, 100))  # open transaction, not committed
        done = threading.Event()

        def second() -> None:
            other.execute("SET lock_timeout = '2s'")
            other.execute(insert, (trace.pk, 101))
            done.set()

        thread = threading.Thread(target=second)
        thread.start()
        thread.join(5)
        assert done.is_set(), "the second ingest waited for the first one's counter row"
        holder.commit()
    assert Counter(project_stats(project=project)["by_source"]["llm"]) == Counter({"necessary": 3})
