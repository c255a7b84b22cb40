"""Review -> labels, Review rows, experiences, failure patterns, embeddings (in process)."""

import pytest
from django.db import IntegrityError, connection

from experiences.embeddings import LocalMiniLM
from experiences.models import Experience, ExperienceVersion, FailurePattern
from hindsight_site.review_tasks import rederive_trace, review_trace
from tests.support.pipeline_trajectories import chat_only_body, seed_000_body, short_body
from traces.models import Review, Step, Trace
from traces.review import service as review
from traces.schemas import TraceIn
from traces.services.ingest import trace_ingest

pytestmark = pytest.mark.django_db


def ingest(project, body) -> Trace:
    return trace_ingest(project=project, payload=TraceIn.model_validate(body)).trace


def labels(trace: Trace) -> dict[int, str]:
    return dict(trace.steps.order_by("index").values_list("index", "label"))


def test_offline_review_labels_steps_and_distils_an_embedded_experience(project):
    trace = ingest(project, seed_000_body())
    assert review_trace(trace.pk) == "reviewed"

    trace.refresh_from_db()
    assert trace.review_status == "reviewed"
    assert "full review (7 tool calls)" in trace.review_status_reason
    assert "heuristic reviewer" in trace.review_status_reason
    assert labels(trace) == {
        0: "necessary",
        1: "necessary",
        2: "redundant",
        3: "redundant",
        4: "failed",
        5: "necessary",
        6: "necessary",
        7: "necessary",
    }
    assert set(trace.steps.values_list("label_source", flat=True)) == {"heuristic"}

    review = Review.objects.get(trace=trace, kind="full")
    assert review.reviewer == "heuristic" and review.prompt_version == "heuristic-2"
    assert review.prompt_tokens > 0 and review.prompt_chars > 0

    experience = Experience.objects.get()
    assert experience.status == "candidate" and experience.polarity == "success"
    assert experience.source == "heuristic"
    assert experience.advice.startswith("When you use kubectl_patch_networkpolicy, first ")
    assert experience.kind == "episode" and experience.blame["tool"] == "kubectl_exec"
    assert "svc-a-7d9f" in experience.replay and "svc-a-7d9f" not in experience.advice
    assert (experience.tools, experience.environment) == (trace.tools, ["k8s"])
    assert [p["index"] for p in experience.path] == [0, 1, 5, 6, 7]
    assert len(experience.embedding) == 384 and experience.embedding_model == LocalMiniLM.model_name
    assert experience.sources.get().review == review
    assert experience.versions.count() == 1


def test_failed_steps_become_failure_patterns_with_what_to_do_instead(project):
    review_trace(ingest(project, seed_000_body()).pk)

    pattern = FailurePattern.objects.get()
    assert pattern.tool == "kubectl_exec"
    assert pattern.argument_shape == {"cmd": "string", "pod": "string"}
    assert "connectionrefused" in pattern.error_signature and "<n>" in pattern.error_signature
    assert pattern.instead.startswith("use kubectl_logs")
    assert pattern.occurrences == 1 and pattern.environment == ["k8s"]


def test_the_same_failure_in_another_trace_counts_as_another_occurrence(project):
    first, second = ingest(project, seed_000_body("a")), ingest(project, seed_000_body("b"))
    review_trace(first.pk)
    review_trace(second.pk)

    pattern = FailurePattern.objects.get()
    assert pattern.occurrences == 2
    assert [s["trace_id"] for s in pattern.sources] == [second.pk, first.pk]  # latest first
    assert (pattern.environment, pattern.agents) == (["k8s"], [first.agent])
    assert Experience.objects.count() == 2  # merging near-duplicates is the dedup's job


def test_a_short_trace_without_a_tool_call_is_skipped_with_the_reason(project):
    trace = ingest(project, chat_only_body())
    assert review_trace(trace.pk) == "nothing to do"

    trace.refresh_from_db()
    assert trace.review_status == "skipped"
    assert trace.review_status_reason.startswith("too short to review: 1 events, 0 tool calls")
    assert "a shorter run is reviewed offline" in trace.review_status_reason
    assert not Review.objects.exists() and not Experience.objects.exists()


