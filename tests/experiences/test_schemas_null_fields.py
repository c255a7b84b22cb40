"""`null` in an optional field means absent: recall, recall feedback and warnings.

The fields come from the schemas, so a field added later is covered without touching this file.
"""

from typing import Any

import pytest

from experiences.models import RecallLog
from experiences.schemas import RecallFeedbackIn, RecallIn, WarningsIn
from tests.experiences.test_api_recall import make_experience, make_pattern
from tests.traces.test_schemas_null_fields import (
    assert_names,
    optional_fields,
    required_fields,
    without,
)

pytestmark = pytest.mark.django_db

RECALL = {
    "task": "the web container keeps restarting",
    "task_type": "operation",
    "intent": "diagnose",
    "environment": ["docker"],
    "tools": ["docker_logs"],
    "agent": "ops-bot",
    "user": "ana",
    "k": 3,
    "include_candidates": True,
    "include_warnings": True,
}
WARNINGS = {
    "tool": "docker_update",
    "arguments": {"name": "web", "memory": "2g"},
    "task": "raise the memory limit",
    "environment": ["docker"],
    "agent": "ops-bot",
}


@pytest.fixture
def recall_api(project, make_key, api_for):
    return api_for(make_key(project, ("recall",)))


@pytest.fixture
def library(project):
    make_experience(project, "restart")
    make_experience(project, "cert", tools=["kubectl"])
    make_pattern(project)


def answer(response) -> dict[str, Any]:
    assert response.status_code == 200, response.json()
    return {k: v for k, v in response.json().items() if k != "id"}


def logged_query(response) -> dict[str, Any]:
    return RecallLog.objects.get(pk=response.json()["id"]).query


@pytest.mark.parametrize("field", optional_fields(RecallIn))
def test_a_null_recall_field_is_taken_as_its_default(recall_api, library, field):
    null = recall_api.post("recall", {**RECALL, field: None})
    absent = recall_api.post("recall", without(RECALL, field))

    assert answer(null) == answer(absent)
    assert logged_query(null) == logged_query(absent)


@pytest.mark.parametrize("field", required_fields(RecallIn))
def test_a_required_recall_field_given_null_is_refused_by_name(recall_api, field):
    assert_names(recall_api.post("recall", {**RECALL, field: None}), field)


@pytest.mark.parametrize("field", optional_fields(RecallFeedbackIn))
def test_a_null_feedback_field_is_stored_as_its_default(recall_api, library, field):
    recall = recall_api.post("recall", {"task": "the web container keeps restarting"}).json()
    first = recall["items"][0]["experience_id"]
    feedback = {"helpful": [first], "unhelpful": []}

    null = recall_api.post(f"recall/{recall['id']}/feedback", {**feedback, field: None})
    null_log = RecallLog.objects.get(pk=recall["id"])
    absent = recall_api.post(f"recall/{recall['id']}/feedback", without(feedback, field))
    absent_log = RecallLog.objects.get(pk=recall["id"])

    assert answer(null) == answer(absent)
    assert (null_log.helpful, null_log.unhelpful) == (absent_log.helpful, absent_log.unhelpful)


@pytest.mark.parametrize("field", optional_fields(WarningsIn))
def test_a_null_warnings_field_is_taken_as_its_default(recall_api, library, field):
    null = recall_api.post("warnings", {**WARNINGS, field: None})
    absent = recall_api.post("warnings", without(WARNINGS, field))

    assert answer(null) == answer(absent)


@pytest.mark.parametrize("field", required_fields(WarningsIn))
def test_a_required_warnings_field_given_null_is_refused_by_name(recall_api, field):
    assert_names(recall_api.post("warnings", {**WARNINGS, field: None}), field)
