"""The reviewer reads a summary, never the raw dump.

Per step: kind, tool, the first N characters of the arguments and of the observation (settings,
50 / 100 by default), with error lines and status codes from the rest of the observation kept.
"""

import math

from django.conf import settings

from traces.observations import as_text, signal_lines
from traces.review.types import StepView, TraceView, Window

ANSWER_CHARS = 200
CONTENT_CHARS = 160


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit].rstrip() + "…"


def compress_step(step: StepView, *, trace_agent: str = "") -> str:
    obs_chars = settings.HINDSIGHT_COMPRESS_OBSERVATION_CHARS
    parts = [f"[{step.index}] {step.kind}"]
    if step.agent and step.agent != trace_agent:  # multi-agent trajectories: who acted
        parts.append(f"@{step.agent}")
    if step.tool:
        parts.append(step.tool)
    if step.arguments not in (None, {}, [], ""):
        args = _cut(as_text(step.arguments), settings.HINDSIGHT_COMPRESS_ARGUMENT_CHARS)
        parts.append(f"args={args}")
    if step.is_error:
        parts.append(f"✗ {step.error_type or 'error'}")
    line = " ".join(parts)
    if step.content:
        line += f' "{_cut(step.content, CONTENT_CHARS)}"'
    observation = step.observation_raw or step.observation
    if observation:
        line += f" → {_cut(observation, obs_chars)}"
        head = " ".join(observation.split())[:obs_chars]
        kept = [s for s in signal_lines(observation[obs_chars:]) if s and s not in head]
        if kept:
            line += " | kept: " + " | ".join(_cut(s, obs_chars) for s in kept[:3])
    return line


def compress(trace: TraceView, steps: list[StepView], window: Window, total_steps: int) -> str:
    header = [
        f"Task: {_cut(trace.task, 400)}",
        f"Type: {trace.task_type} · Environment: {', '.join(trace.environment) or 'unknown'} · "
        f"Outcome: {trace.outcome}",
    ]
    if trace.intent:
        header.append(f"Intent: {_cut(trace.intent, 200)}")
    if trace.feedback:
        header.append(f"User feedback: {_cut(trace.feedback, 300)}")
    if trace.final_answer:
        header.append(f"Final answer: {_cut(trace.final_answer, ANSWER_CHARS)}")
    tools = sorted({s.tool for s in steps if s.tool})
    if tools:  # what a lesson may forbid depends on it (traces.review.tool_effects)
        effects = [trace.effect(t) for t in tools]
        said = {True: "read-only", False: "changes state", None: "effect unknown"}
        header.append(
            "Tools: "
            + "; ".join(
                f"{e.tool} ({'hands the case to a person' if e.hands_off else said[e.read_only]}: "
                f"{e.evidence})"
                for e in effects
            )
        )
    if window.kind == "local":
        header.append(
            f"Local review of steps {window.start}–{window.end} of {total_steps} "
            f"(anomaly: {window.trigger.replace('_', ' ')})"
        )
    header.append("Steps:")
    return "\n".join(header + [compress_step(s, trace_agent=trace.agent) for s in steps])


def estimate_tokens(text: str) -> int:
    """≈ 4 characters per token for English text and JSON (the usual rule of thumb)."""
    return math.ceil(len(text) / 4)