def test_a_short_run_that_called_a_tool_gets_a_short_offline_review(project, settings):
    # An LLM reviewer is configured, at an address where nothing answers: a short run must not
    # reach it (its review is the offline reviewer's, free and deterministic).
    settings.HINDSIGHT_REVIEWER = "llm"
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    trace = ingest(project, short_body())
    assert review_trace(trace.pk) == "reviewed"

    trace.refresh_from_db()
    assert trace.review_status_reason == "short review (1 tool call(s)) by the offline reviewer"
    review = Review.objects.get(trace=trace)
    assert (review.kind, review.trigger, review.reviewer) == ("full", "short", "heuristic")
    assert labels(trace) == {0: "necessary"}
    experience = Experience.objects.get()
    assert "Tokyo" in experience.summary and "clock" in experience.advice


def test_with_short_runs_off_a_short_run_is_skipped_as_before(project, settings):
    settings.HINDSIGHT_REVIEW_SHORT_RUNS = False
    trace = ingest(project, short_body())
    assert review_trace(trace.pk) == "nothing to do"

    trace.refresh_from_db()
    assert trace.review_status == "skipped"
    assert trace.review_status_reason.startswith("too short to review: 1 events, 1 tool calls")
    assert "reviewed offline" not in trace.review_status_reason
    assert not Experience.objects.exists()


def test_a_short_trace_with_an_anomaly_gets_a_local_review(project, settings):
    settings.HINDSIGHT_REVIEW_SHORT_RUNS = False  # the local review alone, not beside a short one
    settings.HINDSIGHT_LOCAL_WINDOW_STEPS = 0
    body = short_body()
    body["outcome"] = "unknown"  # a failed run would get a full review as well
    body["steps"] = [
        {
            "index": i,
            "kind": "tool_call",
            "tool": "db_query",
            "arguments": {"q": "select 1"},
            "observation": "ERROR: connection timed out after 5000 ms",
            "is_error": True,
        }
        for i in range(2)
    ]
    trace = ingest(project, body)
    review_trace(trace.pk)

    review = Review.objects.get(trace=trace)
    assert (review.kind, review.trigger, review.window_start, review.window_end) == (
        "local",
        "consecutive_failures",
        0,
        1,
    )
    assert labels(trace) == {0: "failed", 1: "failed"}
    assert Experience.objects.get().polarity == "failure"


def test_beginning_a_review_claims_the_trace_in_one_statement(project, django_assert_num_queries):
    trace = ingest(project, seed_000_body())
    # The claim, the steps, what the project knows of its tools.
    with django_assert_num_queries(3):
        plan = review.review_begin(trace_id=trace.pk, worker="w1")
    assert plan is not None and plan.project_id == project.pk
    # A task redelivered after its worker died takes the trace again, under its own name.
    assert review.review_begin(trace_id=trace.pk, worker="w2") is not None
    trace.refresh_from_db()
    assert (trace.review_status, trace.review_worker) == ("reviewing", "w2")
    # A reviewed trace is not taken.
    Trace.objects.filter(pk=trace.pk).update(review_status="reviewed")
    assert review.review_begin(trace_id=trace.pk, worker="w3") is None
    assert Trace.objects.get(pk=trace.pk).review_worker == "w2"


def test_reviewing_twice_changes_nothing(project):
    trace = ingest(project, seed_000_body())
    review_trace(trace.pk)
    Trace.objects.filter(pk=trace.pk).update(review_status="queued")  # a redelivered task

    assert review_trace(trace.pk) == "already applied"
    assert Review.objects.count() == 1 and Experience.objects.count() == 1
    assert FailurePattern.objects.get().occurrences == 1
    assert Trace.objects.get(pk=trace.pk).review_status == "reviewed"  # not left reviewing


