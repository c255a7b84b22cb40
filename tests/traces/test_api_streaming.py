"""Streamed trajectories: open, append (in order, idempotent), complete."""

import pytest

from tests.support.api import step
from traces.models import Trace
from traces.services.review_queue import trace_enqueue_stale

pytestmark = pytest.mark.django_db

HEADER = {"external_id": "live-1", "agent": "ops-bot", "task": "Rotate the TLS certificates"}


@pytest.fixture
def opened(api) -> int:
    response = api.post("traces/open", HEADER)
    assert response.status_code == 201
    return response.json()["id"]


def test_open_trace_is_visible_as_incomplete(api, opened):
    detail = api.get(f"traces/{opened}").json()
    assert detail["is_complete"] is False and detail["review_status"] == "pending"


def test_open_is_idempotent_and_conflicts_on_other_content(api, opened):
    assert api.post("traces/open", HEADER).json()["id"] == opened
    assert api.post("traces/open", {**HEADER, "task": "other"}).status_code == 409


def test_steps_append_in_order_and_resending_is_a_no_op(api, opened):
    api.post(f"traces/{opened}/steps", {"steps": [step(0), step(1)]})
    again = api.post(f"traces/{opened}/steps", {"steps": [step(1), step(2, tool="kubectl")]})

    assert again.status_code == 200
    trace = Trace.objects.get(pk=opened)
    assert trace.step_count == 3 and trace.tools == ["shell", "kubectl"]


def test_a_gap_in_step_indexes_is_refused(api, opened):
    response = api.post(f"traces/{opened}/steps", {"steps": [step(1)]})
    assert response.status_code == 409
    assert "expected index 0" in response.json()["detail"]


def test_a_resent_step_with_other_content_is_refused(api, opened):
    api.post(f"traces/{opened}/steps", {"steps": [step(0)]})
    response = api.post(f"traces/{opened}/steps", {"steps": [step(0, tool="rm")]})
    assert response.status_code == 409


def test_open_traces_are_never_handed_to_review(api, opened, settings):
    settings.HINDSIGHT_REENQUEUE_AFTER_SECONDS = 1
    Trace.objects.update(review_status_at="2000-01-01T00:00:00Z")
    assert trace_enqueue_stale() == 0


def test_complete_sets_outcome_and_is_idempotent(api, opened):
    api.post(f"traces/{opened}/steps", {"steps": [step(0)]})
    done = api.post(f"traces/{opened}/complete", {"outcome": "success", "final_answer": "rotated"})
    again = api.post(f"traces/{opened}/complete", {"outcome": "success"})
    different = api.post(f"traces/{opened}/complete", {"outcome": "failure"})

    assert done.status_code == 200 and done.json()["is_complete"] is True
    assert again.status_code == 200
    assert different.status_code == 409
    assert Trace.objects.get(pk=opened).final_answer == "rotated"


def test_no_steps_after_completion(api, opened):
    api.post(f"traces/{opened}/complete", {"outcome": "partial"})
    response = api.post(f"traces/{opened}/steps", {"steps": [step(0)]})
    assert response.status_code == 409
    assert "complete" in response.json()["detail"]


def test_streamed_steps_respect_the_step_limit(api, opened, settings):
    settings.HINDSIGHT_MAX_STEPS = 2
    api.post(f"traces/{opened}/steps", {"steps": [step(0), step(1)]})
    response = api.post(f"traces/{opened}/steps", {"steps": [step(2)]})
    assert response.status_code == 413
    assert "at most 2 steps" in response.json()["detail"]


def test_complete_derives_duration_from_step_times(api, opened):
    api.post(
        f"traces/{opened}/steps",
        {
            "steps": [
                step(0, started_at="2026-11-01T10:00:00Z"),
                step(1, started_at="2026-11-01T10:00:30Z", duration_ms=5000),
            ]
        },
    )
    api.post(f"traces/{opened}/complete", {"outcome": "success"})
    assert Trace.objects.get(pk=opened).duration_ms == 35_000
