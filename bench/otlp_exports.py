"""Synthetic OTLP exports for bench/ingest.py's OTLP series: what an OpenTelemetry Collector
sends by default (its batch processor's 8,192 spans a request), made of agent runs of 8 spans
each (an invoke_agent root, 3 chat spans, 4 execute_tool spans with arguments and results, some
failing), GenAI semantic conventions, protobuf-encoded; the same for the same seed."""

from __future__ import annotations

import json
import random

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from bench.trajectories import ERRORS, TASKS, TOOLS

SPANS_PER_TRACE = 8
_SECOND = 1_000_000_000
_T0 = 1_780_000_000 * _SECOND


def _attributes(values: dict[str, str]) -> list[KeyValue]:
    return [KeyValue(key=k, value=AnyValue(string_value=v)) for k, v in values.items()]


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def _run(rng: random.Random, number: int) -> list[Span]:
    trace_id = rng.randbytes(16)
    task = f"{rng.choice(TASKS)} (case {number})"
    start = _T0 + number * 60 * _SECOND

    def span(index: int, name: str, attrs: dict[str, str], error: str = "") -> Span:
        made = Span(
            trace_id=trace_id,
            span_id=(number * 16 + index + 1).to_bytes(8, "big"),
            parent_span_id=b"" if index == 0 else (number * 16 + 1).to_bytes(8, "big"),
            name=name,
            start_time_unix_nano=start + index * _SECOND,
            end_time_unix_nano=start + (index + 1) * _SECOND if index else start + 9 * _SECOND,
            attributes=_attributes(attrs),
        )
        if error:
            made.status.code = Status.STATUS_CODE_ERROR
            made.status.message = error
        return made

    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini"}
    spans = [
        span(0, "invoke_agent ops", {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "ops",
            "gen_ai.input.messages": _messages("user", task),
            "gen_ai.output.messages": _messages("assistant", "Done: the pool was exhausted."),
        }),
    ]  # fmt: skip
    for i in range(1, SPANS_PER_TRACE):
        if i % 2:
            spans.append(span(i, "chat gpt-4o-mini", {
                **chat, "gen_ai.output.messages": _messages("assistant", f"Next I check {i}."),
            }))  # fmt: skip
        else:
            tool = rng.choice(TOOLS)
            error = rng.choice(ERRORS) if rng.random() < 0.15 else ""
            spans.append(span(i, f"execute_tool {tool}", {
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
                "gen_ai.tool.call.arguments": json.dumps({"target": f"svc-{rng.randrange(40)}"}),
                "gen_ai.tool.call.result": "" if error else f"ok: {rng.randrange(10**6)} rows",
            }, error))  # fmt: skip
    # A batch processor sends spans as they end: the children first, the root last.
    return spans[1:] + spans[:1]


def export_bodies(rng: random.Random, *, first: int, exports: int, spans: int) -> list[bytes]:
    """`exports` protobuf bodies of about `spans` spans each (whole runs of 8 spans)."""
    bodies = []
    traces_per_export = max(spans // SPANS_PER_TRACE, 1)
    for e in range(exports):
        request = ExportTraceServiceRequest()
        resource = request.resource_spans.add()
        resource.resource.attributes.extend(_attributes({"service.name": "ops-agent"}))
        scope = resource.scope_spans.add()
        for t in range(traces_per_export):
            scope.spans.extend(_run(rng, first + e * traces_per_export + t))
        bodies.append(request.SerializeToString())
    return bodies
