"""`null` in an optional field means absent, for every body of the trajectory API.

The fields come from the schemas, so a field added later is covered without touching this file.
"""

import typing
from typing import Any

import pytest
from pydantic import BaseModel

from core.inputs import BodyIn
from hindsight_site.api import api as ninja_api
from tests.support.api import step, trajectory
from traces.schemas import (
    StepContextIn,
    StepIn,
    StepsAppendIn,
    TraceBatchIn,
    TraceCompleteIn,
    TraceImportIn,
    TraceIn,
    TraceOpenIn,
)

pytestmark = pytest.mark.django_db


def optional_fields(schema: type[BaseModel]) -> list[str]:
    return [name for name, field in schema.model_fields.items() if not field.is_required()]


def required_fields(schema: type[BaseModel]) -> list[str]:
    return [name for name, field in schema.model_fields.items() if field.is_required()]


# What a stored trace looks like through the API, without what differs between two stores.
VOLATILE = {"id", "external_id", "created_at", "completed_at"}


def stored(api, trace_id: int) -> dict[str, Any]:
    response = api.get(f"traces/{trace_id}")
    assert response.status_code == 200
    return {k: v for k, v in response.json().items() if k not in VOLATILE}


def without(body: dict[str, Any], field: str) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != field}


def nulled(body: dict[str, Any], field: str) -> dict[str, Any]:
    return {**body, field: None}


def with_steps(external_id: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {**trajectory(external_id), "steps": steps}


def created_id(response) -> int:
    assert response.status_code == 201, response.json()
    return response.json()["id"]


def assert_names(response, field: str) -> None:
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert any(e["loc"][-1] == field for e in detail), detail


REASONING_STEP = {"index": 0, "kind": "llm_reasoning", "content": "check the logs first"}
HEADER = {"external_id": "live", "agent": "ops-bot", "task": "Rotate the TLS certificates"}
IMPORT = {
    "format": "openai",
    "external_id": "chat",
    "agent": "ops-bot",
    "outcome": "success",
    "messages": [
        {"role": "user", "content": "Why does the web container restart?"},
        {"role": "assistant", "content": "It was OOMKilled."},
    ],
}


# ---------------------------------------------------------------------------- POST traces


@pytest.mark.parametrize("field", optional_fields(TraceIn))
def test_a_null_trace_field_is_stored_as_its_default(api, field):
    null_id = created_id(api.post("traces", nulled(trajectory("null"), field)))
    absent_id = created_id(api.post("traces", without(trajectory("absent"), field)))

    assert stored(api, null_id) == stored(api, absent_id)


@pytest.mark.parametrize("field", optional_fields(StepIn))
def test_a_null_step_field_is_stored_as_its_default(api, field):
    null_id = created_id(api.post("traces", with_steps("null", [nulled(REASONING_STEP, field)])))
    absent_id = created_id(
        api.post("traces", with_steps("absent", [without(REASONING_STEP, field)]))
    )

    assert stored(api, null_id) == stored(api, absent_id)


@pytest.mark.parametrize("field", ["content", "is_error", "arguments", "observation"])
def test_a_null_field_of_a_tool_call_is_stored_as_its_default(api, field):
    call = step(0, arguments={"cmd": "ls"}, observation="ok", content="list", is_error=False)
    null_id = created_id(api.post("traces", with_steps("null", [nulled(call, field)])))
    absent_id = created_id(api.post("traces", with_steps("absent", [without(call, field)])))

    assert stored(api, null_id) == stored(api, absent_id)


@pytest.mark.parametrize("field", optional_fields(StepContextIn))
def test_a_null_context_field_is_stored_as_its_default(api, field):
    context = {"task_goal": "rotate", "subtask": "find the secret", "latest_user_input": "go"}
    null_step = {**REASONING_STEP, "context": {**context, field: None}}
    absent_step = {**REASONING_STEP, "context": without(context, field)}
    null_id = created_id(api.post("traces", with_steps("null", [null_step])))
    absent_id = created_id(api.post("traces", with_steps("absent", [absent_step])))

    assert stored(api, null_id) == stored(api, absent_id)


def test_a_null_field_makes_the_same_trace_as_leaving_it_out(api):
    first = api.post("traces", trajectory(intent=None, metadata=None))
    again = api.post("traces", trajectory())

    assert (first.status_code, again.status_code) == (201, 200)  # a duplicate, not a conflict


@pytest.mark.parametrize("field", required_fields(TraceIn))
def test_a_required_trace_field_given_null_is_refused_by_name(api, field):
    assert_names(api.post("traces", nulled(trajectory(), field)), field)


@pytest.mark.parametrize("field", required_fields(StepIn))
def test_a_required_step_field_given_null_is_refused_by_name(api, field):
    response = api.post("traces", with_steps("run-1", [nulled(REASONING_STEP, field)]))

    assert_names(response, field)
    assert response.json()["detail"][0]["loc"][-3:] == ["steps", 0, field]


# ---------------------------------------------------------------------------- batch


@pytest.mark.parametrize("field", optional_fields(TraceIn))
def test_a_null_field_of_a_batch_item_is_stored_as_its_default(api, field):
    response = api.post("traces/batch", {"traces": [nulled(trajectory("null"), field)]})
    (result,) = response.json()["results"]
    absent_id = created_id(api.post("traces", without(trajectory("absent"), field)))

    assert result["status"] == "created", result
    assert stored(api, result["id"]) == stored(api, absent_id)


@pytest.mark.parametrize("path", ["traces/batch", "traces/import/batch"])
@pytest.mark.parametrize("field", required_fields(TraceBatchIn))
def test_a_required_batch_field_given_null_is_refused_by_name(api, path, field):
    assert_names(api.post(path, {field: None}), field)


def test_a_batch_item_with_a_required_field_null_is_invalid_by_name(api):
    items = [nulled(trajectory(), "task")]
    (result,) = api.post("traces/batch", {"traces": items}).json()["results"]

    assert result["status"] == "invalid"
    assert result["detail"][0]["loc"] == ["task"]


# ---------------------------------------------------------------------------- streaming


@pytest.mark.parametrize("field", optional_fields(TraceOpenIn))
def test_a_null_field_when_opening_is_stored_as_its_default(api, field):
    null_id = created_id(api.post("traces/open", {**HEADER, "external_id": "null", field: None}))
    absent_id = created_id(api.post("traces/open", without({**HEADER, "external_id": "b"}, field)))

    assert stored(api, null_id) == stored(api, absent_id)


@pytest.mark.parametrize("field", optional_fields(StepsAppendIn) + optional_fields(StepIn))
def test_a_null_field_of_an_appended_step_is_stored_as_its_default(api, field):
    null_id = created_id(api.post("traces/open", {**HEADER, "external_id": "null"}))
    absent_id = created_id(api.post("traces/open", {**HEADER, "external_id": "absent"}))
    null_step = {**REASONING_STEP, field: None}
    assert api.post(f"traces/{null_id}/steps", {"steps": [null_step]}).status_code == 200
    absent_step = without(REASONING_STEP, field)
    assert api.post(f"traces/{absent_id}/steps", {"steps": [absent_step]}).status_code == 200

    assert stored(api, null_id) == stored(api, absent_id)


@pytest.mark.parametrize("field", optional_fields(TraceCompleteIn))
def test_a_null_field_when_completing_is_stored_as_its_default(api, field):
    null_id = created_id(api.post("traces/open", {**HEADER, "external_id": "null"}))
    absent_id = created_id(api.post("traces/open", {**HEADER, "external_id": "absent"}))
    done = {"outcome": "success", "feedback": "ok", "final_answer": "rotated"}
    assert api.post(f"traces/{null_id}/complete", {**done, field: None}).status_code == 200
    assert api.post(f"traces/{absent_id}/complete", without(done, field)).status_code == 200

    assert stored(api, null_id) == stored(api, absent_id)


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [("traces/open", HEADER, f) for f in required_fields(TraceOpenIn)]
    + [("steps", {"steps": [REASONING_STEP]}, f) for f in required_fields(StepsAppendIn)]
    + [("complete", {"outcome": "success"}, f) for f in required_fields(TraceCompleteIn)],
)
def test_a_required_streaming_field_given_null_is_refused_by_name(api, path, body, field):
    if path != "traces/open":
        trace_id = created_id(api.post("traces/open", HEADER))
        path = f"traces/{trace_id}/{path}"
    assert_names(api.post(path, {**body, field: None}), field)


