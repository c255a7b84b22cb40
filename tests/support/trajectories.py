"""Trajectories as the pages show them (a fixture module, registered in tests/conftest.py):
`make_trace` ingests one, by default labelled by the machine and reviewed."""

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from accounts.models import Project
from traces.models import Review, Step, Trace
from traces.schemas import TraceIn
from traces.services.ingest import trace_ingest

_ids = itertools.count(1)


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
