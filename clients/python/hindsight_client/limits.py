"""The server's size limits, kept on the client's side so no request is ever refused for its
size, and the cutting of a step that would not fit in one request."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# The envelope of a steps request around its comma-separated steps.
STEPS_ENVELOPE = len(b'{"steps":[]}')
# Fields of a step that hold the agent's text and may be cut to make the step fit.
CUTTABLE = ("content", "observation", "observation_summary", "arguments", "context")
# Shorter strings are not worth cutting (the marker alone is about this long).
MIN_CUT = 100


@dataclass(frozen=True)
class Limits:
    """What the server accepts, with its documented defaults. A server started with other
    values needs the same ones here (`HindsightClient(..., limits=Limits(...))`).

    `max_body_bytes`: `HINDSIGHT_MAX_BODY_BYTES`, the largest request body (the server answers
    413 over it before reading it). `max_steps`: `HINDSIGHT_MAX_STEPS`, steps per trajectory.
    `max_batch`: `HINDSIGHT_MAX_BATCH`, trajectories per `traces/batch` request."""

    max_body_bytes: int = 5 * 1024 * 1024
    max_steps: int = 2000
    max_batch: int = 500

    def __post_init__(self) -> None:
        if self.max_body_bytes < 1024 or self.max_steps < 2 or self.max_batch < 1:
            raise ValueError(
                "limits must be at least 1024 body bytes, 2 steps and 1 trace per batch"
            )

    @property
    def step_bytes(self) -> int:
        """The largest encoded step: one that fills a steps request on its own."""
        return self.max_body_bytes - STEPS_ENVELOPE


def dumps(value: Any) -> str:
    """The client's JSON encoding (ASCII, so its length in characters is its size in bytes)."""
    return json.dumps(value, default=str)


def steps_body(encoded: list[bytes]) -> bytes:
    return b'{"steps":[' + b",".join(encoded) + b"]}"


def fit_step(step: dict[str, Any], budget: int) -> bytes | None:
    """`step` encoded in at most `budget` bytes, or None when it cannot be.

    A step over the budget has its longest text cut (in place, ending with a marker saying how
    much was there), the longest first, until it fits. A structured value (JSON arguments or
    observation, a context entry) whose own strings are too short to make up the excess becomes
    its JSON text first, as an observation over `max_observation_chars` does. What is left when
    every cuttable text is cut (a huge tool name, say) cannot fit."""
    encoded = dumps(step)
    original: dict[tuple[int, int | str], int] = {}  # (container, key) -> length before cuts
    for _ in range(64):
        excess = len(encoded) - budget
        if excess <= 0:
            return encoded.encode()
        leaf = _longest_text(step)
        if (leaf is None or len(dumps(leaf[2])) <= excess) and _flatten_largest(step):
            pass
        elif leaf is not None:
            container, key, text = leaf
            slot = (id(container), key)
            again = slot in original
            before = original.setdefault(slot, len(text))
            container[key] = _cut(text, excess, before, estimate=not again)
        else:
            return None
        encoded = dumps(step)
    return None


def _cut(text: str, excess: int, before: int, *, estimate: bool) -> str:
    """`text` shortened by about `excess` encoded bytes, marker included. The first cut of a
    text assumes its escapes (control characters, non-ASCII) are spread evenly; a second one
    removes at least `excess` characters, each at least one byte, so it always fits."""
    room = len(dumps(f"\n[... cut by the client at {len(text)} of {before} chars: over the limit]"))
    per_char = len(dumps(text)) / max(1, len(text)) if estimate else 1.0
    keep = max(0, int(len(text) - (excess + room) / per_char) - 1)
    return text[:keep] + f"\n[... cut by the client at {keep} of {before} chars: over the limit]"


def _longest_text(step: dict[str, Any]) -> tuple[Any, int | str, str] | None:
    """(container, key, text) of the longest string worth cutting among the cuttable fields,
    however deep; None when none is left."""
    best: tuple[Any, int | str, str] | None = None
    pending: list[tuple[Any, int | str]] = [(step, name) for name in CUTTABLE if name in step]
    while pending:
        container, key = pending.pop()
        value = container[key]
        if isinstance(value, str):
            if len(value) > MIN_CUT and (best is None or len(value) > len(best[2])):
                best = (container, key, value)
        elif isinstance(value, dict):
            pending.extend((value, k) for k in value)
        elif isinstance(value, list):
            pending.extend((value, i) for i in range(len(value)))
    return best


def _flatten_largest(step: dict[str, Any]) -> bool:
    """Replace the largest structured value among the arguments, the observation and the
    context's entries by its JSON text (the context itself stays a dict, as the server wants
    it); False when there is none."""
    slots: list[tuple[dict[str, Any], str]] = [
        (step, name) for name in ("arguments", "observation") if name in step
    ]
    if isinstance(step.get("context"), dict):
        slots += [(step["context"], key) for key in step["context"]]
    sized = [
        (len(dumps(container[key])), n)
        for n, (container, key) in enumerate(slots)
        if isinstance(container[key], (dict, list)) and container[key]
    ]
    if not sized:
        return False
    container, key = slots[max(sized)[1]]
    container[key] = dumps(container[key])
    return True
