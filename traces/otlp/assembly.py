"""A complete OpenTelemetry trace as the three calls of the streaming ingest: open, steps, complete.

Pure: buffered spans in, payloads out. Steps are the LLM and tool spans in start-time order
(then end time, then span id, so the order is total and the same on every run).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from traces.otlp.conventions import text
from traces.schemas import (
    OUTCOMES,
    Outcome,
    StepContextIn,
    StepIn,
    TraceCompleteIn,
    TraceOpenIn,
)

# Field limits of the trajectory schemas (traces/schemas.py): cut here, never refused there.
NAME_CHARS = 200
TASK_CHARS = 20000
MAX_ENVIRONMENT_TAGS = 20
DEFAULT_AGENT = "otel-agent"


@dataclass(frozen=True)
class BufferedSpan:
    """What assembly reads of a buffered span (models.OtelSpan has these fields)."""

    span_id: str
    role: str  # agent | llm | tool | root
    is_root: bool
    start_ns: int
    end_ns: int
    facts: dict[str, Any]


@dataclass(frozen=True)
class Trajectory:
    header: TraceOpenIn
    steps: list[StepIn]
    completion: TraceCompleteIn


def external_id_for(trace_id: str) -> str:
    return f"otel-{trace_id}"


def moment(nanos: int) -> datetime | None:
    if nanos <= 0:
        return None
    try:
        return datetime.fromtimestamp(nanos / 1e9, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _cut(value: str, limit: int = NAME_CHARS) -> str:
    return value.strip()[:limit]


def _order(spans: Sequence[BufferedSpan]) -> list[BufferedSpan]:
    return sorted(spans, key=lambda s: (s.start_ns, s.end_ns, s.span_id))


def _run_span(spans: list[BufferedSpan]) -> BufferedSpan | None:
    """The span that stands for the agent run: the root when it is an agent (or workflow) span,
    else the outermost agent span, else the root of no GenAI kind (e.g. a server span)."""
    roots = [s for s in spans if s.is_root]
    if roots and roots[0].role == "agent":
        return roots[0]
    agents = [s for s in spans if s.role == "agent"]
    if agents:
        return agents[0]
    return roots[0] if roots else None


def _first(spans: list[BufferedSpan], key: str) -> str:
    for span in spans:
        value = span.facts.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def _agent_of(step: BufferedSpan, agents: list[BufferedSpan]) -> str:
    """The innermost agent span running when the step started (by time: the spans between an
    agent and its steps, e.g. framework spans of no GenAI kind, are not kept)."""
    around = [
        a
        for a in agents
        if a.start_ns <= step.start_ns <= a.end_ns and a.facts.get("agent") and a is not step
    ]
    if not around:
        return ""
    innermost = max(around, key=lambda a: (a.start_ns, -a.end_ns))
    return _cut(innermost.facts["agent"])


def _step(span: BufferedSpan, *, index: int, agent: str, task: str) -> StepIn:
    facts = span.facts
    error_text = text(facts.get("error_text"))
    duration = (span.end_ns - span.start_ns) // 1_000_000 if span.end_ns >= span.start_ns else None
    context = StepContextIn(
        task_goal=task, latest_user_input=text(facts.get("last_user_text")) or ""
    )
    common: dict[str, Any] = {
        "index": index,
        "agent": agent or None,
        "is_error": bool(facts.get("is_error")),
        "error_type": _cut(text(facts.get("error_type"))),
        "context": context,
        "started_at": moment(span.start_ns),
        "duration_ms": duration,
    }
    if span.role == "tool":
        result = facts.get("result")
        observation: Any = result
        if common["is_error"] and error_text:
            observation = (
                f"{error_text}\n{text(result)}".strip() if result is not None else error_text
            )
        return StepIn(
            kind="tool_call",
            tool=_cut(text(facts.get("tool"))) or "unknown_tool",
            arguments=facts.get("arguments"),
            observation=observation,
            **common,
        )
    content = text(facts.get("output_text"))
    requested = [t for t in facts.get("requested_tools") or [] if isinstance(t, str)]
    if not content and requested:
        content = "asks for tool call(s): " + ", ".join(requested)
    if common["is_error"] and error_text:
        content = f"{content}\n{error_text}".strip()
    model = text(facts.get("model"))
    return StepIn(
        kind="llm_reasoning",
        content=content,
        arguments={"model": model} if model else None,
        **common,
    )


def _environment(spans: list[BufferedSpan]) -> list[str]:
    tags: list[str] = []
    for span in spans:
        for tag in span.facts.get("environment") or []:
            if isinstance(tag, str) and 0 < len(tag) <= 100 and tag not in tags:
                tags.append(tag)
    return tags[:MAX_ENVIRONMENT_TAGS]


def _outcome(run: BufferedSpan | None, root: BufferedSpan | None) -> Outcome:
    """An explicit hindsight.outcome on the run (or root) span wins; else ERROR on either is a
    failure and OK / UNSET a success; unknown when neither the root nor an agent span came."""
    for span in (run, root):
        explicit = span.facts.get("outcome") if span else None
        if explicit in OUTCOMES:
            return Outcome(explicit)
    if run is None:
        return Outcome.UNKNOWN
    failed = any(span is not None and span.facts.get("is_error") for span in (run, root))
    return Outcome.FAILURE if failed else Outcome.SUCCESS


def trajectory_build(
    *,
    trace_id: str,
    spans: Sequence[BufferedSpan],
    completed_by: str,
    service_name: str = "",
) -> Trajectory:
    ordered = _order(spans)
    run = _run_span(ordered)
    root = next((s for s in ordered if s.is_root), None)
    whole = root or run  # the span whose times are the trajectory's
    agents = [s for s in ordered if s.role == "agent"]
    steps_spans = [s for s in ordered if s.role in ("llm", "tool")]
    # The opening user request: what the run was asked, else what the first LLM call was asked.
    task = _first(([run] if run else []) + agents + steps_spans, "first_user_text")
    agent = _cut(_first(agents, "agent") or service_name) or DEFAULT_AGENT
    conversation_id = _first(ordered, "conversation_id")
    if not task:
        task = f"OpenTelemetry trace {trace_id}"
    conventions = sorted({s.facts.get("convention", "") for s in ordered} - {""})
    metadata: dict[str, Any] = {
        "source": "otlp",
        "otel_trace_id": trace_id,
        "completed_by": completed_by,
        "conventions": conventions,
    }
    if conversation_id:
        metadata["gen_ai.conversation.id"] = conversation_id
    if service_name:
        metadata["service.name"] = service_name
    started_at = moment(whole.start_ns) if whole else None
    ended_at = moment(whole.end_ns) if whole and whole.end_ns >= whole.start_ns else None
    header = TraceOpenIn(
        external_id=external_id_for(trace_id),
        agent=agent,
        task=task[:TASK_CHARS],
        environment=_environment(ordered),
        session_id=_cut(conversation_id),
        user=_cut(_first(ordered, "user")),
        started_at=started_at,
        metadata=metadata,
    )
    steps = [
        _step(span, index=i, agent=_agent_of(span, agents), task=header.task)
        for i, span in enumerate(steps_spans)
    ]
    final_answer = text(run.facts.get("output_text")) if run else ""
    if not final_answer:
        llm_outputs = [s.content for s in steps if s.kind == "llm_reasoning" and s.content]
        final_answer = llm_outputs[-1] if llm_outputs else ""
    completion = TraceCompleteIn(
        outcome=_outcome(run, root),
        ended_at=ended_at,
        final_answer=final_answer,
    )
    return Trajectory(header=header, steps=steps, completion=completion)
