"""A client for hindsight, the experience memory for LLM agents (standard library only).

from hindsight_client import HindsightClient

client = HindsightClient("http://localhost:8000", api_key)
recall = client.recall("Find out why the web container keeps restarting", tools=["docker"])
with client.recorder(agent="ops-bot", task="...", environment=["docker"]) as rec:
    with rec.step("docker_logs", {"name": "web"}) as call:
        call.observation = run_tool(...)

What a recorder cannot send before it stops is spooled to disk and resent by the next recorder,
or explicitly with `resend_spooled(client)`. Nothing is sent over the server's size `Limits`;
a step the server refuses fails alone (`rec.rejected_steps`), the rest of the trace is stored.
"""

from hindsight_client.client import HindsightClient
from hindsight_client.errors import (
    ApiError,
    ConnectionFailed,
    HindsightError,
    InvalidRequest,
    QueueFull,
    RecorderError,
    RequestTooLarge,
    StepRejected,
)
from hindsight_client.limits import Limits
from hindsight_client.models import Recall, RecallItem, ToolWarning
from hindsight_client.recorder import StepHandle, TrajectoryRecorder
from hindsight_client.spool import ResendResult, default_spool_dir, resend_spooled
from hindsight_client.transport import Backoff

__all__ = [
    "ApiError",
    "Backoff",
    "ConnectionFailed",
    "HindsightClient",
    "HindsightError",
    "InvalidRequest",
    "Limits",
    "QueueFull",
    "Recall",
    "RecallItem",
    "RecorderError",
    "RequestTooLarge",
    "ResendResult",
    "StepHandle",
    "StepRejected",
    "ToolWarning",
    "TrajectoryRecorder",
    "default_spool_dir",
    "resend_spooled",
]
