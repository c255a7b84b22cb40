"""Two real runs of one task, reviewed over the API: the failure's lesson never forbids the call
that worked in its task's success, and keeps saying so when a relabel rebuilds it."""

import pytest

from experiences.models import Experience
from hindsight_site.review_tasks import rederive_trace, review_trace

pytestmark = pytest.mark.django_db

TASK = "Subscribe ana@example.com to the newsletter on the shop's front page"


def subscribe(external_id: str, field: str, outcome: str) -> dict:
    """A web agent that types the address into a field, then clicks Subscribe."""
    worked = field == "input#email"
    steps = [
        {"index": 0, "kind": "user_input", "content": TASK},
        {"index": 1, "kind": "tool_call", "tool": "type",
         "arguments": {"selector": field, "text": "ana@example.com"}, "observation": "typed"},
        {"index": 2, "kind": "tool_call", "tool": "click",
         "arguments": {"selector": "button#subscribe"},
         "observation": "Thanks, you are subscribed" if worked else "Error: email is required",
         "is_error": not worked},
    ]  # fmt: skip
    return {"external_id": external_id, "agent": "web-bot", "task": TASK, "outcome": outcome,
            "steps": steps}  # fmt: skip


def test_the_failed_click_that_worked_in_the_task_s_success_is_said_to_have_failed(
    api_for, project, make_key
):
    client = api_for(make_key(project, ("ingest",)))
    for body in (subscribe("ok", "input#email", "success"),
                 subscribe("bad", "input#name", "failure")):  # fmt: skip
        response = client.post("traces", body)
        assert response.status_code == 201, response.json()
        assert review_trace(response.json()["id"]) == "reviewed"
    lost = Experience.objects.get(kind="episode", polarity="failure")
    assert 'do not click "button#subscribe"' not in lost.advice, lost.advice
    assert 'click "button#subscribe" failed (it returned "Error: email is required")' in (
        lost.advice
    )
    assert lost.advice.endswith('"button#subscribe" (that worked in another run of this task).')

    # A relabel rebuilds the advice from the labels: the contrast and its reading stay.
    said = lost.advice
    (trace_id,) = lost.sources.order_by("id").values_list("trace_id", flat=True)[:1]
    rederive_trace(trace_id, "the project now knows more of its tools (test)")
    lost.refresh_from_db()
    assert lost.advice == said
