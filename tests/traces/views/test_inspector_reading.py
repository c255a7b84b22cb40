"""The inspector reads well on long trajectories (issue 14, points 5-8), over HTTP: long parts
fold behind a one-line preview, observations are labelled and JSON is indented, LLM messages are
Markdown without raw HTML, step filters and jumps, and a review panel without repeats."""

import json
import re
from typing import Any

import pytest

from accounts.models import Membership
from tests.support.api import ApiClient
from tests.support.personas import make_user
from traces.models import Review, Step, Trace
from traces.services import labels

# ---------------------------------------------------------------------------- the trajectory

SYSTEM_PROMPT = "\n\n".join(
    f"Rule {n}: you are the operations assistant of the platform team. Before you change "
    "anything, read the container logs, the events and the resource limits, and say which "
    "of them you relied on. Never restart a production service without a reason you can name."
    for n in range(1, 21)
)  # about 5 KB, the size that opened every trajectory at full height
PROMPT = "Find out why the web container keeps restarting, and fix it if it is safe."
HOSTILE = "<script>window.__xss='md'</script> <img src=x onerror=\"window.__xss='img'\">"
MARKDOWN = (
    "# Plan\n\nI will **read the logs** first, then:\n\n"
    "1. check `docker inspect web`\n2. compare the memory limit\n\n"
    "See [the runbook](https://example.com/runbook) and [this](javascript:alert(1)).\n\n"
    f"{HOSTILE}\n"
)
JSON_OBSERVATION = {
    "container": "web",
    "state": {"status": "restarting", "exit_code": 137, "oom_killed": True},
    "note": HOSTILE,
}
LONG_REASONING = " ".join(
    f"Thought {n}: the exit code 137 means the kernel killed the process, so the limit matters."
    for n in range(1, 15)
)
LONG_LOG = "\n".join(
    f"2026-12-01T10:00:{n:02d} web worker {n} started, memory 480MB" for n in range(40)
)
BIG_JSON = {"pods": [{"name": f"web-{n}", "restarts": n, "memory": "512Mi"} for n in range(20)]}


def reading_payload(external_id: str = "long-run-1") -> dict[str, Any]:
    """A trajectory with every long-content case: the real ingest API takes it."""
    steps: list[dict[str, Any]] = [
        {"index": 0, "kind": "system", "content": SYSTEM_PROMPT},
        {"index": 1, "kind": "user_input", "content": PROMPT},
        {"index": 2, "kind": "llm_reasoning", "content": MARKDOWN},
        {"index": 3, "kind": "tool_call", "tool": "docker_inspect",
         "arguments": {"container": "web"}, "observation": JSON_OBSERVATION},
        {"index": 4, "kind": "tool_call", "tool": "shell", "arguments": {"cmd": "docker logs web"},
         "observation": "Killed\nERROR: exit code 137 (OOMKilled)", "is_error": True,
         "error_type": "OOMKilled"},
        {"index": 5, "kind": "user_input", "content": PROMPT},  # the prompt again: a repeat
        {"index": 6, "kind": "llm_reasoning", "content": LONG_REASONING},
        {"index": 7, "kind": "tool_call", "tool": "shell", "arguments": {"cmd": "docker logs"},
         "observation": LONG_LOG, "observation_summary": LONG_LOG},
        {"index": 8, "kind": "tool_call", "tool": "kubectl", "arguments": {"get": "pods"},
         "observation": BIG_JSON, "observation_summary": json.dumps(BIG_JSON)},
        {"index": 9, "kind": "tool_call", "tool": "docker_update",
         "arguments": {"container": "web", "memory": "1g"}, "observation": "web"},
    ]  # fmt: skip
    return {
        "external_id": external_id, "agent": "ops-bot", "environment": ["docker"],
        "task": "Find out why the web container keeps restarting", "outcome": "success",
        "task_type": "operation", "steps": steps,
    }  # fmt: skip


