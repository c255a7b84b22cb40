"""The trace list: filters, search, keyset pages, counts, empty states, htmx partial."""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from traces.models import Step, Trace


def _queries(client, path: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(path).status_code == 200
    return len(captured)


def test_it_lists_the_projects_traces_newest_first(client_for, reviewer, project, make_trace):
    older = make_trace(project, task="Rotate the TLS certificate")
    newer = make_trace(project, task="Migrate the orders table")

    response = client_for(reviewer).get("/traces/")

    assert response.status_code == 200
    body = response.content.decode()
    assert body.index(newer.task) < body.index(older.task)
    assert "2 traces." in body


def test_it_never_shows_another_projects_traces(client_for, reviewer, other_project, make_trace):
    make_trace(other_project, task="Secret operation elsewhere")

    body = client_for(reviewer).get("/traces/").content

    assert b"Secret operation elsewhere" not in body


def test_htmx_gets_only_the_results_partial(client_for, reviewer, project, make_trace):
    make_trace(project)

    response = client_for(reviewer).get("/traces/", headers={"HX-Request": "true"})

    assert response.status_code == 200
    assert response.content.lstrip().startswith(b'<section id="results"')
    assert b"<nav" not in response.content.split(b"</section>")[-1]
    assert b"<html" not in response.content
    assert "HX-Request" in response.headers["Vary"]


def test_the_full_page_has_the_filters_and_the_results(client_for, reviewer, project, make_trace):
    make_trace(project)

    body = client_for(reviewer).get("/traces/").content

    assert b"<html" in body and b'id="results"' in body and b"<search>" in body


def test_filters_narrow_the_list(client_for, reviewer, project, make_trace):
    make_trace(project, task="Rotate the TLS certificate", outcome="failure", agent="cert-bot")
    make_trace(project, task="Restart the web container", environment=["k8s"], labelled="heuristic")
    client = client_for(reviewer)

    def tasks(query: str) -> set[str]:
        body = client.get("/traces/?" + query).content.decode()
        return {t for t in ("Rotate the TLS", "Restart the web") if t in body}

    assert tasks("outcome=failure") == {"Rotate the TLS"}
    assert tasks("agent=cert-bot") == {"Rotate the TLS"}
    assert tasks("environment=k8s") == {"Restart the web"}
    assert tasks("label_source=heuristic") == {"Restart the web"}
    assert tasks("label_source=llm") == {"Rotate the TLS"}
    assert tasks("q=certif") == {"Rotate the TLS"}
    assert tasks("tool=docker") == {"Rotate the TLS", "Restart the web"}
    assert tasks("task_type=query") == set()
    assert tasks("review_status=reviewed") == {"Rotate the TLS", "Restart the web"}
    assert tasks("since=2000-01-01&until=2999-01-01") == {"Rotate the TLS", "Restart the web"}
    assert tasks("until=2000-01-01") == set()


def test_an_invalid_filter_is_ignored_not_an_error(client_for, reviewer, project, make_trace):
    make_trace(project)

    response = client_for(reviewer).get("/traces/?outcome=bogus&since=yesterday&cursor=%%%")

    assert response.status_code == 200
    assert b"1 trace." in response.content


def test_pages_follow_the_cursor(client_for, reviewer, project, make_trace, monkeypatch):
    monkeypatch.setattr("traces.views.trace_list.PAGE_SIZE", 2)
    traces = [make_trace(project, task=f"Task number {i}") for i in range(3)]
    client = client_for(reviewer)

    first = client.get("/traces/").content.decode()
    assert "Task number 2" in first and "Task number 0" not in first
    cursor = first.split("cursor=")[1].split('"')[0]

    second = client.get(f"/traces/?cursor={cursor}").content.decode()
    assert "Task number 0" in second and "Task number 2" not in second
    assert len(traces) == 3


def test_an_empty_project_shows_how_to_send_the_first_trace(client_for, admin_user):
    body = client_for(admin_user).get("/traces/").content.decode()

    assert "No trajectories yet" in body
    assert "curl -X POST http://testserver/api/v1/traces" in body
    assert 'href="/settings/#keys"' in body


def test_reviewers_are_told_to_ask_an_admin_for_a_key(client_for, reviewer):
    body = client_for(reviewer).get("/traces/").content.decode()

    assert "Ask a project admin for an API key" in body


def test_no_match_says_so_and_offers_to_clear(client_for, reviewer, project, make_trace):
    make_trace(project)

    body = client_for(reviewer).get("/traces/?q=zebra").content.decode()

    assert "No trace matches these filters" in body


def test_the_list_runs_a_constant_number_of_queries(client_for, reviewer, project, make_trace):
    client = client_for(reviewer)
    make_trace(project, labelled="heuristic")
    few = _queries(client, "/traces/")
    for _ in range(12):
        make_trace(project)
    Step.objects.filter(trace__in=Trace.objects.all()[:3]).update(label_source="human")

    assert _queries(client, "/traces/") == few
    # a search adds two: its words as PostgreSQL reads them, the steps it found on the page
    assert _queries(client, "/traces/?label_source=human&q=container") == few + 2
    assert _queries(client, "/traces/?run=run-") == few


def test_search_finds_words_of_steps_and_observations_and_says_where(
    client_for, reviewer, project, make_trace
):  # fmt: skip
    oom = make_trace(project, task="Look at the web service")
    Step.objects.filter(trace=oom, index=2).update(observation="Killed process 4411 OOMKilled")
    typo = make_trace(project, task="Look at the db service")
    Step.objects.filter(trace=typo, index=0).update(is_error=True, error_type="PermissionDenied")
    thought = make_trace(project, task="Look at the cache")
    Step.objects.filter(trace=thought).update(content="the memory limit is too low")
    make_trace(project, task="Something else")
    client = client_for(reviewer)

    def found(query: str) -> list[int]:
        body = client.get("/traces/?" + query).content.decode()
        return [t.pk for t in (oom, typo, thought) if f'href="/traces/{t.pk}/"' in body]

    assert found("q=oomkill") == [oom.pk]  # a word beginning of an observation
    assert found("q=permissiondenied") == [typo.pk]  # an error type
    assert found("q=memory+limit") == [thought.pk]  # every word, in a step's content
    assert found("q=look") == [oom.pk, typo.pk, thought.pk]  # the task still counts
    body = client.get("/traces/?q=memory").content.decode()
    assert f'href="/traces/{thought.pk}/#step-0">found in 3 steps, first step 0</a>' in body
    assert "found in" not in client.get("/traces/?q=cache").content.decode()  # only the task


def test_the_run_id_finds_an_external_id_its_beginning_or_a_session(
    client_for, reviewer, project, make_trace
):  # fmt: skip
    first = make_trace(project, external_id="deploy-web-attempt-1")
    second = make_trace(project, external_id="deploy-web-attempt-2", session_id="sess-42")
    other = make_trace(project, external_id="other-deploy-web")
    client = client_for(reviewer)

    def found(run: str) -> set[int]:
        body = client.get("/traces/", {"run": run}).content.decode()
        return {t.pk for t in (first, second, other) if f'href="/traces/{t.pk}/"' in body}

    assert found("deploy-web-attempt-1") == {first.pk}
    assert found("deploy-web-") == {first.pk, second.pk}
    assert found("sess-42") == {second.pk}
    assert found("web") == set()  # a beginning, not any part


def test_the_step_search_reads_its_index(project, make_trace):
    from traces.selectors.trace_list import steps_matching, task_search_query

    make_trace(project)
    query = task_search_query("oomkilled")
    with connection.cursor() as cursor:
        # What a large table makes the planner do: no sequential scan, and no walk of another
        # index filtering every row (a GIN index is read by a bitmap scan).
        cursor.execute("SET enable_seqscan = off")
        cursor.execute("SET enable_indexscan = off")
        try:
            plan = str(steps_matching(query).explain())
        finally:
            cursor.execute("RESET enable_seqscan")
            cursor.execute("RESET enable_indexscan")

    assert "traces_step_search" in plan


def test_trace_content_is_escaped_in_the_list(client_for, reviewer, project, make_trace):
    make_trace(project, task='<script>alert("x")</script>', agent="<img src=x onerror=alert(1)>")

    body = client_for(reviewer).get("/traces/").content.decode()

    assert "<script>alert" not in body and "<img src=x" not in body
    assert "&lt;script&gt;" in body
