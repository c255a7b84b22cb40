"""GET /api/v1/traces (filters, cursor pagination, query counts) and GET /traces/{id}."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.support.api import step, trajectory
from traces.models import Trace

pytestmark = pytest.mark.django_db


def _ids(response) -> list[str]:
    return [item["external_id"] for item in response.json()["items"]]


def test_list_is_newest_first_with_a_working_cursor(api):
    for i in range(5):
        api.post("traces", trajectory(f"run-{i}"))

    first = api.get("traces", {"limit": 2})
    second = api.get("traces", {"limit": 2, "cursor": first.json()["next_cursor"]})
    third = api.get("traces", {"limit": 2, "cursor": second.json()["next_cursor"]})

    assert _ids(first) == ["run-4", "run-3"]
    assert _ids(second) == ["run-2", "run-1"]
    assert _ids(third) == ["run-0"] and third.json()["next_cursor"] is None


def test_a_bad_cursor_is_a_clear_422(api):
    response = api.get("traces", {"cursor": "garbage!"})
    assert response.status_code == 422
    assert "cursor" in response.json()["detail"]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"agent": "planner"}, ["b"]),
        ({"outcome": "failure"}, ["b"]),
        ({"environment": "K8S"}, ["b"]),
        ({"tool": "kubectl"}, ["b"]),
        ({"task_type": "analysis"}, ["b"]),
        ({"q": "restart"}, ["a"]),
        ({"q": "pod memo"}, ["b"]),
        ({"review_status": "pending"}, ["b", "a"]),
        ({"since": "2000-01-01T00:00:00Z", "until": "2000-01-02T00:00:00Z"}, []),
    ],
)
def test_list_filters(api, params, expected):
    api.post("traces", trajectory("a", task="Container web keeps restarting"))
    b = trajectory(
        "b",
        agent="planner",
        outcome="failure",
        environment=["k8s"],
        task="Pod memory pressure",
        task_type="analysis",
    )
    b["steps"] = [step(0, tool="kubectl")]
    api.post("traces", b)

    assert _ids(api.get("traces", params)) == expected


def test_list_query_count_does_not_grow_with_the_page(api):
    for i in range(3):
        api.post("traces", trajectory(f"small-{i}"))
    with CaptureQueriesContext(connection) as small:
        api.get("traces")
    for i in range(30):
        api.post("traces", trajectory(f"big-{i}"))
    with CaptureQueriesContext(connection) as big:
        api.get("traces")
    assert len(small) == len(big)


def test_detail_has_steps_with_label_fields_and_reviews(api):
    trace_id = api.post("traces", trajectory(steps=2)).json()["id"]
    with CaptureQueriesContext(connection) as queries:
        detail = api.get(f"traces/{trace_id}").json()

    assert detail["id"] == trace_id and detail["review_status"] == "pending"
    assert [s["index"] for s in detail["steps"]] == [0, 1]
    assert {"label", "label_source", "label_reason"} <= set(detail["steps"][0])
    assert detail["reviews"] == []
    assert len(queries) <= 5


def test_detail_of_a_missing_trace_is_404(api):
    assert api.get("traces/999999").status_code == 404


def test_incomplete_filter(api):
    api.post("traces", trajectory("done"))
    api.post("traces/open", {"external_id": "open", "agent": "a", "task": "t"})
    assert _ids(api.get("traces", {"is_complete": "false"})) == ["open"]
    assert Trace.objects.count() == 2


@pytest.mark.parametrize("field", ["outcome", "review_status", "task_type"])
def test_a_value_outside_the_choices_is_a_422_naming_the_field(api, field):
    api.post("traces", trajectory("a"))

    response = api.get("traces", {field: "bogus"})

    assert response.status_code == 422
    assert field in str(response.json()["detail"])
    assert api.get("traces", {field: ""}).status_code == 200  # empty is absent


@pytest.mark.parametrize("limit", [0, 201, -3])
def test_a_limit_outside_1_to_200_is_a_422_naming_it(api, limit):
    response = api.get("traces", {"limit": limit})

    assert response.status_code == 422
    assert "limit" in str(response.json()["detail"])


def test_the_list_parameters_are_the_selectors_filters_and_a_page(api):
    from traces.api import TraceListParams
    from traces.selectors.trace_list import TraceFilters

    filters = set(TraceFilters.model_fields)
    assert set(TraceListParams.model_fields) == filters | {"cursor", "limit"}
    assert api.get("traces", {"limit": 200}).status_code == 200