def ingest_reading_trace(api: ApiClient, *, user, other_user, external_id: str = "long-run-1"):
    """Ingest through the API, then: machine labels on 0-7 (8 and 9 stay unlabelled), `user`
    relabels step 3, `other_user` step 4, step 6 accepted as is by `user`; three reviews that
    repeat one goal and one improvement."""
    response = api.post("traces", reading_payload(external_id))
    assert response.status_code in (200, 201), response.content
    trace = Trace.objects.get(pk=response.json()["id"])
    Step.objects.filter(trace=trace, index__lte=7).update(
        label="necessary", label_source="llm", label_reason="the machine said so", label_version=1
    )
    Trace.objects.filter(pk=trace.pk).update(review_status=Trace.ReviewStatus.REVIEWED)
    goal = "Find the restart cause of the web container"
    improvement = "read the container's exit code before its logs"
    for kind, start, end in (("full", 0, 9), ("local", 3, 5), ("local", 4, 6)):
        Review.objects.create(
            trace=trace, kind=kind, trigger="long_enough" if kind == "full" else "two_failures",
            window_start=start, window_end=end, reviewer="llm", prompt_version="v1", goal=goal,
            execution_path=["inspect", "logs"], improvements=[improvement, improvement],
            key_decisions=["looked at the exit code"], effective_steps=[0, 3],
            ineffective_steps=[4],
            experience="When a container restarts, first read its exit code.",
            labels={str(i): {"label": "necessary", "reason": "r"} for i in range(start, end + 1)},
        )  # fmt: skip
    labels.step_relabel(
        trace=trace, index=3, label="redundant", reason="mine", expected_version=1, user=user
    )
    labels.step_relabel(
        trace=trace, index=4, label="failed", reason="theirs", expected_version=1, user=other_user
    )
    labels.trace_accept_all(trace=trace, seen_versions={6: 1}, user=user)
    return trace


@pytest.fixture
def colleague(project):
    user = make_user("carl")
    Membership.objects.create(project=project, user=user, role=Membership.Role.REVIEWER)
    return user


@pytest.fixture
def reading_trace(api, reviewer, colleague) -> Trace:
    return ingest_reading_trace(api, user=reviewer, other_user=colleague)


def _page(client, trace: Trace, query: str = "") -> str:
    response = client.get(f"/traces/{trace.pk}/{query}")
    assert response.status_code == 200
    return response.content.decode()


def _step(body: str, index: int) -> str:
    """The markup of one step item (and, for the last one, the rest of the page)."""
    found = [part for part in body.split('<li class="step') if f'id="step-{index}"' in part[:40]]
    assert found, f"step {index} not found"
    return '<li class="step' + found[0]


def _fold(step_html: str, key: str) -> str:
    match = re.search(rf'<details class="fold fold-{key}" data-fold="{key}"( open)?>.*?</summary>',
                      step_html, re.S)  # fmt: skip
    assert match, f"no {key} fold"
    return match.group()


def _preview(fold_html: str) -> str:
    return re.search(r'<span class="preview"><bdi>(.*?)</bdi></span>', fold_html, re.S).group(1)


# ---------------------------------------------------------------------------- point 5: folding


def test_the_5_kb_system_prompt_starts_folded_behind_one_line(
    client_for, reviewer, reading_trace
):  # fmt: skip
    step = _step(_page(client_for(reviewer), reading_trace), 0)

    fold = _fold(step, "content")
    assert " open>" not in fold
    assert '<span class="part">System prompt</span>' in fold
    assert 5000 < len(SYSTEM_PROMPT) < 5500 and "5.1 K chars · 39 lines" in fold
    preview = _preview(fold)
    assert "\n" not in preview and len(preview) <= 101 and preview.endswith("…")
    # cut at a word boundary: what precedes the ellipsis is whole words of the prompt
    words = preview[:-1]
    assert " ".join(SYSTEM_PROMPT.split()).startswith(words + " ")
    assert SYSTEM_PROMPT.split("\n")[0][:40] in step  # the whole text is still on the page


def test_a_repeated_prompt_is_folded_and_points_at_its_first_occurrence(
    client_for, reviewer, reading_trace
):  # fmt: skip
    body = _page(client_for(reviewer), reading_trace)

    assert 'data-fold="content"' not in _step(body, 1)  # the first time: shown as is
    repeat = _step(body, 5)
    fold = _fold(repeat, "content")
    assert " open>" not in fold and "repeats step 1" in fold
    assert _preview(fold) == PROMPT  # short: the preview is the whole prompt, no ellipsis
    assert '<a href="#step-1">step 1</a>' in repeat


def test_long_reasoning_and_observations_fold_but_an_errors_observation_stays_open(
    client_for, reviewer, reading_trace
):  # fmt: skip
    body = _page(client_for(reviewer), reading_trace)

    reasoning = _fold(_step(body, 6), "content")
    assert " open>" not in reasoning and '<span class="part">LLM message</span>' in reasoning
    assert _preview(reasoning).endswith("…")
    long_log = _fold(_step(body, 7), "obs")
    assert " open>" not in long_log and "40 lines" in long_log
    assert " open>" in _fold(_step(body, 4), "obs")  # an error: open, however long
    assert " open>" in _fold(_step(body, 9), "obs")  # short: open
    assert 'data-fold="content"' not in _step(body, 2)  # a short LLM message: shown


