"""Personas (reviewer, admin, outsider, superuser) and trajectory factories for the page tests."""

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts.models import Membership, Project
from traces.models import Review, Step, Trace
from traces.schemas import TraceIn
from traces.services.ingest import trace_ingest

PASSWORD = "a-long-test-password"
_ids = itertools.count(1)


def make_user(username: str, *, superuser: bool = False):
    User = get_user_model()
    if superuser:
        return User.objects.create_superuser(username, f"{username}@example.com", PASSWORD)
    return User.objects.create_user(username, f"{username}@example.com", PASSWORD)


@pytest.fixture(autouse=True)
def _fast_passwords(settings) -> None:
    # The default hasher is slow on purpose; personas are made in every test.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def other_project(make_project) -> Project:
    return make_project("elsewhere")


@pytest.fixture
def reviewer(project):
    user = make_user("rita")
    Membership.objects.create(project=project, user=user, role=Membership.Role.REVIEWER)
    return user


@pytest.fixture
def admin_user(project):
    user = make_user("ada")
    Membership.objects.create(project=project, user=user, role=Membership.Role.ADMIN)
    return user


@pytest.fixture
def outsider(other_project):
    user = make_user("otto")
    Membership.objects.create(project=other_project, user=user, role=Membership.Role.ADMIN)
    return user


@pytest.fixture
def client_for() -> Callable[[Any], Client]:
    def make(user) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return make


def trajectory_payload(*, steps: int = 3, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "external_id": f"run-{next(_ids)}",
        "agent": "ops-bot",
        "task": "Find out why the web container keeps restarting",
        "environment": ["docker"],
        "outcome": "success",
        "task_type": "operation",
        "steps": [
            {
                "index": i,
                "kind": "tool_call",
                "tool": "shell" if i % 2 else "docker",
                "arguments": {"cmd": f"docker logs web --tail {i}"},
                "observation": f"line {i}\nERROR: exit code {i}" if i == 1 else f"line {i}",
                "is_error": i == 1,
                "duration_ms": 120 + i,
                "context": {"task_goal": "find the restart cause", "subtask": f"look {i}"},
            }
            for i in range(steps)
        ],
    }
    body.update(fields)
    return body


def label_steps(
    trace: Trace, *, source: str = "llm", label: str = "necessary", **extra: Any
) -> None:
    Step.objects.filter(trace=trace).update(
        label=label,
        label_source=source,
        label_reason="the machine said so",
        label_version=1,
        **extra,
    )


@pytest.fixture
def make_trace(db) -> Callable[..., Trace]:
    def make(
        project: Project, *, steps: int = 3, labelled: str | None = "llm", review: bool = False,
        **fields: Any,
    ) -> Trace:  # fmt: skip
        trace = trace_ingest(
            project=project, payload=TraceIn(**trajectory_payload(steps=steps, **fields))
        ).trace
        if labelled:
            label_steps(trace, source=labelled)
            Trace.objects.filter(pk=trace.pk).update(review_status=Trace.ReviewStatus.REVIEWED)
        if review:
            Review.objects.create(
                trace=trace, kind=Review.Kind.FULL, trigger="long_enough", window_start=0,
                window_end=max(steps - 1, 0), reviewer=labelled or "llm", prompt_version="v1",
                goal="Find the restart cause", execution_path=["read logs", "found OOM"],
                effective_steps=[0], ineffective_steps=[1], key_decisions=["read the logs first"],
                improvements=[{"step": 1, "advice": "skip the second look"}],
                experience="When a container restarts, first read its last logs.",
                labels={str(i): {"label": "necessary", "reason": "r"} for i in range(steps)},
            )  # fmt: skip
        trace.refresh_from_db()
        return trace

    return make
