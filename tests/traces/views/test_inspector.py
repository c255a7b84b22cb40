"""The trajectory inspector: header, timeline, review panel, raw observation, constant queries."""

import re

from django.db import connection
from django.test.utils import CaptureQueriesContext

from traces.models import Step


def _get(client, path: str, **headers):
    return client.get(path, headers=headers or None)


def test_it_shows_the_header_steps_labels_and_review(client_for, reviewer, project, make_trace):
    trace = make_trace(project, steps=3, review=True, outcome="failure")

    response = client_for(reviewer).get(f"/traces/{trace.pk}/")

    assert response.status_code == 200
    body = response.content.decode()
    assert trace.task in body
    assert "outcome-failure" in body and "review: reviewed" in body
    assert body.count('<li class="step') == 3
    assert "is-error" in body  # step 1 failed
    assert "&quot;cmd&quot;: &quot;docker logs web --tail 2&quot;" in body  # pretty JSON, escaped
    assert 'data-label="necessary"' in body and "llm" in body
    assert "the machine said so" in body
    assert "Find the restart cause" in body and "read the logs first" in body
    assert "step: 1 · advice: skip the second look" in body
    assert "When a container restarts, first read its last logs." in body
    assert "find the restart cause" in body  # the step's context snapshot
    assert "121 ms" in body


def test_heuristic_labels_are_marked_as_such(client_for, reviewer, project, make_trace):
    trace = make_trace(project, labelled="heuristic")

    body = client_for(reviewer).get(f"/traces/{trace.pk}/").content.decode()

    assert 'class="badge heuristic"' in body


def test_a_skipped_trace_says_why(client_for, reviewer, project, make_trace):
    trace = make_trace(project, labelled=None)
    trace.review_status, trace.review_status_reason = "skipped", "only 3 events"
    trace.save()

    body = client_for(reviewer).get(f"/traces/{trace.pk}/").content.decode()

    assert "skipped: only 3 events" in body
    assert "unlabelled" in body
    assert "Accept all" not in body


def test_another_projects_trace_is_not_found(client_for, outsider, project, make_trace):
    trace = make_trace(project)

    assert client_for(outsider).get(f"/traces/{trace.pk}/").status_code == 404


def test_anonymous_is_sent_to_login(client, project, make_trace):
    trace = make_trace(project)

    assert client.get(f"/traces/{trace.pk}/").url.startswith("/accounts/login/")


def test_the_raw_observation_comes_on_demand(client_for, reviewer, project, make_trace):
    trace = make_trace(project)
    client = client_for(reviewer)

    partial = client.get(f"/traces/{trace.pk}/steps/1/raw/", headers={"HX-Request": "true"})
    plain = client.get(f"/traces/{trace.pk}/steps/1/raw/")

    assert partial.content.decode().startswith('<pre class="raw-text">')
    assert "ERROR: exit code 1" in partial.content.decode()
    assert plain["Content-Type"].startswith("text/plain")
    assert plain.content == b"line 1\nERROR: exit code 1"


def test_the_raw_observation_of_another_project_is_not_found(
    client_for, outsider, project, make_trace
):
    trace = make_trace(project)

    assert client_for(outsider).get(f"/traces/{trace.pk}/steps/0/raw/").status_code == 404


def test_the_inspector_runs_the_same_queries_for_5_and_50_steps(
    client_for, reviewer, project, make_trace
):
    client = client_for(reviewer)
    small = make_trace(project, steps=5, review=True)
    large = make_trace(project, steps=50, review=True)
    Step.objects.filter(trace=large, index__lt=10).update(
        labelled_by=reviewer, label_source="human"
    )

    def count(trace) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(f"/traces/{trace.pk}/").status_code == 200
        return len(captured)

    assert count(small) == count(large)
    assert count(large) <= 12


def test_invisible_and_direction_characters_are_shown_as_code_points(
    client_for, reviewer, project, make_trace
):
    trace = make_trace(project, task="invoice\u202efdp.exe\u200b")
    Step.objects.filter(trace=trace, index=0).update(content="a\u2066b", observation="c\ufeffd")

    body = client_for(reviewer).get(f"/traces/{trace.pk}/").content.decode()

    assert "invoice[U+202E]fdp.exe[U+200B]" in body
    assert "a[U+2066]b" in body and "c[U+FEFF]d" in body
    assert "\u202e" not in body


# ---------------------------------------------------------------------------- long runs: a window


def _indexes(body: str) -> list[int]:
    return [int(i) for i in re.findall(r'<li class="step[^"]*" id="step-(\d+)"', body)]