# ---------------------------------------------------------------------------- point 6: labels


def test_observations_are_labelled_and_json_is_indented(client_for, reviewer, reading_trace):
    body = _page(client_for(reviewer), reading_trace)

    step = _step(body, 3)
    assert '<span class="part">Arguments</span>' in step
    fold = _fold(step, "obs")
    assert '<span class="part">Observation</span> <span class="badge fmt">JSON</span>' in fold
    assert '<pre class="obs json"><code>{\n  &quot;container&quot;: &quot;web&quot;,\n' in step
    assert "Full observation: formatted / raw" in step
    assert "&lt;script&gt;window.__xss=" in step and "&lt;img src=x onerror=" in step
    assert "<script" not in step and "<img" not in step
    big = _fold(_step(body, 8), "obs")
    assert "badge fmt" in big and " open>" not in big  # 20 pods indented: long, folded
    assert "Raw observation" in _step(body, 7)  # plain text keeps its name


def test_the_raw_view_of_a_json_observation_has_formatted_and_as_sent(
    client_for, reviewer, reading_trace
):  # fmt: skip
    client = client_for(reviewer)

    partial = client.get(
        f"/traces/{reading_trace.pk}/steps/3/raw/", headers={"HX-Request": "true"}
    ).content.decode()
    text = client.get(f"/traces/{reading_trace.pk}/steps/4/raw/", headers={"HX-Request": "true"})

    assert partial.startswith('<div class="json-views"><details class="json-formatted"')
    assert "<summary>Formatted</summary>" in partial and "Raw (as sent)" in partial
    assert "&quot;oom_killed&quot;: true" in partial  # indented
    assert "&quot;oom_killed&quot;:true" in partial  # as sent (compact)
    assert "<script>" not in partial and "<img" not in partial
    assert "&lt;script&gt;" in partial
    assert text.content.decode().startswith('<pre class="raw-text">')


def test_markdown_in_an_llm_message_renders_and_its_html_is_text(
    client_for, reviewer, reading_trace
):  # fmt: skip
    step = _step(_page(client_for(reviewer), reading_trace), 2)

    assert '<div class="content markdown" dir="auto"><h4>Plan</h4>' in step
    assert "<strong>read the logs</strong>" in step and "<ol>" in step
    assert "<code>docker inspect web</code>" in step
    assert (
        '<a href="https://example.com/runbook" rel="nofollow noopener noreferrer">the runbook</a>'
    ) in step
    assert "javascript:" not in step.split('class="content markdown"')[1].split("href=")[0]
    assert "[this](javascript:alert(1))" in step  # not a link: shown as written
    assert "&lt;script&gt;window.__xss=" in step and "&lt;img src=x onerror=" in step
    assert "<script" not in step and "<img" not in step


def test_the_kind_says_llm_not_llm_in_title_case(client_for, reviewer, reading_trace):
    body = _page(client_for(reviewer), reading_trace)

    assert '<span class="kind kind-llm_reasoning">LLM</span>' in body
    assert "Llm" not in body
    assert '<span class="kind kind-tool_call">Tool call</span>' in body


# ---------------------------------------------------------------------------- point 7: filters


def test_the_step_filters_count_and_mark_the_steps(client_for, reviewer, reading_trace):
    body = _page(client_for(reviewer), reading_trace)

    assert '<ol class="steps" data-show="" ' in body
    counts = dict(re.findall(r'data-count="(\w+)">(\d+)<', body))
    assert counts == {
        "all": "10", "tools": "5", "errors": "1", "mine": "1", "low": "0", "blamed": "0",
    }  # fmt: skip
    assert body.count('data-kind="tool_call"') == 5
    assert f'href="/traces/{reading_trace.pk}/?show=errors" data-filter="errors"' in body
    assert 'data-filter="" aria-current="true"' in body


def test_my_changes_are_the_labels_the_signed_in_user_set(
    client_for, reviewer, colleague, reading_trace
):  # fmt: skip
    mine = _page(client_for(reviewer), reading_trace)
    theirs = _page(client_for(colleague), reading_trace)

    assert [i for i in range(10) if " data-mine " in _step(mine, i)] == [3]  # not 6 (accepted)
    assert [i for i in range(10) if " data-mine " in _step(theirs, i)] == [4]


