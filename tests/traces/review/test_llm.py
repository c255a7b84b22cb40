"""The LLM reviewer through the real openai client against a local OpenAI-compatible server."""

import openai
import pytest

from hindsight_site.review_tasks import review_trace
from tests.support.pipeline_trajectories import seed_000_body
from tests.support.review_builders import request_for, sv, tv
from traces.models import Review
from traces.review.llm import LLMReviewer
from traces.review.reviewers import get_reviewer
from traces.review.types import InvalidReview
from traces.schemas import TraceIn
from traces.services.ingest import trace_ingest


def a_request():
    steps = [
        sv(0, tool="docker_logs", arguments={"name": "web"}, observation="OOMKilled"),
        sv(1, tool="docker_update", arguments={"memory": "1g"}, is_error=True, error_type="Denied"),
        sv(2, tool="docker_update", arguments={"memory": "1g", "force": True}, observation="ok"),
    ]
    return request_for(tv(task="Stop the web container from restarting"), steps)


def test_the_llm_reviewer_is_chosen_when_an_endpoint_is_configured(llm_settings):
    assert isinstance(get_reviewer(), LLMReviewer)


def test_a_good_review_is_parsed_and_measured(llm_settings, fake_openai):
    outcome = LLMReviewer().review(a_request())

    assert outcome.reviewer == "llm" and outcome.model == "fake-reviewer"
    assert outcome.prompt_version == "llm-7"
    assert (outcome.prompt_tokens, outcome.completion_tokens) == (850, 240)
    assert [j.label for j in outcome.template.labels] == ["necessary", "failed", "necessary"]
    sent = fake_openai.chat_requests[0]
    assert sent["response_format"]["type"] == "json_schema"
    system = sent["messages"][0]["content"]
    assert "mutually exclusive" in system
    assert "changed nothing says why" in system  # the template's rules, told to the LLM
    # the same rule set as the offline reviewer: causality with a correlated-but-unnecessary
    # example, failure localisation, the scene summary
    assert "correlated but unnecessary" in system and "find where it went wrong" in system
    assert "scene_summary" in system and "100-150 characters" in system
    schema = sent["response_format"]["json_schema"]["schema"]
    assert {"scene_summary", "strategy", "pitfall", "replay", "blamed_step"} <= set(
        schema["properties"]
    )
    # the lesson rules: blame with evidence, placeholders, no quoted request, tool effects shown
    assert "Never\nblame a read-only call" in system and "<user_id from the request>" in system
    assert "do not forbid it (the next\ntask may need it)" in system  # the outcome alone
    assert "lists every\nchange it made" in system
    assert "do\nnot forbid its reply" in system  # a run that only looked up and answered
    assert "A hand-off to a person" in system and 'never "change nothing"' in system
    prompt = sent["messages"][1]["content"]
    assert "[1] tool_call docker_update" in prompt
    assert "Tools: docker_logs (read-only: its name starts with a verb that reads)" in prompt
    # the LLM gave no replay or blamed step: the rules fill them in
    assert outcome.template.replay.startswith("The same case ran before (success): docker_logs")
    assert outcome.template.blamed_step == 1


def test_an_llm_lesson_against_a_used_look_up_is_replaced_by_the_rules(llm_settings, fake_openai):
    fake_openai.script.append("forbids_lookup")
    template = LLMReviewer().review(a_request()).template

    assert "do not docker_logs" not in template.experience
    assert "a result with id" not in template.pitfall
    assert template.experience.startswith("When you use docker_update, first docker_logs")
    assert template.blamed_step == 1  # the call that failed, not the look-up


def test_a_server_error_is_raised_for_retry(llm_settings, fake_openai):
    fake_openai.script.append("500")
    with pytest.raises(openai.InternalServerError):
        LLMReviewer().review(a_request())


def test_a_rate_limit_is_raised_for_retry(llm_settings, fake_openai):
    fake_openai.script.append("429")
    with pytest.raises(openai.RateLimitError):
        LLMReviewer().review(a_request())


def test_a_timeout_is_raised_for_retry(llm_settings, fake_openai):
    fake_openai.script.append("timeout")
    with pytest.raises(openai.APITimeoutError):
        LLMReviewer().review(a_request())


def test_invalid_json_is_an_invalid_review(llm_settings, fake_openai):
    fake_openai.script.append("invalid_json")
    with pytest.raises(InvalidReview, match="not valid JSON"):
        LLMReviewer().review(a_request())


def test_labels_for_steps_that_do_not_exist_are_refused(llm_settings, fake_openai):
    fake_openai.script.append("wrong_indexes")
    with pytest.raises(InvalidReview, match="steps that do not exist: \\[100, 101, 102\\]"):
        LLMReviewer().review(a_request())


def test_missing_step_labels_are_refused(llm_settings, fake_openai):
    fake_openai.script.append("missing_steps")
    with pytest.raises(InvalidReview, match="no label for steps \\[1, 2\\]"):
        LLMReviewer().review(a_request())


@pytest.mark.django_db
def test_an_llm_review_is_stored_with_model_tokens_and_latency(llm_settings, project):
    trace = trace_ingest(project=project, payload=TraceIn.model_validate(seed_000_body())).trace
    assert review_trace(trace.pk) == "reviewed"

    review = Review.objects.get(trace=trace)
    assert (review.reviewer, review.model, review.prompt_version) == (
        "llm",
        "fake-reviewer",
        "llm-7",
    )
    assert (review.prompt_tokens, review.completion_tokens) == (850, 240)
    assert review.experience.startswith("When you use docker_logs")
    assert set(trace.steps.values_list("label_source", flat=True)) == {"llm"}
    assert trace.experience_sources.get().experience.source == "llm"
    # The LLM's scene summary is what the experience is matched on; its strategy and pitfall
    # are kept for contrast with other runs of the task.
    experience = trace.experience_sources.get().experience
    assert experience.summary.startswith("Find why the web container keeps restarting")
    assert experience.strategy == "docker_logs, then docker_update memory=1g"
