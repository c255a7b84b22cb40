"""POST /api/v1/recall, its feedback, and POST /api/v1/warnings."""

import random
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from experiences.embeddings import get_embedder
from experiences.models import Experience, ExperienceRecall, FailurePattern, RecallLog
from experiences.services.recall import decay_factor

pytestmark = pytest.mark.django_db

ADVICE = {
    "restart": "When you use docker_logs on a container that keeps restarting, "
    "first look for OOMKilled.",
    "cert": "When you rotate TLS certificates with kubectl, first check the secret's namespace.",
    "etl": "When you debug a slow ETL job with sql_query, first look at the lock waits.",
}


@pytest.fixture
def recall_api(project, make_key, api_for):
    return api_for(make_key(project, ("recall",)))


def make_experience(project, key: str = "restart", **fields) -> Experience:
    task = {
        "restart": "the web container keeps restarting",
        "cert": "rotate the TLS certificate",
        "etl": "the nightly ETL job is slow",
    }[key]
    values = {
        "project": project,
        "task": task,
        "advice": ADVICE[key],
        "polarity": "success",
        "status": "approved",
        "source": "llm",
        "tools": ["docker_logs", "docker_ps"],
        "environment": ["docker"],
    }
    values.update(fields)
    values.setdefault("summary", values["task"])
    (values["embedding"],) = get_embedder().embed([values["summary"]])  # the scene's vector
    values["embedding_model"] = get_embedder().model_name
    return Experience.objects.create(**values)


def ids(response) -> list[int]:
    return [item["experience_id"] for item in response.json()["items"]]


def test_recall_ranks_the_relevant_experience_first(recall_api, project):
    restart = make_experience(project, "restart")
    make_experience(project, "cert", tools=["kubectl"])
    response = recall_api.post("recall", {"task": "my web container restarts every minute"})

    assert response.status_code == 200
    assert ids(response)[0] == restart.pk
    item = response.json()["items"][0]
    assert item["advice"] == ADVICE["restart"] and item["polarity"] == "success"
    parts = item["score_parts"]
    assert set(parts) == {
        "relevance", "keyword", "vector_rank", "keyword_rank", "similarity", "decay",
        "environment", "evidence",
    }  # fmt: skip
    assert parts["vector_rank"] == 1 and parts["keyword_rank"] == 1  # first in both rankings
    assert parts["relevance"] == pytest.approx(
        0.75 * parts["similarity"] + 0.25 * parts["keyword"], abs=1e-3
    )
    assert item["score"] == pytest.approx(
        parts["relevance"] * parts["decay"] * parts["environment"] * parts["evidence"], rel=1e-3
    )
    assert (
        RecallLog.objects.get(pk=response.json()["id"]).returned[0]["experience_id"] == restart.pk
    )


def test_a_near_repeat_of_the_task_outranks_related_experience_with_more_evidence(
    recall_api, project
):
    # Relevance is a score, not a rank: rank fusion put the second of both lists within 2 % of
    # the first, and an experience merged from 8 runs and upvoted (evidence ×1.5) overtook the
    # experience of the very task asked again.
    task = "the web container keeps restarting with exit code 137 after the deploy"
    wanted = make_experience(project, "restart", task=task)
    related = make_experience(
        project, "restart", task="the web container is slow to start after the deploy",
        support_count=8, upvotes=3,
    )  # fmt: skip

    items = recall_api.post("recall", {"task": task, "k": 2}).json()["items"]

    assert [i["experience_id"] for i in items] == [wanted.pk, related.pk]
    first, second = (i["score_parts"] for i in items)
    assert first["similarity"] == pytest.approx(1.0, abs=1e-3) and first["keyword"] == 1.0
    assert second["evidence"] > 1.4 and second["relevance"] < first["relevance"] - 0.1


def test_every_recall_is_logged_and_marks_what_it_returned(recall_api, project):
    restart = make_experience(project, "restart", path=[{"tool": "docker_logs", "why": "OOM"}])
    body = {"task": "container restarting", "agent": "ops-bot", "tools": ["docker_logs"]}
    first = recall_api.post("recall", body).json()
    restart.refresh_from_db()
    recalled_at = restart.last_recalled_at
    second = recall_api.post("recall", body).json()

    assert first["items"][0]["path"] == [{"tool": "docker_logs", "why": "OOM"}]
    log = RecallLog.objects.get(pk=first["id"])
    assert log.query["agent"] == "ops-bot" and log.query["tools"] == ["docker_logs"]
    assert log.returned == [
        {"experience_id": restart.pk, "score": first["items"][0]["score"], "rank": 0}
    ]
    assert log.latency_ms > 0 and log.helpful == [] and log.feedback_at is None
    assert second["id"] > first["id"]
    assert recalled_at is not None and timezone.now() - recalled_at < timedelta(seconds=30)
    restart.refresh_from_db()
    assert restart.last_recalled_at == recalled_at  # rewritten at most once a minute