def test_a_filter_in_the_query_works_without_javascript(client_for, reviewer, reading_trace):
    client = client_for(reviewer)

    errors = _page(client, reading_trace, "?show=errors")
    unknown = _page(client, reading_trace, "?show=<script>")

    assert '<ol class="steps" data-show="errors" ' in errors
    assert 'data-filter="errors" aria-current="true"' in errors
    assert "Showing 1 of 10 steps: errors." in errors
    assert errors.count('<li class="step') == 1  # the server draws the steps the filter shows
    # ... and "Accept all" still confirms every machine label, drawn or not
    assert 'name="versions" value="0:1,1:1,2:1,5:1,7:1"' in errors
    assert '<ol class="steps" data-show="" ' in unknown and "Showing" not in unknown


def test_the_jump_links_lead_to_the_first_error_and_unchecked_step(
    client_for, reviewer, reading_trace
):  # fmt: skip
    body = _page(client_for(reviewer), reading_trace)

    assert '<a href="#step-4" data-jump="error">Next error <kbd>e</kbd></a>' in body
    # unchecked: no label, or a machine label no person confirmed (steps 3, 4, 6 are people's)
    assert (
        '<a href="#step-0" data-jump="unchecked"' in body and "Next unchecked <kbd>n</kbd>" in body
    )
    assert 'data-unchecked="0 1 2 5 7 8 9"' in body
    assert 'data-jump="low"' in body and "Next low confidence <kbd>l</kbd>" in body
    assert "<kbd>f</kbd> / <kbd>F</kbd></td><td>step filter" in body  # in the key help


def test_low_confidence_and_blamed_steps_are_filters_and_jumps(
    client_for, reviewer, reading_trace
):  # fmt: skip
    Step.objects.filter(trace=reading_trace, index__in=[2, 7]).update(label_confidence=0.3)
    Step.objects.filter(trace=reading_trace, index=7).update(label="failed")
    client = client_for(reviewer)

    body = _page(client, reading_trace)
    low = _page(client, reading_trace, "?show=low")
    blamed = _page(client, reading_trace, "?show=blamed")

    assert 'data-count="low">2<' in body and 'data-count="blamed">1<' in body
    assert '<a href="#step-2" data-jump="low"' in body
    assert " data-low " in _step(body, 2) and " data-blamed " in _step(body, 7)
    assert [i for i in range(10) if f'id="step-{i}"' in low] == [2, 7]
    assert "Showing 2 of 10 steps: machine labels of low confidence." in low
    assert [i for i in range(10) if f'id="step-{i}"' in blamed] == [7]


def test_a_relabelled_step_keeps_its_marks(client_for, reviewer, reading_trace):
    response = client_for(reviewer).post(
        f"/traces/{reading_trace.pk}/steps/5/label/",
        {"label": "redundant", "version": "1"},
        headers={"HX-Request": "true"},
    )

    step = response.content.decode()
    assert response.status_code == 200
    assert step.startswith('<li class="step" id="step-5"') and " data-mine " in step
    assert "repeats step 1" in step  # the partial alone still knows it is a repeat


# ---------------------------------------------------------------------------- point 8: review


def test_the_review_panel_shows_the_goal_and_an_improvement_once(
    client_for, reviewer, reading_trace
):  # fmt: skip
    body = _page(client_for(reviewer), reading_trace)

    panel = body.split('<aside class="review-panel"')[1].split("</aside>")[0]
    assert panel.count("Find the restart cause of the web container") == 1
    assert panel.count("read the container&#x27;s exit code before its logs") == 1
    assert panel.count("When a container restarts, first read its exit code.") == 1
    assert panel.count('<article class="review">') == 3
    # the full review listed its improvement twice; each local review repeats all five
    assert "1 item already shown above left out." in panel
    assert panel.count("5 items already shown above left out.") == 2


def test_the_page_still_runs_a_fixed_number_of_queries(client_for, reviewer, api, colleague):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = client_for(reviewer)
    trace = ingest_reading_trace(api, user=reviewer, other_user=colleague)
    with CaptureQueriesContext(connection) as one:
        _page(client, trace)
    with CaptureQueriesContext(connection) as filtered:
        _page(client, trace, "?show=mine")

    assert len(filtered) <= len(one) <= 12  # a window of steps without text skips one
