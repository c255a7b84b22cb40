"""OpenAI Agents SDK: a tracing processor turns each trace (one `Runner.run`, or a `trace()`
block around several) into one trajectory; recall is a function tool and a prompt block;
the warning check runs as run hooks around each tool call.

    hindsight = HindsightTracingProcessor(client, agent="release-agent")
    set_trace_processors([hindsight])   # or add_trace_processor(hindsight) to keep OpenAI's
    await Runner.run(agent, task, hooks=HindsightRunHooks(client))

Spans become steps in the order they started: a generation (Chat Completions) or response
(Responses API) span is an `llm_reasoning` step (its text, and the tool calls it asked for),
a function span a `tool_call` step (arguments, output, failed when the span has an error), a
handoff or a tripped guardrail a `system` step. The SDK has no outcome: a trace whose agent
span carries an error (max turns, a tool that raised, a guardrail tripwire) is a `failure`,
any other a `success`. The task is the first user message the model was given (the trace's
name when there is none), the agent the first agent span's name unless `agent=` is given, the
session the trace's `group_id`, the user the trace metadata's `user_id` (or `user`). Inputs and
outputs are only in the spans with `trace_include_sensitive_data` on (the SDK's default).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agents import FunctionTool, RunContextWrapper, RunHooks, custom_span, function_tool
from agents.tracing import Span, Trace, TracingProcessor
from agents.tracing.span_data import (
    AgentSpanData,
    CustomSpanData,
    FunctionSpanData,
    GenerationSpanData,
    GuardrailSpanData,
    HandoffSpanData,
    ResponseSpanData,
)

from hindsight_client.client import HindsightClient
from hindsight_client.integrations.common import (
    RECALL_TOOL_DESCRIPTION,
    RECALL_TOOL_NAME,
    RecallScope,
    ToolCallWarnings,
    parse_arguments,
    recall_block,
    recall_tool_answer,
    text_of,
)
from hindsight_client.mcp_calls import warning_text
from hindsight_client.models import ToolWarning
from hindsight_client.recorder import TrajectoryRecorder

__all__ = [
    "HindsightRunHooks",
    "HindsightTracingProcessor",
    "RecallScope",
    "recall_block",
    "recall_tool",
]

logger = logging.getLogger("hindsight_client.integrations")

WARNING_SPAN = "hindsight_warning"


def recall_tool(
    client: HindsightClient, scope: RecallScope | None = None, *, name: str = RECALL_TOOL_NAME
) -> FunctionTool:
    """A function tool the model calls with the task in its own words."""

    async def hindsight_recall(task: str) -> str:
        return await asyncio.to_thread(recall_tool_answer, client, task, scope)

    return function_tool(
        hindsight_recall, name_override=name, description_override=RECALL_TOOL_DESCRIPTION
    )


class HindsightRunHooks(RunHooks[Any]):
    """Checks each function tool call against the project's frequent failure patterns while
    it runs. A match is recorded in the trajectory (a `system` step after the call, through a
    custom span the processor reads) and handed to `on_warning` (default: logged). The SDK's
    hooks cannot change a tool's result, so the model does not read the warning."""

    def __init__(
        self,
        client: HindsightClient,
        *,
        environment: Sequence[str] | None = None,
        agent: str | None = None,
        timeout: float = 0.5,
        on_warning: Callable[[str, list[ToolWarning]], None] | None = None,
    ) -> None:
        self.warnings = ToolCallWarnings(
            client, environment=environment, agent=agent, timeout=timeout
        )
        self.on_warning = on_warning or _log_warning
        self._pending: dict[str, Any] = {}

    async def on_tool_start(self, context: RunContextWrapper[Any], agent: Any, tool: Any) -> None:
        arguments = getattr(context, "tool_arguments", None)
        if arguments is None:
            return  # not a function tool: no arguments to check
        key = _call_key(context, tool)
        self._pending[key] = self.warnings.check(tool.name, parse_arguments(arguments))

    async def on_tool_end(
        self, context: RunContextWrapper[Any], agent: Any, tool: Any, result: object
    ) -> None:
        pending = self._pending.pop(_call_key(context, tool), None)
        if pending is None:
            return
        found = await asyncio.to_thread(self.warnings.found, pending)
        if not found:
            return
        with custom_span(WARNING_SPAN, {"tool": tool.name, "message": warning_text(found)}):
            pass
        self.on_warning(tool.name, found)


