"""A client for hindsight, the experience memory for LLM agents (standard library only).

from hindsight_client import HindsightClient

client = HindsightClient("http://localhost:8000", api_key)
recall = client.recall("Find out why the web container keeps restarting", tools=["docker"])
with client.recorder(agent="ops-bot", task="...", environment=["docker"]) as rec:
    with rec.step("docker_logs", {"name": "web"}) as call:
        call.observation = run_tool(...)
"""

from hindsight_client.client import HindsightClient
from hindsight_client.errors import (
    ApiError,
    ConnectionFailed,
    HindsightError,
    QueueFull,
    RecorderError,
)
from hindsight_client.models import Recall, RecallItem, ToolWarning
from hindsight_client.recorder import StepHandle, TrajectoryRecorder
from hindsight_client.transport import Backoff

__all__ = [
    "ApiError",
    "Backoff",
    "ConnectionFailed",
    "HindsightClient",
    "HindsightError",
    "QueueFull",
    "Recall",
    "RecallItem",
    "RecorderError",
    "StepHandle",
    "ToolWarning",
    "TrajectoryRecorder",
]
