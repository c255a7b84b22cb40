"""Hand-built trajectories for reviewer tests (no database)."""

from typing import Any

from traces.review.compression import compress
from traces.review.types import ReviewRequest, StepView, TraceView, Window


def sv(index: int, kind: str = "tool_call", tool: str = "", **fields: Any) -> StepView:
    values: dict[str, Any] = {
        "arguments": {},
        "observation": "",
        "observation_raw": "",
        "is_error": False,
        "error_type": "",
        "content": "",
        "agent": "ops-bot",
        "context": {},
    }
    values.update(fields)
    if values["observation"] and not values["observation_raw"]:
        values["observation_raw"] = values["observation"]
    return StepView(index=index, kind=kind, tool=tool, **values)


def tv(**fields: Any) -> TraceView:
    values: dict[str, Any] = {
        "id": 1,
        "task": "Find why svc-a cannot reach svc-b",
        "task_type": "operation",
        "intent": "",
        "agent": "ops-bot",
        "environment": ["k8s"],
        "outcome": "success",
        "feedback": "",
        "final_answer": "",
        "duration_ms": 60_000,
    }
    values.update(fields)
    return TraceView(**values)


def request_for(trace: TraceView, steps: list[StepView]) -> ReviewRequest:
    window = Window("full", "size", steps[0].index, steps[-1].index)
    return ReviewRequest(trace, steps, window, compress(trace, steps, window, len(steps)))
