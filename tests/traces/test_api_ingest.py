"""POST /api/v1/traces and /traces/batch: storing, idempotency, every refusal."""

import json

import pytest
from django.test.utils import override_settings

from accounts.models import AuditEvent
from core import inputs
from tests.support.api import step, trajectory
from traces.models import Step, Trace

pytestmark = pytest.mark.django_db


def test_ingest_stores_trace_and_steps_in_order(api):
    response = api.post("traces", trajectory(steps=3))

    assert response.status_code == 201
    body = response.json()
    trace = Trace.objects.get(pk=body["id"])
    assert body["external_id"] == "run-1"
    assert body["review_status"] == "pending"  # tests run in a transaction: no hand-over yet
    assert [s.index for s in trace.steps.order_by("index")] == [0, 1, 2]
    assert trace.step_count == 3 and trace.tool_call_count == 3 and trace.tools == ["shell"]
    assert trace.is_complete


def test_ingest_derives_counts_tools_and_duration(api):
    body = trajectory(started_at="2026-11-01T10:00:00Z", ended_at="2026-11-01T10:00:42Z")
    body["steps"] = [
        step(0, kind="user_input", tool="", content="the site is down"),
        step(1, tool="docker_ps", is_error=True, error_type="Timeout"),
        step(2, tool="docker_logs"),
        step(3, tool="docker_ps"),
    ]
    trace = Trace.objects.get(pk=api.post("traces", body).json()["id"])

    assert trace.tools == ["docker_ps", "docker_logs"]
    assert (trace.step_count, trace.tool_call_count, trace.error_count) == (4, 3, 1)
    assert trace.duration_ms == 42_000


def test_steps_default_to_the_trace_agent_unless_attributed(api):
    body = trajectory(steps=2)
    body["steps"][1]["agent"] = "planner"
    trace_id = api.post("traces", body).json()["id"]

    agents = list(
        Step.objects.filter(trace_id=trace_id).order_by("index").values_list("agent", flat=True)
    )
    assert agents == ["ops-bot", "planner"]


def test_ingest_is_idempotent_on_external_id(api):
    first = api.post("traces", trajectory())
    again = api.post("traces", trajectory())

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    assert Trace.objects.count() == 1 and Step.objects.count() == 3


def test_same_external_id_with_other_content_is_a_conflict(api):
    api.post("traces", trajectory())
    response = api.post("traces", trajectory(task="something else"))

    assert response.status_code == 409
    assert "run-1" in response.json()["detail"]
    assert Trace.objects.get().task.startswith("Find out why")


def test_same_external_id_in_another_project_is_independent(api, make_project, make_key, api_for):
    other = api_for(make_key(make_project(), ("ingest",)))
    assert api.post("traces", trajectory()).status_code == 201
    assert other.post("traces", trajectory()).status_code == 201


def test_observation_summary_keeps_error_lines_and_raw_is_capped(api, settings):
    settings.HINDSIGHT_OBSERVATION_SUMMARY_CHARS = 40
    settings.HINDSIGHT_OBSERVATION_RAW_CAP = 500
    noise = "\n".join(f"INFO line {i} all good" for i in range(100))
    observation = noise + "\nERROR: connection refused to db:5432\n" + noise
    body = trajectory(steps=0)
    body["steps"] = [step(0, observation=observation, is_error=True)]
    trace_id = api.post("traces", body).json()["id"]

    stored = Step.objects.get(trace_id=trace_id)
    assert stored.observation.startswith("INFO line 0")
    assert "ERROR: connection refused to db:5432" in stored.observation
    assert len(stored.observation_raw) == 500 and stored.is_observation_truncated


def test_json_observations_and_arguments_are_kept(api):
    body = trajectory(steps=0)
    body["steps"] = [step(0, arguments={"pods": ["a", "b"]}, observation={"status": 503})]
    detail = api.get(f"traces/{api.post('traces', body).json()['id']}").json()

    assert detail["steps"][0]["arguments"] == {"pods": ["a", "b"]}
    assert detail["steps"][0]["observation_raw"] == '{"status":503}'


def test_ingest_writes_an_audit_event(api):
    trace_id = api.post("traces", trajectory()).json()["id"]

    event = AuditEvent.objects.get(action="trace.ingest")
    assert event.object_id == str(trace_id) and event.actor_api_key is not None
    assert event.after == {"external_id": "run-1", "steps": 3}


# ---------------------------------------------------------------------------- refusals


def test_malformed_json_is_400(api):
    response = api.post("traces", raw=b'{"external_id": ')
    assert response.status_code == 400
    assert "parse" in response.json()["detail"]