def _call_key(context: Any, tool: Any) -> str:
    return str(getattr(context, "tool_call_id", None) or tool.name)


def _log_warning(tool: str, warnings: list[ToolWarning]) -> None:
    logger.warning("hindsight: %s", warning_text(warnings).replace("\n", " "))


@dataclass
class _OpenTrace:
    trace: Trace
    spans: list[Span[Any]] = field(default_factory=list)


class HindsightTracingProcessor(TracingProcessor):
    """Sends each finished trace as one trajectory (see the module's docstring). The spans
    are kept in memory until their trace ends; sending is the recorder's (in the background,
    retried, spooled when hindsight is away). `ignore_tools` are not recorded (by default the
    recall tool)."""

    def __init__(
        self,
        client: HindsightClient,
        *,
        agent: str | None = None,
        environment: Sequence[str] = (),
        task_type: str | None = None,
        ignore_tools: Sequence[str] = (RECALL_TOOL_NAME,),
        **recorder_options: Any,
    ) -> None:
        self.client = client
        self.agent = agent
        self.environment = list(environment)
        self.task_type = task_type
        self.ignore_tools = set(ignore_tools)
        self.recorder_options = recorder_options
        self.recorders: list[TrajectoryRecorder] = []
        self._lock = threading.Lock()
        self._open: dict[str, _OpenTrace] = {}

    def on_trace_start(self, trace: Trace) -> None:
        with self._lock:
            self._open[trace.trace_id] = _OpenTrace(trace)

    def on_span_start(self, span: Span[Any]) -> None:
        pass

    def on_span_end(self, span: Span[Any]) -> None:
        with self._lock:
            open_trace = self._open.get(span.trace_id)
            if open_trace is not None:
                open_trace.spans.append(span)

    def on_trace_end(self, trace: Trace) -> None:
        with self._lock:
            open_trace = self._open.pop(trace.trace_id, None)
        if open_trace is None or not open_trace.spans:
            return
        try:
            self._send(open_trace)
        except Exception:  # never break the agent over its telemetry
            logger.exception("hindsight: trace %s could not be recorded", trace.trace_id)

    def _send(self, open_trace: _OpenTrace) -> None:
        trace, spans = open_trace.trace, sorted(open_trace.spans, key=_position)
        metadata = dict(getattr(trace, "metadata", None) or {})
        user = metadata.get("user_id") or metadata.get("user")
        group = getattr(trace, "group_id", None)
        task = task_of(spans) or trace.name
        recorder = self.client.recorder(
            agent=self.agent or agent_of(spans) or trace.name,
            task=task,
            environment=self.environment,
            task_type=self.task_type,
            user=str(user) if user else None,
            session_id=str(group) if group else None,
            metadata={"workflow": trace.name, "openai_trace_id": trace.trace_id},
            **self.recorder_options,
        )
        self.recorders.append(recorder)
        recorder.user_input(task)
        for span in spans:
            step = step_of(span, self.ignore_tools)
            if step is not None:
                recorder.record_event(**step)
        recorder.finish(outcome_of(spans), final_answer=final_answer(spans) or None)

    def shutdown(self) -> None:
        self.force_flush()

    def force_flush(self, timeout: float = 10.0) -> None:
        """Wait (at most `timeout` seconds each) until the finished traces are stored."""
        for recorder in list(self.recorders):
            recorder.flush(timeout)


# ---------------------------------------------------------------------- spans as steps


