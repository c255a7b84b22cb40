"""A project as people use it, for the browser tests that walk every dashboard page."""

from typing import Any

import pytest
from django.urls import reverse

from accounts.services.api_keys import api_key_create
from experiences.services.kb_articles import kb_rebuild
from experiences.services.versions import version_record
from traces.models import Review, Step


@pytest.fixture
def dashboard(project, admin_user, reviewer, make_trace, make_experience, make_proposal):
    """A project as people use it: reviewed trajectories with machine and human labels,
    experiences with their evidence, an open merge proposal, promoted experience in the KB,
    an API key, and the audit events all of that left."""
    traces = [
        make_trace(
            project,
            steps=6,
            review=True,
            task=f"Find why web-{n} keeps restarting",
            agent="ops-bot" if n % 2 else "gpt-4o-mini",
            outcome=("success", "failure")[n % 2],
        )
        for n in range(8)
    ]
    # a review naming several steps: the panel's step links sit side by side
    Review.objects.filter(trace=traces[0]).update(
        effective_steps=[0, 3, 4, 5], ineffective_steps=[1, 2]
    )
    Step.objects.filter(trace=traces[0], index__in=[1, 2]).update(
        label="redundant", label_source="human", label_reason="a second look at the same logs"
    )
    first = make_experience(
        project,
        cosine=1.0,
        trace=traces[0],
        steps=[0, 3],
        support_count=2,
        advice="When a container restarts, first read docker_logs --tail 200.",
    )
    second = make_experience(
        project,
        cosine=0.93,
        trace=traces[1],
        advice="When a container keeps restarting, read its last 200 log lines first.",
    )
    make_proposal(first, second, similarity=0.93)
    # its history: a version table wider than a phone, to be scrolled by keyboard too
    version_record(first, reason="edited by a reviewer: the log tail named, the restart loop too")
    for n in range(30):
        make_experience(project, advice=f"When step {n} fails, check the service's health first.")
    make_experience(
        project,
        status="promoted",
        tools=["docker_logs"],
        support_count=3,
        advice="When a pod is pending, describe it before scaling.",
    )
    kb_rebuild(project=project)
    api_key_create(project=project, scopes=["ingest", "recall"], name="ci pipeline")
    return {"trace": traces[0], "other": traces[1], "experience": first}


def dashboard_pages(data: dict[str, Any]) -> list[tuple[str, str]]:
    trace, other = data["trace"], data["other"]
    return [
        ("traces", reverse("traces:list")),
        ("inspector", reverse("traces:detail", args=[trace.pk])),
        ("queue", reverse("traces:queue")),
        ("compare", f"{reverse('traces:compare')}?a={trace.pk}&b={other.pk}"),
        ("library", reverse("experiences:library")),
        ("experience", reverse("experiences:detail", args=[data["experience"].pk])),
        ("merges", reverse("experiences:merges")),
        ("kb", reverse("experiences:kb")),
        ("stats", reverse("traces:stats")),
        ("audit", reverse("accounts:audit")),
        ("settings", reverse("accounts:settings")),
        ("account", reverse("account_settings")),
        ("password", reverse("password_change")),
        ("not-found", "/no-such-page/"),
    ]
