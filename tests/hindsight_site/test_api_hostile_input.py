"""No input gives a 5xx: what the database or the pipeline cannot hold is a 4xx naming the field.

Each case once gave an HTML 500 (PostgreSQL refuses NUL in text and jsonb, integers beyond the
column, time-zone offsets beyond ±15:59; lone surrogates do not encode; deep nesting broke
recursion; NaN passed validation). Now: 422 `{"detail": [{"loc": [...], "type": ...}]}` at the
offending value, and nothing stored. core/inputs.py holds the rules.
"""

import json
import typing
from typing import Any

import pytest
from pydantic import BaseModel

from core import inputs
from experiences.models import RecallLog
from hindsight_site.api import api
from tests.support.api import trajectory
from traces.models import Step, Trace

pytestmark = pytest.mark.django_db

NUL = "a\u0000b"
SURROGATE = "a\ud800b"


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"a": value}
    return value


def with_step(field: str, value: Any, index: int = 1) -> dict[str, Any]:
    body = trajectory(steps=3)
    body["steps"][index][field] = value
    return body


def errors_of(response) -> list[tuple[tuple, str]]:
    assert response["Content-Type"].startswith("application/json"), response.content[:200]
    return [(tuple(e["loc"]), e["type"]) for e in response.json()["detail"]]


def refused_at(response, loc: tuple, kind: str, *, status: int = 422) -> tuple[bool, list]:
    """Whether the answer is `status` with an error of `kind` at `loc` (or inside it)."""
    assert response.status_code == status, response.content[:500]
    found = errors_of(response)
    return any(where[: len(loc)] == loc and t == kind for where, t in found), found


# ---------------------------------------------------------------------------- POST /traces

TRACE_CASES = [
    pytest.param(trajectory(task=NUL), ("task",), "text_nul", id="nul-in-task"),
    pytest.param(trajectory(external_id=NUL), ("external_id",), "text_nul", id="nul-in-id"),
    pytest.param(
        with_step("observation", NUL), ("steps", 1, "observation"), "text_nul", id="nul-in-obs"
    ),
    pytest.param(
        with_step("arguments", {"cmd": {"flags": ["-a", NUL]}}),
        ("steps", 1, "arguments", "cmd", "flags", 1),
        "text_nul",
        id="nul-deep-in-arguments",
    ),
    pytest.param(
        with_step("arguments", {"a\u0000b": 1}),
        ("steps", 1, "arguments", "a\\u0000b"),
        "text_nul",
        id="nul-in-a-json-key",
    ),
    pytest.param(
        trajectory(metadata={"k\u0000": 1}), ("metadata", "k\\u0000"), "text_nul", id="nul-key"
    ),
    pytest.param(
        with_step("context", {"task_goal": NUL}),
        ("steps", 1, "context", "task_goal"),
        "text_nul",
        id="nul-in-context",
    ),
    pytest.param(
        with_step("context", {"extra": NUL}),
        ("steps", 1, "context", "extra"),
        "text_nul",
        id="nul-in-context-extra",
    ),
    pytest.param(
        with_step("content", SURROGATE),
        ("steps", 1, "content"),
        "text_surrogate",
        id="surrogate-in-content",
    ),
    pytest.param(
        trajectory(environment=[SURROGATE]),
        ("environment", 0),
        "text_surrogate",
        id="surrogate-in-environment",
    ),
    pytest.param(
        with_step("arguments", {"\udfff": 1}),
        ("steps", 1, "arguments", "\\udfff"),
        "text_surrogate",
        id="surrogate-key",
    ),
    pytest.param(
        with_step("index", 2**31), ("steps", 1, "index"), "less_than_equal", id="index-2^31"
    ),
    pytest.param(
        with_step("duration_ms", 2**63),
        ("steps", 1, "duration_ms"),
        "less_than_equal",
        id="duration-2^63",
    ),
    pytest.param(
        with_step("arguments", nested(1000)),
        ("steps", 1, "arguments"),
        "too_deep",
        id="arguments-1000-deep",
    ),
    pytest.param(
        trajectory(metadata=nested(inputs.MAX_DEPTH)), ("metadata",), "too_deep", id="meta-deep"
    ),
    pytest.param(
        with_step("arguments", {"x": float("nan")}),
        ("steps", 1, "arguments", "x"),
        "finite_number",
        id="nan",
    ),
    pytest.param(
        trajectory(metadata={"x": [float("inf")]}),
        ("metadata", "x", 0),
        "finite_number",
        id="infinity",
    ),
    pytest.param(
        with_step("observation", float("-inf")),
        ("steps", 1, "observation"),
        "finite_number",
        id="minus-infinity",
    ),
    pytest.param(
        trajectory(started_at="2020-01-01T00:00:00-22:00"),
        ("started_at",),
        "timezone_offset",
        id="offset-22h",
    ),
    pytest.param(
        with_step("started_at", "2020-01-01T00:00:00+16:00"),
        ("steps", 1, "started_at"),
        "timezone_offset",
        id="step-offset-16h",
    ),
    pytest.param(
        trajectory(ended_at="9999-12-31T23:00:00-05:00"),
        ("ended_at",),
        "datetime_range",
        id="after-year-9999-in-utc",
    ),
]


