"""What the recorder sends as a step, built without touching its queue or thread: the step
kinds and outcomes, `now_iso` timestamps, the timing of a tool call and the `StepHandle` that
`step()` yields, the `system`
steps the recorder writes itself (the agent's exception, the closing count of dropped events),
and the encoding that keeps a step within the server's limits: the observation cut at
`max_observation_chars`, then any text cut so that the step fits one request."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from hindsight_client.limits import fit_step

STEP_KINDS = ("user_input", "llm_reasoning", "tool_call", "system", "state_change")
OUTCOMES = ("success", "failure", "partial", "unknown")


UTC = timezone.utc  # noqa: UP017 - the client is vendored into agents on Python < 3.11


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


@dataclass
class StepHandle:
    """Yielded by `TrajectoryRecorder.step()`: set what the tool returned."""

    observation: Any = None
    is_error: bool = False
    error_type: str = ""


@contextmanager
def timed_call(record: Callable[..., object]) -> Iterator[StepHandle]:
    """Time the block, then `record(observation=, is_error=, error_type=, started_at=,
    duration_ms=)`; an exception marks the call failed (its type and message become the
    observation) and is re-raised."""
    handle = StepHandle()
    started_at = now_iso()
    began = time.monotonic()
    try:
        yield handle
    except Exception as exc:
        record(
            observation=handle.observation
            if handle.observation is not None
            else (str(exc) or type(exc).__name__),
            is_error=True,
            error_type=handle.error_type or type(exc).__name__,
            started_at=started_at,
            duration_ms=int((time.monotonic() - began) * 1000),
        )
        raise
    record(
        observation=handle.observation,
        is_error=handle.is_error,
        error_type=handle.error_type,
        started_at=started_at,
        duration_ms=int((time.monotonic() - began) * 1000),
    )


def check_outcome(outcome: str) -> None:
    if outcome not in OUTCOMES:
        raise ValueError(f"outcome must be one of {', '.join(OUTCOMES)}; got {outcome!r}")


def exception_step(last: str, error_type: str, context: dict[str, Any]) -> dict[str, Any]:
    """The `system` step closing a trajectory whose agent stopped with an exception (`last`:
    its last line, as the traceback prints it)."""
    return {
        "kind": "system",
        "content": f"the agent stopped with an exception: {last}",
        "is_error": True,
        "error_type": error_type,
        "started_at": now_iso(),
        "context": dict(context),
    }


def dropped_notice_step(
    *, dropped: int, over_limit: int, max_steps: int, context: dict[str, Any]
) -> dict[str, Any]:
    """The closing `system` step saying how many events were dropped, and why."""
    reasons = []
    if dropped:
        reasons.append(f"{dropped} events were dropped (queue full)")
    if over_limit:
        reasons.append(
            f"{over_limit} events were dropped (the server stores at most "
            f"{max_steps} steps per trajectory)"
        )
    return {
        "kind": "system",
        "content": "hindsight client: " + "; ".join(reasons),
        "started_at": now_iso(),
        "context": dict(context),
    }


def encode_step(
    step: dict[str, Any], *, max_observation_chars: int, step_bytes: int
) -> bytes | None:
    """The step as sent: the observation cut at max_observation_chars, then any text cut
    that keeps the step within one request; None if it cannot fit. Cuts `step` in place."""
    observation = step.get("observation")
    cap = max_observation_chars
    if observation is not None and not isinstance(observation, str):
        text = json.dumps(observation, default=str)
        if len(text) > cap:
            step["observation"] = observation = text
    if isinstance(observation, str) and len(observation) > cap:
        step["observation"] = observation[:cap] + f"\n[... cut by the client at {cap} chars]"
    return fit_step(step, step_bytes)