def step_of(span: Span[Any], ignore_tools: set[str]) -> dict[str, Any] | None:
    """The recorder event of one span (None for spans that are not steps)."""
    data = span.span_data
    timing: dict[str, Any] = {"started_at": span.started_at, "duration_ms": _duration_ms(span)}
    if isinstance(data, (GenerationSpanData, ResponseSpanData)):
        context = {"model": data.model} if isinstance(data, GenerationSpanData) else {}
        return {
            "kind": "llm_reasoning",
            "content": turn_text(data) or "(empty answer)",
            "context": context,
            **timing,
        }
    if isinstance(data, FunctionSpanData):
        if data.name in ignore_tools:
            return None
        error = span.error
        observation = text_of(data.output)
        if error is not None:
            detail = (error.get("data") or {}).get("error")
            observation = "\n".join(t for t in (observation, detail or error["message"]) if t)
        return {
            "kind": "tool_call",
            "tool": data.name,
            "arguments": parse_arguments(data.input),
            "observation": observation,
            "is_error": error is not None,
            **timing,
        }
    if isinstance(data, HandoffSpanData):
        return {
            "kind": "system",
            "content": f"handoff from {data.from_agent} to {data.to_agent}",
            **timing,
        }
    if isinstance(data, GuardrailSpanData) and data.triggered:
        return {
            "kind": "system",
            "content": f"guardrail {data.name} tripped",
            "is_error": True,
            **timing,
        }
    if isinstance(data, CustomSpanData) and data.name == WARNING_SPAN:
        return {"kind": "system", "content": str(data.data.get("message", "")), **timing}
    if isinstance(data, AgentSpanData) and span.error is not None:
        return {
            "kind": "system",
            "content": f"agent {data.name} stopped: {span.error['message']}",
            "is_error": True,
            **timing,
        }
    return None


def turn_text(data: GenerationSpanData | ResponseSpanData) -> str:
    """A model turn: its text, then each tool call it asked for."""
    lines: list[str] = []
    if isinstance(data, GenerationSpanData):
        for message in data.output or []:
            lines.append(text_of(message.get("content")))
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                lines.append(f"calls {function.get('name')} {function.get('arguments')}")
    elif data.response is not None:
        for item in data.response.output:
            if item.type == "message":
                lines.extend(getattr(part, "text", "") for part in item.content)
            elif item.type == "function_call":
                lines.append(f"calls {item.name} {item.arguments}")
    return "\n".join(line for line in lines if line)


def task_of(spans: list[Span[Any]]) -> str:
    """The first user message the model was given."""
    for span in spans:
        data = span.span_data
        if isinstance(data, GenerationSpanData):
            messages: Any = data.input or []
        elif isinstance(data, ResponseSpanData):
            messages = data.input or []
            if isinstance(messages, str):
                return messages
        else:
            continue
        for message in messages:
            if isinstance(message, dict) and message.get("role") == "user":
                return _content_text(message.get("content"))
    return ""


def final_answer(spans: list[Span[Any]]) -> str:
    for span in reversed(spans):
        if isinstance(span.span_data, (GenerationSpanData, ResponseSpanData)):
            text = turn_text(span.span_data)
            if text and not text.startswith("calls "):
                return text
    return ""


def agent_of(spans: list[Span[Any]]) -> str:
    return next((s.span_data.name for s in spans if isinstance(s.span_data, AgentSpanData)), "")


def outcome_of(spans: list[Span[Any]]) -> str:
    failed = any(isinstance(s.span_data, AgentSpanData) and s.error is not None for s in spans)
    return "failure" if failed else "success"


def _content_text(content: Any) -> str:
    """A message's content: a string, or the text of its parts."""
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict)
        ).strip()
    return text_of(content)


def _position(span: Span[Any]) -> str:
    """Where a span's step goes: when it started, or for an agent span (a step only when it
    failed) when it ended."""
    if isinstance(span.span_data, AgentSpanData):
        return span.ended_at or ""
    return span.started_at or ""


def _duration_ms(span: Span[Any]) -> int | None:
    if not span.started_at or not span.ended_at:
        return None
    began = datetime.fromisoformat(span.started_at)
    ended = datetime.fromisoformat(span.ended_at)
    return max(0, int((ended - began).total_seconds() * 1000))
