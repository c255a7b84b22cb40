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
    assert _queries(client, "/traces/?label_source=human&q=container") == few


def test_trace_content_is_escaped_in_the_list(client_for, reviewer, project, make_trace):
    make_trace(project, task='<script>alert("x")</script>', agent="<img src=x onerror=alert(1)>")

    body = client_for(reviewer).get("/traces/").content.decode()

    assert "<script>alert" not in body and "<img src=x" not in body
    assert "&lt;script&gt;" in body