def test_schema_violations_are_422_naming_each_field(api):
    body = trajectory()
    body["external_id"] = ""
    body["steps"][1]["kind"] = "teleport"
    del body["task"]
    response = api.post("traces", body)

    assert response.status_code == 422
    locations = {tuple(e["loc"][2:]) for e in response.json()["detail"]}
    assert {("external_id",), ("task",), ("steps", 1, "kind")} <= locations


def test_unknown_fields_are_refused_by_name(api):
    response = api.post("traces", {**trajectory(), "step": []})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"][-1] == "step"


def test_duplicate_step_indexes_are_refused(api):
    body = trajectory(steps=2)
    body["steps"][1]["index"] = 0
    response = api.post("traces", body)
    assert response.status_code == 422
    assert "appears more than once" in json.dumps(response.json())


def test_a_tool_call_needs_a_tool(api):
    body = trajectory(steps=1)
    body["steps"][0]["tool"] = ""
    assert api.post("traces", body).status_code == 422


def test_end_before_start_is_refused(api):
    body = trajectory(started_at="2026-11-01T10:00:00Z", ended_at="2026-11-01T09:00:00Z")
    response = api.post("traces", body)
    assert response.status_code == 422
    assert "ended_at" in json.dumps(response.json())


def test_over_the_step_limit_is_refused_with_the_limit(api, settings):
    settings.HINDSIGHT_MAX_STEPS = 5
    response = api.post("traces", trajectory(steps=6))

    assert response.status_code == 413  # like an oversize body (README)
    assert "at most 5 steps" in json.dumps(response.json())
    assert not Trace.objects.exists()


@override_settings(HINDSIGHT_MAX_BODY_BYTES=2048)
def test_oversize_body_is_413(api):
    body = trajectory(steps=1)
    body["steps"][0]["observation"] = "x" * 5000
    response = api.post("traces", body)

    assert response.status_code == 413
    assert "2048" in response.json()["detail"]
    assert not Trace.objects.exists()


def test_nothing_is_half_written_when_a_step_breaks_a_database_rule(api, monkeypatch):
    # Validation refuses what PostgreSQL would (tests/hindsight_site/test_api_hostile_input.py);
    # with that check off, a NUL in the second step fails in the database, after the trace row
    # was written in the transaction.
    monkeypatch.setattr(inputs, "_all_storable", lambda value: True)
    body = trajectory(steps=2)
    body["steps"][1]["content"] = "a\u0000b"
    response = api.post("traces", body)

    assert response.status_code == 500 and "detail" in response.json()
    assert not Trace.objects.exists() and not Step.objects.exists()


# ---------------------------------------------------------------------------- batch


def test_batch_reports_each_item_and_one_bad_item_fails_only_itself(api):
    api.post("traces", trajectory("existing"))
    bad = trajectory("bad")
    bad["steps"][0]["kind"] = "nope"
    items = [
        trajectory("a"),
        bad,
        trajectory("existing"),
        trajectory("existing-other", task="x"),
        trajectory("a"),
        {"not": "a trace"},
    ]
    items[3]["external_id"] = "existing"
    response = api.post("traces/batch", {"traces": items})

    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["status"] for r in results] == [
        "created",
        "invalid",
        "duplicate",
        "conflict",
        "duplicate",
        "invalid",
    ]
    assert results[1]["external_id"] == "bad"
    assert results[1]["detail"][0]["loc"] == ["steps", 0, "kind"]
    assert Trace.objects.filter(external_id="a").get().step_count == 3
    assert Trace.objects.count() == 2


def test_batch_creates_all_in_bulk(api):
    items = [trajectory(f"run-{i}", steps=20) for i in range(30)]
    results = api.post("traces/batch", {"traces": items}).json()["results"]

    assert {r["status"] for r in results} == {"created"}
    assert Trace.objects.count() == 30 and Step.objects.count() == 600
    assert AuditEvent.objects.filter(action="trace.ingest").count() == 30


def test_batch_over_the_limit_is_refused(api, settings):
    settings.HINDSIGHT_MAX_BATCH = 2
    response = api.post("traces/batch", {"traces": [trajectory(f"r{i}") for i in range(3)]})
    assert response.status_code == 422
    assert "at most 2" in json.dumps(response.json())


def test_step_times_that_contradict_the_sent_start_leave_the_end_unknown(api):
    body = trajectory("early-steps")
    body["started_at"] = "2026-01-02T00:00:00Z"
    body["steps"][0]["started_at"] = "2026-01-01T00:00:00Z"  # a day before the run began

    response = api.post("traces", body)

    assert response.status_code == 201
    trace = Trace.objects.get(external_id="early-steps")
    assert trace.ended_at is None and trace.duration_ms is None