def test_a_review_that_clashes_with_no_earlier_review_fails_visibly(project):
    # Two anomalies framing the same steps once made two reviews of one window: the insert broke
    # and the trace sat "reviewing", said to be "already applied" though nothing was.
    trace = ingest(project, seed_000_body())
    Trace.objects.filter(pk=trace.pk).update(review_status="queued")
    with connection.cursor() as cursor:  # a table constraint no review can satisfy
        cursor.execute(
            "ALTER TABLE traces_review ADD CONSTRAINT test_no_review CHECK (trace_id < 0)"
        )
    with pytest.raises(IntegrityError):
        review_trace(trace.pk)  # the worker's on_failure then marks it failed, with the reason
    assert not Review.objects.exists()


def test_an_incomplete_trace_is_never_reviewed(project, api):
    trace_id = api.post("traces/open", {"external_id": "o", "agent": "a", "task": "t"}).json()["id"]
    assert review_trace(trace_id) == "nothing to do"
    assert Trace.objects.get(pk=trace_id).review_status == "pending"


def test_human_labels_survive_a_machine_review(project):
    trace = ingest(project, seed_000_body())
    Step.objects.filter(trace=trace, index=2).update(
        label="necessary", label_source="human", label_version=1
    )
    review_trace(trace.pk)

    step = trace.steps.get(index=2)
    assert (step.label, step.label_source) == ("necessary", "human")


def test_relabel_rederives_the_experience_and_keeps_the_old_version(project):
    trace = ingest(project, seed_000_body())
    review_trace(trace.pk)
    experience = Experience.objects.get()
    old_advice = experience.advice

    # A reviewer decides the restarts were necessary after all.
    Step.objects.filter(trace=trace, index__in=[2, 3]).update(
        label="necessary", label_source="human"
    )
    assert rederive_trace(trace.pk) == 1

    experience.refresh_from_db()
    assert experience.version == 2 and experience.source == "human"
    assert "docker_restart" in experience.advice and "Skip docker_restart" not in experience.advice
    assert [p["index"] for p in experience.path] == [0, 1, 2, 3, 5, 6, 7]
    versions = list(
        ExperienceVersion.objects.filter(experience=experience).values_list("version", "advice")
    )
    assert versions == [(2, experience.advice), (1, old_advice)]
    trace.refresh_from_db()
    assert trace.experiences_derived_at is not None


def test_rederive_without_changes_makes_no_new_version(project):
    trace = ingest(project, seed_000_body())
    review_trace(trace.pk)
    rederive_trace(trace.pk)
    assert Experience.objects.get().version == 1


def test_a_trajectory_not_worth_referencing_leaves_only_labels(project):
    body = short_body("nothing-to-learn")
    body["outcome"] = "unknown"
    body["steps"] = [
        {
            "index": i,
            "kind": "tool_call",
            "tool": "ping",
            "arguments": {"n": i},
            "observation": "pong",
        }
        for i in range(6)
    ]
    trace = ingest(project, body)
    review_trace(trace.pk)

    trace.refresh_from_db()
    assert trace.review_status == "reviewed"
    assert trace.steps.exclude(label="").count() == 6
    assert not Review.objects.get(trace=trace).is_reference_worthy
    assert not Experience.objects.exists() and not FailurePattern.objects.exists()


def test_a_local_review_beside_a_full_one_adds_no_second_experience(project):
    body = seed_000_body()
    body["steps"][3]["is_error"] = True  # steps 3 and 4 now fail back to back: a local review
    body["steps"][3]["observation"] = "Error: container svc-a not found"
    trace = ingest(project, body)
    review_trace(trace.pk)

    kinds = set(Review.objects.filter(trace=trace).values_list("kind", flat=True))
    assert kinds == {"full", "local"}
    assert Experience.objects.count() == 1
    assert FailurePattern.objects.count() == 2


def test_the_error_type_is_not_repeated_in_the_signature(project):
    body = seed_000_body()
    body["steps"][4]["observation"] = "ConnectionRefused: svc-b:8080 after 3012 ms"
    review_trace(ingest(project, body).pk)
    signature = FailurePattern.objects.get().error_signature
    assert signature == "connectionrefused: svc-b:<n> after <n> ms"
