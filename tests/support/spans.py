"""Hand-built OTLP messages for the tests that post with the Django test client."""

import json
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

SECOND = 1_000_000_000
T0 = 1_780_000_000 * SECOND  # a fixed moment in 2026


def trace_id(n: int) -> bytes:
    return n.to_bytes(16, "big")


def span_id(n: int) -> bytes:
    return n.to_bytes(8, "big")


def _value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, list):
        out = AnyValue()
        out.array_value.values.extend(_value(v) for v in value)
        return out
    return AnyValue(string_value=value if isinstance(value, str) else json.dumps(value))


def attributes(values: dict[str, Any]) -> list[KeyValue]:
    return [KeyValue(key=k, value=_value(v)) for k, v in values.items()]


def span(
    trace: int,
    span: int,
    name: str,
    *,
    parent: int | None = None,
    start: float,
    end: float,
    attrs: dict[str, Any] | None = None,
    error: str | None = None,
) -> Span:
    """A span `start`..`end` seconds after T0."""
    out = Span(
        trace_id=trace_id(trace),
        span_id=span_id(span),
        parent_span_id=span_id(parent) if parent is not None else b"",
        name=name,
        start_time_unix_nano=T0 + int(start * SECOND),
        end_time_unix_nano=T0 + int(end * SECOND),
        attributes=attributes(attrs or {}),
    )
    if error is not None:
        out.status.code = Status.STATUS_CODE_ERROR
        out.status.message = error
    return out


def export(*spans: Span, service: str = "support-agent") -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.extend(attributes({"service.name": service}))
    resource_spans.scope_spans.add().spans.extend(spans)
    return request


def user_says(content: str) -> str:
    return json.dumps([{"role": "user", "parts": [{"type": "text", "content": content}]}])


def assistant_says(content: str = "", *, calls: tuple[str, ...] = ()) -> str:
    parts: list[dict[str, Any]] = [{"type": "text", "content": content}] if content else []
    parts += [{"type": "tool_call", "id": f"call-{n}", "name": n, "arguments": {}} for n in calls]
    return json.dumps([{"role": "assistant", "parts": parts, "finish_reason": "stop"}])


def agent_run(trace: int = 1, *, agent_error: str | None = None) -> list[Span]:
    """An invoke_agent root with chat and execute_tool children; the first tool call fails."""
    task = "Why does the checkout service return 502?"
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini"}
    return [
        span(trace, 1, "invoke_agent triage", start=0, end=10, error=agent_error, attrs={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "triage",
            "gen_ai.conversation.id": "conv-42", "gen_ai.input.messages": user_says(task),
            "gen_ai.output.messages": assistant_says("The upstream pool was exhausted."),
        }),
        span(trace, 2, "chat gpt-4o-mini", parent=1, start=1, end=2, attrs={
            **chat, "gen_ai.input.messages": user_says(task),
            "gen_ai.output.messages": assistant_says(calls=("kubectl_logs",)),
        }),
        span(trace, 3, "execute_tool kubectl_logs", parent=1, start=3, end=4,
             error="pod checkout-7f not found", attrs={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "kubectl_logs",
            "gen_ai.tool.call.arguments": json.dumps({"pod": "checkout-7f"}),
            "error.type": "NotFound",
        }),
        span(trace, 4, "chat gpt-4o-mini", parent=1, start=5, end=6, attrs={
            **chat, "gen_ai.output.messages": assistant_says("Let me list the pods first."),
        }),
        span(trace, 5, "execute_tool kubectl_get_pods", parent=1, start=7, end=8, attrs={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "kubectl_get_pods",
            "gen_ai.tool.call.arguments": json.dumps({"selector": "app=checkout"}),
            "gen_ai.tool.call.result": "checkout-9c Running",
        }),
    ]  # fmt: skip


def hex_ids(data: Any) -> Any:
    """protobuf's JSON mapping (base64 ids) as OTLP/JSON (hex ids)."""
    import base64

    if isinstance(data, dict):
        return {
            k: base64.b64decode(v).hex()
            if k in ("traceId", "spanId", "parentSpanId") and isinstance(v, str)
            else hex_ids(v)
            for k, v in data.items()
        }
    if isinstance(data, list):
        return [hex_ids(v) for v in data]
    return data