@pytest.mark.parametrize(("body", "loc", "kind"), TRACE_CASES)
def test_a_trace_the_database_cannot_hold_is_a_422_naming_the_value(full_api, body, loc, kind):
    # json.dumps writes NaN / Infinity as Python's JSON reader accepts them
    response = full_api.post("traces", raw=json.dumps(body).encode())

    ok, found = refused_at(response, ("body", "payload", *loc), kind)
    assert ok, found
    assert not Trace.objects.exists() and not Step.objects.exists()


def test_json_nested_beyond_the_parser_is_a_400_not_a_500(full_api):
    body = json.dumps(with_step("arguments", "X")).replace('"X"', "[" * 100_000 + "]" * 100_000)
    response = full_api.post("traces", raw=body.encode())

    assert response.status_code == 400 and "parse" in response.json()["detail"]


def test_the_depth_check_itself_never_recurses():
    value: Any = []
    for _ in range(200_000):
        value = [value]
    problems = inputs.value_problems({"arguments": value}, ())
    assert [p["loc"][:1] for p in problems] == [("arguments",)]


def test_values_just_within_every_bound_are_stored(full_api):
    body = with_step("arguments", nested(inputs.MAX_DEPTH - 1))
    body["steps"][1]["duration_ms"] = inputs.BIGINT_MAX
    body["steps"][2]["index"] = inputs.INT_MAX
    body["steps"][0]["started_at"] = "2020-01-01T00:00:00+15:59"
    body["metadata"] = {"emoji": "\U0001f600", "hangul": "\ud55c", "escaped": "\\u0000"}
    response = full_api.post("traces", body)

    assert response.status_code == 201, response.content
    stored = full_api.get(f"traces/{response.json()['id']}").json()
    assert stored["metadata"] == body["metadata"]
    assert stored["steps"][1]["arguments"] == nested(inputs.MAX_DEPTH - 1)
    assert stored["steps"][2]["index"] == inputs.INT_MAX


# ---------------------------------------------------------------------------- other bodies


@pytest.fixture
def open_trace(full_api) -> int:
    body = {"external_id": "streamed", "agent": "ops-bot", "task": "watch the deploy"}
    return full_api.post("traces/open", body).json()["id"]


def _import(**fields: Any) -> dict[str, Any]:
    body = {
        "format": "openai",
        "external_id": "imported",
        "agent": "ops-bot",
        "outcome": "success",
        "messages": [{"role": "user", "content": "restart the web container"}],
    }
    return {**body, **fields}


