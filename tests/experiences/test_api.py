"""GET /api/v1/experiences, /experiences/{id}, /failure-patterns; reviews on GET /traces/{id}."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from hindsight_site.review_tasks import review_trace
from tests.support.pipeline_trajectories import chat_only_body, seed_000_body
from traces.models import Trace

pytestmark = pytest.mark.django_db


@pytest.fixture
def reviewed(api) -> int:
    trace_id = api.post("traces", seed_000_body()).json()["id"]
    review_trace(trace_id)
    return trace_id


def test_experience_list_shows_scene_advice_path_and_provenance(api, reviewed):
    (item,) = api.get("experiences").json()["items"]

    assert item["advice"].startswith(
        "When you use kubectl_patch_networkpolicy, first kubectl_get_pods <namespace from the "
        "request>"
    )
    assert item["kind"] == "episode" and "svc-a-7d9f" in item["replay"]
    assert item["blame"]["tool"] == "kubectl_exec" and item["blame"]["evidence"] == "it failed"
    assert item["scene"]["environment"] == ["k8s"] and "kubectl_logs" in item["scene"]["tools"]
    assert item["scene"]["agent"] == "ops-bot" and item["scene"]["task_type"] == "operation"
    assert (item["polarity"], item["status"], item["source"]) == (
        "success",
        "candidate",
        "heuristic",
    )
    assert item["scope"]["is_global"] is True
    assert [step["index"] for step in item["path"]] == [0, 1, 5, 6, 7]
    assert item["sources"] == [
        {
            "trace_id": reviewed,
            "external_id": "netpol-1",
            "review_id": item["sources"][0]["review_id"],
            "step_indexes": [0, 1, 5, 6, 7],
        }
    ]


@pytest.mark.parametrize(
    ("params", "count"),
    [
        ({"status": "candidate"}, 1),
        ({"status": "approved"}, 0),
        ({"polarity": "failure"}, 0),
        ({"tool": "kubectl_logs"}, 1),
        ({"tool": "curl"}, 0),
        ({"environment": "K8S"}, 1),
        ({"agent": "ops-bot"}, 1),
        ({"source": "llm"}, 0),
    ],
)
def test_experience_list_filters(api, reviewed, params, count):
    assert len(api.get("experiences", params).json()["items"]) == count


@pytest.mark.parametrize("field", ["status", "polarity", "source"])
def test_a_filter_value_outside_the_choices_is_a_422_naming_the_field(api, field):
    response = api.get("experiences", {field: "bogus"})

    assert response.status_code == 422
    assert field in str(response.json()["detail"])


def test_experience_list_filters_by_trace(api, reviewed):
    assert len(api.get("experiences", {"trace": reviewed}).json()["items"]) == 1
    assert api.get("experiences", {"trace": reviewed + 1000}).json()["items"] == []


def test_experience_detail_has_versions(api, reviewed):
    experience_id = api.get("experiences").json()["items"][0]["id"]
    detail = api.get(f"experiences/{experience_id}").json()
    assert detail["versions"][0]["version"] == 1
    assert "distilled from the full review" in detail["versions"][0]["reason"]


def test_experience_of_another_project_is_404(api, reviewed, make_project, make_key, api_for):
    experience_id = api.get("experiences").json()["items"][0]["id"]
    outsider = api_for(make_key(make_project(), ("read",)))
    assert outsider.get(f"experiences/{experience_id}").status_code == 404
    assert outsider.get("experiences").json()["items"] == []


def test_experience_list_query_count_is_constant(api, project):
    def count_queries() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert api.get("experiences").status_code == 200
        return len(queries)

    for i in range(2):
        review_trace(api.post("traces", seed_000_body(f"a{i}")).json()["id"])
    small = count_queries()
    for i in range(6):
        review_trace(api.post("traces", seed_000_body(f"b{i}")).json()["id"])
    assert count_queries() == small


def test_failure_patterns_are_listed(api, reviewed):
    (pattern,) = api.get("failure-patterns", {"tool": "kubectl_exec"}).json()["items"]
    assert pattern["occurrences"] == 1 and pattern["instead"].startswith("use kubectl_logs")


def test_trace_detail_includes_labels_and_reviews(api, reviewed):
    detail = api.get(f"traces/{reviewed}").json()

    assert detail["review_status"] == "reviewed"
    step = detail["steps"][2]
    assert (step["label"], step["label_source"]) == ("redundant", "heuristic")
    assert step["label_reason"] and step["label_version"] == 1
    (review,) = detail["reviews"]
    assert review["kind"] == "full" and review["is_heuristic"] is True
    assert review["experience"].startswith("When you") and review["is_reference_worthy"]


def test_a_skipped_trace_can_be_sent_back_to_review(api, settings):
    trace_id = api.post("traces", chat_only_body()).json()["id"]
    review_trace(trace_id)
    assert Trace.objects.get(pk=trace_id).review_status == "skipped"
    settings.HINDSIGHT_REVIEW_MIN_EVENTS = 1

    response = api.post(f"traces/{trace_id}/review", {})
    assert response.status_code == 200 and response.json()["review_status"] == "pending"
    review_trace(trace_id)
    assert Trace.objects.get(pk=trace_id).review_status == "reviewed"


def test_a_reviewed_trace_cannot_be_re_reviewed(api, reviewed):
    response = api.post(f"traces/{reviewed}/review", {})
    assert response.status_code == 409
    assert "relabel" in response.json()["detail"]


def test_reading_experiences_needs_a_key(api_for):
    assert api_for(None).get("experiences").status_code == 401