@pytest.mark.django_db(transaction=True)
def test_a_recall_never_rewrites_the_experience_row(recall_api, project):
    """Only the narrow ExperienceRecall row is written: the row with the vector keeps its
    tuple (xmin), so recalls add nothing to the HNSW index."""
    restart = make_experience(project, "restart")

    def row_version() -> str:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT xmin::text FROM experiences_experience WHERE id = %s", [restart.pk]
            )
            return cursor.fetchone()[0]

    before = row_version()
    assert ids(recall_api.post("recall", {"task": "container restarting"})) == [restart.pk]

    assert row_version() == before
    assert ExperienceRecall.objects.get(experience=restart).last_recalled_at is not None


@pytest.mark.django_db(transaction=True)
def test_the_log_skips_the_wal_flush_wait_for_itself_only(recall_api, project):
    # Autocommit, as in production: the log statement is its own transaction, and the next
    # write on the same connection (an ingest, a label) waits for its flush again.
    make_experience(project)
    assert recall_api.post("recall", {"task": "container restarting"}).status_code == 200
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone() == ("on",)


def test_candidates_are_returned_only_when_asked(recall_api, project):
    candidate = make_experience(project, status="candidate")
    make_experience(project, "etl", status="archived")
    assert ids(recall_api.post("recall", {"task": "container restarting"})) == []
    got = ids(
        recall_api.post("recall", {"task": "container restarting", "include_candidates": True})
    )
    assert got == [candidate.pk]


@pytest.mark.parametrize(
    ("scope", "context", "visible"),
    [
        ({}, {}, True),
        ({"scope_agents": ["ops-bot"]}, {"agent": "ops-bot"}, True),
        ({"scope_agents": ["ops-bot"]}, {"agent": "sales-bot"}, False),
        ({"scope_agents": ["ops-bot"]}, {}, False),
        ({"scope_users": ["alice"]}, {"user": "alice"}, True),
        ({"scope_users": ["alice"]}, {"user": "bob"}, False),
        ({"scope_environments": ["k8s"]}, {"environment": ["K8S", "aws"]}, True),
        ({"scope_environments": ["k8s"]}, {"environment": ["docker"]}, False),
        (
            {"scope_agents": ["ops-bot"], "scope_users": ["alice"]},
            {"agent": "ops-bot", "user": "bob"},
            False,
        ),
    ],
)
def test_scope_entitlement(recall_api, project, scope, context, visible):
    experience = make_experience(project, **scope)
    got = ids(recall_api.post("recall", {"task": "container keeps restarting", **context}))
    assert (experience.pk in got) is visible


def test_tools_must_overlap_when_given(recall_api, project):
    docker = make_experience(project, "restart")
    assert (
        ids(recall_api.post("recall", {"task": "container restarting", "tools": ["kubectl"]})) == []
    )
    got = ids(
        recall_api.post(
            "recall", {"task": "container restarting", "tools": ["kubectl", "docker_ps"]}
        )
    )
    assert got == [docker.pk]


def test_task_type_filters_when_given(recall_api, project):
    make_experience(project, task_type="operation")
    assert (
        ids(recall_api.post("recall", {"task": "container restarting", "task_type": "query"})) == []
    )
    assert (
        len(
            ids(
                recall_api.post(
                    "recall", {"task": "container restarting", "task_type": "operation"}
                )
            )
        )
        == 1
    )


def test_failure_lessons_decay_slower_than_success_strategies():
    assert decay_factor(age_days=0, polarity="success") == 1.0
    assert decay_factor(age_days=30, polarity="success") == pytest.approx(0.5)
    assert decay_factor(age_days=90, polarity="failure") == pytest.approx(0.5)
    assert decay_factor(age_days=60, polarity="failure") > decay_factor(
        age_days=60, polarity="success"
    )


def test_old_evidence_ranks_below_fresh_evidence(recall_api, project):
    old = make_experience(project, evidence_at=timezone.now() - timedelta(days=60))
    fresh = make_experience(project)
    items = recall_api.post("recall", {"task": "container keeps restarting"}).json()["items"]

    assert [i["experience_id"] for i in items] == [fresh.pk, old.pk]
    assert items[1]["score_parts"]["decay"] == pytest.approx(0.25, abs=0.01)