def test_a_long_run_draws_a_window_of_steps_and_links_to_the_rest(
    client_for, reviewer, project, make_trace
):  # fmt: skip
    trace = make_trace(project, steps=130)
    client = client_for(reviewer)

    page = client.get(f"/traces/{trace.pk}/").content.decode()
    later = client.get(f"/traces/{trace.pk}/?after=49", headers={"HX-Request": "true"})
    last = client.get(f"/traces/{trace.pk}/?after=99", headers={"HX-Request": "true"})
    earlier = client.get(f"/traces/{trace.pk}/?before=100", headers={"HX-Request": "true"})
    around = client.get(f"/traces/{trace.pk}/?at=120", headers={"HX-Request": "true"})

    assert _indexes(page) == list(range(50))
    assert f'href="/traces/{trace.pk}/?after=49"' in page  # without JS: the next page of steps
    assert 'data-count="all">130<' in page and 'data-errors="1"' in page
    assert "HX-Request" in later["Vary"]
    body = later.content.decode()
    assert _indexes(body) == list(range(50, 100)) and "<html" not in body
    assert f'hx-get="/traces/{trace.pk}/?after=99"' in body and "before=" not in body
    assert _indexes(last.content.decode()) == list(range(100, 130))
    assert "steps-more" not in last.content.decode()  # the end
    assert _indexes(earlier.content.decode()) == list(range(50, 100))
    assert "?before=50" in earlier.content.decode() and "after=" not in earlier.content.decode()
    body = around.content.decode()
    assert _indexes(body) == list(range(115, 130))  # a few steps of context above the one asked
    assert "?before=115" in body and "after=" not in body


def test_a_filtered_window_holds_the_filtered_steps_only(client_for, reviewer, project, make_trace):
    trace = make_trace(project, steps=130)
    Step.objects.filter(trace=trace, index__in=[3, 70, 128]).update(is_error=True)

    body = client_for(reviewer).get(f"/traces/{trace.pk}/?show=errors").content.decode()

    assert _indexes(body) == [1, 3, 70, 128]
    assert "Showing 4 of 130 steps: errors." in body and "steps-more" not in body


def test_a_window_of_another_projects_trace_is_not_found(
    client_for, outsider, project, make_trace
):  # fmt: skip
    trace = make_trace(project, steps=60)

    response = client_for(outsider).get(
        f"/traces/{trace.pk}/?after=10", headers={"HX-Request": "true"}
    )

    assert response.status_code == 404


def test_a_malformed_window_position_shows_the_first_steps(
    client_for, reviewer, project, make_trace
):  # fmt: skip
    trace = make_trace(project, steps=60)

    body = client_for(reviewer).get(f"/traces/{trace.pk}/?after=-3&at=x").content.decode()

    assert _indexes(body) == list(range(50))


def test_the_inspector_runs_the_same_queries_for_60_and_600_steps(
    client_for, reviewer, project, make_trace
):  # fmt: skip
    client = client_for(reviewer)
    short, long = make_trace(project, steps=60), make_trace(project, steps=600)

    def count(trace, query: str = "", **headers) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(f"/traces/{trace.pk}/{query}", headers=headers).status_code == 200
        return len(captured)

    assert count(short) == count(long)
    partial = {"HX_Request": "true"}
    assert count(short, "?after=10", **partial) == count(long, "?after=300", **partial)


# ---------------------------------------------------------------------------- run details


def test_an_imported_chat_shows_its_model_tokens_and_system_prompt(client_for, reviewer, api):
    hostile = "You are ops. <script>window.__xss=1</script>"
    response = api.post("traces/import", {
        "format": "openai", "external_id": "chat-9", "agent": "ops-bot", "outcome": "success",
        "metadata": {"model": "gpt-4o-mini", "usage": {"prompt_tokens": 1200,
                     "completion_tokens": 80, "total_tokens": 1280}, "team": "infra"},
        "messages": [
            {"role": "system", "content": hostile},
            {"role": "user", "content": "Why does web restart?"},
            {"role": "assistant", "content": "It is OOMKilled."},
        ],
    })  # fmt: skip
    assert response.status_code == 201, response.content

    body = client_for(reviewer).get(f"/traces/{response.json()['id']}/").content.decode()

    details = body.split('id="run-details"')[1].split('class="trace-actions"')[0]
    assert "<code><bdi>gpt-4o-mini</bdi></code>" in details
    assert "1200 input · 80 output · 1280 total" in details
    assert "openai transcript" in details
    assert "You are ops. &lt;script&gt;window.__xss=1&lt;/script&gt;" in details
    assert "<script>window.__xss" not in body
    assert "&quot;team&quot;: &quot;infra&quot;" in details  # the rest of the metadata
    assert "gpt-4o-mini · 1,200 input tokens · 80 output tokens" in details  # the one-line gist


def test_models_named_by_the_llm_steps_are_shown(client_for, reviewer, project, make_trace):
    trace = make_trace(project, steps=3)
    Step.objects.filter(trace=trace).update(kind="llm_reasoning", arguments={"model": "o3"})
    Step.objects.filter(trace=trace, index=2).update(arguments={"model": "gpt-4.1"})

    body = client_for(reviewer).get(f"/traces/{trace.pk}/").content.decode()

    assert "<code><bdi>o3</bdi></code>, <code><bdi>gpt-4.1</bdi></code>" in body


def test_a_run_without_metadata_says_what_was_not_sent(client_for, reviewer, project, make_trace):
    trace = make_trace(project)

    body = client_for(reviewer).get(f"/traces/{trace.pk}/").content.decode()

    details = body.split('id="run-details"')[1].split('class="trace-actions"')[0]
    assert details.count("not sent") == 2 and "System prompt" not in details
