"""Re-derivation after a human relabel of an experience an LLM wrote: the LLM revises its own
wording (through the real openai client against the local OpenAI-compatible server); the same
labels make no new version and no LLM call; an LLM that does not answer leaves the template
wording, said so in the version."""

import pytest

from experiences.models import Experience, ExperienceVersion
from hindsight_site.review_tasks import rederive_trace, review_trace
from tests.support.pipeline_trajectories import seed_000_body
from traces.models import Step, Trace
from traces.schemas import TraceIn
from traces.services.ingest import trace_ingest

pytestmark = pytest.mark.django_db

LLM_ADVICE = "When you use docker_logs on a restarting container, first look for OOMKilled."


def llm_reviewed(project) -> tuple[Trace, Experience]:
    trace = trace_ingest(project=project, payload=TraceIn.model_validate(seed_000_body())).trace
    assert review_trace(trace.pk) == "reviewed"
    experience = Experience.objects.get()
    assert (experience.source, experience.advice) == ("llm", LLM_ADVICE)
    return trace, experience


def relabel(trace: Trace, index: int, label: str) -> None:
    Step.objects.filter(trace=trace, index=index).update(label=label, label_source="human")


def test_a_relabel_lets_the_llm_revise_its_own_wording(llm_settings, fake_openai, project):
    trace, experience = llm_reviewed(project)
    sent_before = len(fake_openai.chat_requests)

    relabel(trace, 2, "misleading")  # a reviewer: the restart of svc-b led the agent astray
    assert rederive_trace(trace.pk) == 1

    experience.refresh_from_db()
    assert experience.advice == f"REVISED: {LLM_ADVICE}"
    assert (experience.version, experience.source) == (2, "human")
    (revision,) = fake_openai.chat_requests[sent_before:]
    assert "response_format" not in revision  # plain text, not a second review
    system, user = (m["content"] for m in revision["messages"])
    assert "Keep\nits wording, style" in system
    assert f"Experience: {LLM_ADVICE}" in user
    assert '[2] docker_restart "svc-b" -> misleading' in user
    assert "Template wording: When you" in user  # the facts of the corrected labels
    version = ExperienceVersion.objects.get(experience=experience, version=2)
    assert version.reason.endswith("(revised by the LLM that wrote it)")
    assert ExperienceVersion.objects.get(experience=experience, version=1).advice == LLM_ADVICE


def test_the_same_labels_make_no_version_and_no_llm_call(llm_settings, fake_openai, project):
    trace, experience = llm_reviewed(project)
    sent_before = len(fake_openai.chat_requests)

    # A reviewer confirms a label the LLM gave: the labels are the ones it was derived from.
    label = trace.steps.get(index=1).label
    relabel(trace, 1, label)
    rederive_trace(trace.pk)

    experience.refresh_from_db()
    assert (experience.version, experience.advice) == (1, LLM_ADVICE)
    assert len(fake_openai.chat_requests) == sent_before
    assert ExperienceVersion.objects.filter(experience=experience).count() == 1


def test_an_llm_that_does_not_answer_leaves_the_template_wording(
    llm_settings, fake_openai, project
):
    trace, experience = llm_reviewed(project)

    relabel(trace, 2, "misleading")
    fake_openai.script.extend(["500", "500"])  # the call and its one retry
    assert rederive_trace(trace.pk) == 1

    experience.refresh_from_db()
    assert experience.version == 2
    assert experience.advice.startswith("When you") and "REVISED" not in experience.advice
    assert "docker_restart" in experience.advice  # the corrected label is in the template's
    version = ExperienceVersion.objects.get(experience=experience, version=2)
    assert version.reason.endswith("(template wording: the LLM that wrote it did not answer)")


def test_a_heuristic_experience_is_revised_without_an_llm(llm_settings, fake_openai, project):
    llm_settings.HINDSIGHT_REVIEWER = "heuristic"
    trace = trace_ingest(project=project, payload=TraceIn.model_validate(seed_000_body())).trace
    review_trace(trace.pk)

    relabel(trace, 2, "necessary")
    rederive_trace(trace.pk)

    experience = Experience.objects.get()
    assert experience.version == 2 and "REVISED" not in experience.advice
    assert fake_openai.chat_requests == []
    reason = ExperienceVersion.objects.get(experience=experience, version=2).reason
    assert reason == f"re-derived from corrected labels of trace {trace.pk}"