def test_evidence_minutes_apart_decays_alike_so_repeated_recalls_rank_alike(recall_api, project):
    """Ages count in whole hours: an age in seconds gave the newer of two equally relevant items
    a lead of 1e-4 a few minutes long, and the same query asked twice could swap them."""
    now = timezone.now()
    earlier = make_experience(project, evidence_at=now - timedelta(minutes=50))
    make_experience(project, evidence_at=now - timedelta(seconds=5))
    older = make_experience(project, evidence_at=now - timedelta(days=2, minutes=30))

    items = recall_api.post("recall", {"task": "container keeps restarting"}).json()["items"]

    decays = {i["experience_id"]: i["score_parts"]["decay"] for i in items}
    assert decays[earlier.pk] == 1.0 and items[0]["score"] == items[1]["score"]
    assert decays[older.pk] == pytest.approx(0.5 ** (48 / 24 / 30), abs=1e-4)
    assert items[-1]["experience_id"] == older.pk


def test_another_environment_is_down_weighted_and_flagged_not_hidden(recall_api, project):
    make_experience(project, environment=["k8s"])
    response = recall_api.post(
        "recall", {"task": "container keeps restarting", "environment": ["docker"]}
    )
    (item,) = response.json()["items"]

    assert item["environment_match"] is False and item["score_parts"]["environment"] == 0.6
    assert (
        "learned on k8s, not on docker: verify it applies here" in response.json()["prompt_block"]
    )


def test_human_approval_and_votes_raise_the_evidence_factor(recall_api, project):
    candidate = make_experience(project, status="candidate")
    promoted = make_experience(project, status="promoted", upvotes=4)
    items = recall_api.post(
        "recall", {"task": "container keeps restarting", "include_candidates": True}
    ).json()["items"]
    evidence = {i["experience_id"]: i["score_parts"]["evidence"] for i in items}
    assert evidence[candidate.pk] == 1.0
    assert evidence[promoted.pk] == pytest.approx(1.2 * 1.2)


def test_prompt_block_is_ready_to_inject(recall_api, project):
    make_experience(project)
    make_experience(project, "etl", polarity="failure", tools=["sql_query"], environment=[])
    block = recall_api.post(
        "recall", {"task": "container restarting and slow ETL job", "k": 5}
    ).json()["prompt_block"]

    lines = block.splitlines()
    assert lines[0] == "Experience from earlier runs (hindsight); check it fits this task:"
    assert f"- Strategy (1 run): {ADVICE['restart']}" in lines
    assert f"- Lesson (1 failed run): {ADVICE['etl']}" in lines


def test_nothing_relevant_gives_an_empty_answer(recall_api, project):
    response = recall_api.post("recall", {"task": "anything"})
    assert response.json()["items"] == [] and response.json()["prompt_block"] == ""


def test_recall_never_returns_another_projects_experience(recall_api, project, make_project):
    rng = random.Random(7)
    other = make_project()
    for key in ADVICE:
        make_experience(other, key, scope_agents=[], status="approved")
    mine = {make_experience(project, "cert").pk}
    for _ in range(40):
        body = {
            "task": rng.choice(["container restart", "tls cert", "etl slow", "x"]),
            "include_candidates": rng.random() < 0.5,
            "k": rng.randint(1, 10),
            "tools": rng.choice([[], ["docker_logs"], ["kubectl", "sql_query"]]),
        }
        assert set(ids(recall_api.post("recall", body))) <= mine


def test_recall_query_count_is_constant(recall_api, project):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            recall_api.post(
                "recall", {"task": "container restarting", "tools": ["docker_ps"], "k": 10}
            )
        return len(captured)

    make_experience(project)
    queries()  # the key's first use also records last_used_at
    few = queries()
    for _ in range(8):
        make_experience(project)
    assert queries() == few


def test_recall_needs_the_recall_scope(api):
    assert api.post("recall", {"task": "x"}).status_code == 403


def test_recall_validation_names_the_field(recall_api):
    response = recall_api.post("recall", {"task": "", "k": 0})
    fields = {e["loc"][-1] for e in response.json()["detail"]}
    assert response.status_code == 422 and {"task", "k"} <= fields


# ---------------------------------------------------------------------------- feedback


def test_feedback_moves_votes_and_can_be_revised(recall_api, project):
    experience = make_experience(project)
    recall_id = recall_api.post("recall", {"task": "container restarting"}).json()["id"]

    assert (
        recall_api.post(f"recall/{recall_id}/feedback", {"helpful": [experience.pk]}).status_code
        == 200
    )
    experience.refresh_from_db()
    assert (experience.upvotes, experience.downvotes) == (1, 0)

    recall_api.post(f"recall/{recall_id}/feedback", {"unhelpful": [experience.pk]})
    experience.refresh_from_db()
    assert (experience.upvotes, experience.downvotes) == (0, 1)


