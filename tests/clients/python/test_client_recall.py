"""Recall, recall feedback and warnings through HindsightClient, against the real site."""

from __future__ import annotations

import pytest

from accounts.services.api_keys import api_key_create
from hindsight_client import ApiError, HindsightClient
from tests.support.library import make_experience, make_failure_pattern

OOM_TASK = "Find out why the web container keeps restarting"
OOM_ADVICE = (
    "When a container restarts in a loop, first read `docker inspect` for OOMKilled "
    "before reading the application logs."
)


@pytest.fixture
def oom(site):
    return make_experience(site.project, task=OOM_TASK, advice=OOM_ADVICE)


def test_recall_returns_the_items_explained_and_a_prompt_block(site, oom):
    recall = site.client().recall(
        "The api container keeps restarting", environment=["docker"], tools=["docker"]
    )

    (item,) = recall.items
    assert item.experience_id == oom.pk and item.advice == OOM_ADVICE
    assert item.environment_match is True and item.polarity == "success"
    assert set(item.score_parts) >= {"similarity", "decay", "environment", "evidence"}
    assert item.score > 0 and item.path
    assert OOM_ADVICE in recall.prompt_block
    assert isinstance(recall.id, int)


def test_recall_flags_experience_from_another_environment(site, oom):
    recall = site.client().recall("The api container keeps restarting", environment=["k8s"])

    (item,) = recall.items
    assert item.environment_match is False
    assert "not on k8s" in recall.prompt_block


def test_recall_feedback_counts_a_helpful_item(site, oom):
    client = site.client()
    recall = client.recall("The api container keeps restarting")

    client.recall_feedback(recall.id, helpful=[oom.pk])

    oom.refresh_from_db()
    assert oom.upvotes == 1


def test_recall_feedback_on_an_unknown_recall_is_a_404(site):
    with pytest.raises(ApiError) as raised:
        site.client().recall_feedback(999999, helpful=[1])
    assert raised.value.status == 404


def test_check_tool_call_warns_of_a_frequent_failure_with_what_to_do_instead(site):
    pattern = make_failure_pattern(
        site.project,
        tool="kubectl_delete",
        arguments={"namespace": "prod", "force": True},
        error="forbidden: <path>",
        instead="use a dry run first",
        occurrences=4,
    )

    warnings = site.client().check_tool_call(
        "kubectl_delete", {"namespace": "staging", "force": True}, task="clean up"
    )

    (warning,) = warnings
    assert warning.pattern_id == pattern.pk and warning.occurrences == 4
    assert "kubectl_delete" in warning.message and "dry run" in warning.text


def test_check_tool_call_says_nothing_about_an_unknown_tool(site):
    assert site.client().check_tool_call("ls", {"path": "/"}) == []


def test_an_ingest_only_key_cannot_recall(site):
    key = api_key_create(project=site.project, scopes=["ingest"]).raw
    with pytest.raises(ApiError) as raised:
        HindsightClient(site.url, key).recall("anything")
    assert raised.value.status == 403 and "recall" in raised.value.detail