# ---------------------------------------------------------------------------- import


@pytest.mark.parametrize("field", optional_fields(TraceImportIn))
def test_a_null_field_of_an_import_is_stored_as_its_default(api, field):
    null_id = created_id(api.post("traces/import", {**IMPORT, "external_id": "n", field: None}))
    absent_id = created_id(
        api.post("traces/import", without({**IMPORT, "external_id": "a"}, field))
    )

    assert stored(api, null_id) == stored(api, absent_id)


@pytest.mark.parametrize("field", required_fields(TraceImportIn))
def test_a_required_import_field_given_null_is_refused_by_name(api, field):
    assert_names(api.post("traces/import", {**IMPORT, field: None}), field)


# ---------------------------------------------------------------------------- every body


def _models(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        nested = [m for f in annotation.model_fields.values() for m in _models(f.annotation)]
        return [annotation, *nested]
    return [m for arg in typing.get_args(annotation) for m in _models(arg)]


def request_body_models() -> dict[str, type[BaseModel]]:
    found = {}
    for _, router in ninja_api._routers:
        for path, view in router.path_operations.items():
            for operation in view.operations:
                for params in operation.models:
                    if params.__ninja_param_source__ != "body":
                        continue
                    for field in params.model_fields.values():
                        for model in _models(field.annotation):
                            found[f"{path} {model.__name__}"] = model
    return found


def test_every_request_body_of_the_api_treats_null_as_absent():
    models = request_body_models()

    assert {"/traces TraceIn", "/traces/import TraceImportIn", "/warnings WarningsIn"} <= set(
        models
    )
    assert "/traces StepContextIn" in models  # nested bodies too
    assert [name for name, model in models.items() if not issubclass(model, BodyIn)] == []