def test_feedback_on_items_not_returned_is_refused(recall_api, project):
    recall_id = recall_api.post("recall", {"task": "anything"}).json()["id"]
    response = recall_api.post(f"recall/{recall_id}/feedback", {"helpful": [123456]})
    assert response.status_code == 422 and "123456" in response.json()["detail"]


def test_feedback_on_another_projects_recall_is_404(recall_api, make_project, make_key, api_for):
    recall_id = recall_api.post("recall", {"task": "anything"}).json()["id"]
    outsider = api_for(make_key(make_project(), ("recall",)))
    assert outsider.post(f"recall/{recall_id}/feedback", {"helpful": []}).status_code == 404


# ---------------------------------------------------------------------------- warnings


def make_pattern(project, **fields) -> FailurePattern:
    values = {
        "project": project,
        "tool": "docker_update",
        "argument_shape": {"memory": "string", "name": "string"},
        "error_signature": "permissiondenied: cannot update memory of <s>",
        "signature_hash": str(random.random()),
        "instead": "use docker_compose_up with the new limit",
        "occurrences": 3,
        "environment": ["docker"],
    }
    values.update(fields)
    return FailurePattern.objects.create(**values)


def test_a_frequent_matching_failure_warns_with_what_to_do_instead(recall_api, project):
    pattern = make_pattern(project)
    response = recall_api.post(
        "warnings", {"tool": "docker_update", "arguments": {"name": "web", "memory": "2g"}}
    )

    (warning,) = response.json()["warnings"]
    assert warning["pattern_id"] == pattern.pk and warning["occurrences"] == 3
    assert warning["message"].startswith("Similar calls to docker_update failed 3 times")
    assert warning["instead"] == "use docker_compose_up with the new limit"


def test_rare_failures_do_not_warn(recall_api, project):
    make_pattern(project, occurrences=1)
    response = recall_api.post(
        "warnings", {"tool": "docker_update", "arguments": {"name": "web", "memory": "2g"}}
    )
    assert response.json()["warnings"] == []


def test_calls_of_another_shape_or_tool_do_not_warn(recall_api, project):
    make_pattern(project)
    different = {"tool": "docker_update", "arguments": {"cpus": 2, "restart": "always"}}
    assert recall_api.post("warnings", different).json()["warnings"] == []
    assert (
        recall_api.post("warnings", {"tool": "docker_ps", "arguments": {}}).json()["warnings"] == []
    )


def test_recall_includes_warnings_for_the_tools_at_hand(recall_api, project):
    make_pattern(project)
    response = recall_api.post(
        "recall", {"task": "raise the memory limit", "tools": ["docker_update"]}
    )
    assert [w["tool"] for w in response.json()["warnings"]] == ["docker_update"]
    quiet = recall_api.post(
        "recall", {"task": "x", "tools": ["docker_update"], "include_warnings": False}
    )
    assert quiet.json()["warnings"] == []


def test_recall_warns_of_the_most_frequent_failures_across_the_tools_at_hand(
    recall_api, project, make_project
):
    for tool, counts in {"git": [9, 4, 2], "kubectl": [12, 7, 1], "shell": [5]}.items():
        for n in counts:
            make_pattern(project, tool=tool, occurrences=n, error_signature=f"{tool} failed {n}")
    make_pattern(make_project(), tool="git", occurrences=50)  # another project's
    make_pattern(project, tool="terraform", occurrences=99)  # a tool the agent does not have

    body = {"task": "ship it", "tools": ["git", "kubectl", "shell", "git"]}
    warnings = recall_api.post("recall", body).json()["warnings"]

    assert [(w["tool"], w["occurrences"]) for w in warnings] == [
        ("kubectl", 12), ("git", 9), ("kubectl", 7), ("shell", 5), ("git", 4),
    ]  # fmt: skip
    assert warnings[0]["message"] == (
        "Similar calls to kubectl failed 12 times (kubectl failed 12). "
        "Instead, use docker_compose_up with the new limit."
    )


def test_the_query_vector_of_a_repeated_task_is_computed_once(recall_api, project):
    from experiences.services.recall import _query_vector

    make_experience(project)
    _query_vector.cache_clear()
    first = recall_api.post("recall", {"task": "container keeps restarting"}).json()
    second = recall_api.post("recall", {"task": "container keeps restarting"}).json()

    assert _query_vector.cache_info().hits == 1 and _query_vector.cache_info().misses == 1
    assert ids_of(first) == ids_of(second)


def ids_of(body) -> list[int]:
    return [item["experience_id"] for item in body["items"]]