def _tool_call(*, arguments: str) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": arguments}}
    return [
        {"role": "user", "content": "restart the web container"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]


BODY_CASES = [
    pytest.param(
        "traces/open",
        {"external_id": "o", "agent": "a", "task": NUL},
        ("task",),
        "text_nul",
        id="open",
    ),
    pytest.param(
        "traces/{id}/steps",
        {"steps": [{"index": 0, "kind": "system", "content": NUL}]},
        ("steps", 0, "content"),
        "text_nul",
        id="append-steps",
    ),
    pytest.param(
        "traces/{id}/steps",
        {"steps": [{"index": 2**31, "kind": "system"}]},
        ("steps", 0, "index"),
        "less_than_equal",
        id="append-big-index",
    ),
    pytest.param(
        "traces/{id}/complete",
        {"outcome": "success", "final_answer": SURROGATE},
        ("final_answer",),
        "text_surrogate",
        id="complete",
    ),
    pytest.param(
        "traces/import",
        _import(messages=[{"role": "user", "content": NUL}]),
        ("messages", 0, "content"),
        "text_nul",
        id="import",
    ),
    pytest.param(
        "traces/import",
        _import(messages=[{"role": "user", "content": "x", "extra": nested(1000)}]),
        ("messages", 0, "extra"),
        "too_deep",
        id="import-deep",
    ),
    pytest.param(
        "traces/import",
        _import(messages=_tool_call(arguments=json.dumps(nested(900)))),
        ("messages", 1, "tool_calls", 0),
        "too_deep",
        id="import-arguments-json-900-deep",
    ),
    pytest.param(
        "traces/import",
        _import(messages=_tool_call(arguments="[" * 5000 + "]" * 5000)),
        ("messages",),
        "too_deep",
        id="import-arguments-json-5000-deep",
    ),
    pytest.param(
        "recall",
        {"task": "restart the web container", "environment": [NUL]},
        ("environment", 0),
        "text_nul",
        id="recall-environment",
    ),
    pytest.param("recall", {"task": SURROGATE}, ("task",), "text_surrogate", id="recall-task"),
    pytest.param(
        "warnings",
        {"tool": "shell", "arguments": {"x": float("nan")}},
        ("arguments", "x"),
        "finite_number",
        id="warnings-nan",
    ),
    pytest.param(
        "warnings", {"tool": "shell", "agent": NUL}, ("agent",), "text_nul", id="warnings-agent"
    ),
    pytest.param(
        "recall/1/feedback",
        {"helpful": [2**63]},
        ("helpful", 0),
        "less_than_equal",
        id="feedback-id-2^63",
    ),
]


@pytest.mark.parametrize(("path", "body", "loc", "kind"), BODY_CASES)
def test_every_body_refuses_what_cannot_be_stored_by_field(
    full_api, open_trace, path, body, loc, kind
):
    before = (Trace.objects.count(), Step.objects.count(), RecallLog.objects.count())
    response = full_api.post(path.format(id=open_trace), raw=json.dumps(body).encode())

    ok, found = refused_at(response, ("body", "payload", *loc), kind)
    assert ok, found
    after = (Trace.objects.count(), Step.objects.count(), RecallLog.objects.count())
    assert after == before


# ---------------------------------------------------------------------------- query parameters

QUERY_CASES = [
    pytest.param("traces", "since", "2020-01-01T00:00:00-22:00", "timezone_offset", id="since"),
    pytest.param("traces", "until", "2020-01-01T00:00:00+16:00", "timezone_offset", id="until"),
    pytest.param("traces", "since", "0001-01-01T00:00:00+01:00", "datetime_range", id="year-0"),
    pytest.param("traces", "agent", NUL, "text_nul", id="traces-agent"),
    pytest.param("traces", "q", NUL, "text_nul", id="traces-q"),
    pytest.param("traces", "cursor", NUL, "text_nul", id="traces-cursor"),
    pytest.param("experiences", "source", NUL, "text_nul", id="experiences-source"),
    pytest.param("experiences", "environment", NUL, "text_nul", id="experiences-environment"),
    pytest.param("failure-patterns", "tool", NUL, "text_nul", id="failure-patterns-tool"),
]


@pytest.mark.parametrize(("path", "param", "value", "kind"), QUERY_CASES)
def test_a_query_parameter_that_cannot_be_used_is_a_422_naming_it(
    full_api, path, param, value, kind
):
    response = full_api.get(path, {param: value})

    ok, found = refused_at(response, ("query", param), kind)
    assert ok, found


def _holds_str(annotation: Any) -> bool:
    return annotation is str or any(_holds_str(arg) for arg in typing.get_args(annotation))


def test_every_query_parameter_with_text_goes_through_query_in():
    # ninja reads a bare `tool: str` parameter into its own model, which has no checks

    unchecked = []
    for _, router in api._routers:
        for path, view in router.path_operations.items():
            for operation in view.operations:
                for params in operation.models:
                    if params.__ninja_param_source__ != "query":
                        continue
                    for name, field in params.model_fields.items():
                        annotation = field.annotation
                        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                            if not issubclass(annotation, inputs.QueryIn):
                                unchecked.append(f"{path} {name}")
                        elif _holds_str(annotation):
                            unchecked.append(f"{path} {name}")
    assert unchecked == []


# ---------------------------------------------------------------------------- batches


def test_a_batch_stores_its_valid_items_and_reports_each_bad_one_by_field(full_api):
    items = [
        trajectory("good-1"),
        trajectory("nul", task=NUL),
        with_step("index", 2**31) | {"external_id": "big-index"},
        with_step("arguments", nested(1000)) | {"external_id": "deep"},
        with_step("arguments", {"x": float("nan")}) | {"external_id": "nan"},
        "not an object",
        trajectory(NUL),
        trajectory("good-2"),
    ]
    response = full_api.post("traces/batch", raw=json.dumps({"traces": items}).encode())

    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert [r["status"] for r in results] == ["created"] + ["invalid"] * 6 + ["created"]
    assert [r["external_id"] for r in results] == [
        "good-1",
        "nul",
        "big-index",
        "deep",
        "nan",
        None,
        None,  # not echoed: the id itself is the text that cannot be stored
        "good-2",
    ]
    first_error = [(tuple(r["detail"][0]["loc"]), r["detail"][0]["type"]) for r in results[1:7]]
    assert first_error[:3] == [
        (("task",), "text_nul"),
        (("steps", 1, "index"), "less_than_equal"),
        (("steps", 1, "arguments", *["a"] * (inputs.MAX_DEPTH - 1)), "too_deep"),
    ]
    assert first_error[3:] == [
        (("steps", 1, "arguments", "x"), "finite_number"),
        ((), "model_type"),
        (("external_id",), "text_nul"),
    ]
    assert set(Trace.objects.values_list("external_id", flat=True)) == {"good-1", "good-2"}
    assert Step.objects.count() == 6


def test_an_import_batch_stores_its_valid_items(full_api):
    items = [
        _import(external_id="good"),
        _import(external_id="bad", messages=[{"role": "user", "content": NUL}]),
    ]
    results = full_api.post("traces/import/batch", {"traces": items}).json()["results"]

    assert [r["status"] for r in results] == ["created", "invalid"]
    assert results[1]["detail"][0]["loc"] == ["messages", 0, "content"]
    assert list(Trace.objects.values_list("external_id", flat=True)) == ["good"]


def test_a_value_the_database_refuses_after_validation_fails_only_its_item(full_api, monkeypatch):
    # Defence in depth: were validation to let through something PostgreSQL refuses, the bulk
    # insert fails and every item is retried on its own, so only the guilty one is lost.
    monkeypatch.setattr(inputs, "_all_storable", lambda value: True)
    items = [trajectory("good-1"), with_step("content", NUL) | {"external_id": "bad"}]
    items.append(trajectory("good-2"))
    response = full_api.post("traces/batch", {"traces": items})

    results = response.json()["results"]
    assert [r["status"] for r in results] == ["created", "invalid", "created"]
    assert "database refused" in results[1]["detail"]
    assert set(Trace.objects.values_list("external_id", flat=True)) == {"good-1", "good-2"}
    assert Step.objects.count() == 6


# ---------------------------------------------------------------------------- documented limits


def test_more_steps_than_the_limit_is_a_413_as_documented(full_api, settings):
    limit = settings.HINDSIGHT_MAX_STEPS
    body = trajectory(steps=0)
    body["steps"] = [{"index": i, "kind": "system"} for i in range(limit + 1)]
    response = full_api.post("traces", body)

    ok, found = refused_at(response, ("body", "payload", "steps"), inputs.TOO_LARGE, status=413)
    assert ok, found
    assert f"at most {limit} steps" in response.json()["detail"][0]["msg"]
    assert not Trace.objects.exists()


def test_a_transcript_converting_to_too_many_steps_is_a_413(full_api, settings):
    settings.HINDSIGHT_MAX_STEPS = 2
    messages = [{"role": "user", "content": "go"}] + [
        {"role": "assistant", "content": f"thinking {i}"} for i in range(4)
    ]
    response = full_api.post("traces/import", _import(messages=messages))

    ok, found = refused_at(response, ("body", "payload", "messages"), inputs.TOO_LARGE, status=413)
    assert ok, found


def test_a_batch_item_with_too_many_steps_is_invalid_alone(full_api, settings):
    settings.HINDSIGHT_MAX_STEPS = 2
    results = full_api.post(
        "traces/batch", {"traces": [trajectory("long", steps=3), trajectory("short", steps=2)]}
    ).json()["results"]

    assert [r["status"] for r in results] == ["invalid", "created"]
    assert results[0]["detail"][0]["type"] == inputs.TOO_LARGE


# ---------------------------------------------------------------------------- errors are JSON


def test_an_unexpected_error_is_a_json_500_and_logged(full_api, monkeypatch, caplog):
    def broken(**kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr("traces.api.trace_list", broken)
    response = full_api.get("traces")

    assert response.status_code == 500
    assert response.json() == {"detail": "internal error; the server logged it"}
    assert any("unhandled error" in r.message and r.exc_info for r in caplog.records)


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [("get", "/api/v1/no-such-thing", 404), ("delete", "/api/v1/traces", 405)],
)
def test_errors_answered_outside_ninja_are_json_too(full_api, method, path, status):
    response = getattr(full_api.client, method)(path, headers=full_api._headers())

    assert response.status_code == status
    assert response["Content-Type"] == "application/json"
    assert "detail" in response.json()
    if status == 405:
        assert "POST" in response["Allow"] and "POST" in response.json()["detail"]


def test_an_otlp_tool_result_nested_deep_is_not_a_server_error(full_api):
    from google.protobuf import json_format

    from tests.support.spans import agent_run, export, hex_ids

    body = hex_ids(json_format.MessageToDict(export(*agent_run())))
    tool_span = body["resourceSpans"][0]["scopeSpans"][0]["spans"][4]
    result = next(a for a in tool_span["attributes"] if a["key"] == "gen_ai.tool.call.result")
    result["value"] = {"stringValue": json.dumps(nested(900))}
    response = full_api.client.post(
        "/api/v1/otlp/v1/traces",
        data=json.dumps(body),
        content_type="application/json",
        headers=full_api._headers(),
    )

    assert response.status_code < 500
